r"""Average-reward planning: gain, bias, optimal policy, gaps and the regret lower bound.

Solves the optimality equations of Cowan, Katehakis & Pirutinsky (2019), eq. (1),

.. math::

    \phi + v_x = \max_{a \in A(x)} \Big( r_{x,a} + \sum_y p^a_{x,y} v_y \Big),
    \qquad v_0 = 0,

by policy iteration inside ``lax.while_loop``, and derives the quantities of section 2.2:
the gaps :math:`\Delta(x, a)` and the Burnetas–Katehakis (1997) regret lower-bound
constant :math:`\sum_{x} \sum_{a \notin O(x)} \Delta(x, a) / \mathbf{K}_{x,a}`.

Everything is written for one MDP and batches with ``vmap``. Gain and bias are
differentiable in ``P`` and ``R`` at the (fixed) optimal policy by implicit
differentiation of the policy-evaluation equations; the iterations are never
differentiated.
"""

from __future__ import annotations

import enum
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax.typing import ArrayLike

from jaxmdp.indices.kl import kinf
from jaxmdp.mdp import MDP

__all__ = [
    "PlanningSolution",
    "PlanningStatus",
    "RegretLowerBound",
    "gaps",
    "policy_iteration",
    "regret_lower_bound",
    "solve_average_reward",
]

DEFAULT_MAX_STEPS = 1000

_HIGHEST = jax.lax.Precision.HIGHEST


class PlanningStatus(enum.IntEnum):
    """Outcome of :func:`policy_iteration` (stored as an int32 array in ``status``).

    Attributes:
        CONVERGED: the policy is greedy with respect to its own bias (within the
            tolerance): ``(gain, bias)`` solve the optimality equations, so the policy is
            average-reward optimal from every initial state.
        MAX_STEPS: ``max_steps`` evaluations ran without convergence; the returned
            ``(gain, bias, policy)`` are the last evaluated policy and its exact values.
        SINGULAR: the evaluation system of the returned policy is singular (the policy
            has more than one recurrent class, i.e. the MDP is multichain); iteration
            stopped there and ``gain`` and ``bias`` are set to 0.
    """

    CONVERGED = 0
    MAX_STEPS = 1
    SINGULAR = 2


_RUNNING = -1


class PlanningSolution(NamedTuple):
    """Result of :func:`policy_iteration`.

    Attributes:
        gain: optimal average reward :math:`\\phi`, shape ``[]``.
        bias: relative values :math:`v`, shape ``[S]``, with ``bias[0] == 0``.
        policy: an optimal deterministic policy, int32, shape ``[S]``.
        num_steps: number of policy evaluations performed (each followed by one
            improvement check), int32, shape ``[]``; 1 for a warm start that is already
            optimal.
        status: a :class:`PlanningStatus` value, int32, shape ``[]``.
    """

    gain: jax.Array
    bias: jax.Array
    policy: jax.Array
    num_steps: jax.Array
    status: jax.Array


class RegretLowerBound(NamedTuple):
    """Result of :func:`regret_lower_bound`.

    Attributes:
        constant: :math:`\\sum_{x, a \\notin O(x)} \\Delta(x, a) / \\mathbf{K}_{x,a}`,
            shape ``[]``; the regret of any uniformly fast policy grows at least like
            ``constant * ln T``.
        K: :math:`\\mathbf{K}_{x,a}` for every pair, shape ``[S, A]``: ``kinf`` on
            suboptimal pairs, 0 on optimal pairs, ``+inf`` on inadmissible pairs.
        gaps: :math:`\\Delta(x, a)`, shape ``[S, A]``, as returned by :func:`gaps`.
    """

    constant: jax.Array
    K: jax.Array
    gaps: jax.Array


class _Carry(NamedTuple):
    policy: jax.Array  # the last evaluated policy
    candidate: jax.Array  # the policy to evaluate next
    gain: jax.Array
    bias: jax.Array
    lu: jax.Array
    piv: jax.Array
    ok: jax.Array
    step: jax.Array
    status: jax.Array


