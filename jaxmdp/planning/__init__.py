"""Average-reward planning: one interface, one solution type, one status enum.

A planner is a pair of pure functions over its own state, in the style of optax's
``GradientTransformation`` (:class:`Planner`): ``init(model) -> state`` and
``update(state, change) -> (solution, state)``, where ``change`` is a
:class:`ModelChange` (the model to solve, and which row changed since the last update).
Every solver returns a :class:`Solution` whose ``status`` is a :class:`Status`.

* :func:`exact_planner`: exact policy iteration (:mod:`.policy_iteration`: unichain, then
  multichain), an LU re-solve per update;
* :func:`incremental_planner`: the same iteration with Sherman–Morrison updates of the
  evaluation inverse (:mod:`.incremental`), ``O(S^2)`` per changed row;
* :func:`evi_planner`: extended value iteration over a confidence set (:mod:`.evi`), one
  loop parametrised by the ball's inner maximisation.

:mod:`.estimate` is the one estimator (counts -> ``p_hat``, good actions, reward
estimates) every agent uses.

Example:
    >>> import jaxmdp as jm
    >>> from jaxmdp import planning
    >>> mdp = jm.envs.make("paper-mdp")
    >>> planner = planning.incremental_planner()
    >>> solution, state = planner.update(planner.init(mdp), planning.ModelChange(mdp))
    >>> solution.policy.tolist(), planning.Status(int(solution.status)).name
    ([0, 1, 0], 'CONVERGED')
"""

from jaxmdp.planning._core import DEFAULT_MAX_STEPS, ModelChange, Planner, Solution, Status
from jaxmdp.planning.estimate import Estimate, estimate
from jaxmdp.planning.evi import BALLS, ConfidenceSet, InnerMaximisation, evi, evi_planner
from jaxmdp.planning.incremental import incremental_planner, incremental_policy_iteration
from jaxmdp.planning.policy_iteration import (
    exact_planner,
    policy_iteration,
    solve_average_reward,
)
from jaxmdp.planning.suboptimality import gaps

__all__ = [
    "BALLS",
    "DEFAULT_MAX_STEPS",
    "ConfidenceSet",
    "Estimate",
    "InnerMaximisation",
    "ModelChange",
    "Planner",
    "Solution",
    "Status",
    "estimate",
    "evi",
    "evi_planner",
    "exact_planner",
    "gaps",
    "incremental_planner",
    "incremental_policy_iteration",
    "policy_iteration",
    "solve_average_reward",
]
