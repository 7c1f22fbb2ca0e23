"""Deprecated alias of :mod:`jaxmdp.planning.incremental` (kept for one release)."""

import jax.numpy as jnp

from jaxmdp._deprecation import warn_deprecated
from jaxmdp.planning.estimate import Estimate, estimated_mdp
from jaxmdp.planning.incremental import (  # noqa: F401
    UNROLL_MIN_STATES,
    EvaluationState,
    default_refresh_every,
    incremental_planner,
    incremental_policy_iteration,
    init_evaluation,
)

warn_deprecated("jaxmdp.incremental", "jaxmdp.planning.incremental")


def incremental_estimate(counts, mdp, evaluation, init_policy, refresh=False, rewards=None):
    """Deprecated: :func:`jaxmdp.planning.estimate.estimated_mdp` solved by
    :func:`~jaxmdp.planning.incremental.incremental_policy_iteration`.

    Returns ``(estimate, evaluation)``: an :class:`~jaxmdp.Estimate` and the state to pass
    to the next call.
    """
    counts = jnp.asarray(counts)
    est_mdp = estimated_mdp(counts, mdp, rewards)
    solution, evaluation = incremental_policy_iteration(
        est_mdp.P, est_mdp.R, est_mdp.mask, init_policy, evaluation, refresh)
    return Estimate(est_mdp, jnp.asarray(mdp.mask, bool), jnp.sum(counts, axis=-1),
                    solution.gain, solution.bias, solution.policy), evaluation
