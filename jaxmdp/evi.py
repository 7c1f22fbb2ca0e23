"""Deprecated alias of :mod:`jaxmdp.planning.evi` (kept for one release).

Its names are looked up on first use, with a ``DeprecationWarning``: the module itself is
imported with the package, so that ``jaxmdp.evi`` stays the function
:func:`jaxmdp.planning.evi.evi` whichever of the two a program imports first.
"""

import importlib
import warnings

#: The names this module had, and where they are now.
_MOVED = {
    "BALLS": ("jaxmdp.planning.evi", "BALLS"),
    "DEFAULT_MAX_STEPS": ("jaxmdp.planning.evi", "DEFAULT_MAX_STEPS"),
    "EVIResult": ("jaxmdp.planning", "Solution"),
    "EVIStatus": ("jaxmdp.planning", "Status"),
    "evi": ("jaxmdp.planning.evi", "evi"),
}


def __getattr__(name):
    if name in _MOVED:
        module, attribute = _MOVED[name]
        warnings.warn(f"jaxmdp.evi is deprecated; use {module}.{attribute}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'jaxmdp.evi' has no attribute {name!r}")
