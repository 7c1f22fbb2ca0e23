"""The paper's per-step planner, shared by its four agents through their state.

Every agent of Cowan, Katehakis & Pirutinsky (2019, section 3) re-estimates the MDP at
every round and re-solves it: ``p_hat = (N + 1) / (n + S)``, the good actions ``A_hat``,
and the gain, bias and optimal policy of ``(p_hat, r, A_hat)`` (:mod:`jaxmdp.estimators`).

Between two rounds the counts change in one row, ``N[x, a, :]`` of the pair just played,
so the planner does only the work that change needs (issue "scale 2"):

* the estimate ``p_hat`` and the visits ``n[x, a]`` are kept in the state and updated in
  that one row (the same arithmetic as :func:`jaxmdp.estimators.transition_estimate`, so
  the values are bitwise those of a rebuild from the counts);
* the solve is warm-started from the last policy and, by default, incremental
  (:mod:`jaxmdp.incremental`: Sherman–Morrison updates of the evaluation inverse for the
  changed row and the states where the policy changed, nothing of size ``S x S``
  compared or gathered);
* every ``refresh_every`` rounds (and at round 0) the estimate is rebuilt from the counts
  and the evaluation matrix re-inverted, which bounds round-off and makes the first call
  correct whatever the initial counts.

The component is a state (:class:`PlannerState`) and pure functions that an agent calls
from its ``init`` and ``step``: :func:`init_planner`; then each round :func:`observe`
(counts -> estimate), :func:`plan` (re-solve) and, once the action is chosen,
:func:`played`. The row update assumes what :func:`jaxmdp.simulate` guarantees: between
two calls the counts change only in the row of the pair passed to :func:`played`, and the
first call is at ``step == 0``. An agent driven otherwise should use ``refresh_every=1``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.estimators import Estimate, _good_actions_from_visits, transition_estimate
from jaxmdp.incremental import (
    EvaluationState,
    default_refresh_every,
    incremental_policy_iteration,
    init_evaluation,
)
from jaxmdp.mdp import MDP
from jaxmdp.planning import solve_average_reward

__all__ = ["PLANNERS", "PlannerState", "init_planner", "observe", "plan", "played"]

#: Per-step planners: incremental evaluation (default) or a full re-solve every round.
PLANNERS = ("incremental", "full")


class PlannerState(NamedTuple):
    """What the per-step planner carries between rounds.

    Attributes:
        policy: the last estimated optimal policy (the next warm start), int32 ``[S]``.
        evaluation: the incremental planner's :class:`~jaxmdp.incremental.EvaluationState`
            (``()`` for the full planner).
        model: the estimate ``p_hat = (N + 1) / (n + S)``, ``[S, A, S]``.
        visits: ``n[x, a]``, int32 ``[S, A]``.
        last: ``(x, a)``, the pair played last (its count row changes before the next
            round), int32 ``[2]``.
    """

    policy: jax.Array
    evaluation: EvaluationState | tuple
    model: jax.Array
    visits: jax.Array
    last: jax.Array


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
    model = transition_estimate(counts, dtype=jnp.asarray(rewards).dtype)
    evaluation = ()
    if planner == "incremental":
        evaluation = init_evaluation(model, rewards, policy)
    return PlannerState(policy, evaluation, model, jnp.sum(counts, axis=-1, dtype=jnp.int32),
                        jnp.zeros(2, jnp.int32))


def _refresh(step: jax.Array, dtype, refresh_every: int | None) -> jax.Array:
    if refresh_every is None:
        refresh_every = default_refresh_every(dtype)
    return step % refresh_every == 0


def observe(state: PlannerState, counts: jax.Array, step: jax.Array, *,
            refresh_every: int | None = None) -> PlannerState:
    """Brings the estimate and the visits up to date with ``counts``.

    On refresh rounds (``step % refresh_every == 0``, round 0 included) both are rebuilt
    from ``counts`` (``O(S^2 A)``); on the others only the row of ``state.last`` is
    (``O(S)``). Pass an unbatched ``step`` (the simulator's ``Observation.step``) so that
    the choice stays a real branch under ``vmap``.

    Args:
        state: the :class:`PlannerState` of the previous round.
        counts: transition counts ``N[x, a, y]``, ``[S, A, S]``.
        step: 0-based round of the run (int32 scalar).
        refresh_every: rounds between rebuilds (``None``: the dtype's default,
            :func:`jaxmdp.incremental.default_refresh_every`).

    Returns:
        The state with ``model`` and ``visits`` of ``counts``.
    """
    dtype = state.model.dtype
    num_states = counts.shape[-1]

    def rebuild(_):
        return (transition_estimate(counts, dtype=dtype),
                jnp.sum(counts, axis=-1, dtype=jnp.int32))

    # The row of the pair played last, then (rarely) a rebuild; on the other rounds the
    # [S, A, S] estimate is updated in place.
    x, a = state.last[0], state.last[1]
    row = counts[x, a]
    n = jnp.sum(row, dtype=jnp.int32)
    model = state.model.at[x, a].set((row.astype(dtype) + 1) / (n.astype(dtype) + num_states))
    visits = state.visits.at[x, a].set(n)
    model, visits = lax.cond(_refresh(step, dtype, refresh_every), rebuild, lambda mv: mv,
                             (model, visits))
    return state._replace(model=model, visits=visits)


def plan(state: PlannerState, rewards: jax.Array, mask: jax.Array, step: jax.Array, *,
         planner: str = "incremental",
         refresh_every: int | None = None) -> tuple[Estimate, PlannerState]:
    """Re-solves the estimated MDP ``(state.model, rewards, A_hat)``, warm-started.

    Call :func:`observe` first in the same round.

    Args:
        state: the :class:`PlannerState` (after :func:`observe`).
        rewards: the rewards to plan with (known or estimated), ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        step: 0-based round of the run (int32 scalar, unbatched); the incremental
            planner re-inverts from scratch when ``step % refresh_every == 0``.
        planner: ``"incremental"`` (default) or ``"full"`` (an LU re-solve, ``O(S^3)``).
        refresh_every: rounds between re-inversions; default 4096 in float64, 1024 in
            float32 (:func:`jaxmdp.incremental.default_refresh_every`).

    Returns:
        ``(estimate, state)``: the :class:`~jaxmdp.Estimate` every paper agent reads and
        the planner state for the next round.
    """
    mask = jnp.asarray(mask, bool)
    rewards = jnp.asarray(rewards, state.model.dtype)
    est_mdp = MDP.unchecked(state.model, rewards,
                            _good_actions_from_visits(state.visits, mask))
    evaluation = state.evaluation
    if planner == "incremental":
        refresh = _refresh(step, rewards.dtype, refresh_every)
        x, a = state.last[0], state.last[1]
        solution, evaluation = incremental_policy_iteration(
            est_mdp.P, est_mdp.R, est_mdp.mask, state.policy, state.evaluation, refresh,
            changed_pair=(jnp.where(refresh, -1, x), a))
        gain, bias, policy = solution.gain, solution.bias, solution.policy
    else:
        gain, bias, policy = solve_average_reward(est_mdp, init_policy=state.policy)
    estimate = Estimate(mdp=est_mdp, admissible=mask, visits=state.visits, gain=gain,
                        bias=bias, policy=policy)
    return estimate, state._replace(policy=policy.astype(jnp.int32), evaluation=evaluation)


def played(state: PlannerState, x: jax.Array, action: jax.Array) -> PlannerState:
    """Records the pair played this round: its count row is the one to update next."""
    return state._replace(last=jnp.stack([jnp.asarray(x, jnp.int32),
                                          jnp.asarray(action, jnp.int32)]))
