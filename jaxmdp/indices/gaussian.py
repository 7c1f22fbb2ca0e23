r"""KL indices for a transition law jointly with a Gaussian reward of known deviation.

When an agent also learns a Gaussian reward :math:`N(m, \sigma^2)` (``sigma`` known), the
unknown law of one ``(state, action)`` pair is the product of the transition law ``p`` and
the reward law, and the KL divergence of a product law is the sum of the KLs. With
:math:`\mathrm{KL}(N(m, \sigma^2) \| N(\mu, \sigma^2)) = (\mu - m)^2 / (2\sigma^2)` the
MDP-UCB index and the MDP-DMED rate become

.. math::

   C_G(p, v, m, \sigma, \delta) &= \sup\{\mu + q \cdot v :
       \mathrm{KL}(p\|q) + (\mu - m)^2/(2\sigma^2) \le \delta\}, \\
   D_G(p, v, m, \sigma, \rho) &= \inf\{\mathrm{KL}(p\|q) + (\mu - m)^2/(2\sigma^2) :
       \mu + q \cdot v \ge \rho\}.

Both are solved *exactly* as one scalar equation whose every evaluation is one call of the
transition-only solvers :func:`jaxmdp.kl_ucb_solve` (``C``, multiplier ``c = dC/d delta``)
and :func:`jaxmdp.kinf_solve` (``D``, multiplier ``lam = dD/d rho``).

**C_G.** Splitting the budget :math:`\delta = d_1 + d_2` between the transitions and the
reward, the reward part is :math:`m + \sigma\sqrt{2 d_2}`, so

.. math:: C_G = m + \max_{0 \le d_1 \le \delta} G(d_1), \qquad
          G(d_1) = C(p, v, d_1) + \sigma\sqrt{2(\delta - d_1)},

with :math:`G` concave. :math:`G'(d_1) = c(d_1) - \sigma/\sqrt{2 d_2}`: ``c`` decreases from
``+inf`` (at ``d1 = 0+``) to ``0`` and :math:`\sigma/\sqrt{2 d_2}` increases to ``+inf``, so for
``sigma > 0``, ``delta > 0`` and non-constant ``v`` the optimum is the unique interior root of
:math:`c(d_1) = \sigma/\sqrt{2 d_2}`; there :math:`d_2^* = \sigma^2/(2 c^2)`,
:math:`\mu^* = m + \sigma^2/c` (in the eta-parametrisation of :mod:`jaxmdp.indices.kl`:
:math:`h(\eta) + \sigma^2/(2 c(\eta)^2) = \delta`). The root is found in
:math:`t = \ln(d_1/d_2)`, with :math:`d_1 = \delta\,\mathrm{sigmoid}(t)` and
:math:`d_2 = \delta\,\mathrm{sigmoid}(-t)` (both with full relative precision), from

.. math:: R(t) = \ln\sigma - \tfrac12 \ln(2 d_2) - \ln c(d_1) = 0,

non-decreasing in ``t`` and exactly linear, :math:`R = t/2 + \ln\sigma - \tfrac12\ln
\mathrm{Var}_p v`, in the small-level regime :math:`c \approx \sqrt{\mathrm{Var}_p v / (2
d_1)}` (which gives the starting point :math:`t_0 = \ln(\mathrm{Var}_p v/\sigma^2)`). Newton's
derivative is :math:`R'(t) = s/2 + \kappa\, d_1 (1 - s)`, ``s = sigmoid(t)``, with
:math:`\kappa = -d\ln c/d d_1 = (1 + \chi^2)/\chi^2`,
:math:`1 + \chi^2 = \sum_x q_x^2/p_x` and :math:`\chi^2 = \sum_x (q_x^2/p_x)((C - v_x)/c)^2`
(sums over ``p > 0``; the second form has no cancellation), from :math:`dc/d\eta = 1 + \chi^2`
and :math:`dh/d\eta = -\chi^2/c`; on the boundary branch of Filippi et al. (``q*`` puts mass
on a zero-probability argmax state, :math:`c = \exp(E_p\ln w - d_1)`), :math:`\kappa = 1`.

**D_G.** With the reward mean carrying :math:`b = \mu - m` and the transitions
:math:`r = q \cdot v = \rho - m - b`,

.. math:: D_G = \min_r \big[(\rho - m - r)^2/(2\sigma^2) + D(p, v, r)\big],

convex in ``r``. It is ``0`` when :math:`g = \rho - m - p\cdot v \le 0`. Otherwise
:math:`r^* = p\cdot v + a` with :math:`a \in (0, A)`, :math:`A = \min(g, V - p\cdot v)`
(``V = max v``; ``D`` is infinite from ``V`` on, but ``mu`` can always grow, so ``D_G`` is
finite for ``sigma > 0``), and the optimum solves :math:`b/\sigma^2 = \lambda(r)`
(``lam = dD/drho``). In :math:`t = \mathrm{logit}(a/A)`, :math:`a = A\,\mathrm{sigmoid}(t)`,
:math:`b = (g - A) + A\,\mathrm{sigmoid}(-t)`:

.. math:: R(t) = \ln\lambda(r) - \ln b + 2\ln\sigma = 0,

non-decreasing, linear in both asymptotic regimes, with
:math:`R'(t) = (D''/\lambda + 1/b)\, A s(1 - s)` and
:math:`D'' = d\lambda/dr = \sum_x (q_x^2/p_x) / \sum_x (q_x^2/p_x)(r - v_x)^2` (differentiate
the paper's Theorem 4 equation :math:`E_p[(r - v)/(1 + \lambda(r - v))] = 0`), or
:math:`\lambda^2` on the boundary branch (:math:`D = E_p\ln w - \ln(V - r)`).

Both equations go to the shared safeguarded Newton method
(:func:`jaxmdp.indices._roots.find_root`: bisection whenever a step leaves the bracket, a
step counter and ``max_steps``), stopping at a relative step below
:math:`0.1\sqrt{\varepsilon}` (quadratic convergence: the returned point is accurate to a
few ulps). The value is then evaluated once more by the transition solver at the optimal
split; it is stationary there (envelope theorem), so the split's last rounding errors
enter only to second order.

**Gradients** come from the envelope theorem by construction: the value is written as
:math:`m + C(p, v, d_1^*) + \sigma\sqrt{2 d_2^*}` (resp.
:math:`D(p, v, r^*) + b^{*2}/(2\sigma^2)`) with the optimal split held fixed, and the
derivatives of ``C`` and ``D`` are those of :func:`jaxmdp.kl_ucb` / :func:`jaxmdp.kinf`
(closed-form custom JVPs). Hence :math:`\partial C_G/\partial m = 1`,
:math:`\partial C_G/\partial\delta = c^*`, :math:`\partial C_G/\partial v = q^*`,
:math:`\partial C_G/\partial p_x = -c^*(\ln(p_x/q^*_x) + 1)`,
:math:`\partial C_G/\partial\sigma = \sqrt{2 d_2^*}`; :math:`\partial D_G/\partial\rho =
\lambda^*`, :math:`\partial D_G/\partial m = -\lambda^*`, :math:`\partial D_G/\partial v =
-\lambda^* q^*`, :math:`\partial D_G/\partial p_x = \ln(p_x/q^*_x) + 1`,
:math:`\partial D_G/\partial\sigma = -b^{*2}/\sigma^3`. First derivatives only (the split is
held fixed, so second derivatives miss its response).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmdp.indices._common import all_finite, any_nan, nan_where, normalise, prepare
from jaxmdp.indices._roots import MAX_STEPS, RootResult, find_root, newton_xtol
from jaxmdp.indices.kl import kinf, kinf_solve, kl_ucb, kl_ucb_solve

Array = jax.Array
ArrayLike = jax.typing.ArrayLike

_SIGNATURE = "(s),(s),(),(),()->()"


def _t_bound(dtype) -> float:
    # |t| up to this keeps exp(-|t|) a comfortably normal number.
    return -float(np.log(np.finfo(dtype).tiny)) - 10.0


class _Inputs(NamedTuple):
    """One instance's arguments made safe for the solve."""

    sigma: Array  # |sigma| (carries sigma's tangent)
    finite: Array  # every argument is finite
    is_nan: Array  # some argument is NaN
    p: Array  # p / sum(p), uniform where some argument is not finite; no gradient
    v: Array  # v, or 0, 1, ..., S - 1 where some argument is not finite; no gradient


