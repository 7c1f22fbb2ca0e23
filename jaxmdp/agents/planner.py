"""Deprecated alias of the per-round estimate of :mod:`jaxmdp.planning.estimate`.

The paper's agents now hold a :class:`~jaxmdp.planning.Planner` in their configuration and
keep an :class:`~jaxmdp.planning.estimate.EstimateState`; this module maps the old
string-named planners onto them for one release.
"""

from jaxmdp._deprecation import warn_deprecated
from jaxmdp.planning.estimate import EstimateState as PlannerState
from jaxmdp.planning.estimate import init_estimate, observe, played, solve_estimate  # noqa: F401
from jaxmdp.planning.incremental import incremental_planner
from jaxmdp.planning.policy_iteration import exact_planner

warn_deprecated("jaxmdp.agents.planner", "jaxmdp.planning.estimate")

#: Per-step planners by their old names.
PLANNERS = ("incremental", "full")


def _planner(name):
    return incremental_planner() if name == "incremental" else exact_planner()


def init_planner(counts, rewards, mask, *, planner="incremental") -> PlannerState:
    """Deprecated: :func:`~jaxmdp.planning.estimate.init_estimate` with a named planner."""
    return init_estimate(counts, rewards, mask, _planner(planner))


def plan(state, rewards, mask, step, *, planner="incremental", refresh_every=None):
    """Deprecated: :func:`~jaxmdp.planning.estimate.solve_estimate` with a named planner."""
    return solve_estimate(state, rewards, mask, step, _planner(planner),
                          refresh_every=refresh_every)
