"""One registry type for jaxmdp's named things: agents, environments and EVI's balls.

A :class:`Registry` is a table of names, each registered once (a second registration of a
name raises unless ``replace=True``), filled in one place by the module that owns it. Names
are case-insensitive (``"UCRL2"`` and ``"ucrl2"`` are one name); a name is listed as it was
registered, in registration order. The registry itself is a read-only
:class:`~collections.abc.Mapping` and :meth:`Registry.view` gives live views of it: a name
registered later appears in every view at once (gymnax's ``registered_envs``, one table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["Registry"]

V = TypeVar("V")


class Registry(Mapping[str, V], Generic[V]):
    """A table of named values; names are case-insensitive and registered once.

    Args:
        kind: what a name names, for messages (``"agent"``, ``"environment"``, ``"ball"``).

    Example:
        >>> from jaxmdp import Registry
        >>> colours = Registry("colour")
        >>> colours.register("Red", (1, 0, 0))
        >>> colours["red"], list(colours)
        ((1, 0, 0), ['Red'])
        >>> colours.register("RED", (2, 0, 0))
        Traceback (most recent call last):
        ...
        ValueError: colour 'Red' is already registered; pass replace=True to replace it
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, tuple[str, V]] = {}  # casefolded name -> (name, value)

    def register(self, name: str, value: V, *, replace: bool = False) -> None:
        """Registers ``value`` under ``name``.

        Raises:
            ValueError: for a ``name`` that is not a non-empty string, or one already
                registered (in any case) without ``replace=True``.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        key = name.casefold()
        if key in self._entries and not replace:
            raise ValueError(f"{self.kind} {self._entries[key][0]!r} is already registered; "
                             f"pass replace=True to replace it")
        self._entries[key] = (name, value)

    def __getitem__(self, name: str) -> V:
        if not isinstance(name, str) or name.casefold() not in self._entries:
            raise KeyError(name)
        return self._entries[name.casefold()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.casefold() in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._entries.values()])

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={list(self)})"

    def lookup(self, name: Any) -> V:
        """The value of ``name``.

        Raises:
            ValueError: for an unknown name, listing the known ones.
        """
        if name not in self:
            raise ValueError(f"{self.kind} must be one of {sorted(self)}, got {name!r}")
        return self[name]

    def canonical(self, name: str) -> str:
        """``name`` as it was registered (``"UCRL2"`` -> ``"ucrl2"``)."""
        return self._entries[name.casefold()][0]

    def view(self, value: Callable[[V], Any], keep: Callable[[V], bool] | None = None
             ) -> Mapping[str, Any]:
        """A live, read-only mapping ``name -> value(entry)`` over the entries ``keep``
        keeps (all by default)."""
        return _View(self, value, keep)

    def snapshot(self) -> dict[str, tuple[str, V]]:
        """The registry's contents, for :meth:`restore` (tests)."""
        return dict(self._entries)

    def restore(self, contents: dict[str, tuple[str, V]]) -> None:
        """Sets the registry's contents back to a :meth:`snapshot`."""
        self._entries.clear()
        self._entries.update(contents)


class _View(Mapping):
    """``name -> value(entry)`` over a registry's entries that ``keep`` keeps, read live."""

    def __init__(self, registry: Registry, value, keep):
        self._registry, self._value, self._keep = registry, value, keep

    def _items(self) -> dict:
        return {name: self._value(entry) for name, entry in self._registry.items()
                if self._keep is None or self._keep(entry)}

    def __getitem__(self, name):
        if name not in self:
            raise KeyError(name)
        return self._value(self._registry[name])

    def __contains__(self, name) -> bool:
        return name in self._registry and (self._keep is None
                                           or self._keep(self._registry[name]))

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return len(self._items())

    def __repr__(self):
        return repr(self._items())
