"""Deprecated alias of :mod:`jaxmdp.analysis.sensitivity` (kept for one release)."""

import warnings

from jaxmdp.analysis.sensitivity import (  # noqa: F401
    INDEX_AGENTS,
    GainSensitivity,
    IndexSensitivity,
    LowerBoundSensitivity,
    gain_sensitivity,
    index_sensitivity,
    lower_bound_sensitivity,
)

warnings.warn("jaxmdp.sensitivity is deprecated; use jaxmdp.analysis.sensitivity",
              DeprecationWarning, stacklevel=2)
