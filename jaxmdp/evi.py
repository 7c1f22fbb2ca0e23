"""Deprecated alias of :mod:`jaxmdp.planning.evi` (kept for one release).

Its names are looked up on first use, with a ``DeprecationWarning``: the module itself is
imported with the package, so that ``jaxmdp.evi`` stays the function
:func:`jaxmdp.planning.evi.evi` whichever of the two a program imports first.
"""

from jaxmdp._deprecation import moved_names

#: The names this module had, and where they are now.
_MOVED = {
    **{name: ("jaxmdp.planning.evi", name) for name in ("BALLS", "DEFAULT_MAX_STEPS", "evi")},
    "EVIResult": ("jaxmdp.planning", "Solution"),
    "EVIStatus": ("jaxmdp.planning", "Status"),
}


__getattr__ = moved_names("jaxmdp.evi", _MOVED)