def _sanitise(p: Array, v: Array, m: Array, sigma: Array, level: Array) -> _Inputs:
    size = p.shape[-1]
    sg = lax.stop_gradient
    finite = all_finite(p, v, m, sigma, level)
    is_nan = any_nan(p, v, m, sigma, level)
    p_n = sg(normalise(jnp.where(finite, p, 1.0 / size)))
    v_s = sg(jnp.where(finite, v, jnp.arange(size, dtype=p.dtype)))
    return _Inputs(jnp.abs(sigma), finite, is_nan, p_n, v_s)


def _curvature_sums(p: Array, q: Array, level: Array, v: Array, scale: Array):
    """``sum q^2/p``, ``sum (q^2/p) ((level - v)/scale)^2`` over ``p > 0``, and whether
    ``q*`` has mass where ``p == 0`` (the boundary branch). ``scale`` must make
    ``(level - v_x)/scale = p_x/q*_x - 1`` (``c`` for ``kl_ucb``, ``1/lam`` for ``kinf``)."""
    positive = p > 0
    ratio = jnp.where(positive, q / jnp.where(positive, p, 1.0), 0.0)
    weight = q * ratio
    # (level - v_x)/scale = p_x/q_x - 1 exactly at the optimum; take whichever form rounds
    # less (the direct one loses everything when level has rounded onto v_x, e.g. C = V).
    inverse = jnp.where(positive & (q > 0), p / jnp.where(q > 0, q, 1.0), jnp.inf)
    direct_error = (jnp.abs(level) + jnp.abs(v)) / scale
    z = jnp.where(inverse < direct_error, inverse - 1.0, (level - v) / scale)
    off_support = jnp.sum(jnp.where(positive, 0.0, q)) > 0
    return jnp.sum(weight), jnp.sum(weight * z * z), off_support


