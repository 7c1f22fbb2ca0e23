"""Average-reward planning: one interface, one solution type, one status enum.

A planner is a pair of pure functions over its own state, in the style of optax's
``GradientTransformation`` (:class:`Planner`): ``init(model) -> state`` and
``update(state, change) -> (solution, state)``, where ``change`` is a
:class:`ModelChange` (the model to solve, and which row changed since the last update).
Every solver returns a :class:`Solution` whose ``status`` is a :class:`Status`.

* :func:`exact_planner`: exact policy iteration (:func:`policy_iteration`: unichain, then
  multichain), an LU re-solve per update;
* :func:`incremental_planner`: the same iteration with Sherman–Morrison updates of the
  evaluation inverse (:mod:`.incremental`), ``O(S^2)`` per changed row;
* :func:`evi_planner`: extended value iteration over a confidence set (:func:`evi`), one
  loop parametrised by the ball's inner maximisation (:data:`BALLS`: the L1, KL and box
  balls, KL-UCRL's published maximiser and UCRL3's near-optimistic sets, all registered
  here);
* :func:`scopt_planner`: ScOpt, value iteration with the bias span capped (SCAL, SCAL+);
* :func:`tevi_planner`: TEVI, extended value iteration truncated to the observed states
  (TUCRL).

:func:`estimate` is the one estimator (counts -> ``p_hat``, good actions, reward
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

from jaxmdp.planning._core import (
    DEFAULT_MAX_STEPS,
    ModelChange,
    Planner,
    Solution,
    Status,
    noisy_argmax,
    values_planner,
)
from jaxmdp.planning._estimate import (
    Estimate,
    estimate,
    estimated_mdp,
    good_actions,
    good_actions_from_visits,
    reward_estimate,
    transition_estimate,
)
from jaxmdp.planning._evi import (
    BALLS,
    BoxBounds,
    ConfidenceSet,
    InnerMaximisation,
    box_ball,
    box_maximise,
    box_maximise_sorted,
    evi,
    evi_planner,
    kl_ball,
    kl_published_ball,
    l1_ball,
    register_ball,
)
from jaxmdp.planning._evi_kernel import KERNELS
from jaxmdp.planning._policy_iteration import (
    exact_planner,
    policy_iteration,
    solve_average_reward,
    warm_start_policy,
)
from jaxmdp.planning._scopt import scopt, scopt_mixture, scopt_noise, scopt_planner
from jaxmdp.planning._tevi import TUCRLBounds, l1_truncated_maximise, tevi, tevi_planner
from jaxmdp.planning._ucrl3 import (
    UCRL3_BALL,
    UCRL3_KEY_SUMS_BALL,
    UCRL3Bounds,
    near_optimistic_support,
)
from jaxmdp.planning.incremental import incremental_planner, incremental_policy_iteration
from jaxmdp.planning.suboptimality import gaps

__all__ = [
    "BALLS",
    "DEFAULT_MAX_STEPS",
    "UCRL3_BALL",
    "UCRL3_KEY_SUMS_BALL",
    "BoxBounds",
    "ConfidenceSet",
    "Estimate",
    "InnerMaximisation",
    "KERNELS",
    "ModelChange",
    "Planner",
    "Solution",
    "Status",
    "TUCRLBounds",
    "UCRL3Bounds",
    "box_maximise",
    "box_maximise_sorted",
    "estimate",
    "estimated_mdp",
    "evi",
    "evi_planner",
    "exact_planner",
    "gaps",
    "good_actions",
    "good_actions_from_visits",
    "incremental_planner",
    "incremental_policy_iteration",
    "l1_truncated_maximise",
    "near_optimistic_support",
    "noisy_argmax",
    "policy_iteration",
    "register_ball",
    "reward_estimate",
    "scopt",
    "scopt_mixture",
    "scopt_noise",
    "scopt_planner",
    "solve_average_reward",
    "tevi",
    "tevi_planner",
    "transition_estimate",
    "values_planner",
    "warm_start_policy",
]

# The one table of the balls jaxmdp knows by name (user balls: register_ball).
for _name, _factory in (
    ("l1", l1_ball),
    ("kl", kl_ball),
    ("kl_published", kl_published_ball),
    ("box", box_ball),
    ("ucrl3", lambda: UCRL3_BALL),
    ("ucrl3_key_sums", lambda: UCRL3_KEY_SUMS_BALL),
):
    register_ball(_name, _factory)
del _name, _factory, l1_ball, kl_ball, kl_published_ball, box_ball  # registered, not API
