r"""The exact average-reward solver: gain, bias and an optimal policy by policy iteration.

Solves the optimality equations of Cowan, Katehakis & Pirutinsky (2019), eq. (1),

.. math::

    \phi + v_x = \max_{a \in A(x)} \Big( r_{x,a} + \sum_y p^a_{x,y} v_y \Big),
    \qquad v_0 = 0,

by policy iteration inside ``lax.while_loop``. The gaps derived from the solution are in
:mod:`jaxmdp.planning.suboptimality`, the regret lower bound in
``jaxmdp.analysis.lower_bound``.

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
  values of :class:`~jaxmdp.planning.Status` ``MULTICHAIN`` (the gain from state 0).
* Derivatives of gain and bias are exact when the returned optimal policy is unichain
  (always when every policy is, e.g. all entries of ``P`` positive). When it has
  several recurrent classes of equal gain (tied optima), gain and bias are not
  differentiable (the optimal gain is a maximum over the tied classes) and their
  derivatives are 0, never NaN; the same holds for ``MULTICHAIN``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax.typing import ArrayLike

from jaxmdp.mdp import MDP
from jaxmdp.planning._core import (
    DEFAULT_MAX_STEPS,
    HIGHEST,
    RUNNING,
    ModelChange,
    Planner,
    Solution,
    Status,
    default_rtol,
    effective_mask,
    evaluate,
    improve,
    initial_policy,
    keep_or_lowest,
    policy_rows,
    q_values,
    tolerance,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "check_constant_gain",
    "check_mdp",
    "exact_planner",
    "policy_iteration",
    "policy_iteration_with_gains",
    "solve_average_reward",
    "warm_start_policy",
]


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
    ``S * eps * sigma_max`` (the pivot threshold of :func:`evaluate`), and the smallest
    one always is (``A 1 = 0``). All shapes are static: the ``S - k`` other directions
    enter ``U0^T V0`` as an identity block.
    """
    num_states = P.shape[-1]
    P_pi, r_pi = policy_rows(P, R, policy)
    A = jnp.eye(num_states, dtype=P.dtype) - P_pi
    U, sigma, Vt = jnp.linalg.svd(A)
    threshold = num_states * jnp.finfo(P.dtype).eps * sigma[0]
    null = (sigma <= threshold).at[-1].set(True)
    U0 = jnp.where(null[None, :], U, 0)
    V0 = jnp.where(null[:, None], Vt, 0).T
    coupling = jnp.matmul(U0.T, V0, precision=HIGHEST) + jnp.diag(~null).astype(P.dtype)
    limit = jnp.matmul(V0, jnp.linalg.solve(coupling, U0.T), precision=HIGHEST)
    gains = jnp.matmul(limit, r_pi, precision=HIGHEST)
    bias = jnp.linalg.solve(A + limit, r_pi - gains)
    return gains, bias


def _improve_multichain(P, R, mask, gains, bias, policy, rtol):
    """Puterman's (1994, section 9.2.1) two-stage improvement, keeping current actions.

    First on ``P g``: if some state's current action is not within ``tol`` of
    ``max_a p^a_x . g``, switch there (to the lowest index within ``tol``) and stop.
    Otherwise improve on ``r + P h`` among the actions within ``tol`` of that maximum.
    """
    first_values = jnp.where(
        mask, jnp.einsum("xay,y->xa", P, gains, precision=HIGHEST), -jnp.inf
    )
    first, near_best = keep_or_lowest(first_values, tolerance(R, mask, gains, rtol), policy)
    second_values = jnp.where(mask & near_best, q_values(P, R, bias), -jnp.inf)
    second, _ = keep_or_lowest(second_values, tolerance(R, mask, bias, rtol), policy)
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
    dP_pi, dr_pi = policy_rows(dP, dR, policy)
    rhs = dr_pi + jnp.matmul(dP_pi, bias, precision=HIGHEST)
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
        return (carry.status == RUNNING) & (carry.step < max_steps)

    def body_fun(carry: _Carry) -> _Carry:
        policy = carry.candidate
        gain, bias, lu, piv, ok = evaluate(P_const, R_const, policy)
        candidate = improve(P_const, R_const, mask, bias, policy, rtol)
        stable = jnp.all(candidate == policy)
        status = jnp.where(
            ok, jnp.where(stable, Status.CONVERGED, RUNNING), Status.SINGULAR
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
        status=jnp.array(RUNNING, jnp.int32),
    )
    final = jax.lax.while_loop(cond_fun, body_fun, init)
    final, gains = _iterate_multichain(P_const, R_const, mask, final, max_steps, rtol)
    status = jnp.where(final.status == RUNNING, Status.MAX_STEPS, final.status)
    gain, bias = _with_evaluation_derivatives(
        P, R, final.policy, final.gain, final.bias, final.lu, final.piv, final.ok
    )
    sol = Solution(gain, bias, final.policy, final.step, status.astype(jnp.int32))
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
    singular = unichain.status == Status.SINGULAR

    def cond_fun(carry: _MultichainCarry) -> jax.Array:
        return (carry.last.status == RUNNING) & (carry.last.step < max_steps)

    def body_fun(carry: _MultichainCarry) -> _MultichainCarry:
        policy = carry.last.candidate
        gain, bias, lu, piv, ok = evaluate(P, R, policy)
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
        done = jnp.where(constant, Status.CONVERGED, Status.MULTICHAIN)
        status = jnp.where(finite, jnp.where(stable, done, RUNNING), Status.SINGULAR)
        last = _Carry(policy, candidate, gains[0], bias, lu, piv, ok, carry.last.step + 1,
                      status.astype(jnp.int32))
        return _MultichainCarry(last, gains)

    init = _MultichainCarry(
        unichain._replace(
            candidate=jnp.where(singular, unichain.policy, unichain.candidate),
            step=jnp.where(singular, unichain.step - 1, unichain.step),
            status=jnp.where(singular, RUNNING, unichain.status).astype(jnp.int32),
        ),
        jnp.broadcast_to(unichain.gain, (num_states,)),
    )
    final = jax.lax.while_loop(cond_fun, body_fun, init)
    return final.last, final.gains