def _finite_positive(x: Array, fallback) -> Array:
    return jnp.where(jnp.isfinite(x) & (x > 0), x, fallback)


# ---------------------------------------------------------------------------------------
# C_G: the split d1 + d2 = delta.


def _kl_ucb_split(p: Array, v: Array, sigma: Array, delta: Array) -> RootResult:
    """The optimal ``t = ln(d1/d2)`` for ``sigma > 0``, ``delta > 0``, non-constant ``v``.

    ``p`` normalised; all arguments finite and without gradients.
    """
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    bound = _t_bound(dtype)
    var = jnp.sum(p * jnp.square(v - jnp.dot(p, v)))
    log_sigma = jnp.log(sigma)
    log_delta = jnp.log(delta)
    t0 = jnp.log(jnp.maximum(var, tiny)) - 2.0 * log_sigma
    c_floor = float(np.finfo(dtype).tiny) * float(np.exp(30.0))

    def residual(t, _):
        s, s_bar = jax.nn.sigmoid(t), jax.nn.sigmoid(-t)
        d1 = delta * s
        log_d2 = log_delta + jax.nn.log_sigmoid(-t)
        sol = kl_ucb_solve(p, v, d1)
        c = sol.multiplier
        c_safe = jnp.where(c > 0, c, 1.0)
        one_plus_chi2, chi2, off_support = _curvature_sums(p, sol.q, sol.value, v, c_safe)
        # kappa * d1 = d1 (1 + chi2) / chi2 -> 1/2 as d1 -> 0.
        kappa_d1 = jnp.where(off_support, d1, _finite_positive(d1 * one_plus_chi2 / chi2, 0.5))
        f = log_sigma - 0.5 * (float(np.log(2.0)) + log_d2) - jnp.log(c)
        # d1 underflowed: far left of the root. c at kl_ucb's floor (u clamped near the
        # smallest normal, d1 in the hundreds): c no longer follows d1, so treat it as right
        # of the root; a root there would carry a reward term below sigma^2 / c_floor.
        f = jnp.where(c > c_floor, f, jnp.inf)
        f = jnp.where(d1 > 0, f, -jnp.inf)
        df = _finite_positive(0.5 * s + kappa_d1 * s_bar, 0.5)
        return f, df

    return find_root(residual, t0, -bound, bound, xtol=newton_xtol(dtype), max_steps=MAX_STEPS)


