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
  :math:`h(u) = E_p \log\big(1 + \tfrac{w - m}{u + m}\big) = \delta` (this is
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

**The path follows the platform**, read when a program is traced (the default device's
platform if one is set, as by ``jax.default_device``, else ``jax.default_backend()``). On a
CPU, a batch of problems of 4,096 states or more is solved one problem after another
(``lax.map``, each problem's arrays staying in cache across its iterations) and smaller
batches are vectorised, each root found by a data-dependent loop. On an accelerator (GPU,
TPU) the whole batch is vectorised at every size, and the root finder's first six steps
run as a loop of fixed trip count, with steps that fit an exponential ``a + b e^{k s}`` to
the residual (exact where it behaves so: ``ln m`` at both ends, ``ln h`` at small levels,
and between the two scales of a value far above the rest), followed by one check and the
data-dependent loop only while some problem still runs: on a GPU each trip of a
data-dependent loop copies its predicate to the host and waits. ``kl_ucb``'s residual
there also reports its rounding error, so that a level below what ``h`` resolves ends
the iteration. Both paths give the same values within 1e-12 relative in float64, or
within a few roundings of the scale of ``v`` where neither resolves more (float32, or a
level below what float64 resolves); the accelerator's passes over the data are at most 8
on the tests' random and hard problems of 10^4 and 10^5 states.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from jaxmdp._order import platform
from jaxmdp._passes import in_passes
from jaxmdp.indices._common import check_shapes, nan_where, normalise, prepare, safe_divisor
from jaxmdp.indices._roots import MAX_STEPS, find_root, halley_xtol

Array = jax.Array
ArrayLike = jax.typing.ArrayLike


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


# The accelerator layout's estimate of the rounding error of kl_ucb's residual, in ulps of
# the sums it cancels (_kl_ucb_root).
_NOISE_ULPS = 4.0
# Residuals within their rounding error below this stop the accelerator layout's kl_ucb
# root, whose polish then takes a step of up to _NOISE_REACH (in s = ln u).
_NOISE_STOP = 0.1
_NOISE_REACH = 0.25


def _s_min(dtype) -> float:
    # Smallest ln(u) whose exp is a comfortably normal number.
    return float(np.log(np.finfo(dtype).tiny)) + 10.0


class _Stats(NamedTuple):
    """Moments of w = V - v under p."""

    V: Array  # max v over all states (including p = 0)
    w: Array  # V - v >= 0, shape [S]
    mu: Array  # p.v
    centered: Array  # p.v - v, computed from v directly (no cancellation through V)
    p_max: Array  # probability of the argmax states
    p_min: Array  # smallest entry of p (negative: invalid input)
    mean_w: Array  # E_p w = V - p.v
    var_w: Array  # Var_p w = Var_p v
    w_sup: Array  # max of w over the support of p
    log_w_lower: Array  # a lower bound on E_p[ln w] over {p > 0, w > 0}
    log_w_guess: Array  # an estimate of E_p[ln w] over {p > 0, w > 0}
    mean_inv_w: Array  # E_p[1/w] over {p > 0, w > 0} (0 when computed without zeros)


def _stats(p: Array, v: Array, with_zeros: bool) -> _Stats:
    """Moments under p, which must already be normalised.

    ``with_zeros`` (static) says whether p may have zero entries: only then can the optimum
    sit on the boundary, which needs the exact E ln w and E 1/w (a log and a division per
    state). Without zeros, cheap bounds replace them for the small-u starting point.
    """
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
    if with_zeros:
        # ln 1 = 0 outside `inner`: no select after the log (see _log1p_or_log).
        w_safe = jnp.where(inner, w, 1.0)
        mean_log_w = jnp.sum(p * jnp.log(w_safe))
        mean_inv_w = jnp.sum(jnp.where(inner, p, 0.0) / w_safe)
        log_w_lower = log_w_guess = mean_log_w
    else:
        # E_{w>0} ln w >= (1 - p_M) ln min w (a bound) and <= (1 - p_M) ln(E w / (1 - p_M))
        # (Jensen; used as the estimate).
        one_minus_pm = jnp.maximum(1.0 - p_max, jnp.finfo(p.dtype).tiny)
        w_min = jnp.min(jnp.where(inner, w, jnp.inf))
        w_min = jnp.where(jnp.isfinite(w_min), w_min, 1.0)
        log_w_lower = one_minus_pm * jnp.log(w_min)
        log_w_guess = one_minus_pm * jnp.log(jnp.maximum(mean_w / one_minus_pm, w_min))
        mean_inv_w = jnp.zeros_like(mu)
    return _Stats(V, w, mu, centered, p_max, jnp.min(p), mean_w, var_w, w_sup, log_w_lower,
                  log_w_guess, mean_inv_w)


class _Moments(NamedTuple):
    ybar: Array  # E_p[y], y = w / (u + w)
    zeta: Array  # E_p[1 - y], computed without cancellation
    var_y: Array  # Var_p[y] (only used for Newton derivatives)
    m: Array  # m(u) = u ybar / zeta
    excess: Array  # E_p w - m(u) = E_p[(1 - y)(v - p.v)] / zeta >= 0


def _moments(u: Array, p: Array, st: _Stats) -> _Moments:
    """Accurate moments at u > 0 for the final evaluation (one division per state)."""
    r = 1.0 / (u + st.w)
    y = st.w * r
    t = u * r  # 1 - y, computed without cancellation
    ybar = jnp.sum(p * y)
    zeta = jnp.sum(p * t)
    var_y = jnp.maximum(jnp.sum(p * y * y) - ybar * ybar, 0.0)
    # excess = E_q[v] - p.v with q proportional to p t = p u / (u + w), the optimiser's
    # shape: positive weights, so no cancellation for small or large u.
    excess = jnp.maximum(-jnp.sum(p * t * st.centered), 0.0) / zeta
    return _Moments(ybar, zeta, var_y, u * ybar / zeta, excess)


class _Sweep(NamedTuple):
    """Everything one Newton-Halley step needs, from one fused pass over the states."""

    zeta: Array  # E t, t = u / (u + w)
    ybar: Array  # E y, y = w / (u + w) = 1 - t
    var: Array  # Var t = Var y
    dzeta: Array  # d zeta / ds
    dvar: Array  # d var / ds
    extra: Array  # E_p[f] of the caller's elementwise term (0 if none)


def _sweep(u: Array, p: Array, w: Array, w_scale: Array, term=None, weights=None,
           weights_mean=None) -> _Sweep:
    """Moments of t = u/(u + w) and y = 1 - t from four sums and one division per state.

    The moments are taken of whichever of t and y is the small one (t when u < E w, else
    y), so that the mean of the other, 1 - mean, and the central moments do not cancel.
    ``extra`` is ``E_p[term(t)]``, or ``E_p[weights * t]`` computed as
    ``weights_mean - E_p[weights * y]`` when y is the small one (``weights_mean`` is
    ``E_p[weights]``, supplied accurately by the caller).
    """
    r = 1.0 / (u + w)
    small_t = u < w_scale
    z = jnp.where(small_t, u, w) * r
    z2 = z * z
    m1, m2, m3 = jnp.sum(p * z), jnp.sum(p * z2), jnp.sum(p * z2 * z)
    if term is not None:
        extra = jnp.sum(p * term(u * r))
    elif weights is not None:
        extra_z = jnp.sum(p * weights * z)
        extra = jnp.where(small_t, extra_z, weights_mean - extra_z)
    else:
        extra = jnp.zeros_like(m1)
    zeta = jnp.where(small_t, m1, 1.0 - m1)
    ybar = jnp.where(small_t, 1.0 - m1, m1)
    var = jnp.maximum(m2 - m1 * m1, 0.0)
    skew_z = m3 - 3.0 * m1 * m2 + 2.0 * m1**3
    skew_t = jnp.where(small_t, skew_z, -skew_z)
    # dt/ds = t (1 - t): d zeta/ds = zeta ybar - var, d var/ds = 2 (var (ybar - zeta) - skew).
    dzeta = zeta * ybar - var
    dvar = 2.0 * (var * (ybar - zeta) - skew_t)
    return _Sweep(zeta, ybar, var, dzeta, dvar, extra)


def _w_minus_m(st: _Stats, mo: _Moments) -> Array:
    """w_x - m(u), elementwise, in whichever of two exact forms rounds less.

    ``w - m`` directly is accurate when both are small (small u, argmax states);
    ``(p.v - v) + excess`` is accurate when v has a large offset or outlier, where the
    differences of the shifted values w = V - v have lost their low digits.
    """
    direct = st.w - mo.m
    centred = st.centered + mo.excess
    direct_error = st.w + mo.m
    centred_error = jnp.abs(st.mu) + jnp.abs(st.centered - st.mu) + mo.excess
    return jnp.where(direct_error <= centred_error, direct, centred)


def _log1p_or_log(x: Array, y: Array, use_log1p: Array, keep: Array) -> Array:
    """Elementwise ``log1p(x)`` where ``use_log1p``, ``log(y)`` elsewhere, ``0`` off ``keep``.

    One ``log1p`` per state, with every select on its argument, never on its result:
    XLA's CPU backend stops vectorising a fused loop in which a select follows a
    transcendental (``where(c, log1p(x), log(y))`` measured about 3x slower than this at
    S = 10^4). ``log(y)`` is taken exactly through the same ``log1p``: with
    ``y = m 2^e``, ``m`` in ``[1, 2)``, ``log y = log1p(m - 1) + e ln 2`` (``m - 1`` is
    exact).
    """
    mantissa, exponent = jnp.frexp(jnp.where(use_log1p | ~keep, 1.0, y))  # in [1/2, 1)
    z = jnp.where(keep, jnp.where(use_log1p, x, 2.0 * mantissa - 1.0), 0.0)
    e = jnp.where(use_log1p | ~keep, 0, exponent - 1).astype(z.dtype)
    return jnp.log1p(z) + e * np.log(2.0).astype(z.dtype)


def _zero_tangent(t) -> bool:
    return isinstance(t, SymbolicZero)


# ---------------------------------------------------------------------------------------
# kl_ucb: C(p, v, delta).


def _invalid(p_raw: Array, st: _Stats, level: Array) -> Array:
    """True where the inputs are outside the documented domain, where the outputs are NaN
    (as in ``jax.numpy``): a NaN anywhere, an infinite entry of ``p`` or ``v``, a
    negative entry of ``p``, ``sum(p) <= 0``, or a NaN level. Read off reductions the solve
    makes anyway: each of these makes ``p.v`` non-finite, except a negative ``p_x``."""
    return (~jnp.isfinite(st.mu) | (st.p_min < 0) | ~(jnp.sum(p_raw) > 0)
            | jnp.isnan(level))


def _poison(sol: KLSolution, bad: Array) -> KLSolution:
    return sol._replace(value=nan_where(bad, sol.value),
                        multiplier=nan_where(bad, sol.multiplier),
                        q=nan_where(bad, sol.q), converged=sol.converged & ~bad)


def _kl_ucb_bracket(st: _Stats, delta: Array, dtype) -> tuple[Array, Array, Array]:
    """Starting point and bracket ``(s0, s_lo, s_hi)`` in ``s = ln u`` for ``h(u) = delta``.

    ``h(u) <= Var_w (1 + W/u)^2 / (2 u^2)``, so ``h <= delta`` at
    ``u_hi = max(W, sqrt(2 Var_w / delta))``; ``h(u) >= ln p_M + E ln w - (1 - p_M) ln u``,
    so ``h >= delta`` at ``ln u_lo = (ln p_M + E ln w - delta) / (1 - p_M)``. The start is
    the small-level expansion ``h ~ Var_w / (2 u^2)`` where it holds (``u >> W``), else the
    small-``u`` asymptote.
    """
    tiny = jnp.finfo(dtype).tiny
    s_min = _s_min(dtype)
    var_w = jnp.maximum(st.var_w, tiny)
    s_var = 0.5 * (jnp.log(var_w) - jnp.log(2.0 * delta))
    s_hi = jnp.maximum(jnp.log(jnp.maximum(st.w_sup, tiny)), 0.5 * jnp.log(2.0) + s_var)
    log_pm = jnp.log(jnp.maximum(st.p_max, tiny))
    one_minus_pm = jnp.maximum(1.0 - st.p_max, tiny)
    s_small = (log_pm + st.log_w_lower - delta) / one_minus_pm
    s_lo = jnp.where(st.p_max > 0, jnp.maximum(s_small, s_min), s_min)
    s_guess = (log_pm + st.log_w_guess - delta) / one_minus_pm
    s_hi = jnp.maximum(s_hi, s_lo)
    log_w_sup = jnp.log(jnp.maximum(st.w_sup, tiny))
    s0 = jnp.where(s_var >= log_w_sup, jnp.maximum(s_var, s_lo), jnp.maximum(s_guess, s_lo))
    return s0, s_lo, s_hi


def _kl_ucb_root(p: Array, st: _Stats, delta: Array, active: Array, fixed: int = 0):
    """Solves ``h(e^s) = delta`` in ``s`` by Halley's method (a :class:`RootResult`);
    not iterated where ``active`` is False (a case whose root is not used). ``fixed``
    (static): steps run as a loop of a fixed trip count first (the accelerator path)."""
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    eps = jnp.finfo(dtype).eps
    s0, s_lo, s_hi = _kl_ucb_bracket(st, delta, dtype)
    w = st.w
    log_delta = jnp.log(delta)

    def log1p_w_over_u(s, u, inv_u):
        ratio = w * inv_u
        if not fixed:
            return jnp.log1p(ratio)
        # Where w/u overflows (u near the underflow threshold, w large), ln(u + w) - s:
        # finite, so that the residual keeps its sign down to the bracket's lower end.
        return jnp.where(jnp.isfinite(ratio), jnp.log1p(ratio), jnp.log(u + w) - s)

    def residual(s, _):
        # Non-decreasing in s: F = ln delta - ln h(e^s) with
        # h = E ln((u + w)/u) + ln E[u/(u + w)] = E log1p(w/u) + ln zeta,
        # h_s = -Var t / zeta (t = u/(u + w)), and h_ss from the third moment.
        u = jnp.exp(s)
        inv_u = jnp.exp(-s)
        sw = _sweep(u, p, w, st.mean_w, lambda t: log1p_w_over_u(s, u, inv_u))
        log_zeta = jnp.where(sw.zeta < 0.5, jnp.log(sw.zeta), jnp.log1p(-sw.ybar))
        h = jnp.maximum(sw.extra + log_zeta, tiny)
        h_s = -sw.var / sw.zeta
        h_ss = -(sw.dvar * sw.zeta - sw.var * sw.dzeta) / (sw.zeta * sw.zeta)
        g = h_s / h
        out = (log_delta - jnp.log(h), -g, -h_ss / h + g * g)
        if not fixed:
            return out
        # The rounding error of F: h is the difference of two sums of size E log1p(w/u),
        # whose cancellation limits it at small delta. Where that error is small, a
        # point with |F| below it is a root as far as F can tell (the polish,
        # _kl_ucb_polish, recomputes h without cancellation and takes the rest of the
        # step). Where it exceeds 1, F and its derivatives are noise. With F < 0 the root
        # lies further right, where the error grows with u (about 16 eps E w u / Var w)
        # while the excess C - p.v falls (about Var w / u): the excess is below 16 eps E w
        # there, about the rounding of C itself, and the iteration ends at the bracket's
        # upper end (an infinite error). With F > 0 the root may lie to the left, where F
        # resolves h again: the step goes to where the error would be about 1/e,
        # 1 + ln(error) to the left (an error growing like u), not a Newton step on noise.
        f, df, d2f = out
        noise = _NOISE_ULPS * eps * (sw.extra - log_zeta) / h
        tolerance = jnp.where(noise <= _NOISE_STOP, noise, 0.0)
        lost = noise > 1.0
        df = jnp.where(lost & (f > 0), f / (1.0 + jnp.log(jnp.where(lost, noise, 1.0))), df)
        d2f = jnp.where(lost, 0.0, d2f)
        return f, df, d2f, jnp.where(lost & (f < 0), jnp.inf, tolerance)

    return find_root(residual, s0, s_lo, s_hi, xtol=halley_xtol(dtype), max_steps=MAX_STEPS,
                     active=active, fixed_steps=fixed, exponential=bool(fixed))


def _kl_ucb_polish(p: Array, st: _Stats, s: Array, delta: Array, reach: float = 1e-2):
    """One Newton step from the root ``s`` on the cancellation-free ``h``; ``(u, m, excess)``.

    The residual of :func:`_kl_ucb_root` loses relative accuracy in ``h`` when ``v`` has a
    large offset (``h`` is then a small difference of two first-order terms). One Newton
    step on ``h = E log1p((w - m)/(u + m))`` restores full accuracy; the moments at the
    polished point follow by a first-order update (``dm/du = Var t / zeta^2``), exact to
    second order in the (already tiny) step. A step of ``reach`` or more (static) is not
    taken (the root was clamped to its bracket).
    """
    u1 = jnp.exp(s)
    mo = _moments(u1, p, st)
    h1 = jnp.sum(p * jnp.log1p(_w_minus_m(st, mo) / (u1 + mo.m)))
    slope = mo.var_y / mo.zeta  # -dh/ds
    step = (h1 - delta) / slope  # Newton on h(e^s) = delta in s
    step = jnp.where(jnp.isfinite(step) & (h1 > 0) & (jnp.abs(step) < reach), step, 0.0)
    u = u1 * jnp.exp(step)
    dm = jnp.where(u == u1, 0.0, (mo.var_y / mo.zeta) * ((u - u1) / mo.zeta))
    m = mo.m + dm
    excess = jnp.maximum(mo.excess - dm, 0.0)
    return u, m, excess


def _kl_ucb_boundary(p: Array, st: _Stats, delta: Array) -> tuple[Array, Array]:
    """The boundary optimum ``u* = 0``: ``c = exp(E ln w - delta)``, ``C = V - c``, and
    ``q*_x = c p_x / w_x`` on the support, the rest of the mass shared equally by the
    (zero-probability) argmax states. Returns ``(c, q*)``."""
    c_bnd = jnp.exp(st.log_w_lower - delta)
    at_max = st.w == 0
    w_safe = jnp.where(at_max, 1.0, st.w)
    q_bnd = jnp.where(at_max, 0.0, p * c_bnd / w_safe)
    q_bnd = q_bnd + jnp.where(at_max, (1.0 - jnp.sum(q_bnd)) / jnp.sum(at_max), 0.0)
    return c_bnd, q_bnd


def _kl_ucb_one(p: Array, v: Array, delta: Array, with_zeros: bool = True,
                fixed: int = 0) -> tuple[KLSolution, Array]:
    """C for one instance: p, v of shape [S], scalar delta; also returns u*. No gradients.

    ``with_zeros=False`` (static) promises that p has no zero entries (faster).
    ``fixed`` (static): the root finder's steps run as a fixed trip count first
    (:func:`jaxmdp.indices._roots.find_root`'s ``fixed_steps``).
    """
    tiny = jnp.finfo(p.dtype).tiny
    p_raw = p
    p = normalise(p)
    st = _stats(p, v, with_zeros)
    mu = st.mu
    degenerate = (delta <= 0) | (st.mean_w <= 0)  # delta <= 0, constant v, or p on argmax
    delta_pos = jnp.where(degenerate, 1.0, delta)  # a safe level for the dead branch
    # Boundary optimum u* = 0 (possible only if the argmax states have zero probability).
    boundary = (~degenerate & (st.p_max <= 0)
                & (st.log_w_lower + jnp.log(jnp.maximum(st.mean_inv_w, tiny)) <= delta_pos))

    # The root is used only off the degenerate and boundary cases (closed forms): the
    # others are not iterated, so that they do not hold a batch's loop (the boundary
    # case's root runs to the bracket's end, tens of bisections).
    root = _kl_ucb_root(p, st, delta_pos, ~(degenerate | boundary), fixed)
    # The accelerator layout's root may stop within its residual's rounding error
    # (_kl_ucb_root): the polish takes the larger step that needs.
    u, m, excess = _kl_ucb_polish(p, st, root.x, delta_pos,
                                  _NOISE_REACH if fixed else 1e-2)
    c_int = u + m
    # q*_x = c p_x / (u + w_x) = p_x t_x / E_p t with t = u / (u + w): scale-free, so it
    # stays a probability vector when u* is near the underflow threshold (then m(u) may
    # flush to zero and c = u + m would lose the mass of the states below the maximum).
    t_int = u / (u + st.w)
    q_int = p * t_int / jnp.sum(p * t_int)
    c_bnd, q_bnd = _kl_ucb_boundary(p, st, delta_pos)

    value = jnp.where(boundary, st.V - c_bnd, mu + excess)
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
    return _poison(KLSolution(value, c, q, steps, converged), _invalid(p_raw, st, delta)), u


# ---------------------------------------------------------------------------------------
# kinf: D(p, v, rho).


def _two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """Knuth's error-free sum: ``a + b = s + e`` exactly, ``s = fl(a + b)``."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: Array, b: Array) -> tuple[Array, Array]:
    """Dekker's error-free product: ``a * b = x + e`` exactly (no FMA needed)."""
    factor = 134217729.0 if a.dtype == jnp.float64 else 4097.0  # 2^27 + 1, 2^12 + 1

    def split(x):
        c = factor * x
        hi = c - (c - x)
        return hi, x - hi

    x = a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b)
    return x, a_lo * b_lo - (((x - a_hi * b_hi) - a_lo * b_hi) - a_hi * b_lo)


def _accurate_gap(p: Array, v: Array, rho: Array, keep: Array) -> Array:
    """``sum_x p_x (rho - v_x)`` over ``keep``, as if computed in twice the precision.

    ``rho - v_x`` and each product are split into exact pairs (``_two_sum``,
    ``_two_product``) and the high parts are summed by a tree of ``_two_sum``: the result
    is the exactly rounded sum up to a few ulps even when the terms cancel to 1e-12 of
    their size (``rho`` within rounding of ``p.v``), where a plain sum has no correct
    digits. ``p`` need not be normalised.
    """
    d_hi, d_lo = _two_sum(rho, -v)
    x, e = _two_product(jnp.where(keep, p, 0.0), d_hi)
    e = e + jnp.where(keep, p, 0.0) * d_lo
    bad = ~(jnp.isfinite(x) & jnp.isfinite(e))  # split overflow for |v| near the max float
    x = jnp.where(bad, 0.0, x)
    e = jnp.where(bad, jnp.where(keep, p, 0.0) * (rho - v), e)
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = jnp.concatenate([x, jnp.zeros_like(x[..., :1])], axis=-1)
            e = jnp.concatenate([e, jnp.zeros_like(e[..., :1])], axis=-1)
        half = x.shape[-1] // 2
        x, err = _two_sum(x[..., :half], x[..., half:])
        e = e[..., :half] + e[..., half:] + err
    return x[..., 0] + e[..., 0]


def _log1p_minus_x(z: Array) -> Array:
    """``log1p(z) - z`` to full relative accuracy for ``|z| <= 0.01`` (no cancellation).

    The Taylor series ``-z^2/2 + z^3/3 - ... - z^10/10`` by Horner's rule (no division, no
    transcendental): the omitted terms are below ``0.01^9 / 11``, under 1e-16 of the result.
    """
    series = jnp.full_like(z, -1.0 / 10.0)
    for k in range(9, 1, -1):
        series = series * z + (1.0 if k % 2 else -1.0) / k
    return series * z * z


# States with |lam (rho - v_x)| below this use the cancellation-free split of D (_kinf_one).
_SMALL_Z = 0.01
# The gap rho - p.v is summed in double precision when it is below this fraction of the
# scale of v (rho - rounded p.v then loses more than ~1e-13 of D's relative accuracy).
_PRECISE_GAP = 1e-3
# kinf's one-log1p-per-state sum of D is kept when sum_x p_x |ln y_x| is surely at most
# this many times D (its rounding error is then below ~1e-13 relative in float64);
# otherwise D is summed without cancellation.
_CANCELLATION = 64.0


class _KinfCase(NamedTuple):
    """Which case of Theorem 3 applies, and safe stand-ins for the dead branches."""

    zero: Array  # rho <= p.v: D = 0
    infinite: Array  # rho >= max v, non-constant v: D = +inf
    regular: Array  # p.v < rho < max v
    boundary: Array  # regular, with the optimum at u* = 0
    precise: Array  # rho - p.v was (or must be) summed in double precision
    rho: Array  # rho where regular, a level inside (p.v, V) elsewhere
    w_rho: Array  # V - rho > 0
    gap: Array  # rho - p.v > 0
    rho_minus_v: Array  # rho - v_x, shape [S]


def _plain_gap(p_raw: Array, st: _Stats, rho: Array) -> tuple[Array, Array]:
    """``((rho - p.v) sum(p_raw), precise)``: the gap from the rounded ``p.v``, and whether it
    must be summed in double precision instead (below ``_PRECISE_GAP`` of the scale of
    ``v``; :func:`_kinf_case`)."""
    total = jnp.sum(p_raw)
    plain = (rho - st.mu) * total
    size = (jnp.abs(rho - st.mu) + st.mean_w + jnp.abs(st.mu) + jnp.abs(st.V)) * total
    return plain, jnp.abs(plain) <= _PRECISE_GAP * size


def _precise_gap(p_raw: Array, p: Array, v: Array, rho: Array) -> Array:
    """``sum_x p_raw_x (rho - v_x)`` in double precision over the support of the
    normalised ``p`` (:func:`_accurate_gap`)."""
    return _accurate_gap(p_raw, v, rho, p > 0)


def _kinf_case(p_raw: Array, p: Array, v: Array, rho: Array, st: _Stats,
               exact: bool, gap_raw: Array | None = None) -> _KinfCase:
    """Sorts out the case of ``kinf`` from ``rho - p.v``, computed without cancellation.

    ``rho - p.v`` is ``rho`` minus the rounded ``p.v`` where that keeps ~13 correct digits;
    else (``exact=True`` only) ``sum_x p_x (rho - v_x)`` on the exact differences, in
    double precision: with ``v`` near 1e4 and ``rho - p.v`` near 1e-13, the rounded ``p.v``
    may lie on either side of ``rho``. A caller that has computed that gap already (times
    ``sum(p_raw)``: the plain one, or the double-precision one where it is ``precise``)
    passes it as ``gap_raw``, whatever ``exact``.
    """
    tiny = jnp.finfo(p.dtype).tiny
    total = jnp.sum(p_raw)
    rho_minus_v = rho - v  # computed from v directly, no cancellation through V
    plain, precise = _plain_gap(p_raw, st, rho)
    if gap_raw is None:
        gap_raw = (lax.cond(precise, lambda: _precise_gap(p_raw, p, v, rho), lambda: plain)
                   if exact else plain)
    gap_all = gap_raw / safe_divisor(total)
    zero = gap_all <= 0  # rho <= p.v; includes constant v with rho <= V
    infinite = ~zero & (rho >= st.V)  # rho >= max v with non-constant v
    regular = ~zero & ~infinite
    rho_safe = jnp.where(regular, rho, st.mu + 0.5 * st.mean_w)
    w_rho_safe = jnp.maximum(st.V - rho_safe, tiny)  # V - rho, exact near V (Sterbenz)
    gap = jnp.where(regular, gap_all, 0.5 * st.mean_w)  # rho - p.v > 0
    gap = jnp.maximum(gap, tiny)
    rho_minus_v = jnp.where(regular, rho_minus_v, rho_safe - v)
    # Boundary optimum u* = 0 when V is attained only off the support and
    # V - rho <= m(0) = 1 / E[1/w].
    boundary = regular & (st.p_max <= 0) & (w_rho_safe * st.mean_inv_w <= 1.0)
    return _KinfCase(zero, infinite, regular, boundary, precise, rho_safe, w_rho_safe, gap,
                     rho_minus_v)


def _kinf_root(p: Array, st: _Stats, case: _KinfCase, fixed: int = 0):
    """Solves ``m(e^s) = V - rho`` in ``s = ln u`` by Halley's method (a ``RootResult``),
    for the regular cases off the boundary only (the others' roots are not used: they are
    not iterated, so that they do not hold a batch's loop).

    Bracket: ``m(u) <= u (1 - p_M) / p_M`` and ``m(u) >= u E w / (u + W)``. Start: the
    large-``u`` expansion ``m ~ E w - Var w / u`` where it holds (``u >> W``), else the
    bracket's lower end (``m ~ u (1 - p_M) / p_M``).
    """
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    w_rho, gap, w = case.w_rho, case.gap, st.w
    s_min = _s_min(dtype)
    one_minus_pm = jnp.maximum(1.0 - st.p_max, tiny)
    s_small = jnp.log(w_rho) + jnp.log(jnp.maximum(st.p_max, tiny)) - jnp.log(one_minus_pm)
    s_lo = jnp.where(st.p_max > 0, jnp.maximum(s_small, s_min), s_min)
    s_hi = jnp.log(w_rho) + jnp.log(jnp.maximum(st.w_sup, tiny)) - jnp.log(gap)
    s_hi = jnp.maximum(s_hi, s_lo)
    s_large = jnp.log(jnp.maximum(st.var_w, tiny)) - jnp.log(gap)
    log_w_sup = jnp.log(jnp.maximum(st.w_sup, tiny))
    s0 = jnp.where(s_large >= log_w_sup, jnp.maximum(s_large, s_lo), s_lo)

    def residual(s, _):
        # Non-decreasing in s: F = ln m(e^s) - ln(V - rho), where
        # m - (V - rho) = E[(rho - v) t] / zeta (t = u/(u + w)) and F_s = Var t / (zeta ybar).
        # For large u, E[(rho - v) t] = (rho - p.v) - E[(rho - v) y] with the accurate gap.
        u = jnp.exp(s)
        sw = _sweep(u, p, w, st.mean_w, weights=case.rho_minus_v, weights_mean=gap)
        f = jnp.log1p(jnp.maximum(sw.extra / (sw.zeta * w_rho), -1.0))
        zy = sw.zeta * sw.ybar
        df = sw.var / jnp.maximum(zy, tiny)
        d_zy = sw.dzeta * (sw.ybar - sw.zeta)
        d2f = (sw.dvar * zy - sw.var * d_zy) / jnp.maximum(zy * zy, tiny)
        return f, df, d2f

    return find_root(residual, s0, s_lo, s_hi, xtol=halley_xtol(dtype), max_steps=MAX_STEPS,
                     active=case.regular & ~case.boundary, fixed_steps=fixed,
                     exponential=bool(fixed))


def _kinf_value_fast(p: Array, st: _Stats, case: _KinfCase, u: Array,
                     c: Array) -> tuple[Array, Array]:
    """``D = E_p ln(1 + z)``, ``z = (rho - v)/c``, one log1p per state; and whether it is
    accurate.

    Every select is on the log's argument (see :func:`_log1p_or_log`): ``log1p(z)`` where
    ``1 + z = (u + w)/c > 1/2``; below, ``ln(1 + z) = -log1p((v - rho)/(u + w))``, whose
    argument ``>= 1`` comes from exact differences (no cancellation; ``+inf`` at
    ``u + w = 0``). The sum loses about ``eps sum_x p_x |ln(1 + z_x)| / D``, bounded
    without a second pass over the logs: the positive terms sum to
    ``P <= B = E_p (rho - v)^+ / c``, the negative ones to ``P - D``, so the absolute terms
    sum to at most ``2B - D``. The sum is accurate when ``2B <= _CANCELLATION D`` (``rho``
    well above ``p.v``, the usual case) and it did not overflow.
    """
    rho_minus_v = case.rho_minus_v
    below_half = -rho_minus_v >= 0.5 * c
    ratio = (jnp.where(below_half, -rho_minus_v, rho_minus_v)
             / jnp.where(below_half, u + st.w, c))
    # The sign goes on the weight, before the log (a select-fed factor after the log could
    # become a select after a transcendental).
    value = jnp.sum(jnp.where(below_half, -p, p) * jnp.log1p(jnp.where(p > 0, ratio, 0.0)))
    positive_part = (1.0 / c) * jnp.sum(p * jnp.maximum(rho_minus_v, 0.0))
    fast = jnp.isfinite(value) & (2.0 * positive_part <= _CANCELLATION * value)
    return value, fast


def _kinf_value_split(p_raw: Array, p: Array, v: Array, st: _Stats, case: _KinfCase,
                      u: Array, c: Array) -> Array:
    """``D = E_p ln(1 + z)`` without cancellation, also when ``D`` is tiny (``rho`` near
    ``p.v``).

    Where ``|z| < _SMALL_Z``, ``ln(1 + z)`` is split as ``z + (log1p(z) - z)``: the first
    parts sum to ``sum_small p (rho - v) / c`` (the gap again, accurate), the second parts
    have one sign. Elsewhere ``ln((u + w)/(u + V - rho))``: log1p of the centred difference
    near 1, the plain ratio far below 1 (where ``u`` may be lost in ``u + V - rho``, as for
    argmax states in float32). ``p_x = 0`` terms are dropped (at a boundary optimum:
    ``log 0``).
    """
    positive = p > 0
    z = case.rho_minus_v / c
    small = positive & (jnp.abs(z) < _SMALL_Z)
    big = positive & ~small
    log_ratio = _log1p_or_log(z, jnp.maximum(u + st.w, 0.0) / c, z > -0.5, big)
    correction = _log1p_minus_x(jnp.where(small, z, 0.0))
    gap_small = lax.cond(
        case.precise,
        lambda: (_accurate_gap(p_raw, v, case.rho, small)
                 / safe_divisor(jnp.sum(p_raw))),
        lambda: jnp.sum(jnp.where(small, p * case.rho_minus_v, 0.0)))
    return (1.0 / c) * gap_small + jnp.sum(p * (log_ratio + correction))


def _kinf_one(p: Array, v: Array, rho: Array, with_zeros: bool = True,
              exact: bool = True, gap_raw: Array | None = None,
              fixed: int = 0) -> tuple[KLSolution, Array, Array, Array]:
    """D for one instance: p, v of shape [S], scalar rho; also returns u*, V - rho and
    whether the ``exact=True`` solve is needed.

    ``with_zeros=False`` (static) promises that p has no zero entries (faster).
    ``exact=False`` (static) leaves out the double-precision gap (:func:`_kinf_case`) and
    the cancellation-free sum of D (:func:`_kinf_value_split`), and says so in the last
    output when this instance needs them (``rho`` within ~1e-3 of the scale of ``v`` of
    ``p.v``); the result is then identical to that of ``exact=True`` wherever that flag is
    False. Callers run the exact solve only when some instance of the batch needs it (see
    :func:`_native`), not through a ``lax.cond`` per instance: that becomes a select
    running both branches in the vectorised (small-S) solve, and costs several
    microseconds per instance inside ``lax.map`` on CPU.

    ``gap_raw``: the gap ``(rho - p.v) sum(p)`` computed beforehand, in double precision
    where it is ``precise`` (:func:`_gaps`); then ``exact=False`` flags only the instances
    whose ``D`` needs the cancellation-free sum. ``fixed`` (static): the root finder's
    steps run as a fixed trip count first (the accelerator path, :func:`_native`).
    """
    p_raw = p
    p = normalise(p)
    st = _stats(p, v, with_zeros)
    case = _kinf_case(p_raw, p, v, rho, st, exact, gap_raw)
    root = _kinf_root(p, st, case, fixed)
    u = jnp.where(case.boundary, 0.0, jnp.exp(root.x))
    c = u + case.w_rho
    lam = 1.0 / c
    value_fast, fast = _kinf_value_fast(p, st, case, u, c)
    if exact:
        value = jnp.where(fast, value_fast, _kinf_value_split(p_raw, p, v, st, case, u, c))
    else:
        value = value_fast
    needs_exact = case.regular & ~fast
    if gap_raw is None:
        needs_exact = needs_exact | case.precise
    at_max = st.w == 0
    denom = jnp.where(at_max & (u == 0), 1.0, u + st.w)
    q = jnp.where(at_max & (u == 0), 0.0, p * c / denom)
    q = q + jnp.where(case.boundary & at_max, (1.0 - jnp.sum(q)) / jnp.sum(at_max), 0.0)

    lam = jnp.where(case.regular, lam, 0.0)
    q = jnp.where(case.zero, p, jnp.where(case.infinite, 0.0, q))
    steps = jnp.where(case.regular & ~case.boundary, root.num_steps, 0)
    converged = ~case.regular | case.boundary | root.converged
    sol = _poison(KLSolution(_kinf_cases(value, case), lam, q, steps, converged),
                  _invalid(p_raw, st, rho))
    return sol, u, case.w_rho, needs_exact


def _kinf_cases(value: Array, case: _KinfCase) -> Array:
    """The regular value ``D >= 0``, or ``0`` / ``+inf`` in those cases."""
    value = jnp.maximum(value, 0.0)
    return jnp.where(case.zero, 0.0, jnp.where(case.infinite, jnp.inf, value))


def _kinf_split_one(with_zeros: bool, p: Array, v: Array, rho: Array, gap_raw: Array,
                    u: Array) -> tuple[Array, Array]:
    """``D`` of one instance summed without cancellation (:func:`_kinf_value_split`) at the
    root ``u`` of its ``gap_raw`` solve: the value of ``_kinf_one(..., exact=True,
    gap_raw=gap_raw)``, whose other outputs do not depend on ``exact``. (The second output,
    ``u``, is dropped by :func:`_redo_flagged`.)"""
    p_raw = p
    p = normalise(p)
    st = _stats(p, v, with_zeros)
    case = _kinf_case(p_raw, p, v, rho, st, True, gap_raw)
    value = _kinf_value_split(p_raw, p, v, st, case, u, u + case.w_rho)
    return nan_where(_invalid(p_raw, st, rho), _kinf_cases(value, case)), u


# ---------------------------------------------------------------------------------------
# Public API.


# From this many states on, a batch is solved sequentially (cache-friendly on CPU).
_SEQUENTIAL_MIN_STATES = 4096

# The solvers' layouts (_native): chosen by the platform at trace time (_layout).
_LAYOUTS = ("cpu", "accelerator")
# Root-finder steps that the accelerator layout runs as a loop of fixed trip count before
# its one check (then the data-dependent loop, only while some instance is still running).
_ACCELERATOR_STEPS = 6


def _kl_ucb_flat(with_zeros: bool, p: Array, v: Array, delta: Array, *, fixed: int = 0):
    """kl_ucb's solve for one instance, as a flat tuple (NaN outputs for invalid input)."""
    sol, u = _kl_ucb_one(p, v, delta, with_zeros, fixed)
    return (*sol, u)


def _kinf_flat(with_zeros: bool, exact: bool, p: Array, v: Array, rho: Array,
               gap_raw: Array | None = None, *, fixed: int = 0):
    """kinf's solve for one instance, as a flat tuple (NaN outputs for invalid input);
    the last entry says whether the instance needs ``exact=True`` (see _kinf_one)."""
    sol, u, w_rho, needs_exact = _kinf_one(p, v, rho, with_zeros, exact, gap_raw, fixed)
    return (*sol, u, w_rho, needs_exact)


def _kl_ucb_value_only(with_zeros: bool, p: Array, v: Array, delta: Array, *,
                       fixed: int = 0):
    return (_kl_ucb_one(p, v, delta, with_zeros, fixed)[0].value,)


def _kinf_value_only(with_zeros: bool, exact: bool, p: Array, v: Array, rho: Array,
                     gap_raw: Array | None = None, *, fixed: int = 0):
    sol, u, _, needs_exact = _kinf_one(p, v, rho, with_zeros, exact, gap_raw, fixed)
    return sol.value, u, needs_exact


# Solved fast first and exactly only where needed (see _native); where their root u is.
_EXACT_RERUN = (_kinf_flat, _kinf_value_only)
_ROOT_OUTPUT = {_kinf_flat: 5, _kinf_value_only: 1}

_SIGNATURES = {
    _kl_ucb_flat: "(s),(s),()->(),(),(s),(),(),()",
    _kinf_flat: "(s),(s),()->(),(),(s),(),(),(),(),()",
    _kl_ucb_value_only: "(s),(s),()->()",
    _kinf_value_only: "(s),(s),()->(),(),()",
}


# A batch of at least this many instances re-solves its flagged instances (see _native)
# in passes of a fixed width, an eighth of the batch, while they are at most half of it.
_COMPACT_MIN_BATCH = 16
_COMPACT_PASSES = 8


def _redo_flagged(solve, args: tuple, needs: Array, out: tuple, compact: bool = True):
    """``out`` with the instances flagged in ``needs`` replaced by ``solve``'s results.

    ``solve`` is a vectorised solve of ``args`` (``p`` and ``v`` of shape ``[..., S]``, then
    any per-instance scalars) whose last output is dropped. With few flagged
    instances (at most half of a batch of ``_COMPACT_MIN_BATCH`` or more) they are
    gathered into passes of ``ceil(batch / _COMPACT_PASSES)`` instances, so that the
    rerun costs what the flagged instances cost (``ceil(m / width)`` passes for ``m`` of
    them) and not the whole batch; else the whole batch is re-solved and the flagged
    results kept. Each instance runs the same solve either way (the root finder stops
    each instance on its own); the vectorised arithmetic may round an instance's last
    bit differently in a batch of another width. ``compact=False`` (static; the
    accelerator path) always re-solves the whole batch: one pass, no loop.
    """
    batch = needs.shape
    count = needs.size

    def whole(out):
        *exact, _ = solve(*args)
        flag = lambda x: needs.reshape(batch + (1,) * (x.ndim - len(batch)))  # noqa: E731
        return tuple(jnp.where(flag(x), e, x) for e, x in zip(exact, out))

    if count < _COMPACT_MIN_BATCH or not compact:
        return whole(out)
    width = -(-count // _COMPACT_PASSES)
    core = lambda i, x: x.shape[-1:] if i < 2 else ()  # noqa: E731
    flat_args = tuple(jnp.broadcast_to(x, (*batch, *core(i, x))).reshape(count, *core(i, x))
                      for i, x in enumerate(args))

    def passes(out):
        def compute(rows):
            return tuple(solve(*(x[rows] for x in flat_args))[:-1])

        flat_out = tuple(x.reshape(count, *x.shape[len(batch):]) for x in out)
        flat_out = in_passes(needs.reshape(count), width, compute, flat_out)
        return tuple(x.reshape(*batch, *x.shape[1:]) for x in flat_out)

    return lax.cond(jnp.sum(needs) <= count // 2, passes, whole, out)


def _gaps(p: Array, v: Array, level: Array, compact: bool = True) -> Array:
    """``(rho - p.v) sum(p)`` of every instance of a ``kinf`` batch, as :func:`_kinf_case`
    computes it with ``exact=True``: from the rounded ``p.v``, and in double precision
    (:func:`_accurate_gap`) where that is ``precise``, only for those instances
    (:func:`_redo_flagged`; none when there are none)."""

    def plain_one(p, v, rho):
        st = _stats(normalise(p), v, False)  # the with_zeros parts are not used
        return _plain_gap(p, st, rho)

    def precise_one(p, v, rho):
        return _precise_gap(p, normalise(p), v, rho), rho

    plain, precise = jnp.vectorize(plain_one, signature="(s),(s),()->(),()")(p, v, level)
    solve = jnp.vectorize(precise_one, signature="(s),(s),()->(),()")
    return lax.cond(jnp.any(precise),
                    lambda gap: _redo_flagged(solve, (p, v, level), precise, (gap,),
                                              compact)[0],
                    lambda gap: gap, plain)


def _native(fn, p: Array, v: Array, level: Array, layout: str = "cpu"):
    """Runs ``fn(with_zeros, p, v, level)`` vectorised over the batch dimensions.

    Zero entries in p are the only way to reach the boundary optimum, whose test needs a
    log and a division per state; a batch-level ``lax.cond`` skips that pass when no
    entry of p is zero. Functions in ``_EXACT_RERUN`` take ``exact`` after ``with_zeros``
    and return a last flag: they run fast (``exact=False``) first, and exactly only when
    some instance flags it, its results replacing the flagged ones (another batch-level
    ``lax.cond``; per-instance results do not depend on the rest of the batch); in a
    batch of 16 or more with at most half of it flagged, only the flagged instances are
    re-solved (:func:`_redo_flagged`). Their gap ``rho - p.v`` is computed first, for the
    whole batch (:func:`_gaps`: in double precision only where needed), and passed to
    both solves, so that an instance is re-solved only for the cancellation-free sum of
    ``D``, not for its gap (in IMED-RL's batches the level is within ``1e-3`` of ``p.v``'s
    scale for about half of the actions). Under
    ``jax.vmap`` this function is not batched op by op (which would turn the ``lax.cond``
    into running both branches and the per-problem loop into a loop over the whole
    batch): :func:`_batched` gives it a ``custom_vmap`` rule that calls it once on the
    whole batch.

    ``layout`` (static) is ``"cpu"`` (the above; from ``_SEQUENTIAL_MIN_STATES`` states
    on, the batch is solved one instance after another) or ``"accelerator"``
    (:func:`_layout`): the whole batch vectorised at every ``S``, the root finder's first
    ``_ACCELERATOR_STEPS`` steps a loop of fixed trip count, then one check and the
    data-dependent loop only while some instance has not converged (finished ones stay
    fixed), and the exact re-solve of flagged instances one pass over the batch.
    """
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
    accelerator = layout == "accelerator"
    signature = _SIGNATURES[fn]
    batch = jnp.broadcast_shapes(p.shape[:-1], v.shape[:-1], level.shape)
    size = p.shape[-1]
    sequential = not accelerator and bool(batch) and size >= _SEQUENTIAL_MIN_STATES
    fixed = {"fixed": _ACCELERATOR_STEPS} if accelerator else {}
    if sequential:
        # Large S: solve the problems one after another (lax.map) so that each one's
        # arrays stay in cache across its iterations; a vectorised loop would sweep the
        # whole batch per iteration. Results are identical.
        p = jnp.broadcast_to(p, (*batch, size)).reshape(-1, size)
        v = jnp.broadcast_to(v, (*batch, size)).reshape(-1, size)
        level = jnp.broadcast_to(level, batch).reshape(-1)

    def solve(*config):
        one = partial(fn, *config, **fixed)
        if sequential:
            return lambda *args: lax.map(lambda a: one(*a), args)
        return jnp.vectorize(one, signature=signature)

    zeros = jnp.any(p <= 0)

    def by_zeros(with_zeros, without_zeros, *args):
        # The accelerator layout always takes the with-zeros solve (exact for any p): a
        # pass of logs costs less there than reading the predicate back to the host.
        if accelerator:
            return with_zeros(*args)
        return lax.cond(zeros, with_zeros, without_zeros, *args)

    if fn not in _EXACT_RERUN:
        out = by_zeros(solve(True), solve(False), p, v, level)
    else:
        # The gaps are computed inside each sequential solve (one instance at a time).
        args = (p, v, level) if sequential else (p, v, level,
                                                 _gaps(p, v, level, not accelerator))
        if not sequential:
            inputs, outputs = signature.split("->")
            signature = f"{inputs},()->{outputs}"
        *out, needs = by_zeros(solve(True, False), solve(False, False), *args)
        if sequential:
            def exact_where_needed(with_zeros):
                one = partial(fn, with_zeros, True)

                def step(a):  # only the flagged instances, one lax.cond each
                    p, v, level, needs, out = a
                    return lax.cond(needs, lambda: tuple(one(p, v, level)[:-1]), lambda: out)

                return lambda p, v, level, out: lax.map(step, (p, v, level, needs, out))
        else:
            # Only the value changes: summed without cancellation at the root already found.
            def exact_where_needed(with_zeros):
                split = jnp.vectorize(partial(_kinf_split_one, with_zeros),
                                      signature="(s),(s),(),(),()->(),()")

                def redo(p, v, level, gap, out):
                    args = (p, v, level, gap, out[_ROOT_OUTPUT[fn]])
                    value, = _redo_flagged(split, args, needs, (out[0],),
                                           not accelerator)
                    return (value, *out[1:])

                return redo

        out = lax.cond(jnp.any(needs),
                       lambda *a: by_zeros(exact_where_needed(True),
                                           exact_where_needed(False), *a),
                       lambda *a: a[-1], *args, tuple(out))
    if sequential:
        out = jax.tree.map(lambda x: x.reshape(*batch, *x.shape[1:]), out)
    return out


def _batched(fn, layout: str):
    """``_native(fn, ..., layout)`` with a ``jax.custom_vmap`` rule: under ``vmap`` (any
    number of nested ``vmap`` s, any ``in_axes``) the mapped axis becomes one more batch
    dimension of the same native call, so ``vmap`` costs what the ``[..., S]`` batch
    costs.

    Only the (non-differentiable) solve carries the rule; the index functions put their
    ``custom_jvp`` *above* it (:func:`kl_ucb`, :func:`kinf`), so ``grad`` never
    differentiates a ``custom_vmap`` (which has no transpose rule) and ``grad`` of
    ``vmap``, ``vmap`` of ``grad``, ``jvp`` and ``vjp`` compose.
    """

    @jax.custom_batching.custom_vmap
    def solve(p, v, level):
        return _native(fn, p, v, level, layout)

    @solve.def_vmap
    def rule(axis_size, in_batched, p, v, level):
        args = (p, v, level)
        core_ndims = (1, 1, 0)
        shapes = [x.shape[1:] if b else x.shape for x, b in zip(args, in_batched)]
        inner = jnp.broadcast_shapes(*(s[:len(s) - k] for s, k in zip(shapes, core_ndims)))
        aligned = []
        for x, b, s, k in zip(args, in_batched, shapes, core_ndims):
            pad = (1,) * (len(inner) - (len(s) - k))
            aligned.append(x.reshape((axis_size if b else 1, *pad, *s)))
        out = solve(*aligned)  # the rule itself, again, under an enclosing vmap
        out = tuple(jnp.broadcast_to(x, (axis_size, *x.shape[1:])) for x in out)
        return out, tuple(True for _ in out)

    return solve




def _sum_last(x: Array) -> Array:
    return jnp.sum(x, axis=-1)


def _index(value_batched, gradients):
    """The index ``value_batched(p, v, level)[0]`` with a custom JVP (symbolic zeros):
    ``gradients(p, v, level)`` returns the value and its envelope-theorem derivatives
    ``(d/dp, d/dv, d/dlevel)``."""

    @jax.custom_jvp
    def index(p: Array, v: Array, level: Array) -> Array:
        return value_batched(p, v, level)[0]

    def jvp(primals, tangents):
        value, grads = gradients(*primals)
        return value, _tangent(value, grads, tangents)

    index.defjvp(jvp, symbolic_zeros=True)
    return index


def _kl_ucb_gradients(solve_batched, p: Array, v: Array, delta: Array):
    """``C`` and ``(dC/dp, dC/dv, dC/ddelta)`` from ``solve_batched`` (kl_ucb's
    :func:`_batched` solve)."""
    value, c, q, _, _, u = solve_batched(p, v, delta)
    p_norm = normalise(p)
    V = jnp.max(v, axis=-1, keepdims=True)
    mean_w = _sum_last(p_norm * (V - v))
    regular = (delta > 0) & (mean_w > 0)
    flat = (delta == 0) | ((delta > 0) & (mean_w <= 0))  # value p.v, smooth in (p, v)
    reg, flat_s = regular[..., None], flat[..., None]
    # ln(p_x / q*_x) = ln((u* + w_x) / c): finite also where p_x = 0, except on a
    # zero-probability argmax state at the boundary optimum u* = 0 (then -inf).
    ratio = (u[..., None] + (V - v)) / jnp.where(reg, c[..., None], 1.0)
    log_ratio = jnp.log(jnp.where(reg, ratio, 1.0))
    grad_p = jnp.where(reg, -c[..., None] * (log_ratio + 1.0), jnp.where(flat_s, v, 0.0))
    grad_v = jnp.where(reg, q, jnp.where(flat_s, p_norm, 0.0))
    grad_delta = jnp.where(regular, c, jnp.where(delta == 0, jnp.inf, 0.0))
    grad_delta = jnp.where(flat & (mean_w <= 0), 0.0, grad_delta)
    return value, (grad_p, grad_v, grad_delta)


def _tangent(value, grads, tangents):
    """The JVP ``grad . tangent`` over the non-zero tangents; NaN where the value is NaN
    (invalid input gives NaN derivatives too)."""
    bad = jnp.isnan(value)
    grad_p, grad_v, grad_level = (nan_where(bad, g) for g in grads)
    dp, dv, dlevel = tangents
    tangent = jnp.zeros_like(value)
    if not _zero_tangent(dp):
        tangent = tangent + _sum_last(grad_p * dp)
    if not _zero_tangent(dv):
        tangent = tangent + _sum_last(grad_v * dv)
    if not _zero_tangent(dlevel):
        tangent = tangent + grad_level * dlevel
    return jnp.broadcast_to(tangent, value.shape)


def _kinf_gradients(solve_batched, p: Array, v: Array, rho: Array):
    """``D`` and ``(dD/dp, dD/dv, dD/drho)`` from ``solve_batched`` (kinf's
    :func:`_batched` solve)."""
    value, lam, q, _, _, u, w_rho = solve_batched(p, v, rho)
    reg = (lam > 0)[..., None]
    # ln(p_x / q*_x) = ln(1 + lam (rho - v_x)) = ln((u* + w_x) / (u* + V - rho)), finite
    # also where p_x = 0 (except on a zero-probability argmax state at the boundary
    # optimum u* = 0, where it is -inf); the ratio form cannot round below zero.
    V = jnp.max(v, axis=-1, keepdims=True)
    ratio = (u[..., None] + (V - v)) / (u + w_rho)[..., None]
    log_ratio = jnp.log(jnp.where(reg, ratio, 1.0))
    grad_p = jnp.where(reg, log_ratio + 1.0, 0.0)
    grad_v = jnp.where(reg, -lam[..., None] * q, 0.0)
    return value, (grad_p, grad_v, lam)


class _Solvers(NamedTuple):
    """The batched solves of one layout (:func:`_native`): the full solves (no
    derivatives) and the indices' values with their envelope-theorem JVPs."""

    kl_ucb_solve: object
    kinf_solve: object
    kl_ucb: object
    kinf: object


def _solvers(layout: str) -> _Solvers:
    kl_ucb_solve = _batched(_kl_ucb_flat, layout)
    kinf_solve = _batched(_kinf_flat, layout)
    # The primal (value only): nothing else is computed when no derivative is asked for.
    return _Solvers(
        kl_ucb_solve, kinf_solve,
        _index(_batched(_kl_ucb_value_only, layout), partial(_kl_ucb_gradients, kl_ucb_solve)),
        _index(_batched(_kinf_value_only, layout), partial(_kinf_gradients, kinf_solve)))


_SOLVERS = {layout: _solvers(layout) for layout in _LAYOUTS}


def _layout() -> str:
    """The layout of the solves being traced: ``"cpu"`` where the computation runs on a
    CPU (the default device's platform if one is set, as by ``jax.default_device``, else
    ``jax.default_backend()``), ``"accelerator"`` elsewhere (GPU, TPU). Read at trace
    time (:func:`_native`)."""
    return "cpu" if platform() == "cpu" else "accelerator"


def _kl_ucb_on(layout: str, p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> Array:
    """:func:`kl_ucb` on the given layout (the tests run ``"accelerator"`` on the CPU)."""
    p, v, delta = prepare("kl_ucb", p, v, delta=delta)
    return _SOLVERS[layout].kl_ucb(p, v, delta)


def _kinf_on(layout: str, p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> Array:
    """:func:`kinf` on the given layout."""
    p, v, rho = prepare("kinf", p, v, rho=rho)
    return _SOLVERS[layout].kinf(p, v, rho)


def _kl_ucb_solve_on(layout: str, p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> KLSolution:
    """:func:`kl_ucb_solve` on the given layout."""
    return _solve_only(_SOLVERS[layout].kl_ucb_solve,
                       prepare("kl_ucb_solve", p, v, delta=delta))


def _kinf_solve_on(layout: str, p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> KLSolution:
    """:func:`kinf_solve` on the given layout."""
    return _solve_only(_SOLVERS[layout].kinf_solve, prepare("kinf_solve", p, v, rho=rho))


@jax.jit
def kl_ucb(p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> Array:
    r"""The MDP-UCB index :math:`C(p,v,\delta) = \sup\{q \cdot v : \mathrm{KL}(p\|q) \le \delta\}`.

    Solved as one unknown (:mod:`jaxmdp.indices.kl`; the paper's Theorem 2 needs two).
    Degenerate cases follow the paper's Theorem 1: ``delta < 0`` gives ``-inf``;
    ``delta == 0`` or constant ``v`` gives ``p.v``. ``p`` may have zero entries; if the
    largest ``v`` is attained only where ``p`` is zero, the supremum may put mass there and
    the value is still exact. Never NaN for valid input (``p`` on the simplex, finite ``v``,
    ``delta`` not NaN). Invalid input gives NaN, as in ``jax.numpy``, never a plausible
    number: a NaN anywhere, an infinite entry of ``p`` or ``v``, a negative entry of ``p``
    or ``sum(p) <= 0`` make the value and all its derivatives NaN (for that batch element
    only); :func:`check_indices_inputs` raises ``ValueError`` instead, on concrete inputs.

    ``jax.vmap`` of this function runs the same program as the ``[..., S]`` batch (a
    ``custom_vmap`` rule on the solve, below the ``custom_jvp``): batch either way, and
    differentiate (``grad``, ``jvp``, ``vjp``) inside or outside the ``vmap``. The solve's
    path follows the platform (:mod:`jaxmdp.indices.kl`): blocked for CPU caches from
    4,096 states on a CPU; on a GPU vectorised, its first steps a loop of fixed trip
    count; the same values either way (1e-12 relative in float64).

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
      >>> print(f"{jm.kl_ucb([0.5, 0.5], [0.0, 1.0], 0.1):.6f}")  # Bernoulli KL-UCB of 1/2
      0.712879

    References:
      Cowan, Katehakis & Pirutinsky (2019), Theorems 1 and 2; Filippi, Cappé & Garivier
      (2010), section 3.2, for zero-probability states.
    """
    return _kl_ucb_on(_layout(), p, v, delta)


@jax.jit
def kinf(p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> Array:
    r"""The MDP-DMED rate :math:`D(p, v, \rho) = \inf\{\mathrm{KL}(p\|q) : q \cdot v \ge \rho\}`.

    The paper's :math:`\lambda`-formulation (Theorem 4), solved in the shared variable
    :math:`u` with :math:`\lambda = 1/(u + V - \rho)`. Degenerate cases follow Theorem 3:
    ``rho > max v`` gives ``+inf``; ``rho <= p.v`` gives ``0``; ``rho == max v`` with
    non-constant ``v`` gives ``+inf``. The case ``rho <= p.v`` and the solve use
    ``rho - p.v`` as ``sum_x p_x (rho - v_x)`` on the exact differences ``rho - v_x``
    (summed in double precision when they cancel), so the value and its gradient are right
    also when ``rho - p.v`` is below the rounding of ``p.v``. Never NaN for valid input;
    invalid input gives NaN (value and derivatives), as for :func:`kl_ucb`. ``vmap``
    costs what the ``[..., S]`` batch costs, and the solve's path follows the platform
    (CPU or accelerator, the same values), as for :func:`kl_ucb`.

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
      >>> print(f"{jm.kinf([0.5, 0.5], [0.0, 1.0], 0.75):.6f}")  # Bernoulli kl(1/2, 3/4)
      0.143841

    References:
      Cowan, Katehakis & Pirutinsky (2019), Theorems 3 and 4; Honda & Takemura (2010).
    """
    return _kinf_on(_layout(), p, v, rho)


@jax.jit
def kl_ucb_solve(p: ArrayLike, v: ArrayLike, delta: ArrayLike) -> KLSolution:
    r"""Solves :math:`C(p, v, \delta)` as :func:`kl_ucb` does and returns everything it found.

    The optimiser is :math:`q^*_x = c\,p_x/(u^* + V - v_x)` and the multiplier is
    :math:`c = \partial C/\partial\delta` (the paper's :math:`-\lambda`); in the degenerate
    cases (``delta <= 0``, constant ``v``) ``c = 0`` and ``q* = p`` (zeros if ``delta < 0``).
    Not differentiable (the inputs are cut from the graph): differentiate :func:`kl_ucb`.
    ``num_steps`` counts each problem's root-finder steps on either platform's path (on an
    accelerator the batch passes over its data ``max(6, most steps)`` times).

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      delta: the KL radius, broadcastable to the batch shape.

    Returns:
      A :class:`KLSolution` (``value = C``, ``multiplier = c``), fields of the batch shape
      and ``q`` of shape ``[..., S]``.

    Example:
      >>> import jaxmdp as jm
      >>> sol = jm.kl_ucb_solve([0.5, 0.5], [0.0, 1.0], 0.1)
      >>> print([round(float(q), 6) for q in sol.q], bool(sol.converged))
      [0.287121, 0.712879] True
    """
    return _kl_ucb_solve_on(_layout(), p, v, delta)


@jax.jit
def kinf_solve(p: ArrayLike, v: ArrayLike, rho: ArrayLike) -> KLSolution:
    r"""Solves :math:`D(p, v, \rho)` as :func:`kinf` does and returns everything it found.

    The optimiser is :math:`q^*_x = p_x / (1 + \lambda(\rho - v_x))` with the paper's
    Theorem 4 multiplier :math:`\lambda = \partial D/\partial\rho`; where ``rho <= p.v``,
    ``lam = 0`` and ``q* = p``; where ``rho >= max v`` (non-constant ``v``), ``lam = 0``
    and ``q* = 0``. Not differentiable: use :func:`kinf` for derivatives. ``num_steps`` as
    for :func:`kl_ucb_solve`.

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      rho: the target value of ``q.v``, broadcastable to the batch shape.

    Returns:
      A :class:`KLSolution` (``value = D``, ``multiplier = lam``) with batch-shaped
      fields; ``q`` has shape ``[..., S]``.

    Example:
      >>> import jaxmdp as jm
      >>> sol = jm.kinf_solve([0.5, 0.5], [0.0, 1.0], 0.75)  # Bernoulli(3/4)
      >>> print([round(float(q), 6) for q in sol.q])
      [0.25, 0.75]
    """
    return _kinf_solve_on(_layout(), p, v, rho)


def _solve_only(solve, args: tuple[Array, Array, Array]) -> KLSolution:
    """The :class:`KLSolution` of a batched solve, with no gradient flowing into it."""
    return KLSolution(*solve(*(lax.stop_gradient(a) for a in args))[:5])


def _index_str(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]" if len(index) else ""


def check_indices_inputs(p: ArrayLike, v: ArrayLike, level: ArrayLike | None = None, *,
                         level_name: str = "level", atol: float | None = None) -> None:
    """Raises ``ValueError`` if ``(p, v, level)`` is not valid input of the index functions.

    :func:`kl_ucb`, :func:`kinf` and :func:`jaxmdp.l1_ucb` never raise on values (they run
    under ``jit``): invalid input gives NaN, as in ``jax.numpy``. Call this first, on
    concrete (not traced) arrays, to get an error instead. It checks, in this order:
    the shapes (as the index functions do), that ``p`` and ``v`` are finite, that ``p``
    is non-negative and that each ``p`` sums to one within ``atol``, and that the level is
    not NaN (``+-inf`` levels are valid: they give the documented limits). The message
    names the argument, the first offending index and its value.

    Args:
      p: probabilities, shape ``[..., S]``.
      v: values, shape ``[..., S]``.
      level: ``delta``, ``rho`` or ``d`` (optional), broadcastable to the batch shape.
      level_name: what to call the level in messages (keyword-only), e.g. ``"delta"``.
      atol: tolerance on ``|sum(p) - 1|`` (keyword-only); default ``sqrt(eps)`` of
        ``p``'s floating dtype (1.5e-8 in float64, 3.5e-4 in float32).

    Raises:
      ValueError: naming the argument and the bad value, e.g.
        ``p[1] = -0.25 is negative; p must be a probability vector``.
      TypeError: if an argument is a tracer (inside ``jit``); check before ``jit``.

    Example:
      >>> import jaxmdp as jm
      >>> jm.check_indices_inputs([0.5, 0.5], [0.0, float("nan")], 0.1, level_name="delta")
      Traceback (most recent call last):
      ...
      ValueError: v[1] = nan is not finite
    """
    arrays = {"p": p, "v": v} if level is None else {"p": p, "v": v, level_name: level}
    for name, x in arrays.items():
        if isinstance(x, jax.core.Tracer):
            raise TypeError(f"check_indices_inputs needs concrete arrays, got a tracer for "
                            f"{name} (call it outside jit, on the values you will pass)")
    p_np, v_np = np.asarray(p), np.asarray(v)
    level_np = np.asarray(0.0 if level is None else level)
    check_shapes("check_indices_inputs", p_np, v_np, **{level_name: level_np})
    for name, x in (("p", p_np), ("v", v_np)):
        if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
            raise ValueError(f"{name} must be real numbers, got dtype {x.dtype}")
        bad = ~np.isfinite(x)
        if bad.any():
            index = tuple(np.argwhere(bad)[0])
            raise ValueError(f"{name}{_index_str(index)} = {x[index]} is not finite")
    negative = p_np < 0
    if negative.any():
        index = tuple(np.argwhere(negative)[0])
        raise ValueError(f"p{_index_str(index)} = {p_np[index]} is negative; p must be a "
                         f"probability vector")
    dtype = p_np.dtype if np.issubdtype(p_np.dtype, np.floating) else np.float64
    tol = float(np.finfo(dtype).eps) ** 0.5 if atol is None else atol
    sums = p_np.sum(axis=-1)
    off = np.abs(sums - 1) > tol
    if off.any():
        index = tuple(np.argwhere(off)[0]) if sums.ndim else ()
        where = f"p{_index_str(index)[:-1]}, :]" if index else "p"
        raise ValueError(f"{where} sums to {sums[index]}, not 1 (within atol={tol:g}); p "
                         f"must be a probability vector")
    if level is not None and np.isnan(level_np).any():
        index = tuple(np.argwhere(np.isnan(level_np))[0])
        raise ValueError(f"{level_name}{_index_str(index)} = nan is NaN")
