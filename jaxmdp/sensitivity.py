"""Deprecated alias of :mod:`jaxmdp.analysis.sensitivity` (kept for one release)."""

from jaxmdp._deprecation import warn_deprecated
from jaxmdp.analysis.sensitivity import *  # noqa: F403
from jaxmdp.analysis.sensitivity import __all__  # noqa: F401

warn_deprecated("jaxmdp.sensitivity", "jaxmdp.analysis.sensitivity")
