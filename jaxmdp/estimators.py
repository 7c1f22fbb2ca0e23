"""Deprecated alias of :mod:`jaxmdp.planning.estimate` (kept for one release)."""

from jaxmdp._deprecation import warn_deprecated
from jaxmdp.planning.estimate import (  # noqa: F401
    Estimate,
    estimate,
    estimated_mdp,
    good_actions,
    reward_estimate,
    transition_estimate,
)

warn_deprecated("jaxmdp.estimators", "jaxmdp.planning.estimate")
