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

Supported MDP classes:

* :func:`policy_iteration` (the jitted core) solves every finite MDP. Unichain policy
  iteration runs first; if it meets a policy with several recurrent classes (possible
  as soon as ``P`` has zeros, e.g. grid worlds and RiverSwim), multichain policy
  iteration (Puterman 1994, section 9.2) takes over from that policy. ``CONVERGED``
  means the optimal gain is the same from every state (unichain, communicating and
  weakly communicating MDPs, or any MDP whose optimal gain does not depend on the
  start): the result is exact, with an optimal policy and a bias solving eq. (1).
  ``MULTICHAIN`` means the optimal gain depends on the initial state: the policy is
  still optimal from every state, but no scalar gain solves eq. (1).
* :func:`solve_average_reward`, :func:`gaps` and :func:`regret_lower_bound` (and
  :func:`jaxmdp.simulate`, which calls them) need a constant optimal gain; called
  eagerly on any other MDP they raise ``ValueError`` naming the states and their
  optimal gains. Under ``jit``/``vmap``/``grad`` they cannot raise and return the
  values of :class:`PlanningStatus` ``MULTICHAIN`` (the gain from state 0).
* Derivatives of gain and bias are exact when the returned optimal policy is unichain
  (always when every policy is, e.g. all entries of ``P`` positive). When it has
  several recurrent classes of equal gain (tied optima), gain and bias are not
  differentiable (the optimal gain is a maximum over the tied classes) and their
  derivatives are 0, never NaN; the same holds for ``MULTICHAIN``.
* The lower bound follows Burnetas & Katehakis (1997), whose theorem assumes every
  policy irreducible; for communicating MDPs with zero transitions it is the same
  formula, with :math:`\mathbf{K}` the infimum over all laws ``q`` on the states,
  including states where ``P[x, a]`` is 0 (``KL(p || q)`` stays finite there). When
  the optimal policy is not unique up to its recurrent class (tied optima) the bias,
  hence the gaps and ``K``, depend on which solution of eq. (1) is returned.
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
        SINGULAR: an evaluation produced non-finite values (e.g. ``P`` or ``R`` not
            finite); iteration stopped there and ``gain`` and ``bias`` are set to 0.
            (Before multichain policy iteration was added, :func:`policy_iteration`
            returned it for every policy with several recurrent classes;
            :func:`jaxmdp.incremental.incremental_policy_iteration`, which is
            unichain-only, still does.)
        MULTICHAIN: the optimal gain depends on the initial state (the MDP is
            multichain and not weakly communicating). ``policy`` is optimal from every
            initial state; ``gain`` is the optimal gain from state 0 and ``bias`` the
            bias of ``policy`` shifted so that ``bias[0] == 0``. The eager
            :func:`solve_average_reward`, :func:`gaps` and :func:`regret_lower_bound`
            raise ``ValueError`` instead.
    """

    CONVERGED = 0
    MAX_STEPS = 1
    SINGULAR = 2
    MULTICHAIN = 3


_RUNNING = -1


class PlanningSolution(NamedTuple):
    """Result of :func:`policy_iteration`.

    Attributes:
        gain: optimal average reward :math:`\\phi`, shape ``[]`` (from state 0 when
            ``status`` is ``MULTICHAIN``).
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


def _keep_or_lowest(values: jax.Array, tol: jax.Array, policy: jax.Array):
    """Per state: the current action if within ``tol`` of the best, else the lowest such.

    ``values`` is ``[S, A]`` with ``-inf`` on excluded actions. Returns the new policy
    and the ``[S, A]`` set of actions within ``tol`` of the best.
    """
    best = jnp.max(values, axis=-1, keepdims=True)
    near_best = values >= best - tol
    keep = jnp.take_along_axis(near_best, policy[:, None], axis=1)[:, 0]
    lowest = jnp.argmax(near_best, axis=-1).astype(jnp.int32)
    return jnp.where(keep, policy, lowest), near_best