def _default_rtol(dtype, num_states: int) -> float:
    return 32.0 * math.sqrt(num_states) * float(jnp.finfo(dtype).eps)


def _effective_mask(mdp_mask: jax.Array, mask: jax.Array | None) -> jax.Array:
    if mask is None:
        return mdp_mask
    mask = jnp.asarray(mask)
    restricted = jnp.logical_and(mdp_mask, mask.astype(bool))
    empty = ~jnp.any(restricted, axis=-1, keepdims=True)
    return jnp.where(empty, mdp_mask, restricted)


def _greedy_reward_policy(R: jax.Array, mask: jax.Array) -> jax.Array:
    return jnp.argmax(jnp.where(mask, R, -jnp.inf), axis=-1).astype(jnp.int32)


def _initial_policy(R: jax.Array, mask: jax.Array, init_policy) -> jax.Array:
    greedy = _greedy_reward_policy(R, mask)
    if init_policy is None:
        return greedy
    init_policy = jnp.asarray(init_policy)
    num_actions = R.shape[-1]
    clipped = jnp.clip(init_policy, 0, num_actions - 1).astype(jnp.int32)
    admissible = jnp.take_along_axis(mask, clipped[:, None], axis=1)[:, 0]
    valid = (init_policy >= 0) & (init_policy < num_actions) & admissible
    return jnp.where(valid, clipped, greedy)


def _policy_rows(P: jax.Array, R: jax.Array, policy: jax.Array):
    P_pi = jnp.take_along_axis(P, policy[:, None, None], axis=1)[:, 0, :]
    r_pi = jnp.take_along_axis(R, policy[:, None], axis=1)[:, 0]
    return P_pi, r_pi


def _evaluate(P: jax.Array, R: jax.Array, policy: jax.Array):
    """Gain and bias of a fixed policy from one LU solve of the evaluation system.

    The unichain evaluation equations ``gain + bias = r_pi + P_pi bias`` with
    ``bias[0] = 0`` are the S x S system ``M x = r_pi`` where ``M = I - P_pi`` with its
    column 0 (the coefficient of ``bias[0] = 0``) replaced by ones (the coefficient of
    ``gain``), and ``x = (gain, bias[1], ..., bias[S-1])``.
    """
    num_states = P.shape[-1]
    P_pi, r_pi = _policy_rows(P, R, policy)
    M = jnp.eye(num_states, dtype=P.dtype) - P_pi
    M = M.at[:, 0].set(1)
    lu, piv = jsl.lu_factor(M)
    pivots = jnp.abs(jnp.diagonal(lu))
    threshold = num_states * jnp.finfo(P.dtype).eps * jnp.max(pivots)
    x = jsl.lu_solve((lu, piv), r_pi)
    # `not (min > threshold)` is also True when the pivots are NaN.
    ok = (jnp.min(pivots) > threshold) & jnp.all(jnp.isfinite(x))
    x = jnp.where(ok, x, 0)
    gain = x[0]
    bias = x.at[0].set(0)
    return gain, bias, lu, piv, ok


def _q_values(P: jax.Array, R: jax.Array, bias: jax.Array) -> jax.Array:
    return R + jnp.einsum("xay,y->xa", P, bias, precision=_HIGHEST)


def _tolerance(R: jax.Array, mask: jax.Array, bias: jax.Array, rtol: float) -> jax.Array:
    reward_scale = jnp.max(jnp.where(mask, jnp.abs(R), 0))
    return rtol * (1 + reward_scale + jnp.max(bias) - jnp.min(bias))


def _improve(P, R, mask, bias, policy, rtol):
    """Greedy step that keeps the current action when it is within `tol` of the best."""
    q = jnp.where(mask, _q_values(P, R, bias), -jnp.inf)
    best = jnp.max(q, axis=-1, keepdims=True)
    near_best = q >= best - _tolerance(R, mask, bias, rtol)
    keep = jnp.take_along_axis(near_best, policy[:, None], axis=1)[:, 0]
    lowest = jnp.argmax(near_best, axis=-1).astype(jnp.int32)
    return jnp.where(keep, policy, lowest)