def _kl_ucb_gaussian_one(p: Array, v: Array, m: Array, sigma: Array, delta: Array) -> Array:
    sg = lax.stop_gradient
    sigma_abs, finite, is_nan, p_n, v_s = _sanitise(p, v, m, sigma, delta)
    mean_w = jnp.sum(p_n * (jnp.max(v_s) - v_s))
    solve = finite & (sigma_abs > 0) & (delta > 0) & (mean_w > 0)
    flat = finite & (sigma_abs > 0) & (delta > 0) & (mean_w <= 0)  # C(d1) = p.v for all d1

    root = _kl_ucb_split(p_n, v_s, sg(jnp.where(solve, sigma_abs, 1.0)),
                         sg(jnp.where(solve, delta, 1.0)))
    t = sg(root.x)
    delta_sg = sg(delta)
    d1_star = delta_sg * jax.nn.sigmoid(t)
    d2_star = delta_sg * jax.nn.sigmoid(-t)

    # The value at the optimal split, held fixed (envelope theorem): the level of kl_ucb
    # carries no tangent, d2 carries delta's tangent.
    d1 = jnp.where(solve, d1_star, jnp.where(flat, 0.0, delta))
    d2 = jnp.where(solve, d2_star, jnp.where(flat, delta_sg, 0.0)) + (delta - delta_sg)
    d2 = jnp.where(solve | flat, d2, 0.0)
    has_d2 = d2 > 0
    reward = sigma_abs * jnp.where(has_d2, jnp.sqrt(2.0 * jnp.where(has_d2, d2, 1.0)), 0.0)
    value = m + kl_ucb(p, v, d1) + reward
    # Inputs outside the finite range: +inf budget or deviation gives +inf (mu is free).
    unbounded = ~is_nan & (delta > 0) & (sigma_abs > 0) & (jnp.isinf(delta) | jnp.isinf(sigma))
    value = jnp.where(unbounded, jnp.inf, value)
    return nan_where(is_nan, value)


# ---------------------------------------------------------------------------------------
# D_G: the split rho - m = b + r.


def _kinf_split(p: Array, v: Array, sigma: Array, gap: Array, reach: Array) -> RootResult:
    """The optimal ``t = logit(a/A)``, ``r = p.v + a``, for ``sigma > 0``, ``gap > 0``,
    ``reach = V - p.v > 0``; ``A = min(gap, reach)``. Finite arguments without gradients.

    ``kinf`` is evaluated on the centred values ``v - p.v`` at the level ``a`` itself, so
    that small ``a`` is not rounded against ``p.v`` (``kinf`` is shift-invariant).
    """
    dtype = p.dtype
    tiny = jnp.finfo(dtype).tiny
    bound = _t_bound(dtype)
    span = jnp.minimum(gap, reach)
    rest = gap - span  # b at a = A (0 when the target is reachable by q alone)
    centred = v - jnp.dot(p, v)
    top = jnp.max(centred)
    var = jnp.sum(p * jnp.square(centred))
    log_sigma2 = 2.0 * jnp.log(sigma)
    t0 = jnp.log(jnp.maximum(var, tiny)) - log_sigma2

    def residual(t, _):
        s, s_bar = jax.nn.sigmoid(t), jax.nn.sigmoid(-t)
        r = span * s  # the level of q.v - p.v
        b = rest + span * s_bar
        sol = kinf_solve(p, centred, r)
        lam = sol.multiplier
        lam_safe = jnp.where(lam > 0, lam, 1.0)
        # With z = lam (r - v) = p/q* - 1: D''/lam * da = (sum q^2/p) lam da / sum (q^2/p) z^2.
        second, first, off_support = _curvature_sums(p, sol.q, r, centred, 1.0 / lam_safe)
        da = span * s * s_bar
        curvature = jnp.where(off_support, lam * da, second * (lam * da) / first)
        f = jnp.log(lam) - jnp.log(b) + log_sigma2
        f = jnp.where(r >= top, jnp.inf, f)  # r rounded up to V: far right of the root
        df = _finite_positive(_finite_positive(curvature, s_bar) + da / b, 1.0)
        return f, df

    return find_root(residual, t0, -bound, bound, xtol=newton_xtol(dtype), max_steps=MAX_STEPS)