def _improve(P, R, mask, bias, policy, rtol):
    """Greedy step that keeps the current action when it is within `tol` of the best."""
    q = jnp.where(mask, _q_values(P, R, bias), -jnp.inf)
    return _keep_or_lowest(q, _tolerance(R, mask, bias, rtol), policy)[0]


def _evaluate_multichain(P: jax.Array, R: jax.Array, policy: jax.Array):
    """Gain vector and bias of any policy, unichain or not (Puterman 1994, section 8.2).

    With ``A = I - P_pi``, the gain is ``g = P* r_pi`` and the bias ``h = (A + P*)^{-1}
    (r_pi - g)``, where ``P*`` (the Cesaro limit of ``P_pi^n``) is the projector onto
    ``null(A)`` along ``range(A)`` and ``A + P*`` (the inverse of the fundamental matrix)
    is nonsingular. ``(g, h)`` is the unique solution of the multichain evaluation
    equations ``(I - P_pi) g = 0``, ``g + (I - P_pi) h = r_pi``, ``h + (I - P_pi) w = 0``
    (the third is equivalent to ``P* h = 0``; it fixes ``h`` and leaves ``w`` free up to
    ``null(A)``, which is why that ``3S x 3S`` system is singular and is not solved).

    ``P*`` comes from one SVD ``A = U diag(sigma) V^T``: the right singular vectors of the
    ``k`` (numerically) zero singular values span ``null(A)`` (``V0``; one dimension per
    recurrent class), the left ones span ``null(A^T)`` (``U0``, the stationary laws), and
    ``P* = V0 (U0^T V0)^{-1} U0^T``. A singular value is zero when at most
    ``S * eps * sigma_max`` (the pivot threshold of :func:`_evaluate`), and the smallest
    one always is (``A 1 = 0``). All shapes are static: the ``S - k`` other directions
    enter ``U0^T V0`` as an identity block.
    """
    num_states = P.shape[-1]
    P_pi, r_pi = _policy_rows(P, R, policy)
    A = jnp.eye(num_states, dtype=P.dtype) - P_pi
    U, sigma, Vt = jnp.linalg.svd(A)
    threshold = num_states * jnp.finfo(P.dtype).eps * sigma[0]
    null = (sigma <= threshold).at[-1].set(True)
    U0 = jnp.where(null[None, :], U, 0)
    V0 = jnp.where(null[:, None], Vt, 0).T
    coupling = jnp.matmul(U0.T, V0, precision=_HIGHEST) + jnp.diag(~null).astype(P.dtype)
    limit = jnp.matmul(V0, jnp.linalg.solve(coupling, U0.T), precision=_HIGHEST)
    gains = jnp.matmul(limit, r_pi, precision=_HIGHEST)
    bias = jnp.linalg.solve(A + limit, r_pi - gains)
    return gains, bias


def _improve_multichain(P, R, mask, gains, bias, policy, rtol):
    """Puterman's (1994, section 9.2.1) two-stage improvement, keeping current actions.

    First on ``P g``: if some state's current action is not within ``tol`` of
    ``max_a p^a_x . g``, switch there (to the lowest index within ``tol``) and stop.
    Otherwise improve on ``r + P h`` among the actions within ``tol`` of that maximum.
    """
    first_values = jnp.where(
        mask, jnp.einsum("xay,y->xa", P, gains, precision=_HIGHEST), -jnp.inf
    )
    first, near_best = _keep_or_lowest(first_values, _tolerance(R, mask, gains, rtol), policy)
    second_values = jnp.where(mask & near_best, _q_values(P, R, bias), -jnp.inf)
    second, _ = _keep_or_lowest(second_values, _tolerance(R, mask, bias, rtol), policy)
    return jnp.where(jnp.any(first != policy), first, second)


