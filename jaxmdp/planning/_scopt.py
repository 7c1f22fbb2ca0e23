r"""ScOpt: value iteration with the bias span capped (SCAL and SCAL+, Fruit et al. 2018).

The planner of :mod:`jaxmdp.agents.ucrl.scal`, following RonanFR/UCRL ``ab64d14``
(``rlexplorer/evi/scopt.pyx`` lines 184-408): each sweep applies the aperiodicity
transform with factor ``tau`` and an inner maximum over a box (:class:`BoxBounds`), caps
the iterates at ``min u + c / tau`` and stops when ``sp(u_2 - u) < epsilon``; where the cap
binds, the policy mixes the greedy action with the pessimistic one
(:func:`scopt_mixture`). Ties go to the lowest action index, or by the published noise
(:func:`scopt_noise`, the model's ``tie_noise``). With no cap (``c = inf``) it is
rlexplorer's ``EVI`` (``evi.pyx``), the planner of :mod:`jaxmdp.agents.ucrl.rlexplorer`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.planning._core import Planner, Solution, Status, noisy_argmax, values_planner
from jaxmdp.planning._evi import BoxBounds, ConfidenceSet, box_maximise

__all__ = ["TAU", "scopt", "scopt_mixture", "scopt_noise", "scopt_planner"]

#: The aperiodicity factor of the published learners (``Ucrl.py`` line 149).
TAU = 0.9


class _Carry(NamedTuple):
    u: jax.Array
    previous: jax.Array
    policy: jax.Array
    gain: jax.Array
    span: jax.Array
    step: jax.Array
    converged: jax.Array


def _sweep(r_tilde, bounds: BoxBounds, mask, u, tau):
    """``[S, A]`` values ``r + tau max_{q in box} q . u + (1 - tau) u(s)`` (``-inf`` off
    the mask)."""
    values, _ = box_maximise(bounds.lower, bounds.upper, u, False)
    return jnp.where(mask, r_tilde + tau * values + (1.0 - tau) * u[:, None], -jnp.inf)


def _isclose(a, b):
    """``isclose_c`` of the published code (``_utils.pyx`` line 24: relative 1e-9)."""
    return jnp.abs(a - b) <= 1e-9 * jnp.maximum(jnp.abs(a), jnp.abs(b))


def _full_mask(mask):
    mask = jnp.asarray(mask, bool)
    return mask | ~jnp.any(mask, axis=-1, keepdims=True)


def scopt_noise(uniforms, epsilon):
    """The tie noise of rlexplorer's solvers: ``0.1 min(1e-6, max(1e-12, epsilon)) U_a``.

    ``scopt.pyx`` lines 157-164 and ``evi.pyx`` lines 131-137 (RonanFR/UCRL ``ab64d14``):
    at every call the solver draws ``U_a`` from ``RandomState(random_state)``, created
    afresh with the learner's seed, so the ``U_a`` are the same at every episode (one draw
    per replication) and the noise is ``1e-7 U_a`` while ``epsilon >= 1e-6``.

    Args:
        uniforms: ``[A]`` draws on ``[0, 1)``.
        epsilon: the solve's stopping tolerance.

    Returns:
        The noise ``[A]`` added to each action's value when a maximiser is picked
        (:func:`~jaxmdp.planning.noisy_argmax`).
    """
    epsilon = jnp.maximum(jnp.asarray(epsilon, jnp.asarray(uniforms).dtype), 1e-12)
    return 0.1 * jnp.minimum(1e-6, epsilon) * uniforms


def _chosen(q, noise):
    """``(action [S], value [S])``: the greedy action and its value (without noise): the
    lowest index among the maxima, or :func:`noisy_argmax` with a noise (``scopt.pyx``
    lines 224-237: ``u3[s]`` is the chosen action's own value)."""
    if noise is None:
        return jnp.argmax(q, axis=-1).astype(jnp.int32), jnp.max(q, axis=-1)
    action = noisy_argmax(q, noise)
    return action, jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]


