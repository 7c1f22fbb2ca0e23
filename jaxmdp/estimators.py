"""Deprecated alias of :mod:`jaxmdp.planning.estimate` (kept for one release)."""

import warnings

from jaxmdp.planning.estimate import (  # noqa: F401
    Estimate,
    estimate,
    estimated_mdp,
    good_actions,
    reward_estimate,
    transition_estimate,
)

warnings.warn("jaxmdp.estimators is deprecated; use jaxmdp.planning.estimate",
              DeprecationWarning, stacklevel=2)