def _float_dtype(P, R):
    dtype = jnp.result_type(P, R)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def policy_iteration_with_gains(P, R, base_mask, mask, init_policy, max_steps, rtol):
    """Policy iteration and the gain vector, with optional arguments as arrays.

    One compiled program serves all calls of a shape and dtype (``max_steps`` and ``rtol``
    are traced). ``base_mask`` is the MDP's mask, ``mask`` an optional restriction of it.

    Returns ``(Solution, gains)`` with ``gains`` the gain vector of the returned
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
    rtol = default_rtol(dtype, num_states) if rtol is None else rtol
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
    # Returns (Solution, gain vector [S]); the public function drops the latter.
    mask = effective_mask(base_mask, mask)
    init = initial_policy(R, mask, init_policy)
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
) -> Solution:
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
        A :class:`Solution` ``(gain, bias, policy, num_steps, status)``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.make("paper-mdp")
        >>> sol = jm.policy_iteration(mdp.P, mdp.R, mdp.mask)
        >>> sol.policy.tolist(), int(sol.status) == jm.Status.CONVERGED
        ([0, 1, 0], True)
    """
    _check_arguments(P, R, mask, init_policy, max_steps, rtol)
    return policy_iteration_with_gains(P, R, None, mask, init_policy, max_steps, rtol)[0]


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
        >>> gain, bias, policy = jm.solve_average_reward(jm.envs.make("paper-mdp"))
        >>> policy.tolist()
        [0, 1, 0]
        >>> dgain_dR = jax.grad(lambda R: jm.solve_average_reward(
        ...     jm.MDP.unchecked(jm.envs.make("paper-mdp").P, R))[0])(
        ...     jm.envs.make("paper-mdp").R)
    """
    sol = _solve(mdp, mask, init_policy, max_steps=max_steps, rtol=rtol)
    return sol.gain, sol.bias, sol.policy


def check_mdp(mdp: MDP, mask, init_policy, max_steps: int, rtol) -> None:
    """Raises ``ValueError`` for a non-MDP or arguments :func:`policy_iteration` rejects."""
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    _check_arguments(mdp.P, mdp.R, mask, init_policy, max_steps, rtol)


def _solve(mdp: MDP, mask, init_policy, *, max_steps: int, rtol) -> Solution:
    check_mdp(mdp, mask, init_policy, max_steps, rtol)
    sol, gains = policy_iteration_with_gains(mdp.P, mdp.R, mdp.mask, mask, init_policy,
                                             max_steps, rtol)
    check_constant_gain(mdp, sol, gains, rtol, masked=mask is not None)
    return sol


def check_constant_gain(mdp: MDP, sol: Solution, gains, rtol, *, masked: bool):
    """Raises ``ValueError`` if the solution's status is ``MULTICHAIN`` (eager calls only).

    Under ``jit``, ``vmap`` or ``grad`` the status is not a concrete value; the traced
    result (the gain from state 0, see :class:`Status`) is returned unchecked.
    """
    if isinstance(sol.status, jax.core.Tracer) or isinstance(gains, jax.core.Tracer):
        return
    if int(sol.status) != Status.MULTICHAIN:
        return
    gains = np.asarray(gains, np.float64)
    R = np.asarray(mdp.R, np.float64)
    if rtol is None:
        rtol = default_rtol(sol.bias.dtype, mdp.num_states)
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


def warm_start_policy(P: jax.Array, R: jax.Array, mask: jax.Array, bias: jax.Array,
                      policy: jax.Array) -> jax.Array:
    """One greedy improvement of ``policy`` against ``bias``: a start for policy iteration.

    The improvement step of :func:`policy_iteration` (the current action is kept when it
    is within the default tie tolerance of the best), with ``bias`` from another MDP, e.g.
    the previous posterior sample of an episodic agent.

    Args:
        P: transition laws, ``[S, A, S]``.
        R: rewards, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        bias: the values to be greedy against, ``[S]``.
        policy: the current policy, int ``[S]``.

    Returns:
        The improved policy, int32 ``[S]``.
    """
    return improve(P, R, mask, bias, policy, default_rtol(P.dtype, P.shape[-1]))


@functools.cache
def exact_planner(*, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None) -> Planner:
    """The exact planner: :func:`solve_average_reward` behind
    :class:`~jaxmdp.planning.Planner`, an LU re-solve (``O(S^3)``) at every update.

    Its state is the warm start, the last solution's policy (int32 ``[S]``; at first each
    state's lowest admissible action). ``update`` solves ``change.model`` from it; the
    other fields of the change are not needed.

    Args:
        max_steps: maximum number of policy evaluations per update, a positive int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps`` of the dtype.

    Returns:
        A :class:`~jaxmdp.planning.Planner`; calls with equal arguments return the same
        object.

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import planning
        >>> planner = planning.exact_planner()
        >>> mdp = jm.envs.make("paper-mdp")
        >>> sol, state = planner.update(planner.init(mdp), planning.ModelChange(mdp))
        >>> sol.policy.tolist()
        [0, 1, 0]
    """

    def init(model: MDP):
        return jnp.argmax(jnp.asarray(model.mask, bool), axis=1).astype(jnp.int32)

    def update(state, change: ModelChange):
        solution = _solve(change.model, None, state, max_steps=max_steps, rtol=rtol)
        return solution, solution.policy.astype(jnp.int32)

    return Planner(init, update)