def _gain_tolerance(R: jax.Array, mask: jax.Array, rtol) -> jax.Array:
    """Largest span of the optimal gain vector that still counts as a constant gain."""
    reward_scale = jnp.max(jnp.where(mask, jnp.abs(R), 0))
    return jnp.sqrt(rtol) * (1 + reward_scale)


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


def _iterate(P, R, mask, init_policy, max_steps, rtol):
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
    final, gains = _iterate_multichain(P_const, R_const, mask, final, max_steps, rtol)
    status = jnp.where(final.status == _RUNNING, PlanningStatus.MAX_STEPS, final.status)
    gain, bias = _with_evaluation_derivatives(
        P, R, final.policy, final.gain, final.bias, final.lu, final.piv, final.ok
    )
    sol = PlanningSolution(gain, bias, final.policy, final.step, status.astype(jnp.int32))
    return sol, gains


class _MultichainCarry(NamedTuple):
    last: _Carry  # as in the unichain loop; gain and bias are gains[0] and h - h[0]
    gains: jax.Array  # the gain vector of last.policy, [S]


def _iterate_multichain(P, R, mask, unichain: _Carry, max_steps, rtol):
    """Multichain policy iteration (Puterman 1994, section 9.2.1) after a singular step.

    Runs zero iterations unless the unichain loop stopped ``SINGULAR``; then it
    re-evaluates that policy (the failed evaluation is not counted twice) and iterates
    with gain-vector evaluations (:func:`_evaluate_multichain`; the unichain LU solve
    where it succeeds, whose constant gain vector makes the first improvement stage a
    tie everywhere) and the two-stage improvement (:func:`_improve_multichain`). On a
    stable policy the status is ``CONVERGED`` if the optimal gain vector is constant
    (span at most :func:`_gain_tolerance`), else ``MULTICHAIN``.
    """
    num_states = P.shape[-1]
    singular = unichain.status == PlanningStatus.SINGULAR

    def cond_fun(carry: _MultichainCarry) -> jax.Array:
        return (carry.last.status == _RUNNING) & (carry.last.step < max_steps)

    def body_fun(carry: _MultichainCarry) -> _MultichainCarry:
        policy = carry.last.candidate
        gain, bias, lu, piv, ok = _evaluate(P, R, policy)
        gains, bias = jax.lax.cond(
            ok,
            lambda: (jnp.broadcast_to(gain, (num_states,)), bias),
            lambda: _evaluate_multichain(P, R, policy),
        )
        finite = jnp.all(jnp.isfinite(gains)) & jnp.all(jnp.isfinite(bias))
        gains = jnp.where(finite, gains, 0)
        bias = jnp.where(finite, bias - bias[0], 0)
        candidate = _improve_multichain(P, R, mask, gains, bias, policy, rtol)
        stable = jnp.all(candidate == policy)
        constant = jnp.max(gains) - jnp.min(gains) <= _gain_tolerance(R, mask, rtol)
        done = jnp.where(constant, PlanningStatus.CONVERGED, PlanningStatus.MULTICHAIN)
        status = jnp.where(finite, jnp.where(stable, done, _RUNNING), PlanningStatus.SINGULAR)
        last = _Carry(policy, candidate, gains[0], bias, lu, piv, ok, carry.last.step + 1,
                      status.astype(jnp.int32))
        return _MultichainCarry(last, gains)

    init = _MultichainCarry(
        unichain._replace(
            candidate=jnp.where(singular, unichain.policy, unichain.candidate),
            step=jnp.where(singular, unichain.step - 1, unichain.step),
            status=jnp.where(singular, _RUNNING, unichain.status).astype(jnp.int32),
        ),
        jnp.broadcast_to(unichain.gain, (num_states,)),
    )
    final = jax.lax.while_loop(cond_fun, body_fun, init)
    return final.last, final.gains