def _kinf_gaussian_one(p: Array, v: Array, m: Array, sigma: Array, rho: Array) -> Array:
    sg = lax.stop_gradient
    sigma_abs, finite, is_nan, p_n, v_s = _sanitise(p, v, m, sigma, rho)
    top = jnp.max(v_s)
    mean = jnp.dot(p_n, v_s)
    reach = jnp.sum(p_n * (top - v_s))  # V - p.v, as kinf computes it
    target = rho - m  # what q.v must reach if mu stays at m
    gap = sg(target) - mean
    positive = finite & (sigma_abs > 0) & (gap > 0)
    solve = positive & (reach > 0)
    flat = positive & (reach <= 0)  # D(r) = +inf above p.v: mu covers the whole gap

    root = _kinf_split(p_n, v_s, sg(jnp.where(solve, sigma_abs, 1.0)),
                       jnp.where(solve, gap, 1.0), jnp.where(solve, reach, 1.0))
    t = sg(root.x)
    span = jnp.minimum(gap, reach)
    # Below max v: near it (sigma tiny, target out of q's reach) mean + a can round onto V,
    # where kinf is +inf.
    r_star = jnp.minimum(mean + span * jax.nn.sigmoid(t), jnp.nextafter(top, -jnp.inf))
    b_star = (gap - span) + span * jax.nn.sigmoid(-t)

    # The value at the optimal split, held fixed (envelope theorem): the level of kinf
    # carries no tangent, b carries rho - m's. The flat case keeps r = p.v as a function of
    # (p, v) (its value is the constant-structure g^2 / (2 sigma^2)).
    below = jnp.min(v_s) - 1.0 - jnp.abs(jnp.min(v_s))  # a level where kinf is 0
    level = jnp.where(solve, r_star, jnp.where(flat, below, target))
    flat_gap = target - jnp.dot(normalise(p), v)
    b = jnp.where(solve, b_star + (target - sg(target)), jnp.where(flat, flat_gap, 0.0))
    sigma_safe = jnp.where(positive, sigma_abs, 1.0)
    reward = jnp.where(positive, jnp.square(b) / (2.0 * jnp.square(sigma_safe)), 0.0)
    value = kinf(p, v, level) + reward
    unbounded = ~is_nan & (sigma_abs > 0) & jnp.isinf(target) & (target > 0)
    vanishing = ~is_nan & ((jnp.isinf(target) & (target < 0)) | (jnp.isinf(sigma) & ~unbounded))
    value = jnp.where(unbounded, jnp.inf, jnp.where(vanishing, 0.0, value))
    return nan_where(is_nan, value)


# ---------------------------------------------------------------------------------------
# Public API.


@jax.jit
def kl_ucb_gaussian(p: ArrayLike, v: ArrayLike, m: ArrayLike, sigma: ArrayLike,
                    delta: ArrayLike) -> Array:
    r"""MDP-UCB index of transitions ``p`` jointly with a Gaussian reward of known ``sigma``.

    .. math:: C_G = \sup\{\mu + q\cdot v : \mathrm{KL}(p\|q) + (\mu - m)^2/(2\sigma^2)
              \le \delta\} = m + \max_{0 \le d_1 \le \delta}
              \big[C(p, v, d_1) + \sigma\sqrt{2(\delta - d_1)}\big]

    Solved exactly through the optimality condition :math:`c(d_1) = \sigma/\sqrt{2(\delta -
    d_1)}` (:mod:`jaxmdp.indices.gaussian`), each step one :func:`jaxmdp.kl_ucb_solve`.
    Edge cases: ``delta < 0`` gives ``-inf`` and ``delta == 0`` gives ``m + p.v`` (as
    :func:`jaxmdp.kl_ucb`); ``sigma == 0`` gives ``m + kl_ucb(p, v, delta)``; constant ``v``
    (or ``p`` on the argmax states) gives ``m + p.v + sigma sqrt(2 delta)``; ``delta = +inf``
    or ``sigma = +inf`` with the other positive gives ``+inf``. The value depends on
    ``sigma`` only through ``sigma**2`` (``|sigma|`` is used). Never NaN for valid input;
    NaN in any argument gives NaN.

    Gradients (envelope theorem, through :func:`jaxmdp.kl_ucb`'s custom JVP at the optimal
    split): ``dC_G/dm = 1``, ``dC_G/ddelta = c*``, ``dC_G/dv = q*``,
    ``dC_G/dp_x = -c* (ln(p_x/q*_x) + 1)``, ``dC_G/dsigma = sqrt(2 d2*)``. At
    ``delta == 0`` the ``delta``-derivative is ``kl_ucb``'s right derivative ``+inf``;
    with ``sigma == 0`` all derivatives are those of ``kl_ucb``.

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      m: empirical mean reward, broadcastable to the batch shape.
      sigma: known reward standard deviation ``>= 0``, broadcastable to the batch shape.
      delta: the KL radius, broadcastable to the batch shape.

    Returns:
      The index, shape ``broadcast(p.shape[:-1], v.shape[:-1], m, sigma, delta shapes)``.

    Example:
      >>> import jaxmdp as jm
      >>> float(jm.kl_ucb_gaussian([1.0], [0.0], 0.5, 1.0, 0.5))  # m + sigma sqrt(2 delta)
      1.5
    """
    args = prepare("kl_ucb_gaussian", p, v, m=m, sigma=sigma, delta=delta)
    return jnp.vectorize(_kl_ucb_gaussian_one, signature=_SIGNATURE)(*args)