@functools.partial(jax.jit, static_argnames=("max_steps",))
def _scopt_run(p_hat, r_tilde, bounds: BoxBounds, mask, u0, epsilon, span_constraint, tau,
               noise, *, max_steps: int):
    """:func:`scopt`'s solution and the values at the end of its last sweep, ``u_2 -
    u_2(0)``."""
    mask = _full_mask(mask)

    def cond(carry: _Carry):
        return ~carry.converged & (carry.step < max_steps)

    def body(carry: _Carry) -> _Carry:
        q = _sweep(r_tilde, bounds, mask, carry.u, tau)
        policy, u3 = _chosen(q, noise)
        u2 = jnp.minimum(u3, jnp.min(u3) + span_constraint / tau)
        diff = u2 - carry.u
        high, low = jnp.max(diff), jnp.min(diff)
        return _Carry(u=u2 - u2[0], previous=carry.u, policy=policy,
                      gain=(high + low) / 2, span=high - low, step=carry.step + 1,
                      converged=high - low < epsilon)

    dtype = p_hat.dtype
    init = _Carry(u=u0, previous=u0, policy=jnp.zeros(u0.shape, jnp.int32),
                  gain=jnp.zeros((), dtype), span=jnp.full((), jnp.inf, dtype),
                  step=jnp.zeros((), jnp.int32), converged=jnp.zeros((), bool))
    final = lax.while_loop(cond, body, init)
    _, q_opt = box_maximise(bounds.lower, bounds.upper, final.previous, True)
    q_opt = jnp.where(mask[..., None], q_opt, p_hat)
    status = jnp.where(final.converged, Status.CONVERGED, Status.MAX_STEPS)
    solution = Solution(final.gain, final.previous, final.policy, final.step,
                        status.astype(jnp.int32), q_opt, final.span)
    return solution, final.u


def scopt(p_hat, r_tilde, bounds: BoxBounds, mask, u0, epsilon, span_constraint, tau, *,
          max_steps: int, noise=None) -> Solution:
    """ScOpt: value iteration over the box ``bounds`` with the span capped at
    ``span_constraint`` (``scopt.pyx`` lines 184-408; :mod:`jaxmdp.agents.ucrl.scal`).

    With ``span_constraint = inf`` nothing is capped: extended value iteration with the
    aperiodicity transform, rlexplorer's ``EVI.run`` (``evi.pyx`` lines 143-212; its
    ``relative_vi = 0`` keeps the iterates unshifted, which changes none of the values
    that matter: the operator commutes with adding a constant).

    Args:
        p_hat: ``[S, A, S]`` centres (used for ``q_opt`` on inadmissible pairs).
        r_tilde: ``[S, A]`` optimistic rewards.
        bounds: the box of every pair, ``[S, A, S]`` each.
        mask: bool ``[S, A]`` admissible actions.
        u0: ``[S]`` starting values.
        epsilon: the stopping tolerance on ``sp(u_2 - u)``.
        span_constraint: ``c > 0`` (``inf``: no cap).
        tau: the aperiodicity factor in ``(0, 1]``.
        max_steps: the most sweeps.
        noise: ``None``, or ``[A]`` added to each action's value when the greedy action
            is picked (:func:`~jaxmdp.planning.noisy_argmax`, ``scopt.pyx`` line 232), the
            picked action's value kept without it.

    Returns:
        A :class:`~jaxmdp.planning.Solution`: ``bias`` the values the last sweep started
        from, ``policy`` its greedy actions (lowest index among ties without ``noise``),
        ``span`` its ``sp(u_2 - u)``.
    """
    return _scopt_run(p_hat, r_tilde, bounds, mask, u0, epsilon, span_constraint, tau,
                      noise, max_steps=max_steps)[0]


