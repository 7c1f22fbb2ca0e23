"""Agents' options: each declared once, with its check and its kind.

An option is a field of an agent's configuration (a frozen dataclass, so every option
enters the agent's equality and hash, and ``jit`` compiles one program per distinct
configuration). :func:`option` declares it: its default, its check and its *kind*:

* ``"structure"``: it changes the program (which rule, tie-breaking, batching, a loop's
  cap): booleans, choices among names, integers;
* ``"number"``: a real parameter of the algorithm (a confidence level, a radius constant,
  a span bound) that enters the arithmetic only.

:func:`check_options` runs every declared check of a configuration (its ``__post_init__``
calls it) and stores the normalised values (a real given as an ``int`` or a NumPy scalar
is stored as a Python ``float``), so a wrong value raises ``ValueError`` naming the option
and the value when the agent is built. The checks accept what ``numbers`` accepts
(``numbers.Real``, ``numbers.Integral``; never a ``bool`` for a number).

Example:
    >>> import dataclasses
    >>> from jaxmdp.agents.options import check_options, option, real
    >>> @dataclasses.dataclass(frozen=True)
    ... class Config:
    ...     delta: float = option(0.05, real(low=0.0, high=1.0, low_open=True,
    ...                                      high_open=True))
    ...     def __post_init__(self):
    ...         check_options(self)
    >>> Config(delta=1.5)
    Traceback (most recent call last):
    ...
    ValueError: delta must be a number in (0, 1), got 1.5
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "KINDS",
    "TRACED",
    "Check",
    "Option",
    "boolean",
    "check_options",
    "choice",
    "declared_options",
    "integer",
    "merge_numbers",
    "option",
    "real",
    "split_numbers",
]

#: The kinds of options: ``"structure"`` (part of the program) and ``"number"``.
KINDS = ("structure", "number")

class Check(NamedTuple):
    """A check of one option: ``check(name, value)`` returns the normalised value or
    raises ``ValueError`` naming the option and the value.

    Attributes:
        kind: the kind of the options it checks (:data:`KINDS`).
        validate: ``validate(name, value) -> value``.
    """

    kind: str
    validate: Callable[[str, Any], Any]

    def __call__(self, name: str, value: Any) -> Any:
        return self.validate(name, value)


class Option(NamedTuple):
    """One declared option of an agent.

    Attributes:
        name: the keyword of :func:`jaxmdp.get_agent`.
        default: its default (``None`` where the default depends on other options).
        kind: ``"structure"`` or ``"number"`` (:data:`KINDS`).
        check: ``check(name, value) -> value``, raising ``ValueError``.
    """

    name: str
    default: Any
    kind: str
    check: Check


def boolean() -> Check:
    """A ``bool`` (not an integer)."""

    def check(name: str, value):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be a bool, got {value!r}")
        return value

    return Check("structure", check)


def _interval(low, high, low_open, high_open) -> str:
    return (("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]"))


def real(*, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
         high_open: bool = False, optional: bool = False) -> Check:
    """A finite real number (``numbers.Real``, not a ``bool``) in the interval from ``low``
    to ``high`` (open at an end where ``*_open``), stored as a Python ``float``; ``None``
    too where ``optional``."""

    def check(name: str, value):
        if value is None and optional:
            return None
        ok = (not isinstance(value, bool) and isinstance(value, numbers.Real)
              and math.isfinite(value)
              and (value > low if low_open else value >= low)
              and (value < high if high_open else value <= high))
        if not ok:
            if math.isinf(low) and math.isinf(high):
                where = "a finite number"
            elif math.isinf(high):
                where = ("a positive finite number" if low == 0 and low_open else
                         "a non-negative finite number" if low == 0 else
                         f"a finite number {'>' if low_open else '>='} {low:g}")
            else:
                where = f"a number in {_interval(low, high, low_open, high_open)}"
            raise ValueError(f"{name} must be {'None or ' if optional else ''}{where}, "
                             f"got {value!r}")
        return float(value)

    return Check("number", check)


def integer(*, low: int = 1, auto: bool = False) -> Check:
    """An integer (``numbers.Integral``, not a ``bool``) of at least ``low``, stored as a
    Python ``int``; the string ``"auto"`` too where ``auto`` (a value fixed later, e.g. by
    the number of replications of a run)."""

    def check(name: str, value):
        if auto and isinstance(value, str) and value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            what = "a positive integer" if low == 1 else f"an integer >= {low}"
            what = "'auto' or " + what if auto else what
            raise ValueError(f"{name} must be {what}, got {value!r}")
        return int(value)

    return Check("structure", check)


def choice(*values: str) -> Check:
    """One of ``values``."""

    def check(name: str, value):
        if not isinstance(value, str) or value not in values:
            raise ValueError(f"{name} must be one of {list(values)}, got {value!r}")
        return value

    return Check("structure", check)


def option(default: Any, check: Check, *, kind: str | None = None) -> Any:
    """A configuration field declared as an option (a ``dataclasses.field``).

    Args:
        default: the default value (``None`` where :func:`check_options`' caller resolves
            it from other options).
        check: its :class:`Check` (:func:`boolean`, :func:`real`, :func:`integer`,
            :func:`choice`, or ``Check(kind, validate)``).
        kind: ``"structure"`` or ``"number"``; default the check's own.
    """
    kind = check.kind if kind is None else kind
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    return dataclasses.field(default=default, metadata={"check": check, "kind": kind})


def declared_options(config_type) -> list[Option]:
    """The :class:`Option` of every field of a configuration dataclass declared with
    :func:`option`, in field order."""
    return [Option(f.name, f.default, f.metadata["kind"], f.metadata["check"])
            for f in dataclasses.fields(config_type) if "check" in f.metadata]


def check_options(config) -> None:
    """Runs the check of every declared option of the dataclass instance ``config``
    (frozen or not) and stores the normalised values; a ``None`` left for an option
    whose default is ``None`` is not checked.

    Raises:
        ValueError: naming the first option whose value fails its check.
    """
    for opt in declared_options(type(config)):
        value = getattr(config, opt.name)
        if value is None and opt.default is None:
            continue
        object.__setattr__(config, opt.name, opt.check(opt.name, value))


class _Traced:
    """The placeholder of a number option in a configuration's *structure*
    (:func:`split_numbers`): one value, equal to itself, so that configurations that
    differ only in their numbers are equal and hash alike."""

    def __repr__(self) -> str:
        return "TRACED"

    def __reduce__(self):
        return "TRACED"


#: The value a number option holds in a configuration's structure (:func:`split_numbers`).
TRACED = _Traced()


def _with_fields(config, values: dict):
    """A copy of the dataclass ``config`` with ``values`` set, its checks not run (the
    values may be placeholders or tracers)."""
    new = copy.copy(config)
    for name, value in values.items():
        object.__setattr__(new, name, value)
    return new


def split_numbers(config) -> tuple[Any, dict[str, Any]]:
    """``(structure, numbers)``: the configuration with every number option (kind
    ``"number"``, not ``None``) replaced by :data:`TRACED`, and those numbers by path
    (``"delta"``, ``"sets.c_lin"`` for a configuration field that is itself a
    configuration). A configuration that is not a dataclass has no numbers.

    Two configurations with the same structure and other numbers run the same compiled
    program (:func:`jaxmdp.simulate` passes the numbers as traced arrays).

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp.agents.options import split_numbers
        >>> structure, numbers = split_numbers(jm.get_agent("ucrl2b", delta=0.1).config)
        >>> numbers
        {'sets.c_sqrt': 2.0, 'sets.c_lin': 6.0, 'sets.delta_split': 18.0, 'delta': 0.1}
        >>> structure == split_numbers(jm.get_agent("ucrl2b").config)[0]
        True
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return config, {}
    numbers: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.metadata.get("kind") == "number" and value is not None \
                and value is not TRACED:
            numbers[field.name] = value
            replaced[field.name] = TRACED
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            inner, inner_numbers = split_numbers(value)
            if inner_numbers:
                replaced[field.name] = inner
                numbers.update({f"{field.name}.{k}": v for k, v in inner_numbers.items()})
    return (_with_fields(config, replaced) if replaced else config), numbers


def merge_numbers(structure, numbers: dict[str, Any]):
    """The configuration ``structure`` (from :func:`split_numbers`) with ``numbers`` (by
    path; scalars or traced arrays) in place of its placeholders."""
    if not numbers:
        return structure
    top: dict[str, Any] = {}
    inner: dict[str, dict[str, Any]] = {}
    for path, value in numbers.items():
        head, _, rest = path.partition(".")
        if rest:
            inner.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    for head, values in inner.items():
        top[head] = merge_numbers(getattr(structure, head), values)
    return _with_fields(structure, top)
