r"""Incremental average-reward planning: O(S^2) per changed row, not O(S^3) per solve.

Between two rounds of a regret experiment the estimated MDP changes in one row: the
count ``N[x, a, y]`` of the transition just observed (and perhaps the good-action set of
``x``). :func:`jaxmdp.policy_iteration` re-solves from scratch; warm-started, it usually
needs a single policy evaluation, but each evaluation is an ``S x S`` LU factorisation,
``O(S^3)``. Here the evaluation reuses the previous one.

Policy evaluation solves ``M x = r_pi`` with ``M = I - P_pi`` whose column 0 is replaced
by ones and ``x = (gain, bias[1], ..., bias[S-1])`` (the system of
:func:`jaxmdp.policy_iteration`). Row ``s`` of ``M`` depends only on the row
``P[s, pi(s)]``, so both kinds of change policy iteration meets are row changes of
``M``: a new count in the row of the policy's action, and a policy switch in ``s``.
A changed row is a rank-one update ``M' = M + e_s u^T`` with ``u = -(P'_pi[s] -
P_pi[s])`` (column 0 excluded), and the inverse follows by Sherman–Morrison,

.. math::

    M'^{-1} = M^{-1} - \frac{M^{-1} e_s \, u^T M^{-1}}{1 + u^T M^{-1} e_s},

``O(S^2)`` per changed row. The state carries ``M^{-1}``, the rows ``P_pi`` it was
built from and the policy ``pi``. By default changed rows are found by comparing them with
the new ones, so any change, not only one count, is handled (``k`` changed rows cost
``O(k S^2)``); an agent that knows which pair's row changed passes it
(``changed_pair``), and then only that row and the states where the policy switched are
updated, without any ``S x S`` comparison. Each solution
``x = M^{-1} r_pi`` gets one step of iterative refinement with the exact residual
``r_pi - M x``, so a slightly stale inverse costs no accuracy, and a full re-inversion
when ``refresh`` is set (the paper's agents do it every ``refresh_every`` rounds) bounds the
round-off that accumulates in ``M^{-1}``.

Improvement and stopping are those of :func:`jaxmdp.policy_iteration` (the same greedy
step with the same tie tolerance and tie-breaking, the same warm-start validation), so
from the same warm start the two visit the same policies and return the same policy
unless a Q-value difference sits within rounding of the tie tolerance.

Everything is written for one MDP and batches with ``vmap``. A
``refresh`` that does not depend on the batch (the agents use the round index)
stays a real ``lax.cond`` under ``vmap``, so the ``O(S^3)`` branch runs only on refresh
rounds. Warm-started, a round usually needs one evaluation; the replications whose policy
switched need more, and a ``while_loop`` under ``vmap`` would run them for the whole batch.
So the first evaluation runs for every replication and the later ones only for those
whose policy changed, gathered ``CONTINUE_CHUNK`` (4) at a time
(:func:`jaxmdp.agents.batching.cond_chunked`; from ``CONTINUE_MIN_STATES`` (16) states
on). IMED-RL (StatisticalRL index) on grid-2-room, 100 replications, float32: 27 us per
replication-step, and 42 us with ``chunk=None`` (one loop over the batch; same process,
same trajectories).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jaxmdp._passes import cond_chunked
from jaxmdp.mdp import MDP
from jaxmdp.planning._core import (
    DEFAULT_MAX_STEPS,
    RUNNING,
    Planner,
    Solution,
    Status,
    default_rtol,
    improve,
    initial_policy,
    policy_rows,
)

__all__ = [
    "EvaluationState",
    "default_refresh_every",
    "incremental_planner",
    "incremental_policy_iteration",
    "init_evaluation",
]

#: From this many states on, the first Sherman–Morrison update and the first policy
#: evaluation run outside their ``while_loop``s (see :func:`_update`); below it the loops
#: alone do the same work in the same order, and the programs compile faster.
UNROLL_MIN_STATES = 64

#: Under ``vmap``, the rows per pass of the policy evaluations after a round's first
#: (:func:`incremental_policy_iteration`'s ``chunk``).
CONTINUE_CHUNK = 4

#: From this many states on, ``chunk`` applies; below it one loop runs every evaluation
#: (a program with the passes compiles about 15% slower, and small evaluations are cheap).
CONTINUE_MIN_STATES = 16


class EvaluationState(NamedTuple):
    """The reusable part of the last policy evaluation (a pytree, carried in ``scan``).

    Attributes:
        rows: the rows ``P_pi[s] = P[s, pi(s)]`` the inverse was built from, ``[S, S]``.
        inverse: ``M^{-1}`` for ``M = I - P_pi`` with column 0 replaced by ones,
            ``[S, S]``.
        policy: the policy ``pi`` whose rows these are, int32 ``[S]``.
    """

    rows: jax.Array
    inverse: jax.Array
    policy: jax.Array


def default_refresh_every(dtype) -> int:
    """Rounds between full re-inversions: 1024 in float32 (and below), 4096 in float64.

    Measured on a 100-state GARNET trajectory in float32 (3,000 rounds, 10 policy
    switches, no refresh): ``max |M^{-1} M - I|`` grew to 5e-5 while the refined
    solutions stayed within 7e-7 of a full LU solve, the same as with a refresh every
    64 rounds. With a period of order ``S`` the amortised ``O(S^3)`` re-inversion is
    ``O(S^2)`` per round up to ``S`` of about the period.
    """
    return 4096 if jnp.finfo(dtype).bits >= 64 else 1024


def _evaluation_matrix(rows: jax.Array) -> jax.Array:
    num_states = rows.shape[-1]
    matrix = jnp.eye(num_states, dtype=rows.dtype) - rows
    return matrix.at[:, 0].set(1)


def _exact(rows: jax.Array, policy: jax.Array) -> EvaluationState:
    """Full ``O(S^3)`` inversion of the evaluation matrix built from ``rows``.

    Both outputs pass through a product with the identity matrix, which is exact
    (each entry is ``x * 1`` plus zeros) and costs ``2 S^3`` flops per refresh. It is
    there for speed: LAPACK works on column-major arrays, and XLA gave the refresh
    ``lax.cond`` LAPACK's column-major layout for these outputs, so that its other
    branch, taken on every round but the refresh rounds, transposed the ``S x S`` rows
    and inverse there and back (four copies per round, two thirds of a round's time at
    S = 1000). Ending the branch with matrix products gives it the row-major outputs
    that the rest of the planner reads.
    """
    inverse = jnp.linalg.inv(_evaluation_matrix(rows))
    eye = jnp.eye(rows.shape[-1], dtype=rows.dtype)
    return EvaluationState(jnp.matmul(rows, eye, precision=lax.Precision.HIGHEST),
                           jnp.matmul(inverse, eye, precision=lax.Precision.HIGHEST), policy)


@jax.jit
def init_evaluation(P: ArrayLike, R: ArrayLike, policy: ArrayLike) -> EvaluationState:
    """Evaluation state of ``policy``: the exact inverse of its evaluation matrix.

    Args:
        P: transition probabilities, ``[S, A, S]``.
        R: rewards, ``[S, A]`` (only its dtype and shape are used).
        policy: int ``[S]``.

    Returns:
        An :class:`EvaluationState` for :func:`incremental_policy_iteration`.
    """
    P = jnp.asarray(P)
    policy = jnp.asarray(policy, jnp.int32)
    rows, _ = policy_rows(P, jnp.asarray(R, P.dtype), policy)
    return _exact(rows, policy)


def _sherman_morrison(state: EvaluationState, s, new_row, active=True) -> EvaluationState:
    """Row ``s`` of ``P_pi`` becomes ``new_row``: one rank-one update, ``O(S^2)``.

    With ``active`` false the update is an exact no-op (``u = 0``), so that it can run
    unconditionally, without a ``lax.cond`` or ``select`` over the inverse under ``vmap``.
    """
    # M' = M + e_s u^T: row s of M is e_s - P_pi[s] with column 0 set to 1.
    u = jnp.where(active, (state.rows[s] - new_row).at[0].set(0), 0)
    column = state.inverse[:, s]  # M^{-1} e_s
    row = jnp.matmul(u, state.inverse, precision=lax.Precision.HIGHEST)  # u^T M^{-1}
    inverse = state.inverse - jnp.outer(column, row / (1 + row[s]))
    rows = state.rows.at[s].set(jnp.where(active, new_row, state.rows[s]))
    return EvaluationState(rows, inverse, state.policy)


def _update(state: EvaluationState, P: jax.Array, policy: jax.Array,
            changed: jax.Array) -> EvaluationState:
    """Sherman–Morrison updates of ``state`` to the rows ``P[s, policy[s]]``.

    ``changed`` (bool ``[S]``) marks the rows that may differ from ``state.rows``; one
    rank-one update per marked row, lowest index first, each ``O(S^2)`` (a row that did
    not change gives ``u = 0``, an exact no-op). The first update runs outside the loop:
    a round usually changes at most one row, and under ``vmap`` a ``while_loop`` selects
    its whole carry (the ``S x S`` inverse) on every iteration. (A blocked Woodbury
    update of several rows at once was slower on CPU at S = 1000: XLA's small dense
    solves and rank-8 products cost more than the passes they save.)
    """

    def body(carry):
        changed, state = carry
        s = jnp.argmax(changed)  # the lowest changed row
        state = _sherman_morrison(state, s, P[s, policy[s]], changed[s])
        return changed.at[s].set(False), state

    carry = (changed, state)
    if P.shape[-1] >= UNROLL_MIN_STATES:
        carry = body(carry)
    changed, state = lax.while_loop(lambda carry: jnp.any(carry[0]), body, carry)
    return state._replace(policy=policy)


def _solve(state: EvaluationState, r_pi: jax.Array):
    """Gain and bias from the inverse, with one step of iterative refinement."""
    rows, inverse = state.rows, state.inverse

    def residual(x):
        bias = x.at[0].set(0)
        return r_pi - x[0] - bias + jnp.matmul(rows, bias, precision=lax.Precision.HIGHEST)

    x = jnp.matmul(inverse, r_pi, precision=lax.Precision.HIGHEST)
    x = x + jnp.matmul(inverse, residual(x), precision=lax.Precision.HIGHEST)
    ok = jnp.all(jnp.isfinite(x))
    x = jnp.where(ok, x, 0)
    return x[0], x.at[0].set(0), ok


def _check_chunk(chunk) -> None:
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int)
                              or chunk < 1):
        raise ValueError(f"chunk must be a positive int, None or 'auto', got {chunk!r}")


class _Carry(NamedTuple):
    policy: jax.Array
    candidate: jax.Array
    gain: jax.Array
    bias: jax.Array
    evaluation: EvaluationState
    step: jax.Array
    status: jax.Array


def incremental_policy_iteration(
    P: ArrayLike,
    R: ArrayLike,
    mask: ArrayLike,
    init_policy: ArrayLike,
    evaluation: EvaluationState,
    refresh: ArrayLike = False,
    *,
    changed_pair: tuple[ArrayLike, ArrayLike] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    rtol: float | None = None,
    chunk: int | None = CONTINUE_CHUNK,
) -> tuple[Solution, EvaluationState]:
    r"""Warm-started policy iteration whose evaluations update the previous inverse.

    The same iteration as :func:`jaxmdp.policy_iteration` (greedy improvement keeping
    the current action within ``tol``, else the lowest index within ``tol``; stop when
    the policy is stable), with each evaluation ``M x = r_pi`` solved by Sherman–Morrison
    updates of ``evaluation.inverse`` for the rows of ``P_pi`` that changed since it was
    built (``O(S^2)`` each) plus one step of iterative refinement. With ``refresh`` the
    inverse of the warm start's matrix is first recomputed from scratch (``O(S^3)``).

    Which rows changed: by default every row of ``P_pi`` is compared with
    ``evaluation.rows`` (any change of ``P`` is handled). An agent may know
    better: since ``evaluation`` was built, ``P`` changed at most in the row
    ``changed_pair = (x, a)`` (``x < 0``: none), so only that row and the states where the
    policy differs from ``evaluation.policy`` are updated, and nothing of size ``S x S``
    is compared or gathered.

    Under ``vmap`` (the replications of a regret experiment) a ``while_loop`` runs until
    its last row stops, so one replication whose policy switched would make the whole
    batch evaluate again. With ``chunk`` (default :data:`CONTINUE_CHUNK`) the first
    evaluation runs for every row and the later ones only for the rows whose policy
    changed, gathered ``chunk`` at a time (:func:`jaxmdp.agents.batching.cond_chunked`),
    from :data:`CONTINUE_MIN_STATES` (16) states on; with ``chunk=None``, or fewer
    states, every evaluation runs in one loop over the batch. Each row runs the
    same evaluations either way; their last bits can round differently in a batch of
    another width.

    Intended for MDPs whose every policy is unichain, such as the estimate
    ``(N + 1) / (n + S)`` (all entries positive). A non-finite evaluation stops the
    iteration with ``status == SINGULAR`` and ``gain = bias = 0``, as in
    :func:`jaxmdp.policy_iteration`. Not differentiable.

    Args:
        P: transition probabilities, ``[S, A, S]``.
        R: rewards, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``, non-empty in every state.
        init_policy: warm start, int ``[S]``; entries out of range or not in ``mask``
            are replaced by the admissible action of largest reward.
        evaluation: the :class:`EvaluationState` of an earlier evaluation (any policy,
            any ``P`` of the same shape), e.g. from :func:`init_evaluation`.
        refresh: bool scalar; recompute the inverse from scratch before iterating.
        changed_pair: ``(x, a)`` int scalars, the only row of ``P`` that may differ from
            the ``P`` that ``evaluation`` was built from (``x < 0``: none); ``None``
            compares every row.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps`` of the dtype.
        chunk: under ``vmap``, the rows of one pass of the evaluations after the first (a
            positive int), or ``None`` for one loop over the batch.

    Returns:
        ``(solution, evaluation)``: a :class:`~jaxmdp.planning.Solution` and the state of
        its last evaluation, to pass to the next call.

    Example:
        >>> import jaxmdp as jm
        >>> import jax.numpy as jnp
        >>> from jaxmdp.planning import incremental
        >>> mdp = jm.envs.make("paper-mdp")
        >>> state = incremental.init_evaluation(mdp.P, mdp.R, jnp.zeros(3, jnp.int32))
        >>> sol, state = incremental.incremental_policy_iteration(
        ...     mdp.P, mdp.R, mdp.mask, jnp.zeros(3, jnp.int32), state)
        >>> sol.policy.tolist()
        [0, 1, 0]
    """
    _check_chunk(chunk)
    P = jnp.asarray(P)
    R = jnp.asarray(R, P.dtype)
    mask = jnp.asarray(mask, bool)
    num_states = P.shape[-1]
    rtol = default_rtol(P.dtype, num_states) if rtol is None else rtol
    policy0 = initial_policy(R, mask, jnp.asarray(init_policy)).astype(jnp.int32)
    evaluation = lax.cond(jnp.asarray(refresh, bool),
                          lambda ev: _exact(policy_rows(P, R, policy0)[0], policy0),
                          lambda ev: ev, evaluation)
    if changed_pair is None:
        changed = jnp.any(policy_rows(P, R, policy0)[0] != evaluation.rows, axis=-1)
    else:
        x, a = (jnp.asarray(i, jnp.int32) for i in changed_pair)
        states = jnp.arange(num_states)
        changed = (policy0 != evaluation.policy) | ((states == x) & (policy0 == a))

    def evaluate_and_improve(P, R, mask, policy, evaluation, changed, step):
        evaluation = _update(evaluation, P, policy, changed)
        r_pi = jnp.take_along_axis(R, policy[:, None], axis=1)[:, 0]
        gain, bias, ok = _solve(evaluation, r_pi)
        candidate = improve(P, R, mask, bias, policy, rtol)
        stable = jnp.all(candidate == policy)
        status = jnp.where(ok, jnp.where(stable, Status.CONVERGED, RUNNING),
                           Status.SINGULAR)
        return _Carry(policy, candidate, gain, bias, evaluation, step + 1,
                      status.astype(jnp.int32))

    def cond_fun(carry: _Carry) -> jax.Array:
        return (carry.status == RUNNING) & (carry.step < max_steps)

    def iterate(carry: _Carry, P, R, mask) -> _Carry:
        # The evaluations after the first: each updates the states where the policy
        # switched.
        def body(carry: _Carry) -> _Carry:
            policy = carry.candidate
            return evaluate_and_improve(P, R, mask, policy, carry.evaluation,
                                        policy != carry.evaluation.policy, carry.step)

        return lax.while_loop(cond_fun, body, carry)

    step0 = jnp.array(0, jnp.int32)
    passes = chunk is not None and num_states >= CONTINUE_MIN_STATES
    if passes or num_states >= UNROLL_MIN_STATES:
        # The first evaluation runs outside the loop: warm-started, it is usually the only
        # one, and under vmap a while_loop selects its whole carry on every iteration.
        # With the passes, the others run only for the replications whose policy changed,
        # ``chunk`` at a time.
        first = evaluate_and_improve(P, R, mask, policy0, evaluation, changed, step0)
        final = (cond_chunked(cond_fun(first), iterate, lambda carry, *_: carry, first, P, R,
                              mask, chunk=chunk) if passes else iterate(first, P, R, mask))
    else:
        # The same evaluations in one loop: the first takes ``changed``, the others the
        # states where the policy switched.
        def body(carry: _Carry) -> _Carry:
            policy = carry.candidate
            moved = jnp.where(carry.step == 0, changed, policy != carry.evaluation.policy)
            return evaluate_and_improve(P, R, mask, policy, carry.evaluation, moved,
                                        carry.step)

        start = _Carry(policy0, policy0, jnp.zeros((), P.dtype),
                       jnp.zeros(num_states, P.dtype), evaluation, step0,
                       jnp.array(RUNNING, jnp.int32))
        final = lax.while_loop(cond_fun, body, start)
    status = jnp.where(final.status == RUNNING, Status.MAX_STEPS, final.status)
    solution = Solution(final.gain, final.bias, final.policy, final.step,
                        status.astype(jnp.int32))
    return solution, final.evaluation


def incremental_planner(*, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None,
                        chunk: int | None | str = "auto") -> Planner:
    """The incremental planner: :func:`incremental_policy_iteration` behind
    :class:`~jaxmdp.planning.Planner`.

    Its state is ``(policy, evaluation)``: the warm start (the last solution's policy)
    and the :class:`EvaluationState` of the last evaluation. ``update`` solves
    ``change.model`` warm-started, re-inverting first when ``change.refresh`` is set and
    otherwise updating only the row ``change.changed_pair`` and the states whose action
    changed. Intended for models whose every policy is unichain, such as the estimate
    ``(N + 1) / (n + S)``.

    Args:
        max_steps: maximum number of policy evaluations per update, a positive int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps`` of the dtype.
        chunk: under ``vmap``, the rows per pass of the evaluations after the first
            (:func:`incremental_policy_iteration`), or ``None`` (one loop over the
            batch); ``"auto"`` (default) is chosen by the backend when the planner is
            built: :data:`CONTINUE_CHUNK` on a CPU (a pass costs in proportion to its
            rows), ``None`` on an accelerator (one pass over the batch costs what one row
            does, and every pass adds loop trips, each a kernel launch and a host wait).

    Returns:
        A :class:`~jaxmdp.planning.Planner`; calls with equal arguments return the same
        object (so an agent holding it compiles once).

    Raises:
        ValueError: if ``chunk`` is neither a positive int nor None.

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import planning
        >>> planner = planning.incremental_planner()
        >>> mdp = jm.envs.make("paper-mdp")
        >>> state = planner.init(mdp)
        >>> sol, state = planner.update(state, planning.ModelChange(mdp))
        >>> sol.policy.tolist()
        [0, 1, 0]
    """
    if isinstance(chunk, str) and chunk == "auto":
        chunk = CONTINUE_CHUNK if jax.default_backend() == "cpu" else None
    _check_chunk(chunk)  # before the cache, where chunk=True would find chunk=1's planner
    return _incremental_planner(max_steps, rtol, chunk)


@functools.cache
def _incremental_planner(max_steps: int, rtol: float | None, chunk: int | None) -> Planner:
    def init(model: MDP):
        policy = jnp.argmax(jnp.asarray(model.mask, bool), axis=1).astype(jnp.int32)
        return policy, init_evaluation(model.P, model.R, policy)

    def update(state, change):  # change: a ModelChange
        policy, evaluation = state
        model = change.model
        pair = None if change.changed_pair is None else (
            jnp.where(change.refresh, -1, change.changed_pair[0]), change.changed_pair[1])
        solution, evaluation = incremental_policy_iteration(
            model.P, model.R, model.mask, policy, evaluation, change.refresh,
            changed_pair=pair, max_steps=max_steps, rtol=rtol, chunk=chunk)
        return solution, (solution.policy.astype(jnp.int32), evaluation)

    return Planner(init, update)