def scopt_mixture(r_tilde, bounds: BoxBounds, mask, u, span_constraint, tau, noise=None):
    """ScOpt's mixing policy at ``u`` (``scopt.pyx`` lines 273-380).

    Where ``u_3(s) >= th = min u_3 + c / tau`` the policy mixes the greedy action (value
    ``u_3``) with the pessimistic one (value ``u_min``, reward 0): weight ``(u_3 - th) /
    (u_3 - u_min)`` on the pessimistic action; 1 where ``u_min`` is close to ``th``, 0
    where ``u_3`` is (``isclose``, relative ``1e-9``); where ``u_min`` is close to
    ``u_3``, 1 without ``noise``, and with it 1 iff ``u_min + noise[min] > u_3 +
    noise[greedy]`` (line 352).

    Args:
        r_tilde: ``[S, A]`` optimistic rewards.
        bounds: the box of every pair.
        mask: bool ``[S, A]`` admissible actions.
        u: ``[S]`` the values the last sweep started from.
        span_constraint: ``c > 0``.
        tau: the aperiodicity factor.
        noise: ``None`` or ``[A]``: the tie noise of the greedy and the pessimistic action
            (``argmin (c_a + noise_a)``, line 330).

    Returns:
        ``(min_action [S], weight [S], feasible [])``: play ``min_action`` (the pessimistic
        action, reward 0) with probability ``weight`` and the greedy action otherwise;
        ``feasible`` is False where some pessimistic value exceeds the threshold (the
        published solver's error ``-21``; then ``weight = 1`` there).
    """
    mask = _full_mask(mask)
    greedy, u3 = _chosen(_sweep(r_tilde, bounds, mask, u, tau), noise)
    th = jnp.min(u3) + span_constraint / tau
    low_values = -box_maximise(bounds.lower, bounds.upper, -u, False)[0]
    q_min = jnp.where(mask, tau * low_values + (1.0 - tau) * u[:, None], jnp.inf)
    if noise is None:
        u_min = jnp.min(q_min, axis=-1)
        min_action = jnp.argmin(q_min, axis=-1).astype(jnp.int32)
        close_weight = jnp.ones_like(u3)
    else:
        min_action = noisy_argmax(-q_min, -jnp.asarray(noise))
        u_min = jnp.take_along_axis(q_min, min_action[:, None], axis=-1)[:, 0]
        noise = jnp.asarray(noise, u3.dtype)
        close_weight = (u_min + noise[min_action] > u3 + noise[greedy]).astype(u3.dtype)
    truncated = u3 >= th  # line 277: greedy where u_3 < th
    gap = jnp.where(u3 > u_min, u3 - u_min, 1.0)
    weight = jnp.clip((u3 - th) / gap, 0.0, 1.0)  # lines 361-362
    weight = jnp.where(_isclose(u_min, u3), close_weight,  # lines 350-355
                       jnp.where(_isclose(u_min, th), 1.0,  # lines 356-357
                                 jnp.where(_isclose(u3, th), 0.0, weight)))  # 358-359
    infeasible = truncated & (u_min > th)  # line 339
    weight = jnp.where(infeasible, 1.0, jnp.where(truncated, weight, 0.0))
    return min_action, weight, ~jnp.any(infeasible)


def scopt_planner(span_constraint: float, *, tau: float = TAU, max_steps: int = 10_000,
                  warm_start: bool = True, warm_from_end: bool = False) -> Planner:
    """:func:`scopt` behind :class:`~jaxmdp.planning.Planner` (the model's ``radius`` is
    a :class:`~jaxmdp.planning.BoxBounds`; its ``tie_noise``, if any, breaks ties,
    :func:`scopt_noise`); the state is the values the next update starts from.

    Args:
        span_constraint: ``c > 0`` (``inf``: no cap, rlexplorer's ``EVI``).
        tau: the aperiodicity factor.
        max_steps: the most sweeps per update.
        warm_start: start each update from the previous update's values (the published
            code, ``scopt.pyx`` lines 172-181), else from zeros.
        warm_from_end: the values kept for the next update are those at the end of the
            last sweep, ``u_2 - u_2(0)``, as the published solver keeps them (it returns
            at line 390 before copying ``u_2`` into ``u_1``, line 392, and the next call
            starts from ``u_2 - u_2(0)``, lines 175-177; ``evi.pyx`` lines 144-146, 194-199
            likewise); else those the last sweep started from (the solution's ``bias``,
            one sweep behind, for which its policy is greedy).

    Returns:
        The :class:`~jaxmdp.planning.Planner`.
    """

    def solve(model: ConfidenceSet, u0):
        dtype = u0.dtype
        epsilon = jnp.asarray(model.epsilon, dtype)
        noise = None
        if model.tie_noise is not None:
            noise = scopt_noise(jnp.asarray(model.tie_noise, dtype), epsilon)
        solution, end = _scopt_run(jnp.asarray(model.p_hat), jnp.asarray(model.rewards, dtype),
                                   model.radius, model.mask, u0, epsilon,
                                   jnp.asarray(span_constraint, dtype), jnp.asarray(tau, dtype),
                                   noise, max_steps=max_steps)
        return solution, (end if warm_from_end else solution.bias)

    return values_planner(solve, warm_start=warm_start, returns_values=True)