@jax.custom_jvp
def _with_evaluation_derivatives(P, R, policy, gain, bias, lu, piv, ok):
    """Returns ``(gain, bias)`` unchanged; its JVP is that of the evaluation system."""
    del P, R, policy, lu, piv, ok
    return gain, bias


@_with_evaluation_derivatives.defjvp
def _with_evaluation_derivatives_jvp(primals, tangents):
    # Implicit differentiation of M(P) x = r_pi(R) at the fixed policy:
    # M dx = dr_pi + dP_pi bias, solved with the LU factors of the forward pass. The
    # tangent is linear in (dP, dR), so reverse mode follows by transposition.
    P, R, policy, gain, bias, lu, piv, ok = primals
    dP, dR = tangents[0], tangents[1]
    dP_pi, dr_pi = _policy_rows(dP, dR, policy)
    rhs = dr_pi + jnp.matmul(dP_pi, bias, precision=_HIGHEST)
    # A singular system has no derivative: use identity factors so that neither the
    # tangent nor its transpose produces NaN, then return zero.
    eye = jnp.eye(lu.shape[-1], dtype=lu.dtype)
    safe_lu = jnp.where(ok, lu, eye)
    safe_piv = jnp.where(ok, piv, jnp.arange(piv.shape[-1], dtype=piv.dtype))
    dx = jsl.lu_solve((safe_lu, safe_piv), rhs)
    dx = jnp.where(ok, dx, 0)
    return (gain, bias), (dx[0], dx.at[0].set(0))


def _iterate(P, R, mask, init_policy, max_steps, rtol) -> PlanningSolution:
    num_states = P.shape[-1]
    P_const = jax.lax.stop_gradient(P)
    R_const = jax.lax.stop_gradient(R)

    def cond_fun(carry: _Carry) -> jax.Array:
        return (carry.status == _RUNNING) & (carry.step < max_steps)

    def body_fun(carry: _Carry) -> _Carry:
        policy = carry.candidate
        gain, bias, lu, piv, ok = _evaluate(P_const, R_const, policy)
        candidate = _improve(P_const, R_const, mask, bias, policy, rtol)
        stable = jnp.all(candidate == policy)
        status = jnp.where(
            ok, jnp.where(stable, PlanningStatus.CONVERGED, _RUNNING), PlanningStatus.SINGULAR
        )
        return _Carry(
            policy, candidate, gain, bias, lu, piv, ok, carry.step + 1, status.astype(jnp.int32)
        )

    init = _Carry(
        policy=init_policy,
        candidate=init_policy,
        gain=jnp.zeros((), P.dtype),
        bias=jnp.zeros((num_states,), P.dtype),
        lu=jnp.eye(num_states, dtype=P.dtype),
        piv=jnp.arange(num_states, dtype=jnp.int32),
        ok=jnp.array(False),
        step=jnp.array(0, jnp.int32),
        status=jnp.array(_RUNNING, jnp.int32),
    )
    final = jax.lax.while_loop(cond_fun, body_fun, init)
    status = jnp.where(final.status == _RUNNING, PlanningStatus.MAX_STEPS, final.status)
    gain, bias = _with_evaluation_derivatives(
        P, R, final.policy, final.gain, final.bias, final.lu, final.piv, final.ok
    )
    return PlanningSolution(gain, bias, final.policy, final.step, status.astype(jnp.int32))


def _float_dtype(P, R):
    dtype = jnp.result_type(P, R)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def _policy_iteration(P, R, base_mask, mask, init_policy, max_steps, rtol) -> PlanningSolution:
    """Normalises optional arguments to arrays, so that one program serves all calls."""
    dtype = _float_dtype(P, R)
    num_states = jnp.shape(P)[-1]
    if base_mask is None:
        base_mask = np.ones(jnp.shape(R), bool)
    if mask is None:
        mask = base_mask
    if init_policy is None:
        init_policy = np.full(num_states, -1, np.int32)  # out of range: the default start
    rtol = _default_rtol(dtype, num_states) if rtol is None else rtol
    return _policy_iteration_jit(
        jnp.asarray(P, dtype),
        jnp.asarray(R, dtype),
        jnp.asarray(base_mask, bool),
        jnp.asarray(mask, bool),
        jnp.asarray(init_policy, jnp.int32),
        jnp.asarray(max_steps, jnp.int32),
        jnp.asarray(rtol, dtype),
    )


