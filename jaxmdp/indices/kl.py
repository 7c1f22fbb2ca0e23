r"""The KL indices of MDP-UCB and MDP-DMED, each solved as a single unknown.

Cowan, Katehakis & Pirutinsky (2019), section 4, reduce the MDP-UCB index

.. math:: C(p, v, \delta) = \sup\{q \cdot v : \mathrm{KL}(p \| q) \le \delta\}

to two unknowns :math:`(\mu_q^*, \lambda)` (their Theorem 2) and the MDP-DMED rate

.. math:: D(p, v, \rho) = \inf\{\mathrm{KL}(p \| q) : q \cdot v \ge \rho\}

to one (their Theorem 4). Both reduce to the *same* single unknown. With
:math:`V = \max_x v_x`, :math:`w_x = V - v_x \ge 0` and :math:`u > 0`, let
:math:`y_x = w_x / (u + w_x)`, :math:`\bar y = E_p[y]`, :math:`\zeta = E_p[1 - y]` and

.. math:: m(u) = u \bar y / \zeta = \Big(E_p\big[\tfrac{1}{u + w}\big]\Big)^{-1} - u,

an increasing function from :math:`m(0^+)` to :math:`E_p[w] = V - p \cdot v`. Then

* ``kl_ucb``: :math:`C = V - m(u^*)` where :math:`u^*` solves
  :math:`h(u) = E_p \log\big(1 + \tfrac{w - m}{u + m}\big) = \delta` (this is DESIGN.md's
  :math:`h(\eta) = \sum_x p_x \ln(\eta - v_x) + \ln \sum_x p_x / (\eta - v_x)` with
  :math:`\eta = V + u`, written without cancellation); the optimiser is
  :math:`q^*_x = c\, p_x / (u^* + w_x)` with :math:`c = u^* + m(u^*)` (the paper's
  :math:`\lambda = -c`, :math:`\mu_q^* = C`).
* ``kinf``: :math:`u^*` solves :math:`m(u) = V - \rho`; then
  :math:`\lambda = 1/(u^* + V - \rho)` is the paper's Theorem 4 multiplier and
  :math:`D = E_p \log\big(1 + \lambda(\rho - v)\big)`.

Both equations are solved in :math:`s = \ln u` by the shared safeguarded Newton method
(:mod:`jaxmdp.indices._roots`), on :math:`\ln h` and :math:`\ln m` respectively, which are
close to linear in :math:`s` in both asymptotic regimes, from starting points given by
the small-level expansions (:math:`h \approx \mathrm{Var}_p(v)/(2u^2)`,
:math:`m \approx E_p w - \mathrm{Var}_p(v)/u`) and the large-level ones.

States with :math:`p_x = 0` are allowed. If the largest value :math:`V` is attained only on
states of zero probability, the optimum may sit on the boundary :math:`u^* = 0`, where
the optimiser puts mass on such a state (Filippi, Cappé & Garivier 2010, "Optimism in
reinforcement learning and Kullback-Leibler divergence", section 3.2): then
:math:`C = V - \exp(E_p \ln w - \delta)` when :math:`\delta \ge E_p\ln w + \ln E_p[1/w]`,
and :math:`D = E_p \ln w - \ln(V - \rho)` when :math:`V - \rho \le (E_p[1/w])^{-1}`.

Gradients are the envelope-theorem derivatives (``jax.custom_jvp``), never derivatives of
the iterations: :math:`\partial C/\partial\delta = c`, :math:`\partial C/\partial v = q^*`,
:math:`\partial C/\partial p_x = -c(\ln(p_x/q^*_x) + 1)`;
:math:`\partial D/\partial\rho = \lambda`, :math:`\partial D/\partial v = -\lambda q^*`,
:math:`\partial D/\partial p_x = \ln(p_x/q^*_x) + 1`. Here :math:`p_x/q^*_x` is the
finite ratio :math:`(u^* + w_x)/c` (resp. :math:`1 + \lambda(\rho - v_x)`) also where
:math:`p_x = 0`. Only differences of the ``p`` components are meaningful (``p`` lives on
the simplex).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from jaxmdp.indices._roots import find_root

Array = jax.Array
ArrayLike = jax.typing.ArrayLike

_MAX_STEPS = 64


class KLSolution(NamedTuple):
    """Everything a KL index solve produces (no gradients flow through this).

    Attributes:
      value: the index, ``C`` for :func:`kl_ucb_solve`, ``D`` for :func:`kinf_solve`.
      multiplier: the derivative of the value with respect to the level: ``c = dC/ddelta``
        (the paper's ``-lambda``) or ``lam = dD/drho`` (the paper's Theorem 4 ``lambda``).
      q: the optimiser ``q*``, shape ``[..., S]`` (``p`` in the degenerate cases where the
        value is ``p.v``; zeros where the problem is infeasible).
      num_steps: root-finder iterations (0 in degenerate cases).
      converged: whether the root finder met its tolerance (True in degenerate cases).
    """

    value: Array
    multiplier: Array
    q: Array
    num_steps: Array
    converged: Array


# ---------------------------------------------------------------------------------------
# Shared pieces.


def _common_dtype(*args: ArrayLike):
    return jnp.result_type(*args, float)


def _xtol(dtype) -> float:
    # Newton converges quadratically: an accepted step below sqrt(eps) leaves an error of
    # order eps after that step.
    return float(np.finfo(dtype).eps) ** 0.5 * 0.1


def _s_min(dtype) -> float:
    # Smallest ln(u) whose exp is a comfortably normal number.
    return float(np.log(np.finfo(dtype).tiny)) + 10.0


class _Stats(NamedTuple):
    """Moments of w = V - v under p, computed in one fused pass."""

    V: Array  # max v over all states (including p = 0)
    w: Array  # V - v >= 0, shape [S]
    mu: Array  # p.v
    centered: Array  # p.v - v, computed from v directly (no cancellation through V)
    p_max: Array  # probability of the argmax states
    mean_w: Array  # E_p w = V - p.v
    var_w: Array  # Var_p w = Var_p v
    w_sup: Array  # max of w over the support of p
    mean_log_w: Array  # E_p[ln w] over {p > 0, w > 0}
    mean_inv_w: Array  # E_p[1/w] over {p > 0, w > 0}
    mean_abs_v: Array  # E_p |v|, the rounding scale of p.v


def _stats(p: Array, v: Array) -> _Stats:
    """Moments under p, which must already be normalised."""
    V = jnp.max(v)
    w = V - v
    mu = jnp.dot(p, v)
    centered = mu - v
    positive = p > 0
    at_max = w == 0
    p_max = jnp.sum(jnp.where(at_max, p, 0.0))
    mean_w = jnp.sum(p * w)
    var_w = jnp.sum(p * jnp.square(centered))
    w_sup = jnp.max(jnp.where(positive, w, 0.0))
    inner = positive & ~at_max
    w_safe = jnp.where(inner, w, 1.0)
    mean_log_w = jnp.sum(jnp.where(inner, p * jnp.log(w_safe), 0.0))
    mean_inv_w = jnp.sum(jnp.where(inner, p / w_safe, 0.0))
    mean_abs_v = jnp.sum(p * jnp.abs(v))
    return _Stats(V, w, mu, centered, p_max, mean_w, var_w, w_sup, mean_log_w, mean_inv_w,
                  mean_abs_v)


class _Moments(NamedTuple):
    ybar: Array  # E_p[y], y = w / (u + w)
    zeta: Array  # E_p[1 - y], computed without cancellation
    var_y: Array  # Var_p[y] (only used for Newton derivatives)
    m: Array  # m(u) = u ybar / zeta
    excess: Array  # E_p w - m(u) = E_p[(1 - y)(v - p.v)] / zeta >= 0


def _moments(u: Array, p: Array, st: _Stats) -> _Moments:
    denom = u + st.w
    y = st.w / denom
    ybar = jnp.sum(p * y)
    zeta = jnp.sum(p * (u / denom))
    var_y = jnp.maximum(jnp.sum(p * y * y) - ybar * ybar, 0.0)
    # excess = E_q[v] - p.v with q proportional to p (1 - y) = p u / (u + w), the optimiser's
    # shape: positive weights, so no cancellation for small or large u.
    excess = jnp.maximum(-jnp.sum(p * (u / denom) * st.centered), 0.0) / zeta
    return _Moments(ybar, zeta, var_y, u * ybar / zeta, excess)


def _w_minus_m(st: _Stats, mo: _Moments) -> Array:
    """w_x - m(u), elementwise, in whichever of two exact forms rounds less.

    ``w - m`` directly is accurate when both are small (small u, argmax states);
    ``(p.v - v) + excess`` is accurate when v has a large offset or outlier, where the
    differences of the shifted values w = V - v have lost their low digits.
    """
    direct = st.w - mo.m
    centred = st.centered + mo.excess
    direct_error = st.w + mo.m
    centred_error = st.mean_abs_v + jnp.abs(st.centered) + mo.excess
    return jnp.where(direct_error <= centred_error, direct, centred)


def _normalise(p: Array) -> Array:
    # The value is defined on p / sum(p): in floating point sum(p) != 1 by a few ulps,
    # which would otherwise move C by about c * (sum(p) - 1), visible when delta < 1e-10.
    total = jnp.sum(p)
    return p / jnp.where(total > 0, total, 1.0)


def _zero_tangent(t) -> bool:
    return isinstance(t, SymbolicZero)


def _check_shapes(name: str, p: Array, v: Array, level: Array, level_name: str) -> None:
    if p.ndim == 0 or v.ndim == 0:
        raise ValueError(f"{name}: p and v must have shape [..., S], got p.shape={p.shape}, "
                         f"v.shape={v.shape}")
    if p.shape[-1] != v.shape[-1]:
        raise ValueError(f"{name}: p and v must have the same last dimension S, got "
                         f"p.shape={p.shape}, v.shape={v.shape}")
    if p.shape[-1] == 0:
        raise ValueError(f"{name}: S must be at least 1, got p.shape={p.shape}")
    try:
        jnp.broadcast_shapes(p.shape[:-1], v.shape[:-1], jnp.shape(level))
    except ValueError:
        raise ValueError(f"{name}: batch shapes do not broadcast, got p.shape={p.shape}, "
                         f"v.shape={v.shape}, {level_name}.shape={jnp.shape(level)}") from None


# ---------------------------------------------------------------------------------------
# kl_ucb: C(p, v, delta).


def _kl_ucb_one(p: Array, v: Array, delta: Array) -> tuple[KLSolution, Array]:
    """C for one instance: p, v of shape [S], scalar delta; also returns u*. No gradients."""
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    p = _normalise(p)
    st = _stats(p, v)
    mu = st.mu
    degenerate = (delta <= 0) | (st.mean_w <= 0)  # delta <= 0, constant v, or p on argmax
    delta_pos = jnp.where(degenerate, 1.0, delta)  # a safe level for the dead branch

    # Boundary optimum u* = 0 (possible only if the argmax states have zero probability).
    boundary = (~degenerate & (st.p_max <= 0)
                & (st.mean_log_w + jnp.log(jnp.maximum(st.mean_inv_w, tiny)) <= delta_pos))

    # Bracket and starting point in s = ln u. h(u) <= Var_w (1 + W/u)^2 / (2 u^2), so
    # h <= delta at u_hi = max(W, sqrt(2 Var_w / delta)); h(u) >= ln p_M + E ln w
    # - (1 - p_M) ln u, so h >= delta at ln u_lo = (ln p_M + E ln w - delta) / (1 - p_M).
    s_min = _s_min(dtype)
    var_w = jnp.maximum(st.var_w, tiny)
    s_var = 0.5 * (jnp.log(var_w) - jnp.log(2.0 * delta_pos))
    s_hi = jnp.maximum(jnp.log(jnp.maximum(st.w_sup, tiny)), 0.5 * jnp.log(2.0) + s_var)
    log_pm = jnp.log(jnp.maximum(st.p_max, tiny))
    one_minus_pm = jnp.maximum(1.0 - st.p_max, tiny)
    s_small = (log_pm + st.mean_log_w - delta_pos) / one_minus_pm
    s_lo = jnp.where(st.p_max > 0, jnp.maximum(s_small, s_min), s_min)
    s_hi = jnp.maximum(s_hi, s_lo)
    # The small-level expansion holds for u >> W; below that the small-u asymptote
    # h ~ ln p_M + E ln w - (1 - p_M) ln u is the better start.
    log_w_sup = jnp.log(jnp.maximum(st.w_sup, tiny))
    s0 = jnp.where(s_var >= log_w_sup, jnp.maximum(s_var, s_lo), s_lo)

    w = st.w
    log_delta = jnp.log(delta_pos)

    def residual(s, _):
        # Non-decreasing in s: ln delta - ln h(e^s), with w - m = (p.v - v) + excess.
        u = jnp.exp(s)
        mo = _moments(u, p, st)
        h = jnp.sum(p * jnp.log1p(_w_minus_m(st, mo) / (u + mo.m)))
        h_safe = jnp.maximum(h, tiny)
        f = log_delta - jnp.log(h_safe)
        df = mo.var_y / (mo.zeta * h_safe)
        return f, df

    root = find_root(residual, s0, s_lo, s_hi, xtol=_xtol(dtype), max_steps=_MAX_STEPS)
    u = jnp.exp(root.x)
    mo = _moments(u, p, st)
    c_int = u + mo.m
    q_int = p * (c_int / (u + w))

    # Boundary solution: C = V - exp(E ln w - delta), q*_x = c p_x / w_x on the support,
    # the rest of the mass on the (zero-probability) argmax states, shared equally.
    c_bnd = jnp.exp(st.mean_log_w - delta_pos)
    at_max = w == 0
    w_safe = jnp.where(at_max, 1.0, w)
    q_bnd = jnp.where(at_max, 0.0, p * c_bnd / w_safe)
    q_bnd = q_bnd + jnp.where(at_max, (1.0 - jnp.sum(q_bnd)) / jnp.sum(at_max), 0.0)

    value = jnp.where(boundary, st.V - c_bnd, mu + mo.excess)
    value = jnp.clip(value, mu, st.V)
    c = jnp.where(boundary, c_bnd, c_int)
    q = jnp.where(boundary, q_bnd, q_int)

    # Degenerate cases (paper Theorem 1): -inf if delta < 0, else p.v.
    infeasible = delta < 0
    value = jnp.where(degenerate, jnp.where(infeasible, -jnp.inf, mu), value)
    c = jnp.where(degenerate, 0.0, c)
    q = jnp.where(degenerate, jnp.where(infeasible, 0.0, p), q)
    steps = jnp.where(degenerate | boundary, 0, root.num_steps)
    converged = degenerate | boundary | root.converged
    u = jnp.where(boundary, 0.0, u)
    return KLSolution(value, c, q, steps, converged), u


@jax.custom_jvp
def _kl_ucb_value(p: Array, v: Array, delta: Array) -> Array:
    return _kl_ucb_one(p, v, delta)[0].value


@_kl_ucb_value.defjvp
def _kl_ucb_jvp(primals, tangents):
    p, v, delta = primals
    dp, dv, ddelta = tangents
    sol, u = _kl_ucb_one(p, v, delta)
    V = jnp.max(v)
    mean_w = jnp.sum(p * (V - v))
    regular = (delta > 0) & (mean_w > 0)
    flat = (delta == 0) | ((delta > 0) & (mean_w <= 0))  # value p.v, smooth in (p, v)
    c = sol.multiplier
    # ln(p_x / q*_x) = ln((u* + w_x) / c): finite also where p_x = 0, except on a
    # zero-probability argmax state at the boundary optimum u* = 0 (then -inf).
    ratio = (u + (V - v)) / jnp.where(regular, c, 1.0)
    log_ratio = jnp.log(jnp.where(regular, ratio, 1.0))
    grad_p = jnp.where(regular, -c * (log_ratio + 1.0), jnp.where(flat, v, 0.0))
    grad_v = jnp.where(regular, sol.q, jnp.where(flat, p, 0.0))
    grad_delta = jnp.where(regular, c, jnp.where(delta == 0, jnp.inf, 0.0))
    grad_delta = jnp.where(flat & (mean_w <= 0), 0.0, grad_delta)
    tangent = jnp.zeros_like(sol.value)
    if not _zero_tangent(dp):
        tangent = tangent + jnp.dot(grad_p, dp)
    if not _zero_tangent(dv):
        tangent = tangent + jnp.dot(grad_v, dv)
    if not _zero_tangent(ddelta):
        tangent = tangent + grad_delta * ddelta
    return sol.value, tangent


_kl_ucb_value.defjvp(_kl_ucb_jvp, symbolic_zeros=True)


# ---------------------------------------------------------------------------------------
# kinf: D(p, v, rho).


def _kinf_one(p: Array, v: Array, rho: Array) -> KLSolution:
    """D for one instance: p, v of shape [S], scalar rho. No gradients."""
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    p = _normalise(p)
    st = _stats(p, v)
    w = st.w
    zero = rho <= st.mu  # includes constant v with rho <= V
    infinite = ~zero & (rho >= st.V)  # rho >= max v with non-constant v
    regular = ~zero & ~infinite
    rho_safe = jnp.where(regular, rho, st.mu + 0.5 * st.mean_w)
    w_rho_safe = jnp.maximum(st.V - rho_safe, tiny)  # V - rho, exact near V (Sterbenz)
    gap = jnp.maximum(rho_safe - st.mu, tiny)  # rho - p.v > 0
    rho_minus_v = rho_safe - v  # computed from v directly, no cancellation through V

    # Boundary optimum u* = 0 when V is attained only off the support and
    # V - rho <= m(0) = 1 / E[1/w].
    boundary = regular & (st.p_max <= 0) & (w_rho_safe * st.mean_inv_w <= 1.0)

    # Bracket in s = ln u: m(u) <= u (1 - p_M) / p_M and m(u) >= u E w / (u + W).
    s_min = _s_min(dtype)
    one_minus_pm = jnp.maximum(1.0 - st.p_max, tiny)
    s_small = jnp.log(w_rho_safe) + jnp.log(jnp.maximum(st.p_max, tiny)) - jnp.log(one_minus_pm)
    s_lo = jnp.where(st.p_max > 0, jnp.maximum(s_small, s_min), s_min)
    s_hi = jnp.log(w_rho_safe) + jnp.log(jnp.maximum(st.w_sup, tiny)) - jnp.log(gap)
    s_hi = jnp.maximum(s_hi, s_lo)
    s_large = jnp.log(jnp.maximum(st.var_w, tiny)) - jnp.log(gap)  # m ~ E w - Var w / u
    # That expansion holds for u >> W; below, m ~ u (1 - p_M) / p_M gives s_lo itself.
    log_w_sup = jnp.log(jnp.maximum(st.w_sup, tiny))
    s0 = jnp.where(s_large >= log_w_sup, jnp.maximum(s_large, s_lo), s_lo)

    def residual(s, _):
        # Non-decreasing in s: ln m(e^s) - ln(V - rho) = log1p((m - (V - rho)) / (V - rho)),
        # with m - (V - rho) = u E[(rho - v) / (u + w)] / zeta.
        u = jnp.exp(s)
        denom = u + w
        ybar = jnp.sum(p * (w / denom))
        zeta = jnp.sum(p * (u / denom))
        var_y = jnp.maximum(jnp.sum(p * jnp.square(w / denom)) - ybar * ybar, 0.0)
        diff = u * jnp.sum(p * (rho_minus_v / denom)) / zeta
        f = jnp.log1p(jnp.maximum(diff / w_rho_safe, -1.0))
        df = var_y / jnp.maximum(zeta * ybar, tiny)
        return f, df

    root = find_root(residual, s0, s_lo, s_hi, xtol=_xtol(dtype), max_steps=_MAX_STEPS)
    u = jnp.where(boundary, 0.0, jnp.exp(root.x))
    c = u + w_rho_safe
    lam = 1.0 / c
    # p_x = 0 terms are dropped: at the boundary optimum the argmax term is log(0).
    value = jnp.sum(jnp.where(p > 0, p * jnp.log1p(rho_minus_v / c), 0.0))
    at_max = w == 0
    denom = jnp.where(at_max & (u == 0), 1.0, u + w)
    q = jnp.where(at_max & (u == 0), 0.0, p * c / denom)
    q = q + jnp.where(boundary & at_max, (1.0 - jnp.sum(q)) / jnp.sum(at_max), 0.0)

    value = jnp.where(zero, 0.0, jnp.where(infinite, jnp.inf, value))
    lam = jnp.where(regular, lam, 0.0)
    q = jnp.where(zero, p, jnp.where(infinite, 0.0, q))
    steps = jnp.where(regular & ~boundary, root.num_steps, 0)
    converged = ~regular | boundary | root.converged
    return KLSolution(value, lam, q, steps, converged)


@jax.custom_jvp
def _kinf_value(p: Array, v: Array, rho: Array) -> Array:
    return _kinf_one(p, v, rho).value


@_kinf_value.defjvp
def _kinf_jvp(primals, tangents):
    p, v, rho = primals
    dp, dv, drho = tangents
    sol = _kinf_one(p, v, rho)
    lam = sol.multiplier
    regular = lam > 0
    # ln(p_x / q*_x) = ln(1 + lam (rho - v_x)), finite also where p_x = 0 (except on a
    # zero-probability argmax state at the boundary optimum, where it is -inf).
    arg = 1.0 + lam * (rho - v)
    log_ratio = jnp.log(jnp.where(regular, arg, 1.0))
    grad_p = jnp.where(regular, log_ratio + 1.0, 0.0)
    grad_v = jnp.where(regular, -lam * sol.q, 0.0)
    tangent = jnp.zeros_like(sol.value)
    if not _zero_tangent(dp):
        tangent = tangent + jnp.dot(grad_p, dp)
    if not _zero_tangent(dv):
        tangent = tangent + jnp.dot(grad_v, dv)
    if not _zero_tangent(drho):
        tangent = tangent + lam * drho
    return sol.value, tangent


_kinf_value.defjvp(_kinf_jvp, symbolic_zeros=True)


# ---------------------------------------------------------------------------------------
# Public API.


def _prepare(name: str, p: ArrayLike, v: ArrayLike, level: ArrayLike, level_name: str):
    p, v, level = jnp.asarray(p), jnp.asarray(v), jnp.asarray(level)
    _check_shapes(name, p, v, level, level_name)
    dtype = _common_dtype(p, v, level)
    return p.astype(dtype), v.astype(dtype), level.astype(dtype)


def kl_ucb(p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> Array:
    r"""The MDP-UCB index :math:`C(p, v, \delta) = \sup\{q \cdot v : \mathrm{KL}(p\|q) \le \delta\}`.

    Solved as one unknown (see the module docstring; the paper's Theorem 2 needs two).
    Degenerate cases follow the paper's Theorem 1: ``delta < 0`` gives ``-inf``;
    ``delta == 0`` or constant ``v`` gives ``p.v``. ``p`` may have zero entries; if the
    largest ``v`` is attained only where ``p`` is zero, the supremum may put mass there and
    the value is still exact. Never NaN for valid input (``p`` on the simplex, finite ``v``,
    ``delta`` not NaN).

    Gradients with respect to ``p``, ``v`` and ``delta`` are the envelope-theorem formulas
    ``dC/ddelta = c``, ``dC/dv = q*``, ``dC/dp_x = -c (ln(p_x/q*_x) + 1)`` (custom JVP; no
    differentiation through the iterations). At ``delta == 0`` the right derivative in
    ``delta`` is ``+inf``; other degenerate cases give the derivative of their constant
    value.

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      delta: the KL radius (the paper uses ``ln t / n``), broadcastable to the batch shape.

    Returns:
      The index, shape ``broadcast(p.shape[:-1], v.shape[:-1], delta.shape)``.

    Example:
      >>> import jaxmdp as jm
      >>> jm.kl_ucb([0.5, 0.5], [0.0, 1.0], 0.1)  # Bernoulli KL-UCB of mean 1/2
      Array(0.7128786, dtype=float32)

    References:
      Cowan, Katehakis & Pirutinsky (2019), Theorems 1 and 2; Filippi, Cappé & Garivier
      (2010), section 3.2, for zero-probability states.
    """
    p, v, delta = _prepare("kl_ucb", p, v, delta, "delta")
    return jnp.vectorize(_kl_ucb_value, signature="(s),(s),()->()")(p, v, delta)


def kinf(p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> Array:
    r"""The MDP-DMED rate :math:`D(p, v, \rho) = \inf\{\mathrm{KL}(p\|q) : q \cdot v \ge \rho\}`.

    The paper's :math:`\lambda`-formulation (Theorem 4), solved in the shared variable
    :math:`u` with :math:`\lambda = 1/(u + V - \rho)`. Degenerate cases follow Theorem 3:
    ``rho > max v`` gives ``+inf``; ``rho <= p.v`` gives ``0``; ``rho == max v`` with
    non-constant ``v`` gives ``+inf``. Never NaN for valid input.

    Gradients: ``dD/drho = lam``, ``dD/dv = -lam q*``, ``dD/dp_x = ln(p_x/q*_x) + 1``
    (custom JVP, envelope theorem); zero where the value is ``0`` or ``+inf``.

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      rho: the target value, broadcastable to the batch shape.

    Returns:
      The rate, shape ``broadcast(p.shape[:-1], v.shape[:-1], rho.shape)``.

    Example:
      >>> import jaxmdp as jm
      >>> jm.kinf([0.5, 0.5], [0.0, 1.0], 0.75)  # Bernoulli kl(1/2, 3/4)
      Array(0.14384104, dtype=float32)

    References:
      Cowan, Katehakis & Pirutinsky (2019), Theorems 3 and 4; Honda & Takemura (2010).
    """
    p, v, rho = _prepare("kinf", p, v, rho, "rho")
    return jnp.vectorize(_kinf_value, signature="(s),(s),()->()")(p, v, rho)


def kl_ucb_solve(p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> KLSolution:
    """Like :func:`kl_ucb` but returns the full :class:`KLSolution` (optimiser ``q*``,
    multiplier ``c``, iteration count). Not differentiable; use :func:`kl_ucb` for that.

    Args:
      p: shape ``[..., S]``.
      v: shape ``[..., S]``.
      delta: broadcastable to the batch shape.

    Returns:
      A :class:`KLSolution` with batch-shaped fields and ``q`` of shape ``[..., S]``.
    """
    p, v, delta = _prepare("kl_ucb_solve", p, v, delta, "delta")
    fn = jnp.vectorize(lambda *a: _kl_ucb_one(*a)[0], signature="(s),(s),()->(),(),(s),(),()")
    return KLSolution(*fn(*(lax.stop_gradient(a) for a in (p, v, delta))))


def kinf_solve(p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> KLSolution:
    """Like :func:`kinf` but returns the full :class:`KLSolution` (optimiser ``q*``,
    multiplier ``lam``, iteration count). Not differentiable; use :func:`kinf` for that.

    Args:
      p: shape ``[..., S]``.
      v: shape ``[..., S]``.
      rho: broadcastable to the batch shape.

    Returns:
      A :class:`KLSolution` with batch-shaped fields and ``q`` of shape ``[..., S]``.
    """
    p, v, rho = _prepare("kinf_solve", p, v, rho, "rho")
    fn = jnp.vectorize(_kinf_one, signature="(s),(s),()->(),(),(s),(),()")
    return KLSolution(*fn(*(lax.stop_gradient(a) for a in (p, v, rho))))
