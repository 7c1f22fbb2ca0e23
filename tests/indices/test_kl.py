"""Tests of the KL indices ``jaxmdp.kl_ucb`` (C) and ``jaxmdp.kinf`` (D).

References are independent of the solvers under test:
  * scipy SLSQP on the q-formulations written in log coordinates y = ln q (the KL term is
    then linear in y), for S <= 50, to 1e-6;
  * mpmath at 40 digits: bisection of the 1-D eta equation of DESIGN.md for C (checked
    against the paper's Theorem 2 two-unknown system) and of the paper's Theorem 4 lambda
    equation for D, compared at ~1e-12 relative in float64;
  * closed forms: Bernoulli KL for two-point v, Filippi et al. (2010) when p is zero on
    the argmax state.
"""

import ctypes
import glob
import os

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
import scipy
from hypothesis import given, settings
from scipy.optimize import minimize

import jaxmdp


def _single_threaded_scipy_blas():
    """SLSQP's small LAPACK calls crawl when OpenBLAS threads fight over 2 busy cores."""
    for path in glob.glob(os.path.join(os.path.dirname(scipy.__file__) + ".libs", "*openblas*")):
        try:
            ctypes.CDLL(path).scipy_openblas_set_num_threads(1)
        except (OSError, AttributeError):
            pass


_single_threaded_scipy_blas()


# ---------------------------------------------------------------------------------------
# Independent references.
# ---------------------------------------------------------------------------------------
DPS = 40


def _mpf_list(x):
    return [mp.mpf(float(t)) for t in np.asarray(x, dtype=np.float64)]


def _mp_simplex(p):
    """p in high precision, renormalised (a float64 p sums to 1 only to ~1e-16)."""
    p = _mpf_list(p)
    total = mp.fsum(p)
    return [px / total for px in p]


def kl_ucb_mp(p, v, delta):
    """C, c and q* at DPS digits: geometric bisection of h(eta) = delta over t = eta - V.

    h(eta) = sum_x p_x ln(eta - v_x) + ln sum_x p_x / (eta - v_x) (DESIGN.md). When p is
    zero on every argmax state and h(V) <= delta, the optimum puts the remaining mass on
    those states and C = V - exp(sum_{p>0} p ln(V - v) - delta) (Filippi et al. 2010).
    """
    with mp.workdps(DPS):
        p, v, delta = _mp_simplex(p), _mpf_list(v), mp.mpf(float(delta))
        mean = mp.fsum(px * vx for px, vx in zip(p, v))
        top = max(v)
        if delta < 0:
            return -mp.inf, None, None
        if delta == 0 or min(v) == top:
            return mean, None, None
        # Gaps V - v_x: eta - v_x = gap + t is exact even when t is far below V's precision.
        supp = [(px, top - vx) for px, vx in zip(p, v) if px > 0]

        def g(t):
            return mp.fsum(px * mp.log(gap + t) for px, gap in supp)

        def h(t):
            return g(t) + mp.log(mp.fsum(px / (gap + t) for px, gap in supp))

        if min(gap for _, gap in supp) > 0 and h(0) <= delta:
            c = mp.exp(g(0) - delta)
            q = [c * px / (top - vx) if px > 0 else mp.mpf(0) for px, vx in zip(p, v)]
            n_top = sum(1 for px, vx in zip(p, v) if px == 0 and vx == top)
            rest = (1 - mp.fsum(q)) / n_top
            q = [rest if (px == 0 and vx == top) else qx for px, vx, qx in zip(p, v, q)]
            return top - c, c, q
        lo = hi = top - min(v)
        while h(lo) <= delta:
            lo /= mp.mpf(10) ** 8
        while h(hi) > delta:
            hi *= mp.mpf(10) ** 4
        while hi / lo - 1 > mp.mpf(10) ** (3 - DPS):
            mid = mp.sqrt(lo * hi)
            if h(mid) > delta:
                lo = mid
            else:
                hi = mid
        t = mp.sqrt(lo * hi)
        c = 1 / mp.fsum(px / (gap + t) for px, gap in supp)
        return top + t - c, c, [c * px / (top - vx + t) for px, vx in zip(p, v)]


def kinf_mp(p, v, rho):
    """D, lambda and q* at DPS digits: bisection of the paper's Theorem 4 equation.

    sum_x p_x (rho - v_x) / (1 + lambda (rho - v_x)) = 0 on 0 < lambda < 1/(V - rho); if it
    stays positive up to 1/(V - rho) (p zero on the argmax states), lambda = 1/(V - rho).
    """
    with mp.workdps(DPS):
        p, v, rho = _mp_simplex(p), _mpf_list(v), mp.mpf(float(rho))
        mean = mp.fsum(px * vx for px, vx in zip(p, v))
        top = max(v)
        if rho > top:
            return mp.inf, None, None
        if rho <= mean:
            return mp.mpf(0), None, None
        if rho == top:
            return mp.inf, None, None
        supp = [(px, vx) for px, vx in zip(p, v) if px > 0]
        lam_max = 1 / (top - rho)

        def slope(lam):
            return mp.fsum(px * (rho - vx) / (1 + (rho - vx) * lam) for px, vx in supp)

        if max(vx for _, vx in supp) < top and slope(lam_max) >= 0:
            lam = lam_max
        else:
            lo, hi = mp.mpf(0), lam_max
            for _ in range(4 * DPS):
                mid = (lo + hi) / 2
                if slope(mid) > 0:
                    lo = mid
                else:
                    hi = mid
            lam = (lo + hi) / 2
        value = mp.fsum(px * mp.log(1 + (rho - vx) * lam) for px, vx in supp)
        q = [px / (1 + (rho - vx) * lam) if px > 0 else mp.mpf(0) for px, vx in zip(p, v)]
        rest = 1 - mp.fsum(q)
        if rest > mp.mpf(10) ** (-DPS):
            n_top = sum(1 for px, vx in zip(p, v) if px == 0 and vx == top)
            q = [rest / n_top if (px == 0 and vx == top) else qx for px, vx, qx in zip(p, v, q)]
        return value, lam, q


def _slsqp(objective, jac, cons, y0):
    res = minimize(
        objective,
        y0,
        jac=jac,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    # Status 8 ("positive directional derivative in linesearch") is SLSQP stopping at the
    # optimum it can no longer improve in float64; the value is compared below anyway.
    assert res.status in (0, 8), res.message
    return res.x


def kl_ucb_slsqp(p, v, delta):
    """max_y v.exp(y) s.t. sum p (ln p - y) <= delta, sum exp(y) = 1 (y = ln q)."""
    log_p = np.log(p)
    cons = [
        {"type": "ineq", "fun": lambda y: delta - p @ (log_p - y), "jac": lambda y: p},
        {"type": "eq", "fun": lambda y: np.exp(y).sum() - 1, "jac": np.exp},
    ]
    y = _slsqp(lambda y: -(v @ np.exp(y)), lambda y: -v * np.exp(y), cons, log_p)
    assert p @ (log_p - y) <= delta + 1e-9 and abs(np.exp(y).sum() - 1) < 1e-9
    return float(v @ np.exp(y))


def kinf_slsqp(p, v, rho):
    """min_y sum p (ln p - y) s.t. v.exp(y) >= rho, sum exp(y) = 1 (y = ln q)."""
    log_p = np.log(p)
    cons = [
        {"type": "ineq", "fun": lambda y: v @ np.exp(y) - rho, "jac": lambda y: v * np.exp(y)},
        {"type": "eq", "fun": lambda y: np.exp(y).sum() - 1, "jac": np.exp},
    ]
    y = _slsqp(lambda y: p @ (log_p - y), lambda y: -p, cons, log_p)
    assert v @ np.exp(y) >= rho - 1e-9 and abs(np.exp(y).sum() - 1) < 1e-9
    return float(p @ (log_p - y))


def bernoulli_kl(a, b):
    """kl(a, b) of two Bernoulli laws; a, b floats or mpf (kept exact)."""
    with mp.workdps(DPS):
        a, b = mp.mpf(a), mp.mpf(b)
        first = a * mp.log(a / b) if a > 0 else mp.mpf(0)
        second = (1 - a) * mp.log((1 - a) / (1 - b)) if a < 1 else mp.mpf(0)
        return first + second


def bernoulli_kl_ucb(a, delta):
    """sup{x : kl(a, x) <= delta}, by geometric bisection on s = 1 - x."""
    with mp.workdps(DPS):
        a, delta = mp.mpf(float(a)), mp.mpf(float(delta))

        def kl_at(s):  # kl(a, 1 - s), decreasing in s on (0, 1 - a]
            first = a * mp.log(a / (1 - s)) if a > 0 else mp.mpf(0)
            return first + (1 - a) * mp.log((1 - a) / s)

        lo, hi = mp.mpf(1) - a, mp.mpf(1) - a
        while kl_at(lo) <= delta:
            lo /= mp.mpf(10) ** 8
        while hi / lo - 1 > mp.mpf(10) ** (3 - DPS):
            mid = mp.sqrt(lo * hi)
            if kl_at(mid) > delta:
                lo = mid
            else:
                hi = mid
        return 1 - hi


def _problem(seed, n, *, zeros=0, alpha=1.0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n, alpha))
    if zeros:
        p[rng.choice(n, zeros, replace=False)] = 0.0
        p /= p.sum()
    return p, rng.uniform(size=n)


