"""The per-round estimate of an agent that re-estimates and re-solves at every round.

An agent keeps an :class:`EstimateState` (:func:`init_estimate`, then each round
:func:`observe`, :func:`solve_estimate` and :func:`played`): between two rounds the counts
change in one row, ``N[x, a, :]`` of the pair just played, so only that row of ``p_hat``
and ``n`` is updated (the same arithmetic as
:func:`jaxmdp.planning.transition_estimate`, so the values are bitwise those of a
rebuild), the solve is warm-started by the agent's :class:`~jaxmdp.planning.Planner`, and
every ``refresh_every`` rounds (and at round 0) the estimate is rebuilt from the counts and
the planner refreshed, which bounds round-off and makes the first call correct whatever
the initial counts. The row update assumes what :func:`jaxmdp.simulate` guarantees: between
two calls the counts change only in the row of the pair passed to :func:`played`, and the
first call is at ``step == 0``; an agent driven otherwise should use ``refresh_every=1``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.agents.options import integer
from jaxmdp.mdp import MDP
from jaxmdp.planning import (
    Estimate,
    ModelChange,
    Planner,
    Status,
    exact_planner,
    good_actions_from_visits,
    incremental_planner,
    transition_estimate,
)
from jaxmdp.planning.incremental import default_refresh_every

__all__ = [
    "PLANNERS",
    "EstimateState",
    "check_planner_options",
    "init_estimate",
    "observe",
    "played",
    "refresh_round",
    "solve_estimate",
]


class EstimateState(NamedTuple):
    """The per-round estimate an agent carries between rounds.

    Attributes:
        policy: the last estimated optimal policy, int32 ``[S]``.
        evaluation: the planner's own state (its warm start and whatever it reuses).
        model: the estimate ``p_hat = (N + 1) / (n + S)``, ``[S, A, S]``.
        visits: ``n[x, a]``, int32 ``[S, A]``.
        last: ``(x, a)``, the pair played last (its count row changes before the next
            round), int32 ``[2]``.
        unconverged: rounds whose solve did not converge (the planner's status was not
            ``CONVERGED``: ``MAX_STEPS``, ``SINGULAR`` or ``MULTICHAIN``), int32; the
            UCRL family counts its EVI solves the same way.
    """

    policy: jax.Array
    evaluation: object
    model: jax.Array
    visits: jax.Array
    last: jax.Array
    unconverged: jax.Array


#: The planners an agent's ``planner`` option accepts by name: name -> the factory that
#: builds it (with its defaults; the incremental planner's batching is the backend's).
PLANNERS = {"incremental": incremental_planner, "full": exact_planner}


def check_planner_options(planner: Planner | str, refresh_every: int | None) -> Planner:
    """The ``planner`` and ``refresh_every`` options of an agent that re-solves every round.

    Args:
        planner: a :class:`~jaxmdp.planning.Planner`, or a name of :data:`PLANNERS`.
        refresh_every: a positive int or ``None``.

    Returns:
        The :class:`~jaxmdp.planning.Planner`.

    Raises:
        ValueError: naming the option and the value.
    """
    if isinstance(planner, str) and planner in PLANNERS:
        planner = PLANNERS[planner]()
    if not isinstance(planner, Planner):
        raise ValueError(f"planner must be a jaxmdp.planning.Planner, 'incremental' or "
                         f"'full', got {planner!r}")
    if refresh_every is not None:
        integer()("refresh_every", refresh_every)
    return planner


def init_estimate(counts: jax.Array, rewards: jax.Array, mask: jax.Array,
                  planner: Planner) -> EstimateState:
    """The state before the first round: the estimate of ``counts`` and ``planner.init``.

    Args:
        counts: initial transition counts ``N[x, a, y]``, ``[S, A, S]``.
        rewards: the rewards the agent plans with, ``[S, A]`` (its dtype is used).
        mask: admissible actions, bool ``[S, A]``.
        planner: the agent's :class:`~jaxmdp.planning.Planner`.

    Returns:
        An :class:`EstimateState` whose policy is each state's lowest admissible action.
    """
    mask = jnp.asarray(mask, bool)
    policy = jnp.argmax(mask, axis=1).astype(jnp.int32)
    model = transition_estimate(counts, dtype=jnp.asarray(rewards).dtype)
    evaluation = planner.init(MDP.unchecked(model, jnp.asarray(rewards), mask))
    return EstimateState(policy, evaluation, model,
                         jnp.sum(counts, axis=-1, dtype=jnp.int32), jnp.zeros(2, jnp.int32),
                         jnp.zeros((), jnp.int32))


def refresh_round(step: jax.Array, dtype, refresh_every: int | None) -> jax.Array:
    """Whether round ``step`` rebuilds: ``step % refresh_every == 0`` (``None``: the
    dtype's default, :func:`jaxmdp.planning.incremental.default_refresh_every`)."""
    if refresh_every is None:
        refresh_every = default_refresh_every(dtype)
    return step % refresh_every == 0


def observe(state: EstimateState, counts: jax.Array, step: jax.Array, *,
            refresh_every: int | None = None) -> EstimateState:
    """Brings the estimate and the visits up to date with ``counts``.

    On refresh rounds (:func:`refresh_round`, round 0 included) both are rebuilt from
    ``counts`` (``O(S^2 A)``); on the others only the row of ``state.last`` is (``O(S)``).
    Pass an unbatched ``step`` so that the choice stays a real branch under ``vmap``.

    Args:
        state: the :class:`EstimateState` of the previous round.
        counts: transition counts ``N[x, a, y]``, ``[S, A, S]``.
        step: 0-based round of the run (int32 scalar).
        refresh_every: rounds between rebuilds (``None``: the dtype's default).

    Returns:
        The state with ``model`` and ``visits`` of ``counts``.
    """
    dtype = state.model.dtype
    num_states = counts.shape[-1]

    def rebuild(_):
        return (transition_estimate(counts, dtype=dtype),
                jnp.sum(counts, axis=-1, dtype=jnp.int32))

    x, a = state.last[0], state.last[1]
    row = counts[x, a]
    n = jnp.sum(row, dtype=jnp.int32)
    model = state.model.at[x, a].set((row.astype(dtype) + 1) / (n.astype(dtype) + num_states))
    visits = state.visits.at[x, a].set(n)
    model, visits = lax.cond(refresh_round(step, dtype, refresh_every), rebuild,
                             lambda mv: mv, (model, visits))
    return state._replace(model=model, visits=visits)


def solve_estimate(state: EstimateState, rewards: jax.Array, mask: jax.Array,
                   step: jax.Array, planner: Planner, *,
                   refresh_every: int | None = None) -> tuple[Estimate, EstimateState]:
    """Solves the estimated MDP ``(state.model, rewards, A_hat)`` with ``planner``.

    Call :func:`observe` first in the same round. The planner is told the row of the pair
    played last and whether this is a refresh round.

    Args:
        state: the :class:`EstimateState` (after :func:`observe`).
        rewards: the rewards to plan with (known or estimated), ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        step: 0-based round of the run (int32 scalar, unbatched).
        planner: the agent's :class:`~jaxmdp.planning.Planner`.
        refresh_every: rounds between refreshes (``None``: the dtype's default).

    Returns:
        ``(estimate, state)``: the :class:`Estimate` the agent's rule reads (with the
        planner's ``status``) and the state for the next round (its ``unconverged``
        count increased when the status is not ``CONVERGED``).
    """
    mask = jnp.asarray(mask, bool)
    rewards = jnp.asarray(rewards, state.model.dtype)
    est_mdp = MDP.unchecked(state.model, rewards, good_actions_from_visits(state.visits, mask))
    refresh = refresh_round(step, rewards.dtype, refresh_every)
    change = ModelChange(est_mdp, (state.last[0], state.last[1]), refresh)
    solution, evaluation = planner.update(state.evaluation, change)
    status = jnp.asarray(solution.status, jnp.int32)
    estimate = Estimate(mdp=est_mdp, admissible=mask, visits=state.visits,
                        gain=solution.gain, bias=solution.bias, policy=solution.policy,
                        status=status)
    failed = (status != Status.CONVERGED).astype(jnp.int32)
    return estimate, state._replace(policy=solution.policy.astype(jnp.int32),
                                    evaluation=evaluation,
                                    unconverged=state.unconverged + failed)


def played(state: EstimateState, x: jax.Array, action: jax.Array) -> EstimateState:
    """Records the pair played this round: its count row is the one to update next."""
    return state._replace(last=jnp.stack([jnp.asarray(x, jnp.int32),
                                          jnp.asarray(action, jnp.int32)]))
