"""Deprecated alias of :mod:`jaxmdp.planning.evi` (kept for one release)."""

import warnings

from jaxmdp.planning._core import Solution as EVIResult  # noqa: F401
from jaxmdp.planning._core import Status as EVIStatus  # noqa: F401
from jaxmdp.planning.evi import (  # noqa: F401
    BALLS,
    DEFAULT_MAX_STEPS,
    INNER_MAXIMISATIONS,
    ConfidenceSet,
    evi,
    evi_planner,
)

warnings.warn("jaxmdp.evi is deprecated; use jaxmdp.planning.evi", DeprecationWarning,
              stacklevel=2)