def _float_dtype(P, R):
    dtype = jnp.result_type(P, R)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def _policy_iteration(P, R, base_mask, mask, init_policy, max_steps, rtol):
    """Normalises optional arguments to arrays, so that one program serves all calls.

    Returns ``(PlanningSolution, gains)`` with ``gains`` the gain vector of the returned
    policy, shape ``[S]`` (the optimal gain from each state when converged).
    """
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
    # Returns (PlanningSolution, gain vector [S]); the public function drops the latter.
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

    The loop is a ``lax.while_loop``; it works under ``jit`` and ``vmap``. When every
    policy it visits is unichain (in particular when all entries of ``P`` are
    positive, as for the paper's parameter space and the estimate ``(N + 1) / (n +
    S)``) this is all that runs.

    **Multichain policies.** If a visited policy has several recurrent classes its
    evaluation system is singular (an LU pivot below ``S * eps * max pivot``). Iteration
    then continues, from that policy, with multichain policy iteration (Puterman 1994,
    section 9.2.1) in a second ``lax.while_loop`` (which runs no iteration otherwise,
    so batches of unichain MDPs pay nothing under ``vmap``): each policy is evaluated
    for its gain *vector* ``g = P* r_pi`` and bias ``h = (I - P_pi + P*)^{-1} (r_pi -
    g)`` (the unique solution of ``(I - P_pi) g = 0``, ``g + (I - P_pi) h = r_pi``,
    ``P* h = 0``), with the Cesaro limit ``P*`` built from one SVD of ``I - P_pi``
    (its numerically zero singular values, at most ``S * eps * sigma_max``, give the
    stationary laws and the gain directions: ``P* = V0 (U0^T V0)^{-1} U0^T``); a
    unichain policy is still evaluated by the LU solve. Improvement is first on
    ``P g``, and only if no state changes, on ``r + P h`` among the actions within
    ``tol`` of ``max P g``, keeping the current action on ties both times. On a stable
    policy: ``CONVERGED`` if the optimal gain vector is constant (span at most
    ``sqrt(rtol) * (1 + max|R|)``), with ``gain`` that constant and ``bias = h - h[0]``
    (a solution of the optimality equations); ``MULTICHAIN`` otherwise, with ``gain``
    the optimal gain from state 0. Either way ``policy`` is optimal from every state.
    ``num_steps`` counts the evaluations of both loops (the singular one once) and
    ``max_steps`` bounds their total.

    Gain and bias are differentiable in ``P`` and ``R`` at the returned (fixed) policy
    by implicit differentiation: the loop runs under ``stop_gradient`` and a
    ``custom_jvp`` differentiates the evaluation equations, reusing the LU factors of the
    last evaluation (``M dx = dr_pi + dP_pi bias``). The iterations are never
    differentiated. If the returned policy has several recurrent classes (tied optimal
    classes, or ``MULTICHAIN``) gain and bias are not differentiable and their
    derivatives are 0, never NaN. ``P`` is treated as unconstrained: project onto row-sum-zero
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
    return _policy_iteration(P, R, None, mask, init_policy, max_steps, rtol)[0]


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
    multichain policies and the implicit differentiation of ``gain`` and ``bias`` with
    respect to ``mdp.P`` and ``mdp.R``. Exact for every MDP whose optimal gain does not
    depend on the initial state (unichain, communicating, weakly communicating), also
    when some policies are multichain (zero transitions).

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

    Raises:
        ValueError: for invalid arguments, or, when called eagerly (not under
            ``jit``/``vmap``/``grad``), if the optimal gain depends on the initial state
            (status ``MULTICHAIN``); the message names the states and their optimal
            gains. Traced calls return the gain from state 0 instead.

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
    sol, gains = _policy_iteration(mdp.P, mdp.R, mdp.mask, mask, init_policy, max_steps, rtol)
    _check_constant_gain(mdp, sol, gains, rtol, masked=mask is not None)
    return sol


