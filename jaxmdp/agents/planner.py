"""The paper's per-step planner, shared by its four agents through their state.

Every agent of Cowan, Katehakis & Pirutinsky (2019, section 3) re-estimates the MDP at
every round and re-solves it: ``p_hat = (N + 1) / (n + S)``, the good actions ``A_hat``,
and the gain, bias and optimal policy of ``(p_hat, r, A_hat)`` (:mod:`jaxmdp.estimators`).
The estimate changes in one row per round, so the solve is warm-started from the last
policy and, by default, incremental (:mod:`jaxmdp.incremental`: Sherman–Morrison updates
of the evaluation inverse, a full re-inversion every ``refresh_every`` rounds). The
component is a state (:class:`PlannerState`) and two pure functions, :func:`init_planner`
and :func:`plan`, that an agent calls from its own ``init`` and ``step``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.estimators import Estimate, _estimated_mdp
from jaxmdp.incremental import (
    EvaluationState,
    default_refresh_every,
    incremental_policy_iteration,
    init_evaluation,
)
from jaxmdp.planning import solve_average_reward

__all__ = ["PLANNERS", "PlannerState", "init_planner", "plan"]

#: Per-step planners: incremental evaluation (default) or a full re-solve every round.
PLANNERS = ("incremental", "full")


class PlannerState(NamedTuple):
    """What the per-step planner carries between rounds.

    Attributes:
        policy: the last estimated optimal policy (the next warm start), int32 ``[S]``.
        evaluation: the incremental planner's :class:`~jaxmdp.incremental.EvaluationState`
            (``()`` for the full planner).
    """

    policy: jax.Array
    evaluation: EvaluationState | tuple


def init_planner(counts: jax.Array, rewards: jax.Array, mask: jax.Array, *,
                 planner: str = "incremental") -> PlannerState:
    """The planner's state before the first round.

    The first warm start is each state's lowest admissible action; the incremental
    planner's inverse is that policy's, for the estimate of ``counts``.

    Args:
        counts: initial transition counts ``N[x, a, y]``, ``[S, A, S]``.
        rewards: the rewards the agent plans with, ``[S, A]`` (its dtype is used).
        mask: admissible actions, bool ``[S, A]``.
        planner: ``"incremental"`` or ``"full"`` (static).

    Returns:
        A :class:`PlannerState`.
    """
    policy = jnp.argmax(jnp.asarray(mask, bool), axis=1).astype(jnp.int32)
    evaluation = ()
    if planner == "incremental":
        est = _estimated_mdp(counts, rewards, mask)
        evaluation = init_evaluation(est.P, rewards, policy)
    return PlannerState(policy, evaluation)


def plan(counts: jax.Array, rewards: jax.Array, mask: jax.Array, state: PlannerState,
         step: jax.Array, *, planner: str = "incremental",
         refresh_every: int | None = None) -> tuple[Estimate, PlannerState]:
    """Estimates the MDP from ``counts`` and re-solves it, warm-started from ``state``.

    Args:
        counts: transition counts ``N[x, a, y]``, ``[S, A, S]``.
        rewards: the rewards to plan with (known or estimated), ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        state: the :class:`PlannerState` of the previous round.
        step: 0-based round of the run (int32 scalar); the incremental planner
            re-inverts from scratch when ``step % refresh_every == 0``. Pass an
            unbatched value (the simulator's ``Observation.step``) so that the
            re-inversion stays a real branch under ``vmap``.
        planner: ``"incremental"`` (default) or ``"full"`` (an LU re-solve, ``O(S^3)``).
        refresh_every: rounds between re-inversions; default 4096 in float64, 1024 in
            float32 (:func:`jaxmdp.incremental.default_refresh_every`).

    Returns:
        ``(estimate, state)``: the :class:`~jaxmdp.Estimate` every paper agent reads and
        the planner state for the next round.
    """
    est_mdp = _estimated_mdp(counts, rewards, mask)
    if planner == "incremental":
        if refresh_every is None:
            refresh_every = default_refresh_every(rewards.dtype)
        solution, evaluation = incremental_policy_iteration(
            est_mdp.P, est_mdp.R, est_mdp.mask, state.policy, state.evaluation,
            step % refresh_every == 0)
        gain, bias, policy = solution.gain, solution.bias, solution.policy
    else:
        evaluation = state.evaluation
        gain, bias, policy = solve_average_reward(est_mdp, init_policy=state.policy)
    estimate = Estimate(mdp=est_mdp, admissible=jnp.asarray(mask, bool),
                        visits=jnp.sum(counts, axis=-1), gain=gain, bias=bias,
                        policy=policy)
    return estimate, PlannerState(policy.astype(jnp.int32), evaluation)