@jax.jit
def _policy_iteration_jit(P, R, base_mask, mask, init_policy, max_steps, rtol):
    # One compiled program per shape and dtype: max_steps and rtol are traced values.
    mask = _effective_mask(base_mask, mask)
    init = _initial_policy(R, mask, init_policy)
    return _iterate(P, R, mask, init, max_steps, rtol)


def _check_arguments(P, R, mask, init_policy, max_steps, rtol) -> None:
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive Python int, got {max_steps!r}")
    if rtol is not None and not (isinstance(rtol, float | int) and rtol >= 0):
        raise ValueError(f"rtol must be a non-negative Python float or None, got {rtol!r}")
    P_shape, R_shape = jnp.shape(P), jnp.shape(R)
    if len(P_shape) != 3 or P_shape[0] != P_shape[2] or R_shape != P_shape[:2]:
        raise ValueError(
            f"P and R must have shapes [S, A, S] and [S, A], got {P_shape} and {R_shape}"
        )
    if mask is not None and jnp.shape(mask) != R_shape:
        raise ValueError(f"mask must have shape {R_shape}, got shape {jnp.shape(mask)}")
    if init_policy is not None:
        dtype = jnp.result_type(init_policy)
        if jnp.shape(init_policy) != R_shape[:1] or not jnp.issubdtype(dtype, jnp.integer):
            raise ValueError(
                f"init_policy must be an integer array of shape {R_shape[:1]}, got "
                f"{dtype} array of shape {jnp.shape(init_policy)}"
            )


def policy_iteration(
    P: ArrayLike,
    R: ArrayLike,
    mask: ArrayLike | None = None,
    init_policy: ArrayLike | None = None,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    rtol: float | None = None,
) -> PlanningSolution:
    r"""Average-reward policy iteration with a step counter and a status flag.

    Repeats (Puterman 1994, section 8.6): evaluate the current policy :math:`\pi` by
    solving

    .. math::

        \phi + v_x = r_{x,\pi(x)} + \sum_y p^{\pi(x)}_{x,y} v_y, \qquad v_0 = 0,

    as one ``S x S`` linear system (``jnp``/LAPACK LU of ``I - P_pi`` with column 0,
    the coefficient of :math:`v_0 = 0`, replaced by ones, the coefficient of
    :math:`\phi`), then improve greedily. Tie-breaking is deterministic: the current
    action is kept while its Q-value is within ``tol`` of the best, otherwise the
    lowest-index action within ``tol`` of the best is taken, so warm starts never cycle
    and an optimal warm start costs one evaluation and one improvement check. Here
    ``tol = rtol * (1 + max|R| + span(bias))``.

    The loop is a ``lax.while_loop``; it works under ``jit`` and ``vmap``. The result is
    exact (to rounding) whenever every policy it visits is unichain, in particular when
    all entries of ``P`` are positive, as for the paper's parameter space and the
    estimate ``(N + 1) / (n + S)``. ``status == CONVERGED`` certifies optimality from
    every initial state even for multichain MDPs (a constant-gain solution of the
    optimality equations). If a visited policy has several recurrent classes its
    evaluation system is singular (detected by an LU pivot below ``S * eps * max
    pivot``): iteration stops with ``status == SINGULAR``, ``gain = 0``, ``bias = 0``
    and zero derivatives, never NaN; pass a unichain ``init_policy`` to avoid it.

    Gain and bias are differentiable in ``P`` and ``R`` at the returned (fixed) policy
    by implicit differentiation: the loop runs under ``stop_gradient`` and a
    ``custom_jvp`` differentiates the evaluation equations, reusing the LU factors of the
    last evaluation (``M dx = dr_pi + dP_pi bias``). The iterations are never
    differentiated. ``P`` is treated as unconstrained: project onto row-sum-zero
    directions for derivatives within the simplex.

    Args:
        P: transition probabilities, shape ``[S, A, S]`` (rows of admissible pairs sum
            to 1).
        R: rewards, shape ``[S, A]``.
        mask: admissible actions, bool, shape ``[S, A]``; ``None`` means all. A state
            whose row is all False is treated as having every action admissible.
        init_policy: warm start, integer, shape ``[S]``; entries that are out of range
            or inadmissible are replaced by the default. Default: the admissible action
            of largest immediate reward (lowest index among ties).
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps`` of the dtype.

    Returns:
        A :class:`PlanningSolution` ``(gain, bias, policy, num_steps, status)``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.examples.paper_mdp()
        >>> sol = jm.policy_iteration(mdp.P, mdp.R, mdp.mask)
        >>> sol.policy.tolist(), int(sol.status) == jm.PlanningStatus.CONVERGED
        ([0, 1, 0], True)
    """
    _check_arguments(P, R, mask, init_policy, max_steps, rtol)
    return _policy_iteration(P, R, None, mask, init_policy, max_steps, rtol)