def _check_constant_gain(mdp: MDP, sol: PlanningSolution, gains, rtol, *, masked: bool):
    """Raises ``ValueError`` if the solution's status is ``MULTICHAIN`` (eager calls only).

    Under ``jit``, ``vmap`` or ``grad`` the status is not a concrete value; the traced
    result (the gain from state 0, see :class:`PlanningStatus`) is returned unchecked.
    """
    if isinstance(sol.status, jax.core.Tracer) or isinstance(gains, jax.core.Tracer):
        return
    if int(sol.status) != PlanningStatus.MULTICHAIN:
        return
    gains = np.asarray(gains, np.float64)
    R = np.asarray(mdp.R, np.float64)
    if rtol is None:
        rtol = _default_rtol(sol.bias.dtype, mdp.num_states)
    scale = float(np.max(np.where(np.asarray(mdp.mask, bool), np.abs(R), 0)))
    tol = math.sqrt(rtol) * (1 + scale)
    # Group the states by optimal gain (values within tol of a group's first value).
    groups: list[tuple[float, list[int]]] = []
    for state in np.argsort(-gains, kind="stable"):
        if groups and groups[-1][0] - gains[state] <= tol:
            groups[-1][1].append(int(state))
        else:
            groups.append((float(gains[state]), [int(state)]))

    def states(members: list[int]) -> str:
        shown = ", ".join(map(str, sorted(members)[:10]))
        plural = "s" if len(members) > 1 else ""
        return f"[{shown}{', ...' if len(members) > 10 else ''}] ({len(members)} state{plural})"

    described = "; ".join(f"{value:.6g} from states {states(m)}" for value, m in groups[:5])
    more = f"; and {len(groups) - 5} more values" if len(groups) > 5 else ""
    policy = np.asarray(sol.policy).tolist()
    raise ValueError(
        "mdp is multichain: its optimal gain depends on the initial state"
        f"{' (with the given mask)' if masked else ''}: optimal gain {described}{more} "
        f"(an optimal policy: {policy if len(policy) <= 20 else str(policy[:20])[:-1] + ', ...]'}"
        "). The gain, bias, gaps and regret lower bound are defined for MDPs with a "
        "constant optimal gain (unichain, communicating or weakly communicating); "
        "jaxmdp.policy_iteration returns the optimal policy with status MULTICHAIN."
    )


def gaps(mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None) -> jax.Array:
    r"""Gaps :math:`\Delta(x, a) = \phi + v_x - r_{x,a} - \sum_y p^a_{x,y} v_y` (section 2.2).

    The expected loss of taking ``a`` once in ``x`` (the paper's
    :math:`\Delta(x, a, A, P)`), from the optimal gain and bias of
    :func:`solve_average_reward`. Values within the tie tolerance of 0 (including
    every optimal action) are exactly 0; inadmissible pairs are ``+inf``. For MDPs with a
    constant optimal gain (unichain, communicating, weakly communicating); see
    :func:`solve_average_reward` for the multichain error.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.

    Returns:
        ``Delta``, shape ``[S, A]``; 0 on optimal actions, positive on suboptimal ones,
        ``+inf`` on inadmissible ones. Differentiable in ``P`` and ``R`` (at the fixed
        optimal policy) where positive and finite.

    Raises:
        ValueError: as :func:`solve_average_reward` (invalid arguments; eagerly, an
            optimal gain that depends on the initial state).

    Example:
        >>> import jaxmdp as jm
        >>> jm.gaps(jm.examples.paper_mdp()).shape
        (3, 2)
    """
    return _solve_with_gaps(mdp, max_steps, rtol)[1]