def test_references_agree_with_each_other():
    """The mpmath solutions satisfy Theorem 2, invert each other, and match SLSQP."""
    for seed, n in [(0, 3), (1, 12)]:
        p, v = _problem(seed, n)
        for delta in [1e-3, 0.5, 4.0]:
            C, c, _ = kl_ucb_mp(p, v, delta)
            with mp.workdps(DPS):
                lam, pm, vm = -c, _mp_simplex(p), _mpf_list(v)
                eq1 = mp.fsum(px * mp.log(1 + (vx - C) / lam) for px, vx in zip(pm, vm))
                eq2 = mp.fsum(px * lam / (lam + vx - C) for px, vx in zip(pm, vm))
                assert abs(eq1 - mp.mpf(delta)) < mp.mpf(10) ** -30
                assert abs(eq2 - 1) < mp.mpf(10) ** -30
                assert lam < C - max(vm)
            # D(C(delta)) = delta at high precision (C rounded to float64 first).
            D, _, _ = kinf_mp(p, v, float(C))
            assert abs(float(D) - delta) < 1e-12 * delta + 1e-15 * float(c) ** -1
            assert abs(kl_ucb_slsqp(p, v, delta) - float(C)) < 1e-7
            mean = p @ v
            rho = mean + 0.6 * (v.max() - mean)
            assert abs(kinf_slsqp(p, v, rho) - float(kinf_mp(p, v, rho)[0])) < 1e-7


# ---------------------------------------------------------------------------------------
# The solvers under test. Every call goes through a few jitted programs with fixed shapes
# (8 levels per call, batches of 6), so that the suite compiles each program once.
# ---------------------------------------------------------------------------------------
N_LEVELS = 8
N_BATCH = 6


def _kl_ucb(p, v, delta):
    return jaxmdp.kl_ucb(p, v, delta)


def _kinf(p, v, rho):
    return jaxmdp.kinf(p, v, rho)


def _derivatives(fun):
    """Gradient in (p, v, level) and one JVP, in one program."""

    def derivatives(p, v, level, tangents):
        grads = jax.grad(fun, argnums=(0, 1, 2))(p, v, level)
        return grads, jax.jvp(fun, (p, v, level), tangents)[1]

    return derivatives


_PROGRAMS = {
    "C": {
        "levels": jax.jit(jax.vmap(_kl_ucb, in_axes=(None, None, 0))),
        "batch": jax.jit(jax.vmap(_kl_ucb)),
        "batch_derivatives": jax.jit(jax.vmap(_derivatives(_kl_ucb))),
    },
    "D": {
        "levels": jax.jit(jax.vmap(_kinf, in_axes=(None, None, 0))),
        "batch": jax.jit(jax.vmap(_kinf)),
        "batch_derivatives": jax.jit(jax.vmap(_derivatives(_kinf))),
    },
}
_L_levels = jax.jit(jax.vmap(jaxmdp.l1_ucb, in_axes=(None, None, 0)))


def levels(which, p, v, values):
    """C or D at up to N_LEVELS levels for one (p, v); the dtype is p's."""
    p = np.asarray(p)
    values = np.asarray(values, dtype=p.dtype)
    k = len(values)
    assert k <= N_LEVELS
    padded = np.concatenate([values, np.full(N_LEVELS - k, values[-1], dtype=p.dtype)])
    return np.asarray(_PROGRAMS[which]["levels"](p, np.asarray(v, p.dtype), padded))[:k]


def batch(which, p, v, values):
    """C or D for N_BATCH problems (rows of p, v) at one level each."""
    assert len(p) == N_BATCH
    return np.asarray(_PROGRAMS[which]["batch"](p, v, np.asarray(values, p.dtype)))


def batch_gradients(which, p, v, level, tangents):
    """((dp, dv, dlevel), jvp along tangents) for N_BATCH problems, under vmap."""
    dtype = np.asarray(p).dtype
    args = (np.asarray(x, dtype) for x in (p, v, level))
    tangents = tuple(np.asarray(t, dtype) for t in tangents)
    grads, jvp = _PROGRAMS[which]["batch_derivatives"](*args, tangents)
    return tuple(np.asarray(g) for g in grads), np.asarray(jvp)


def gradients(which, p, v, level, tangents=None):
    """((dp, dv, dlevel), jvp along tangents) for one problem; dtype is p's. (It runs
    the batched program on N_BATCH copies: one compilation serves every test.)"""
    p = np.asarray(p)
    if tangents is None:
        tangents = (np.zeros_like(p), np.zeros_like(p), 0.0)
    copies = [np.broadcast_to(x, (N_BATCH,) + np.shape(x)) for x in (p, v, level)]
    tangents = [np.broadcast_to(t, (N_BATCH,) + np.shape(t)) for t in tangents]
    grads, jvp = batch_gradients(which, *copies, tangents)
    return tuple(g[0] for g in grads), float(jvp[0])


def l1_levels(p, v, radii):
    return np.asarray(_L_levels(p, v, np.asarray(radii, np.asarray(p).dtype)))


def _rho_levels(p, v, fractions):
    mean = p @ v
    return mean + np.asarray(fractions) * (v.max() - mean)


def _no_nan(arrays):
    return not any(np.any(np.isnan(np.asarray(a))) for a in arrays)