def solve_average_reward(
    mdp: MDP,
    mask: ArrayLike | None = None,
    init_policy: ArrayLike | None = None,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    rtol: float | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    r"""Optimal gain, bias and policy of an average-reward MDP (paper, eq. (1)).

    Solves :math:`\phi + v_x = \max_{a \in A(x)} (r_{x,a} + \sum_y p^a_{x,y} v_y)` with
    :math:`v_0 = 0` by :func:`policy_iteration`, whose docstring describes tie-breaking,
    the multichain behaviour (``gain = 0``, ``bias = 0`` on a singular evaluation; call
    :func:`policy_iteration` to see the status) and the implicit differentiation of
    ``gain`` and ``bias`` with respect to ``mdp.P`` and ``mdp.R``.

    Args:
        mdp: the :class:`~jaxmdp.MDP`; ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        mask: optional extra restriction, bool, shape ``[S, A]``: the admissible set is
            ``mdp.mask & mask``, except in states where that is empty, which keep
            ``mdp.mask`` (the convention of the good-action sets).
        init_policy: warm start, integer, shape ``[S]`` (see :func:`policy_iteration`).
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.

    Returns:
        ``(gain, bias, policy)`` with shapes ``[]``, ``[S]`` and ``[S]`` (int32), and
        ``bias[0] == 0``.

    Example:
        >>> import jax
        >>> import jaxmdp as jm
        >>> gain, bias, policy = jm.solve_average_reward(jm.examples.paper_mdp())
        >>> policy.tolist()
        [0, 1, 0]
        >>> dgain_dR = jax.grad(lambda R: jm.solve_average_reward(
        ...     jm.MDP.unchecked(jm.examples.paper_mdp().P, R))[0])(
        ...     jm.examples.paper_mdp().R)
    """
    sol = _solve(mdp, mask, init_policy, max_steps=max_steps, rtol=rtol)
    return sol.gain, sol.bias, sol.policy


def _check_mdp(mdp: MDP, mask, init_policy, max_steps: int, rtol) -> None:
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    _check_arguments(mdp.P, mdp.R, mask, init_policy, max_steps, rtol)


def _solve(mdp: MDP, mask, init_policy, *, max_steps: int, rtol) -> PlanningSolution:
    _check_mdp(mdp, mask, init_policy, max_steps, rtol)
    return _policy_iteration(mdp.P, mdp.R, mdp.mask, mask, init_policy, max_steps, rtol)


def gaps(mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None) -> jax.Array:
    r"""Gaps :math:`\Delta(x, a) = \phi + v_x - r_{x,a} - \sum_y p^a_{x,y} v_y` (section 2.2).

    The expected loss of taking ``a`` once in ``x`` (the paper's
    :math:`\Delta(x, a, A, P)`), from the optimal gain and bias of
    :func:`solve_average_reward`. Values within the tie tolerance of 0 (including
    every optimal action) are exactly 0; inadmissible pairs are ``+inf``. Meaningful when
    :func:`policy_iteration` converges (always, if every policy is unichain); after a
    singular evaluation they are computed from ``gain = bias = 0``.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.

    Returns:
        ``Delta``, shape ``[S, A]``; 0 on optimal actions, positive on suboptimal ones,
        ``+inf`` on inadmissible ones. Differentiable in ``P`` and ``R`` (at the fixed
        optimal policy) where positive and finite.

    Example:
        >>> import jaxmdp as jm
        >>> jm.gaps(jm.examples.paper_mdp()).shape
        (3, 2)
    """
    return _solve_with_gaps(mdp, max_steps, rtol)[1]


def _solve_with_gaps(mdp: MDP, max_steps: int, rtol) -> tuple[PlanningSolution, jax.Array]:
    _check_mdp(mdp, None, None, max_steps, rtol)
    sol = _policy_iteration(mdp.P, mdp.R, mdp.mask, None, None, max_steps, rtol)
    rtol = _default_rtol(sol.bias.dtype, mdp.num_states) if rtol is None else rtol
    return sol, _gaps_from_solution(mdp, sol, jnp.asarray(rtol, sol.bias.dtype))


@jax.jit
def _gaps_from_solution(mdp: MDP, sol: PlanningSolution, rtol: jax.Array) -> jax.Array:
    P = jnp.asarray(mdp.P, sol.bias.dtype)
    R = jnp.asarray(mdp.R, sol.bias.dtype)
    q = _q_values(P, R, sol.bias)
    delta = sol.gain + sol.bias[:, None] - q
    delta = jnp.where(delta <= _tolerance(R, mdp.mask, sol.bias, rtol), 0, delta)
    return jnp.where(mdp.mask, delta, jnp.inf)


def regret_lower_bound(
    mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None
) -> RegretLowerBound:
    r"""Burnetas–Katehakis (1997) regret lower-bound constant (paper, section 2.2).

    .. math::

        \liminf_T \frac{R_\pi(T)}{\ln T} \ge
        \sum_x \sum_{a \notin O(x)} \frac{\Delta(x, a)}{\mathbf{K}_{x,a}}, \qquad
        \mathbf{K}_{x,a} = \mathrm{kinf}\big(p^a_x, v, \phi + v_x - r_{x,a}\big),

    the smallest KL divergence from :math:`p^a_x` to a law under which ``a`` would
    match the optimal value in ``x`` (with ``v`` and :math:`\phi` the optimal bias and
    gain). Pairs with :math:`\mathbf{K} = +\infty` (no such law: the level is at least
    :math:`\max v`) contribute 0; a suboptimal pair with :math:`\mathbf{K} = 0` (possible
    only through rounding for a vanishing gap) contributes ``+inf``.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.

    Returns:
        :class:`RegretLowerBound` ``(constant, K, gaps)``: shapes ``[]``, ``[S, A]``,
        ``[S, A]``. ``K`` is 0 on optimal pairs and ``+inf`` on inadmissible ones;
        ``gaps`` as in :func:`gaps`.

    Example:
        >>> import jaxmdp as jm
        >>> bound = jm.regret_lower_bound(jm.examples.paper_mdp())
        >>> bound.K.shape
        (3, 2)
    """
    sol, delta = _solve_with_gaps(mdp, max_steps, rtol)
    return _lower_bound_from_solution(mdp, sol, delta)


@jax.jit
def _lower_bound_from_solution(mdp: MDP, sol: PlanningSolution, delta) -> RegretLowerBound:
    P = jnp.asarray(mdp.P, sol.bias.dtype)
    level = sol.gain + sol.bias[:, None] - mdp.R
    K = kinf(P, jnp.broadcast_to(sol.bias, P.shape), level)
    suboptimal = mdp.mask & (delta > 0)
    K = jnp.where(suboptimal, K, jnp.where(mdp.mask, 0, jnp.inf))
    finite = suboptimal & (K > 0) & jnp.isfinite(K)
    ratio = jnp.where(finite, delta, 0) / jnp.where(finite, K, 1)
    ratio = jnp.where(suboptimal & (K <= 0), jnp.inf, ratio)
    return RegretLowerBound(jnp.sum(ratio), K, delta)
