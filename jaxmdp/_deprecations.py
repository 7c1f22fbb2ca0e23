"""Names and modules removed from jaxmdp's public API, kept for one release (optax's pattern).

:data:`DEPRECATIONS` is the one table: an old name relative to ``jaxmdp`` (``"OldName"``,
or a module such as ``"agents.scal"``) -> ``(its replacement, the version that removes
the old name)``. ``jaxmdp.__getattr__`` serves the names of ``jaxmdp`` itself
(:func:`attribute`); a finder on ``sys.meta_path`` (:func:`install`) imports a moved
module under its old name. Both warn with a ``DeprecationWarning`` naming the version.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import operator
import sys
import warnings

__all__ = ["DEPRECATIONS", "attribute", "install"]

DEPRECATIONS: dict[str, tuple[str, str]] = {
    "agents.scal": ("agents.ucrl.scal", "0.4.0"),
    "agents.tucrl": ("agents.ucrl.tucrl", "0.4.0"),
    "agents.ucrl3_support": ("planning", "0.4.0"),
}


def _warn(old: str, replacement: str, removed_in: str) -> None:
    warnings.warn(f"jaxmdp.{old} is deprecated and will be removed in jaxmdp {removed_in}; "
                  f"use jaxmdp.{replacement}", DeprecationWarning, stacklevel=3)


def attribute(name: str):
    """``jaxmdp.name`` for a name of :data:`DEPRECATIONS`: its replacement, with a
    warning.

    Raises:
        AttributeError: for any other name.
    """
    if name in DEPRECATIONS:
        replacement, removed_in = DEPRECATIONS[name]
        _warn(name, replacement, removed_in)
        return operator.attrgetter(replacement)(sys.modules["jaxmdp"])
    raise AttributeError(f"module 'jaxmdp' has no attribute {name!r}")


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module of :data:`DEPRECATIONS` under its old name: the module it moved
    to, with a warning."""

    def find_spec(self, fullname, path=None, target=None):
        old = fullname.removeprefix("jaxmdp.")
        if not fullname.startswith("jaxmdp.") or old not in DEPRECATIONS:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        old = spec.name.removeprefix("jaxmdp.")
        replacement, removed_in = DEPRECATIONS[old]
        _warn(old, replacement, removed_in)
        return importlib.import_module(f"jaxmdp.{replacement}")

    def exec_module(self, module):
        del module


def install() -> None:
    """Puts the finder of moved modules on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())