# Values against SLSQP in log coordinates, S <= 50.
@pytest.mark.parametrize("seed,n", [(10, 8), (11, 8), (12, 50)])
def test_kl_ucb_matches_slsqp(seed, n):
    p, v = _problem(seed, n)
    deltas = np.array([1e-3, 0.05, 0.5, 3.0])
    want = np.array([kl_ucb_slsqp(p, v, d) for d in deltas])
    np.testing.assert_allclose(levels("C", p, v, deltas), want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed,n", [(10, 8), (11, 8), (12, 50)])
def test_kinf_matches_slsqp(seed, n):
    p, v = _problem(seed, n)
    rhos = _rho_levels(p, v, [0.05, 0.3, 0.7, 0.95])
    want = np.array([kinf_slsqp(p, v, r) for r in rhos])
    np.testing.assert_allclose(levels("D", p, v, rhos), want, rtol=1e-6, atol=1e-7)


# Values against mpmath at 40 digits, ~1e-12 relative in float64.
MP_CASES = [(20, 8, 0), (21, 8, 0), (22, 8, 2), (23, 50, 0)]


@pytest.mark.parametrize("seed,n,zeros", MP_CASES)
def test_kl_ucb_matches_mpmath(seed, n, zeros):
    p, v = _problem(seed, n, zeros=zeros, alpha=0.5)
    deltas = np.array([1e-12, 1e-8, 1e-4, 0.01, 0.3, 2.0, 10.0, 60.0])
    want = np.array([float(kl_ucb_mp(p, v, d)[0]) for d in deltas])
    np.testing.assert_allclose(levels("C", p, v, deltas), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed,n,zeros", MP_CASES)
def test_kinf_matches_mpmath(seed, n, zeros):
    p, v = _problem(seed, n, zeros=zeros, alpha=0.5)
    rhos = _rho_levels(p, v, [1e-6, 1e-3, 0.1, 0.5, 0.9, 0.999, 1 - 1e-9])
    want = np.array([float(kinf_mp(p, v, r)[0]) for r in rhos])
    np.testing.assert_allclose(levels("D", p, v, rhos), want, rtol=1e-12, atol=1e-15)


# Closed forms.
@pytest.mark.parametrize("a", [0.0, 0.1, 0.5, 0.9])
def test_two_point_values_reduce_to_bernoulli(a):
    """v in {0, 1} with P(v = 1) = a: C is the Bernoulli KL-UCB, D is kl(a, rho). (Six
    extra states with p = 0 and v = 0 receive no mass, so S = 8 here.)"""
    p = np.array([1 - a, a, 0, 0, 0, 0, 0, 0])
    v = np.array([0.0, 1.0, 0, 0, 0, 0, 0, 0])
    deltas = np.array([1e-6, 0.01, 0.2, 1.0, 5.0, 40.0])
    got = levels("C", p, v, deltas)
    want = np.array([float(bernoulli_kl_ucb(a, d)) for d in deltas])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    if a == 0.0:
        # p is zero on the argmax state: C = 1 - exp(-delta) (Filippi et al. 2010).
        np.testing.assert_allclose(got, -np.expm1(-deltas), rtol=1e-14, atol=1e-16)
    rhos = a + (1 - a) * np.array([1e-4, 0.2, 0.5, 0.9, 0.999999])
    want = np.array([float(bernoulli_kl(a, r)) for r in rhos])
    np.testing.assert_allclose(levels("D", p, v, rhos), want, rtol=1e-12)


# p is zero on the argmax state (v = 1), on a state just below it and on the lowest state.
FILIPPI = (
    np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0, 0.0, 0.0]),
    np.array([0.0, 0.2, 0.5, 0.7, 0.8, 1.0, -1.0, 0.9]),
)
# h(V) on the support: the delta above which the sup puts mass on the argmax state.
_supp = FILIPPI[0] > 0
FILIPPI_SWITCH = float(
    FILIPPI[0][_supp] @ np.log(1 - FILIPPI[1][_supp])
    + np.log(FILIPPI[0][_supp] @ (1 / (1 - FILIPPI[1][_supp])))
)


def test_zero_probability_on_argmax_state_filippi():
    """For delta >= h(V) the sup puts mass on the unobserved best state (Filippi et al.
    2010) and C = V - exp(sum_{p>0} p ln(V - v) - delta); below, the usual interior
    optimum (q* = 0 where p = 0), all the way up to the switch."""
    p, v = FILIPPI
    supp = p > 0
    fractions = np.array([0.1, 0.3, 0.6, 0.9, 0.99, 1.1])
    deltas = np.concatenate([fractions * FILIPPI_SWITCH, [1.0, 8.0]])
    want = np.array([float(kl_ucb_mp(p, v, d)[0]) for d in deltas])
    got = levels("C", p, v, deltas)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    big = deltas > FILIPPI_SWITCH
    closed = 1 - np.exp(p[supp] @ np.log(1 - v[supp]) - deltas[big])
    np.testing.assert_allclose(got[big], closed, rtol=1e-14)
    # The inverse: lambda sits at its bound 1/(V - rho) and D = sum p ln((V - v)/(V - rho)).
    rhos = closed
    d_closed = np.array([p[supp] @ np.log((1 - v[supp]) / (1 - r)) for r in rhos])
    np.testing.assert_allclose(levels("D", p, v, rhos), d_closed, rtol=1e-10)
    np.testing.assert_allclose(d_closed, deltas[big], rtol=1e-11)


def test_constant_values_on_support_below_an_unobserved_state():
    """v is constant (-0.75) where p > 0 and larger (0) where p = 0: h(V) = 0, so for
    every delta > 0 the sup is in the Filippi regime, C = V - 0.75 exp(-delta)."""
    p = np.array([0.0, 0.625, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]) / 1.625
    v = np.array([0.0, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0, -0.75])
    deltas = np.array([1e-252, 1e-20, 1e-8, 0.1, 1.0, 30.0])
    np.testing.assert_allclose(levels("C", p, v, deltas), -0.75 * np.exp(-deltas), rtol=1e-14)
    rhos = -0.75 * np.exp(-deltas[2:])
    np.testing.assert_allclose(levels("D", p, v, rhos), deltas[2:], rtol=1e-10, atol=1e-15)


def test_zero_probability_low_states_change_nothing():
    """States with p = 0 and the smallest v never receive mass."""
    p, v = _problem(30, 6)
    p_pad = np.concatenate([p, np.zeros(2)])
    v_pad = np.concatenate([v, np.full(2, v.min() - 0.5)])
    deltas = np.array([1e-4, 0.1, 2.0, 20.0])
    want = np.array([float(kl_ucb_mp(p, v, d)[0]) for d in deltas])
    np.testing.assert_allclose(levels("C", p_pad, v_pad, deltas), want, rtol=1e-12)
    rhos = _rho_levels(p, v, [0.1, 0.6, 0.99])
    want = np.array([float(kinf_mp(p, v, r)[0]) for r in rhos])
    np.testing.assert_allclose(levels("D", p_pad, v_pad, rhos), want, rtol=1e-12)


# The inverse pair, S up to 10^4.
@pytest.mark.parametrize("n", [8, 10_000])
def test_inverse_pair(n):
    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.full(n, 0.3), size=N_BATCH)
    v = rng.normal(size=(N_BATCH, n))
    delta = np.array([1e-6, 1e-3, 0.05, 0.5, 2.0, 8.0])
    c = batch("C", p, v, delta)
    np.testing.assert_allclose(batch("D", p, v, c), delta, rtol=1e-10)
    mean = np.sum(p * v, axis=-1)
    rho = mean + np.array([1e-4, 0.01, 0.2, 0.5, 0.9, 0.99]) * (v.max(axis=-1) - mean)
    d = batch("D", p, v, rho)
    np.testing.assert_allclose(batch("C", p, v, d), rho, rtol=1e-10, atol=1e-12)