def _solve_with_gaps(mdp: MDP, max_steps: int, rtol) -> tuple[PlanningSolution, jax.Array]:
    _check_mdp(mdp, None, None, max_steps, rtol)
    sol, gains = _policy_iteration(mdp.P, mdp.R, mdp.mask, None, None, max_steps, rtol)
    _check_constant_gain(mdp, sol, gains, rtol, masked=False)
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
    mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None,
    known_rewards: bool = True,
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
    only through rounding for a vanishing gap) contributes ``+inf``. ``P[x, a]`` may have
    zeros (communicating MDPs such as grid worlds): the infimum runs over every law on
    the states, including those ``P[x, a]`` does not reach, where ``KL(p || q)`` stays
    finite. Requires a constant optimal gain (see the module docstring for the classes
    supported and what Burnetas & Katehakis assume).

    With ``known_rewards=False`` the learner must also tell reward means apart, and the
    observation of a round is the pair (reward, next state): ``K`` is the infimum of the
    KL divergence over joint laws of that pair, whose KL is the sum of the two parts. For
    rewards in ``[0, 1]`` (``mdp.reward_law`` ``"bernoulli"``, or ``"deterministic"``
    learned as Bernoulli, the model of jaxmdp's learning agents) it is
    ``kinf(((1 - R) P, R P), (v, 1 + v), phi + v_x)`` on ``2S`` outcomes; for Gaussian
    rewards of known ``sigma`` it is ``kinf_gaussian(P, v, R, sigma, phi + v_x)``.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.
        known_rewards: the bound for learners told the mean rewards (default, the
            paper's setting) or learning them from ``mdp.reward_law``'s draws.

    Returns:
        :class:`RegretLowerBound` ``(constant, K, gaps)``: shapes ``[]``, ``[S, A]``,
        ``[S, A]``. ``K`` is 0 on optimal pairs and ``+inf`` on inadmissible ones;
        ``gaps`` as in :func:`gaps`.

    Raises:
        ValueError: as :func:`solve_average_reward` (invalid arguments; eagerly, an
            optimal gain that depends on the initial state).

    Example:
        >>> import jaxmdp as jm
        >>> bound = jm.regret_lower_bound(jm.examples.paper_mdp())
        >>> bound.K.shape
        (3, 2)
    """
    if not isinstance(known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {known_rewards!r}")
    sol, delta = _solve_with_gaps(mdp, max_steps, rtol)
    if known_rewards:
        return _lower_bound_from_solution(mdp, sol, delta)
    if mdp.reward_law != "gaussian":
        R = np.asarray(mdp.R, np.float64)
        bad = ((R < 0) | (R > 1)) & np.asarray(mdp.mask, bool)
        if bad.any():
            s, a = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError("known_rewards=False models rewards in [0, 1] unless the reward "
                             f"law is Gaussian, got R[{s}, {a}] = {float(R[s, a])}")
    return _learned_lower_bound(mdp, sol, delta)


@jax.jit
def _learned_lower_bound(mdp: MDP, sol: PlanningSolution, delta) -> RegretLowerBound:
    from jaxmdp.indices.gaussian import kinf_gaussian

    P = jnp.asarray(mdp.P, sol.bias.dtype)
    R = jnp.asarray(mdp.R, sol.bias.dtype)
    level = sol.gain + sol.bias[:, None]
    bias = jnp.broadcast_to(sol.bias, P.shape)
    if mdp.reward_law == "gaussian":
        K = kinf_gaussian(P, bias, R, jnp.asarray(mdp.reward_sigma, P.dtype), level)
    else:
        p_joint = jnp.concatenate([(1 - R)[..., None] * P, R[..., None] * P], axis=-1)
        values = jnp.concatenate([bias, 1 + bias], axis=-1)
        K = kinf(p_joint, values, level)
    suboptimal = mdp.mask & (delta > 0)
    K = jnp.where(suboptimal, K, jnp.where(mdp.mask, 0, jnp.inf))
    finite = suboptimal & (K > 0) & jnp.isfinite(K)
    ratio = jnp.where(finite, delta, 0) / jnp.where(finite, K, 1)
    ratio = jnp.where(suboptimal & (K <= 0), jnp.inf, ratio)
    return RegretLowerBound(jnp.sum(ratio), K, delta)


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
