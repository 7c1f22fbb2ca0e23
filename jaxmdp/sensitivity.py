"""Deprecated alias of :mod:`jaxmdp.analysis.sensitivity` (kept for one release)."""

import warnings

from jaxmdp.analysis.sensitivity import *  # noqa: F403
from jaxmdp.analysis.sensitivity import __all__  # noqa: F401

warnings.warn("jaxmdp.sensitivity is deprecated; use jaxmdp.analysis.sensitivity",
              DeprecationWarning, stacklevel=2)