# Properties (hypothesis) at S = 8 and 8 levels: one compiled program for all examples.
_weights = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=8, max_size=8).filter(
    lambda w: sum(w) > 1e-3
)
_values = st.lists(
    st.one_of(st.floats(-10.0, 10.0, allow_subnormal=False), st.sampled_from([-1.0, 0.0, 1.0])),
    min_size=8,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(_weights, _values, st.lists(st.floats(0.0, 30.0), min_size=8, max_size=8))
def test_property_kl_ucb_monotone_bounded_and_pinsker(w, v, deltas):
    p = np.asarray(w) / np.sum(w)
    v = np.asarray(v)
    deltas = np.sort(np.asarray(deltas))
    c = levels("C", p, v, deltas)
    tol = 1e-12 * (1 + np.abs(v).max())
    assert np.all(np.isfinite(c))
    assert np.all(np.diff(c) >= -tol)
    assert np.all(c >= p @ v - tol) and np.all(c <= v.max() + tol)
    # Pinsker: ||p - q||_1 <= sqrt(2 KL(p||q)), so the KL ball of radius delta lies inside
    # the L1 ball of radius sqrt(2 delta): C(p, v, delta) <= B(p, v, d) for d >= sqrt(2
    # delta). (The reverse is false; see test_pinsker_direction.)
    assert np.all(c <= l1_levels(p, v, np.sqrt(2 * deltas)) + tol)


def test_pinsker_direction():
    """p = e_1, v = e_2, delta = 1: C = 1 - 1/e < B(sqrt 2) = 1/sqrt 2, so C >= B(d) for
    d <= sqrt(2 delta) does not hold in general; C <= B(sqrt(2 delta)) does."""
    p = np.eye(8)[0]
    v = np.eye(8)[1]
    np.testing.assert_allclose(levels("C", p, v, [1.0]), 1 - np.exp(-1.0), rtol=1e-14)
    np.testing.assert_allclose(l1_levels(p, v, [np.sqrt(2.0)]), np.sqrt(0.5), rtol=1e-14)


@settings(max_examples=60, deadline=None)
@given(_weights, _values, st.lists(st.floats(-0.2, 1.2), min_size=8, max_size=8))
def test_property_kinf_monotone_and_nonnegative(w, v, fractions):
    p = np.asarray(w) / np.sum(w)
    v = np.asarray(v)
    lo, hi = v.min(), v.max()
    rhos = np.sort(lo + np.asarray(fractions) * (hi - lo))
    d = levels("D", p, v, rhos)
    assert not np.any(np.isnan(d))
    assert np.all(d >= 0)
    finite = np.where(np.isfinite(d), d, 0)
    assert np.all(d[1:] >= d[:-1] - 1e-12 * (1 + finite[:-1]))
    assert np.all(np.isinf(d[rhos > hi]))
    assert np.all(d[rhos < p @ v - 1e-12 * (1 + np.abs(v).max())] == 0)


# Gradients.
def _envelope(p, v, delta, rho):
    """The closed-form derivatives of DESIGN.md, from the mpmath optimisers."""
    _, c, q_c = kl_ucb_mp(p, v, delta)
    _, lam, q_d = kinf_mp(p, v, rho)
    c, lam = float(c), float(lam)
    q_c = np.array([float(x) for x in q_c])
    q_d = np.array([float(x) for x in q_d])
    return {
        "C": (-c * (np.log(p / q_c) + 1), q_c, c),
        "D": (np.log(p / q_d) + 1, -lam * q_d, lam),
    }


def _on_simplex(g):
    """Only differences of dp components are meaningful: project out the mean."""
    g = np.asarray(g)
    return g - g.mean()


def _central_differences(which, p, v, level, dir_p, dir_v, h):
    """Directional central differences in p, v and the level, in one batched call."""
    ps = np.stack([p + h * dir_p, p - h * dir_p, p, p, p, p])
    vs = np.stack([v, v, v + h * dir_v, v - h * dir_v, v, v])
    lv = np.array([level, level, level, level, level + h, level - h])
    f = batch(which, ps, vs, lv)
    return (f[0] - f[1]) / (2 * h), (f[2] - f[3]) / (2 * h), (f[4] - f[5]) / (2 * h)


GRAD_CASES = [(40, 0.05, 0.3), (41, 0.8, 0.8), (42, 4.0, 0.97)]


@pytest.mark.parametrize("seed,delta,fraction", GRAD_CASES)
def test_gradients_envelope_finite_differences_and_jvp(seed, delta, fraction):
    n = 8
    p, v = _problem(seed, n, alpha=3.0)  # entries well inside the simplex
    rho = float(_rho_levels(p, v, fraction))
    want = _envelope(p, v, delta, rho)
    rng = np.random.default_rng(seed)
    dir_p = rng.normal(size=n)
    dir_p -= dir_p.mean()  # stay on the simplex
    dir_p *= 0.5 * p.min() / np.abs(dir_p).max()
    dir_v = rng.normal(size=n)
    for which, level in [("C", delta), ("D", rho)]:
        (g_p, g_v, g_l), jvp = gradients(which, p, v, level, (dir_p, dir_v, 0.3))
        w_p, w_v, w_l = want[which]
        np.testing.assert_allclose(_on_simplex(g_p), _on_simplex(w_p), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(g_v, w_v, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g_l, w_l, rtol=1e-9)
        fd_p, fd_v, fd_l = _central_differences(which, p, v, level, dir_p, dir_v, 1e-5)
        np.testing.assert_allclose(g_p @ dir_p, fd_p, rtol=1e-6, atol=1e-10)
        np.testing.assert_allclose(g_v @ dir_v, fd_v, rtol=1e-6, atol=1e-10)
        np.testing.assert_allclose(g_l, fd_l, rtol=1e-6)
        np.testing.assert_allclose(jvp, g_p @ dir_p + g_v @ dir_v + 0.3 * g_l, rtol=1e-10)


_ZERO_KEEPING = np.array([0.1, -0.04, -0.06, 0.03, -0.03, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("fraction", [0.3, 12.0])
def test_kl_ucb_gradients_with_zero_probability_states(fraction):
    """FILIPPI below (interior) and above (mass on the zero-probability argmax state) the
    switch. dC/dv = q*, dC/ddelta = c; dC/dp_x at a zero-probability state x is the
    one-sided limit of -c (ln(p_x/q*_x) + 1): +inf where q*_x > 0, finite where q*_x = 0
    (p_x/q*_x tends to (eta - v_x)/c). Along directions that keep the zeros at zero,
    central differences."""
    p, v = FILIPPI
    delta = fraction * FILIPPI_SWITCH
    _, c, q = kl_ucb_mp(p, v, delta)
    c, q = float(c), np.array([float(x) for x in q])
    (g_p, g_v, g_d), _ = gradients("C", p, v, delta)
    assert _no_nan(g_p)
    np.testing.assert_allclose(g_d, c, rtol=1e-10)
    np.testing.assert_allclose(g_v, q, rtol=1e-10, atol=1e-14)
    zero = p == 0
    assert np.all(g_p[zero & (q > 0)] == np.inf)
    assert np.all(np.isfinite(g_p[~(zero & (q > 0))]))
    dir_v = q - q.mean()
    fd_p, fd_v, fd_d = _central_differences("C", p, v, delta, _ZERO_KEEPING, dir_v, 1e-6)
    np.testing.assert_allclose(g_p[~zero] @ _ZERO_KEEPING[~zero], fd_p, rtol=1e-6)
    np.testing.assert_allclose(g_v @ dir_v, fd_v, rtol=1e-6)
    np.testing.assert_allclose(g_d, fd_d, rtol=1e-6)


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.9])
def test_kinf_gradients_with_zero_probability_states(fraction):
    """kinf on FILIPPI. At fraction 0.1, lambda < 1/(V - rho) and q* is zero where p is; at
    0.3 and 0.9, lambda = 1/(V - rho) and q* puts mass on the zero-probability argmax
    state, where dD/dp is the one-sided limit of ln(p_x/q*_x) + 1, i.e. -inf. Never NaN;
    the other components match the envelope formulas and central differences."""
    p, v = FILIPPI
    rho = float(_rho_levels(p, v, fraction))
    _, lam, q = kinf_mp(p, v, rho)
    lam, q = float(lam), np.array([float(x) for x in q])
    (g_p, g_v, g_r), _ = gradients("D", p, v, rho)
    assert _no_nan(g_p)
    np.testing.assert_allclose(g_r, lam, rtol=1e-10)
    np.testing.assert_allclose(g_v, -lam * q, rtol=1e-10, atol=1e-14)
    zero = p == 0
    assert np.all(g_p[zero & (q > 0)] == -np.inf)
    supp = ~zero
    np.testing.assert_allclose(
        _on_simplex(g_p[supp]), _on_simplex(np.log(p[supp] / q[supp]) + 1), rtol=1e-10
    )
    fd_p, _, fd_r = _central_differences("D", p, v, rho, _ZERO_KEEPING, np.zeros(8), 1e-6)
    np.testing.assert_allclose(g_p[supp] @ _ZERO_KEEPING[supp], fd_p, rtol=1e-6)
    np.testing.assert_allclose(g_r, fd_r, rtol=1e-6)


def test_gradients_under_vmap():
    """Six different problems in one vmapped call (two of them degenerate): each row has
    its own envelope derivatives, and the JVP of each row matches its gradient."""
    cases = [_problem(seed, 8, alpha=2.0) for seed in range(50, 50 + N_BATCH)]
    p = np.stack([c[0] for c in cases])
    v = np.stack([c[1] for c in cases])
    mean = np.sum(p * v, -1)
    level = {
        "C": np.array([0.01, 0.2, 1.0, 6.0, 0.0, -1.0]),
        "D": mean + np.array([0.1, 0.4, 0.8, 0.99, 0.0, -1.0]) * (v.max(-1) - mean),
    }
    rng = np.random.default_rng(5)
    tangents = (rng.normal(size=p.shape), rng.normal(size=p.shape), rng.normal(size=N_BATCH))
    for which in "CD":
        (g_p, g_v, g_l), jvp = batch_gradients(which, p, v, level[which], tangents)
        assert _no_nan([g_p, g_v, g_l, jvp])
        for i in range(4):
            want = _envelope(p[i], v[i], level["C"][i], level["D"][i])[which]
            np.testing.assert_allclose(_on_simplex(g_p[i]), _on_simplex(want[0]), rtol=1e-9)
            np.testing.assert_allclose(g_v[i], want[1], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(g_l[i], want[2], rtol=1e-9)
            dot = g_p[i] @ tangents[0][i] + g_v[i] @ tangents[1][i] + g_l[i] * tangents[2][i]
            np.testing.assert_allclose(jvp[i], dot, rtol=1e-10)
        # Rows 4 and 5 sit at level 0 (delta = 0, rho = p.v) and below it (infeasible delta,
        # rho < p.v): there C = p.v (dC/dv = p) or -inf, D = 0 (all derivatives 0).
        if which == "C":
            np.testing.assert_allclose(g_v[4], p[4], rtol=1e-12)
            assert np.all(g_v[5] == 0) and np.all(g_p[5] == 0) and g_l[5] == 0
        else:
            assert all(np.all(g[5] == 0) for g in (g_p, g_v, g_l))


# Degenerate cases (the paper's Theorems 1 and 3).
def test_kl_ucb_degenerate_cases():
    p, v = _problem(60, 8)
    mean = p @ v
    c = levels("C", p, v, [-1.0, -1e-300, 0.0])
    assert c[0] == -np.inf and c[1] == -np.inf
    np.testing.assert_allclose(c[2], mean, rtol=1e-14)
    const = np.full(8, 0.3)
    np.testing.assert_allclose(levels("C", p, const, [0.0, 0.1, 50.0]), 0.3, rtol=1e-14)
    for args in [(p, v, -1.0), (p, v, 0.0), (p, const, 0.1), (p, const, 0.0)]:
        assert _no_nan(gradients("C", *args)[0]), args
    # Infeasible level: the value is -inf on a neighbourhood, so every derivative is 0.
    assert all(np.all(g == 0) for g in gradients("C", p, v, -1.0)[0])
    # delta == 0: the documented right derivative in delta, +inf.
    assert gradients("C", p, v, 0.0)[0][2] == np.inf


def test_kinf_degenerate_cases():
    p, v = _problem(61, 8)
    mean, top = p @ v, v.max()
    rhos = np.array([top + 1.0, top, mean, mean - 1.0, v.min() - 5.0])
    d = levels("D", p, v, rhos)
    assert d[0] == np.inf and d[1] == np.inf
    assert np.all(d[2:] == 0)
    const = np.full(8, 0.3)
    np.testing.assert_array_equal(levels("D", p, const, [0.2, 0.3, 0.4]), [0.0, 0.0, np.inf])
    for rho in rhos:
        assert _no_nan(gradients("D", p, v, rho)[0]), rho
    # Where the value is 0 or +inf on a neighbourhood every derivative is 0.
    for rho in [rhos[0], rhos[3], rhos[4]]:
        assert all(np.all(g == 0) for g in gradients("D", p, v, rho)[0])
    for rho in [0.2, 0.3, 0.4]:
        assert _no_nan(gradients("D", p, const, rho)[0])


# Robustness: no NaN anywhere in the documented range; float32 close to float64.
def _extreme_problem(n):
    rng = np.random.default_rng(70 + n)
    p = rng.dirichlet(np.ones(n))
    p[: n // 4] = 1e-12  # tiny entries
    p /= p.sum()
    v = rng.uniform(size=n)
    v[n // 2 :] = v[n // 2]  # ties
    v[1] = 1e6  # one huge outlier, on a state of probability ~1e-12
    return p, v


EXTREME_DELTAS = np.array([1e-12, 1e-6, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3])
EXTREME_FRACTIONS = [1e-9, 1e-4, 0.01, 0.3, 0.9, 0.999, 1 - 1e-7, 1.0]


def test_no_nan_extreme_inputs_float64_large_s():
    p, v = _extreme_problem(100_000)
    rhos = _rho_levels(p, v, EXTREME_FRACTIONS)
    rhos[-1] = v.max()
    c = levels("C", p, v, EXTREME_DELTAS)
    d = levels("D", p, v, rhos)
    tol = 1e-12 * np.abs(v).max()
    assert np.all(np.isfinite(c)) and np.all(np.diff(c) >= -tol)
    assert np.all(c >= p @ v - tol) and np.all(c <= v.max())
    assert np.all(np.isfinite(d[:-1])) and d[-1] == np.inf and np.all(np.diff(d) >= 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_no_nan_extreme_inputs(dtype):
    p, v = _extreme_problem(8)
    rhos = _rho_levels(p, v, EXTREME_FRACTIONS)
    rhos[-1] = v.max()
    p, v = p.astype(dtype), v.astype(dtype)
    c = levels("C", p, v, EXTREME_DELTAS)
    d = levels("D", p, v, rhos)
    assert _no_nan([c, d])
    assert np.all(np.isfinite(c)) and np.all(c <= v.max())
    assert np.all(d >= 0) and np.all(np.isfinite(d[:-2])) and d[-1] == np.inf
    for which, level in [("C", 0.1), ("C", 1e-12), ("D", rhos[3]), ("D", rhos[5])]:
        assert _no_nan(gradients(which, p, v, level)[0]), (which, level)


FLOAT32_CASES = {
    "uniform": (
        np.random.default_rng(90).dirichlet(np.ones(8)),
        np.random.default_rng(91).uniform(size=8),
    ),
    # p tiny on the argmax state: next to the Filippi regime.
    "tiny-p-on-top": (
        np.array([1e-12, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1 - 1e-12]),
        np.array([2.0, 0.0, 1.0, 0.5, 0.2, 0.3, 0.4, 0.9]),
    ),
    "outlier": (
        np.array([1e-3, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1 - 1e-3]),
        np.array([1e3, 0.0, 1.0, 0.5, 0.2, 0.3, 0.4, 0.9]),
    ),
}


@pytest.mark.parametrize("case", sorted(FLOAT32_CASES))
def test_float32_close_to_float64(case):
    p, v = FLOAT32_CASES[case]
    p32, v32 = p.astype(np.float32), v.astype(np.float32)
    p64, v64 = p32.astype(np.float64), v32.astype(np.float64)  # the same inputs in float64
    deltas = np.array([1e-6, 1e-3, 0.1, 1.0, 10.0])
    rhos = _rho_levels(p64, v64, [1e-3, 0.1, 0.5, 0.9, 0.99])
    scale = np.abs(v64).max()
    np.testing.assert_allclose(
        levels("C", p32, v32, deltas), levels("C", p64, v64, deltas), rtol=0, atol=1e-5 * scale
    )
    np.testing.assert_allclose(
        levels("D", p32, v32, rhos), levels("D", p64, v64, rhos), rtol=1e-4, atol=1e-6
    )
    for which, level in [("C", 0.1), ("D", float(rhos[2]))]:
        g32, _ = gradients(which, p32, v32, level)
        g64, _ = gradients(which, p64, v64, level)
        assert all(g.dtype == np.float32 for g in g32)
        np.testing.assert_allclose(_on_simplex(g32[0]), _on_simplex(g64[0]), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(g32[1], g64[1], rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(g32[2], g64[2], rtol=1e-3)


def test_shapes_broadcasting_and_dtypes():
    p, v = _problem(80, 8)
    p_grid = np.stack([p, p[::-1], np.roll(p, 3)])[None].repeat(2, axis=0)  # [2, 3, S]
    delta = np.array([0.01, 0.1, 1.0])
    out = jax.jit(jaxmdp.kl_ucb)(p_grid, v, delta)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(
        out[1], [levels("C", q, v, delta)[i] for i, q in enumerate(p_grid[1])]
    )
    shapes = [
        ((8,), (8,), (), ()),
        ((4, 8), (8,), (), (4,)),
        ((2, 3, 8), (3, 8), (2, 1), (2, 3)),
    ]
    for fun in [jaxmdp.kl_ucb, jaxmdp.kinf]:
        for k, (p_shape, v_shape, l_shape, out_shape) in enumerate(shapes):
            for dtype in [jnp.float64, jnp.float32][: 2 if k == 2 else 1]:
                out = jax.eval_shape(
                    fun,
                    jax.ShapeDtypeStruct(p_shape, dtype),
                    jax.ShapeDtypeStruct(v_shape, dtype),
                    jax.ShapeDtypeStruct(l_shape, dtype),
                )
                assert out.shape == out_shape and out.dtype == dtype, (fun, p_shape, dtype)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-15), (np.float32, 5e-7)])
def test_log1p_or_log_against_mpmath(dtype, rtol):
    """kinf's final evaluation: log1p(x) on one branch, log(y) (through frexp and the same
    log1p) on the other, 0 where not kept; against 50-digit mpmath on the exact inputs."""
    from jaxmdp.indices.kl import _log1p_or_log

    tiny = float(np.finfo(dtype).tiny)
    x = np.array([-0.4999, -0.3, -1e-7, -1e-30, 1e-30, 1e-8, 0.25, 3.0, 1e6], dtype)
    y = np.array([0.5, 0.49, 0.3, 1e-3, 1e-20, tiny, tiny / 8, 0.125, 0.0], dtype)
    branch = np.arange(x.size) % 2 == 0  # log1p(x) on even entries, log(y) on odd ones
    keep = np.ones(x.size, bool)
    keep[-1] = False
    got = np.asarray(_log1p_or_log(jnp.asarray(x), jnp.asarray(y), jnp.asarray(branch),
                                   jnp.asarray(keep)))
    assert got.dtype == dtype
    with mp.workdps(50):
        want = [0.0 if not k else float(mp.log1p(mp.mpf(float(a))) if b
                                         else mp.log(mp.mpf(float(c))))
                for a, c, b, k in zip(x, y, branch, keep)]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    # y = 0 on the log branch is log 0 = -inf (a zero-probability argmax state at u* = 0).
    zero = _log1p_or_log(jnp.asarray([0.1], dtype), jnp.asarray([0.0], dtype),
                         jnp.asarray([False]), jnp.asarray([True]))
    assert float(zero[0]) == -np.inf


# Issue 13: the gradient in v is a probability vector (C(p, v + a) = C(p, v) + a) in every
# case family; for kinf, D(p, v + a, rho + a) = D, so sum(dD/dv) = -dD/drho.
_TIED = (  # peaked p, the maximum of v tied over 8 states: at large delta u* underflows
    np.concatenate([np.full(8, (1 - 2e-6) / 8), [1e-6, 1e-6]]),
    np.concatenate([np.ones(8), [0.0, 0.5]]),
)
_FAMILIES = {
    "interior": (*_problem(40, 8, alpha=3.0), [1e-6, 0.05, 4.0, 1e3]),
    "filippi-interior": (*FILIPPI, [0.3 * FILIPPI_SWITCH]),
    "filippi-boundary": (*FILIPPI, [1.1 * FILIPPI_SWITCH, 12 * FILIPPI_SWITCH, 1e3]),
    "tied-max-underflow": (*_TIED, [1e-3, 0.1, 10.0, 1e3]),
    "delta-zero": (*_problem(41, 8), [0.0]),
    "constant-v": (_problem(42, 8)[0], np.full(8, 0.3), [0.0, 0.1, 50.0]),
    "p-on-argmax": (np.eye(8)[2], np.linspace(0, 1, 8)[[0, 1, 7, 2, 3, 4, 5, 6]], [0.1, 5.0]),
    "tiny-p": (*FLOAT32_CASES["tiny-p-on-top"], [1e-12, 0.1, 100.0]),
}


@pytest.mark.parametrize("family", sorted(_FAMILIES))
def test_kl_ucb_gradient_in_v_is_a_probability_vector(family):
    p, v, deltas = _FAMILIES[family]
    for delta in deltas:
        (_, g_v, _), _ = gradients("C", p, v, delta)
        assert np.all(g_v >= 0), (family, delta)
        np.testing.assert_allclose(g_v.sum(), 1.0, rtol=0, atol=1e-14, err_msg=family)
    # kinf on the same (p, v): sum of dD/dv is -dD/drho wherever D is finite.
    mean = p @ v
    for fraction in [1e-6, 0.3, 0.99]:
        rho = mean + fraction * (v.max() - mean)
        (_, g_v, g_r), _ = gradients("D", p, v, rho)
        np.testing.assert_allclose(g_v.sum(), -g_r, rtol=1e-12, atol=1e-300, err_msg=family)


def test_kl_ucb_tied_maximum_underflow_gives_renormalised_p():
    """The issue's case: the gradient on the tied states is p renormalised over them."""
    p, v, _ = _FAMILIES["tied-max-underflow"]
    tied = v == v.max()
    for delta in [0.1, 1e3]:
        (_, g_v, _), _ = gradients("C", p, v, delta)
        np.testing.assert_allclose(g_v[tied], p[tied] / p[tied].sum(), rtol=1e-14)
        assert np.all(g_v[~tied] < 1e-200)


# Issue 13: kinf decides rho <= p.v and solves on the exact differences rho - v_x.
@pytest.mark.parametrize("offset", [1e4, -3e4])
def test_kinf_rho_within_rounding_of_the_mean(offset):
    """v = offset + 1e-3 U(0, 1): rho - p.v from 1e-9 of the way to max v is below the
    rounding of p.v (p.v is rounded by ~1e-12 at 1e4); D (down to ~1e-18) and dD/drho = lam
    against 40-digit mpmath. The old code returned 0 with gradient 0."""
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(8))
    v = offset + 1e-3 * rng.uniform(size=8)
    with mp.workdps(DPS):
        pm = _mp_simplex(p)
        mean = mp.fsum(a * mp.mpf(float(b)) for a, b in zip(pm, v))
        rhos = [float(mean + mp.mpf(f) * (mp.mpf(float(v.max())) - mean))
                for f in [1e-9, 1e-7, 1e-5, 1e-3, 0.3, 0.9]]
    refs = [kinf_mp(p, v, r) for r in rhos]
    got = levels("D", p, v, rhos)
    want = np.array([float(r[0]) for r in refs])
    assert np.all(want[1:] > 0) and want[0] < 1e-16  # rho rounded: either side of p.v
    np.testing.assert_allclose(got, want, rtol=1e-11)
    for rho, (_, lam, q) in zip(rhos, refs):
        if lam is None:  # rho <= p.v exactly: D = 0 with derivatives 0
            assert all(np.all(g == 0) for g in gradients("D", p, v, rho)[0])
            continue
        (g_p, g_v, g_r), _ = gradients("D", p, v, rho)
        np.testing.assert_allclose(g_r, float(lam), rtol=1e-10)
        np.testing.assert_allclose(g_v, -float(lam) * np.array([float(x) for x in q]),
                                   rtol=1e-9)
    # Exactly at p.v (as far as float64 can say: rho below or above the exact mean).
    below = float(mean) if float(mean) < mean else np.nextafter(float(mean), -np.inf)
    assert levels("D", p, v, [below])[0] == 0


# The exact parts: a batch of 32 computes rho - p.v in double precision for the instances
# where rho is within 1e-3 of v's scale of p.v, and re-sums D without cancellation for
# those where it cancels, in passes of 4 (3 and 10 flagged) or as a whole (20 flagged).
_KINF_32 = jax.jit(jax.vmap(jaxmdp.kinf))


@pytest.mark.parametrize("flagged, kind", [(3, "near"), (10, "near"), (20, "near"),
                                           (20, "offset")])
def test_kinf_batch_reruns_its_flagged_instances(flagged, kind):
    """Flagged instances at random places among instances that need no exact part
    (v = U(0, 1), rho 0.3 of the way from p.v to max v): "near", v = 1e4 + 1e-3 U(0, 1) and
    rho 1e-7 of the way (double-precision gap and cancellation-free sum); "offset",
    v = 1e6 + U(0, 1) and rho 0.3 of the way (the gap only: from the rounded p.v it would
    lose about 1e-9 of D). Each value against 40-digit mpmath."""
    rng = np.random.default_rng(flagged)
    n, S = 32, 8
    p = rng.dirichlet(np.ones(S), size=n)
    where = np.zeros(n, bool)
    where[rng.choice(n, flagged, replace=False)] = True
    offset, scale, near = (1e4, 1e-3, 1e-7) if kind == "near" else (1e6, 1.0, 0.3)
    v = np.where(where[:, None], offset, 0.0) + np.where(where[:, None], scale, 1.0) * (
        rng.uniform(size=(n, S)))
    rho = np.empty(n)
    with mp.workdps(DPS):
        for i in range(n):
            pm = _mp_simplex(p[i])
            mean = mp.fsum(a * mp.mpf(float(b)) for a, b in zip(pm, v[i]))
            fraction = mp.mpf(near if where[i] else 0.3)
            rho[i] = float(mean + fraction * (mp.mpf(float(v[i].max())) - mean))
    want = np.array([float(kinf_mp(p[i], v[i], rho[i])[0]) for i in range(n)])
    assert np.all(want > 0)
    np.testing.assert_allclose(np.asarray(_KINF_32(p, v, rho)), want, rtol=1e-11)


# Issue 13: NaN in, NaN out (value and derivatives); a negative probability is not valid.
_INVALID = {
    "nan-level": ([0.5, 0.5], [0.0, 1.0], np.nan),
    "nan-v": ([0.5, 0.5], [0.0, np.nan], 0.3),
    "nan-p": ([0.5, np.nan], [0.0, 1.0], 0.3),
    "negative-p": ([1.5, -0.5], [0.0, 1.0], 0.3),
    "negative-p-sums-to-one": ([0.6, 0.6, -0.2], [0.0, 1.0, 0.5], 0.3),
    "inf-v": ([0.5, 0.5], [0.0, np.inf], 0.3),
    "zero-p": ([0.0, 0.0], [0.0, 1.0], 0.3),
}


@pytest.mark.parametrize("case", sorted(_INVALID))
@pytest.mark.parametrize("fun", [jaxmdp.kl_ucb, jaxmdp.kinf, jaxmdp.l1_ucb],
                         ids=["kl_ucb", "kinf", "l1_ucb"])
def test_invalid_input_gives_nan_value_and_gradients(fun, case):
    p, v, level = (jnp.asarray(x, jnp.float64) for x in _INVALID[case])
    assert np.isnan(fun(p, v, level))
    for g in jax.grad(fun, argnums=(0, 1, 2))(p, v, level):
        assert np.all(np.isnan(g)), (case, g)
    # Only the bad row of a batch is NaN.
    good = (jnp.asarray([0.5, 0.25, 0.25][: p.size]), jnp.asarray([0.0, 1.0, 0.5][: p.size]))
    good = (good[0] / good[0].sum(), good[1])
    out = jax.vmap(fun)(jnp.stack([p, good[0]]), jnp.stack([v, good[1]]),
                        jnp.stack([level, jnp.asarray(0.3)]))
    assert np.isnan(out[0]) and np.isfinite(out[1])


def test_check_indices_inputs_raises_naming_argument_and_value():
    check = jaxmdp.check_indices_inputs
    p, v = _problem(3, 4)
    check(p, v, 0.1, level_name="delta")  # valid: no error
    check(p, v, np.inf)
    with pytest.raises(ValueError, match=r"v\[1\] = nan is not finite"):
        check(p, np.array([0.0, np.nan, 1.0, 2.0]), 0.1)
    with pytest.raises(ValueError, match=r"p\[1, 0\] = -0.25 is negative"):
        check(np.array([p, [-0.25, 0.5, 0.5, 0.25]]), v, 0.1)
    with pytest.raises(ValueError, match=r"p sums to 1.5"):
        check(np.array([0.5, 0.5, 0.25, 0.25]), v, 0.1)
    with pytest.raises(ValueError, match=r"delta = nan"):
        check(p, v, np.nan, level_name="delta")
    with pytest.raises(ValueError, match=r"rho\[1\] = nan"):
        check(p, v, [0.2, np.nan], level_name="rho")
    with pytest.raises(ValueError, match="same last dimension"):
        check(p, v[:3], 0.1)
    with pytest.raises(TypeError, match="outside jit"):
        jax.jit(lambda p: check(p, v, 0.1))(p)
    with pytest.raises(ValueError, match=r"v.shape=\(4,\), p.shape=\(2,\)"):
        check(np.tile(p, (3, 1)), v, np.zeros(2), level_name="p")  # level named like p


# Issue 13: vmap runs the native batch program; values and derivatives agree.
@pytest.mark.parametrize("n", [8, 5000])
@pytest.mark.parametrize("fun", [jaxmdp.kl_ucb, jaxmdp.kinf], ids=["kl_ucb", "kinf"])
def test_vmap_is_the_native_batch(fun, n):
    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.ones(n), size=4)
    p[0, :3] = 0.0  # a zero-probability row (the other branch of the zeros test)
    p /= p.sum(-1, keepdims=True)
    v = rng.uniform(size=(4, n))
    mean = np.sum(p * v, -1)
    level = (np.array([0.01, 0.1, 1.0, 5.0]) if fun is jaxmdp.kl_ucb
             else mean + np.array([0.01, 0.3, 0.7, 0.99]) * (v.max(-1) - mean))
    # One program: the vmapped call lowers to the same HLO as the [4, S] batch.
    lowered = [jax.jit(f).lower(p, v, level).as_text() for f in (fun, jax.vmap(fun))]
    assert lowered[0].count("stablehlo.while") == lowered[1].count("stablehlo.while")
    assert lowered[0].count("stablehlo.case") == lowered[1].count("stablehlo.case")
    np.testing.assert_array_equal(jax.vmap(fun)(p, v, level), fun(p, v, level))
    if n > 8:  # the sequential large-S path: its derivatives, native against vmapped
        native = jax.grad(lambda *a: fun(*a).sum(), (0, 1, 2))(p, v, level)
        vmapped = jax.grad(lambda *a: jax.vmap(fun)(*a).sum(), (0, 1, 2))(p, v, level)
        for a, b in zip(native, vmapped):
            np.testing.assert_array_equal(a, b)
        return
    # in_axes with unbatched arguments, and nested vmaps.
    grid = jax.vmap(jax.vmap(fun, in_axes=(None, None, 0)), in_axes=(0, 0, None))(p, v, level)
    np.testing.assert_allclose(np.diag(grid), fun(p, v, level), rtol=1e-14)
    np.testing.assert_allclose(grid[1], fun(p[1], v[1], level), rtol=1e-14)
    # Derivatives: grad of vmap, vmap of grad, native batch; jvp against vjp.
    argnums = (0, 1, 2)
    native = jax.grad(lambda *a: fun(*a).sum(), argnums)(p, v, level)
    grad_of_vmap = jax.grad(lambda *a: jax.vmap(fun)(*a).sum(), argnums)(p, v, level)
    vmap_of_grad = jax.vmap(jax.grad(fun, argnums))(p, v, level)
    for a, b, c in zip(native, grad_of_vmap, vmap_of_grad):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    tangents = (rng.normal(size=p.shape), rng.normal(size=v.shape), rng.normal(size=4))
    _, jvp = jax.jvp(jax.vmap(fun), (p, v, level), tangents)
    _, pullback = jax.vjp(jax.vmap(fun), p, v, level)
    cotangent = rng.normal(size=4)
    vjp = pullback(cotangent)
    lhs = float(cotangent @ jvp)
    rhs = sum(float(np.sum(g * t)) for g, t in zip(vjp, tangents))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    vjp_rows = [np.sum(g * t, axis=-1) if g.ndim == 2 else g * t
                for g, t in zip(vmap_of_grad, tangents)]
    np.testing.assert_allclose(jvp, sum(vjp_rows), rtol=1e-10)


# ---------------------------------------------------------------------------------------
# The accelerator layout (jaxmdp/indices/kl.py, _native), forced on the CPU: no sequential
# blocks, the root finder's first steps a loop of fixed trip count (exponential-fit steps),
# then one check and the data-dependent loop only while an instance still runs. Against
# the CPU layout's programs above (the same shapes: N_BATCH rows of S = 10^4, N_LEVELS
# levels of one problem of S = 10^5, float64); float32 input against float64 on the same
# inputs at test_float32_close_to_float64's tolerances. Its passes (fixed steps, then the
# data-dependent trips: max(_ACCELERATOR_STEPS, the batch's most steps)) are at most 8.
# ---------------------------------------------------------------------------------------
from jaxmdp.indices import kl as _kl  # noqa: E402

ACCELERATOR_PASSES = 8


def _on_accelerator(p, v, delta, rho):
    return (_kl._kl_ucb_solve_on("accelerator", p, v, delta),
            _kl._kinf_solve_on("accelerator", p, v, rho))


_ACCELERATOR = {
    "batch": jax.jit(_on_accelerator),  # N_BATCH problems (rows), one level each
    "levels": jax.jit(jax.vmap(_on_accelerator, in_axes=(None, None, 0, 0))),  # N_LEVELS
}


def _check_accelerator(form, p, v, deltas, rhos):
    """The accelerator layout's C and D (``form``: "batch" or "levels", as the CPU
    programs ``batch`` and ``levels``) against the CPU layout; returns the passes."""
    dtype = np.asarray(p).dtype
    cast = lambda x: np.asarray(x, dtype)  # noqa: E731
    solutions = _ACCELERATOR[form](cast(p), cast(v), cast(deltas), cast(rhos))
    up = lambda x: cast(x).astype(np.float64)  # noqa: E731
    cpu = batch if form == "batch" else levels
    scale = np.abs(up(v)).max(axis=-1)
    passes = 0
    for which, sol, level in [("C", solutions[0], deltas), ("D", solutions[1], rhos)]:
        got = np.asarray(sol.value).astype(np.float64)
        want = cpu(which, up(p), up(v), up(level))
        assert _no_nan([got, sol.multiplier, sol.q]) and bool(jnp.all(sol.converged)), which
        infinite = np.isinf(want)
        np.testing.assert_array_equal(got[infinite], want[infinite])  # -inf or +inf
        finite = ~infinite
        if dtype == np.float64:
            np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=0,
                                       err_msg=which)
        elif which == "C":
            error = np.abs(got - want)[finite]
            assert np.all(error <= 1e-5 * np.broadcast_to(scale, got.shape)[finite]), which
        else:
            np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-6)
        passes = max(passes, _kl._ACCELERATOR_STEPS, int(np.max(sol.num_steps)))
    assert passes <= ACCELERATOR_PASSES
    return passes


def _large_s_batches(n):
    """Row sets of N_BATCH problems of S = n: random; the inverse-pair test's sparse p and
    normal v; the extreme problem at its levels; degenerate and boundary cases."""
    rng = np.random.default_rng(n + 1)
    fractions = np.array([1e-4, 0.01, 0.2, 0.5, 0.9, 0.99])
    deltas = np.array([1e-6, 1e-3, 0.05, 0.5, 2.0, 8.0])

    def rows(p, v, deltas, fractions):
        mean = np.sum(p * v, axis=-1)
        return p, v, deltas, mean + fractions * (v.max(axis=-1) - mean)

    yield rows(rng.dirichlet(np.ones(n), size=N_BATCH), rng.uniform(size=(N_BATCH, n)),
               deltas, fractions)
    yield rows(rng.dirichlet(np.full(n, 0.3), size=N_BATCH), rng.normal(size=(N_BATCH, n)),
               deltas, fractions)
    p, v = (np.broadcast_to(x, (N_BATCH, n)) for x in _extreme_problem(n))
    for part in (slice(0, 6), slice(2, 8)):
        p_, v_, d_, r_ = rows(p, v, EXTREME_DELTAS[part], np.array(EXTREME_FRACTIONS[part]))
        r_[np.array(EXTREME_FRACTIONS[part]) == 1.0] = v.max()
        yield p_, v_, d_, r_
    # Degenerate rows (delta < 0 / rho > max v, delta = 0 / rho < p.v, constant v, p on
    # the argmax, rho = max v) and the boundary optimum (p zero on the top states:
    # Filippi et al.).
    p = rng.dirichlet(np.ones(n), size=N_BATCH)
    v = rng.uniform(size=(N_BATCH, n))
    v[2] = 0.3
    p[3] = np.eye(n)[np.argmax(v[3])]
    top = v[4] >= np.quantile(v[4], 0.9)
    p[4, top] = 0.0
    p[4] /= p[4].sum()
    mean = np.sum(p * v, axis=-1)
    supp = p[4] > 0
    switch = p[4, supp] @ np.log(v[4].max() - v[4, supp]) + np.log(
        p[4, supp] @ (1 / (v[4].max() - v[4, supp])))
    deltas = np.array([-1.0, 0.0, 0.1, 0.1, 2 * switch, 0.3])
    rhos = np.array([v[0].max() + 1, mean[1] - 0.1, 0.3, v[3].max(), v[4].max() - 1e-3,
                     v[5].max()])
    yield p, v, deltas, rhos


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accelerator_layout_at_ten_thousand_states(dtype):
    passes = [_check_accelerator("batch", *rows) for rows in _large_s_batches(10_000)]
    assert max(passes) <= ACCELERATOR_PASSES
    if dtype == np.float64:
        # The documented degenerate values, from the last row set.
        p, v, deltas, rhos = list(_large_s_batches(10_000))[-1]
        c, d = (np.asarray(s.value) for s in _ACCELERATOR["batch"](p, v, deltas, rhos))
        assert c[0] == -np.inf and d[0] == np.inf and d[1] == 0 and d[3] == 0
        np.testing.assert_allclose(c[1:3], [p[1] @ v[1], 0.3], rtol=1e-14)
        assert c[3] == v[3].max() and d[2] == 0 and d[5] == np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accelerator_layout_at_a_hundred_thousand_states(dtype):
    n = 100_000
    p, v = _extreme_problem(n)
    rhos = _rho_levels(p, v, EXTREME_FRACTIONS)
    rhos[-1] = v.max()
    _check_accelerator("levels", p.astype(dtype), v.astype(dtype), EXTREME_DELTAS, rhos)
    p, v = _problem(n, n)
    rhos = _rho_levels(p, v, [1e-6, 1e-3, 0.05, 0.2, 0.5, 0.8, 0.95, 0.999])
    _check_accelerator("levels", p.astype(dtype), v.astype(dtype), EXTREME_DELTAS, rhos)


def test_layout_follows_the_platform(monkeypatch):
    assert _kl._layout() == "cpu"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert _kl._layout() == "accelerator"
    with jax.default_device(jax.devices("cpu")[0]):  # a computation placed on the CPU
        assert _kl._layout() == "cpu"
    with pytest.raises(ValueError, match="layout must be one of"):
        _kl._native(_kl._kl_ucb_flat, jnp.ones(2) / 2, jnp.zeros(2), jnp.ones(()), "gpu")