@jax.jit
def kinf_gaussian(p: ArrayLike, v: ArrayLike, m: ArrayLike, sigma: ArrayLike,
                  rho: ArrayLike) -> Array:
    r"""MDP-DMED rate of transitions ``p`` jointly with a Gaussian reward of known ``sigma``.

    .. math:: D_G = \inf\{\mathrm{KL}(p\|q) + (\mu - m)^2/(2\sigma^2) : \mu + q\cdot v \ge
              \rho\} = \min_\mu \big[(\mu - m)^2/(2\sigma^2) + D(p, v, \rho - \mu)\big]

    Solved exactly through the optimality condition :math:`(\mu - m)/\sigma^2 = \lambda(\rho
    - \mu)`, :math:`\mu \in [m, \rho - p\cdot v]` (:mod:`jaxmdp.indices.gaussian`), each step one
    :func:`jaxmdp.kinf_solve`. Edge cases: ``rho <= m + p.v`` gives ``0``; ``rho`` beyond
    what ``q`` can reach is still finite for ``sigma > 0`` (``mu`` grows); ``sigma == 0``
    gives ``kinf(p, v, rho - m)`` (``+inf`` from ``max v`` on); constant ``v`` gives
    ``(rho - m - v)^2 / (2 sigma^2)`` above ``m + v``; ``rho = +inf`` gives ``+inf`` and
    ``sigma = +inf`` gives ``0``. Depends on ``sigma`` only through ``sigma**2``. Never NaN
    for valid input; NaN in any argument gives NaN.

    Gradients (envelope theorem, through :func:`jaxmdp.kinf`'s custom JVP at the optimal
    split): ``dD_G/drho = lam*``, ``dD_G/dm = -lam*``, ``dD_G/dv = -lam* q*``,
    ``dD_G/dp_x = ln(p_x/q*_x) + 1``, ``dD_G/dsigma = -b*^2/sigma^3`` with
    ``b* = mu* - m = sigma^2 lam*``; all ``0`` where the value is ``0``.

    Args:
      p: transition probabilities, shape ``[..., S]``.
      v: values of the next states, shape ``[..., S]``.
      m: empirical mean reward, broadcastable to the batch shape.
      sigma: known reward standard deviation ``>= 0``, broadcastable to the batch shape.
      rho: the target value of ``mu + q.v``, broadcastable to the batch shape.

    Returns:
      The rate, shape ``broadcast(p.shape[:-1], v.shape[:-1], m, sigma, rho shapes)``.

    Example:
      >>> import jaxmdp as jm
      >>> float(jm.kinf_gaussian([1.0], [0.0], 0.5, 1.0, 1.5))  # (rho - m)^2 / (2 sigma^2)
      0.5
    """
    args = prepare("kinf_gaussian", p, v, m=m, sigma=sigma, rho=rho)
    return jnp.vectorize(_kinf_gaussian_one, signature=_SIGNATURE)(*args)


__all__ = ["kinf_gaussian", "kl_ucb_gaussian"]
