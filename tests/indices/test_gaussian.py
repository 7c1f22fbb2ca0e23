"""Tests of the joint transition + Gaussian-reward indices ``kl_ucb_gaussian`` (C_G) and
``kinf_gaussian`` (D_G).

References are independent of the solver under test (which splits the budget and calls
``kl_ucb_solve`` / ``kinf_solve``):
  * the Lagrangian dual in the multiplier c = 1/lambda, solved by nested scipy ``brentq``:
    with phi(c) = sup_q [q.v - c KL(p||q)] (optimiser q_c = c p / (nu - v), nu from
    sum q_c = 1, or nu = max v with the rest of the mass on a zero-probability argmax state),
    C_G = m + min_c [c delta + sigma^2/(2c) + phi(c)] (stationary at
    KL(p||q_c) + sigma^2/(2c^2) = delta) and D_G = max_lam [lam (rho - m) - lam^2 sigma^2/2
    - lam phi(1/lam)] = lam^2 sigma^2/2 + KL(p||q_c) at rho - m - lam sigma^2 = q_c.v;
    compared at 1e-10 (C_G) and 1e-9 relative (D_G);
  * scipy SLSQP on the primal over (ln q, mu), to 1e-6;
  * closed forms: sigma = 0 (kl_ucb / kinf), constant v.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq, minimize

import jaxmdp
from jaxmdp import kinf, kinf_gaussian, kl_ucb, kl_ucb_gaussian

S = 5


# ---------------------------------------------------------------------------------------
# Independent references.


def _q_of_c(p, v, c):
    """The maximiser of q.v - c KL(p||q) over the simplex, by brentq on nu = V + t."""
    top = v.max()
    w = top - v
    supp = p > 0

    def excess(log_t):  # sum q - 1, decreasing in t
        t = math.exp(log_t)
        return float(np.sum(c * p[supp] / (t + w[supp]))) - 1.0

    if np.all(w[supp] > 0) and np.sum(c * p[supp] / w[supp]) <= 1.0:
        q = np.where(supp, c * p / np.where(supp, w, 1.0), 0.0)
        at_top = (~supp) & (w == 0)
        return q + at_top * (1.0 - q.sum()) / at_top.sum()
    hi = math.log(c) + 1.0
    lo = hi - 5.0
    while excess(lo) <= 0:
        lo -= 20.0
    t = math.exp(brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))
    return np.where(supp, c * p / (t + w), 0.0)


def _kl(p, v, q, c):
    """KL(p||q_c) without cancellation: p_x/q_x = (nu - v_x)/c = 1 + (q.v - v_x)/c."""
    supp = p > 0
    return float(np.sum(p[supp] * np.log1p((q @ v - v[supp]) / c)))


def _root_in_log(fn, x0):
    """brentq on an increasing fn of ln x, bracket grown geometrically around ln x0."""
    lo = hi = math.log(x0)
    while fn(lo) > 0:
        lo -= 5.0
    while fn(hi) < 0:
        hi += 5.0
    return math.exp(brentq(fn, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))


def kl_ucb_gaussian_dual(p, v, m, sigma, delta):
    """C_G, c* and q* from the dual in c (sigma > 0, delta > 0, non-constant v)."""
    def slope(log_c):  # d/dc of the dual objective: delta - sigma^2/(2c^2) - KL(p||q_c)
        c = math.exp(log_c)
        return delta - sigma**2 / (2 * c * c) - _kl(p, v, _q_of_c(p, v, c), c)

    c = _root_in_log(slope, 1.0)
    q = _q_of_c(p, v, c)
    value = m + c * delta + sigma**2 / (2 * c) + (q @ v - c * _kl(p, v, q, c))
    return value, c, q


def kinf_gaussian_dual(p, v, m, sigma, rho):
    """D_G, lambda* and q* from the dual in lambda (sigma > 0, rho > m + p.v)."""
    def slope(log_lam):  # q_c.v + lam sigma^2 - (rho - m), increasing in lam
        lam = math.exp(log_lam)
        return _q_of_c(p, v, 1.0 / lam) @ v + lam * sigma**2 - (rho - m)

    lam = _root_in_log(slope, 1.0)
    q = _q_of_c(p, v, 1.0 / lam)
    return lam**2 * sigma**2 / 2 + _kl(p, v, q, 1.0 / lam), lam, q


def _slsqp(objective, cons, x0):
    res = minimize(objective, x0, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.status in (0, 8), res.message
    return res.x


def kl_ucb_gaussian_slsqp(p, v, m, sigma, delta):
    """max mu + v.exp(y) s.t. p.(ln p - y) + (mu - m)^2/(2 sigma^2) <= delta, sum e^y = 1."""
    log_p = np.log(p)
    budget = lambda x: delta - p @ (log_p - x[:-1]) - (x[-1] - m) ** 2 / (2 * sigma**2)  # noqa: E731
    cons = [{"type": "ineq", "fun": budget},
            {"type": "eq", "fun": lambda x: np.exp(x[:-1]).sum() - 1}]
    x = _slsqp(lambda x: -(x[-1] + v @ np.exp(x[:-1])), cons, np.append(log_p, m))
    assert budget(x) >= -1e-9
    return x[-1] + v @ np.exp(x[:-1])


def kinf_gaussian_slsqp(p, v, m, sigma, rho):
    """min p.(ln p - y) + (mu - m)^2/(2 sigma^2) s.t. mu + v.exp(y) >= rho, sum e^y = 1."""
    log_p = np.log(p)
    cons = [{"type": "ineq", "fun": lambda x: x[-1] + v @ np.exp(x[:-1]) - rho},
            {"type": "eq", "fun": lambda x: np.exp(x[:-1]).sum() - 1}]
    x = _slsqp(lambda x: p @ (log_p - x[:-1]) + (x[-1] - m) ** 2 / (2 * sigma**2), cons,
               np.append(log_p, rho - p @ v))
    return p @ (log_p - x[:-1]) + (x[-1] - m) ** 2 / (2 * sigma**2)


# ---------------------------------------------------------------------------------------
# Problems: interior, zeros off the argmax, zero probability on the argmax (Filippi et
# al.'s boundary branch), a skewed p.

PROBLEMS = {
    "dirichlet": (np.array([0.1, 0.25, 0.3, 0.05, 0.3]), np.array([0.2, 0.9, 0.5, 0.0, 0.7])),
    "zeros": (np.array([0.4, 0.0, 0.35, 0.0, 0.25]), np.array([0.3, 0.1, 0.6, 0.8, 1.0])),
    "argmax_unseen": (np.array([0.3, 0.5, 0.2, 0.0, 0.0]), np.array([0.1, 0.4, 0.6, 1.0, 0.2])),
    "skewed": (np.array([0.96, 0.01, 0.01, 0.01, 0.01]), np.array([0.0, 3.0, 1.0, 2.0, -1.0])),
}
SIGMAS = [1e-6, 0.05, 1.0, 100.0]
DELTAS = [1e-6, 0.1, 2.0, 30.0]
FRACTIONS = [0.01, 0.5, 0.95, 3.0]  # (rho - m - p.v) / (max v - p.v); 3.0: q alone cannot
M = 0.3
N = 64  # every batched call below is padded to N rows: one compilation per function


def _batched(fn, p, v, m, sigma, level, dtype=np.float64):
    """fn on p, v of shape [n, S] or [S] and m, sigma, level of shape [n] or scalar,
    padded to N rows (repeats of row 0) so that all calls share one compilation."""
    p, v = np.asarray(p, dtype), np.asarray(v, dtype)
    n = max([len(a) for a in (p, v) if a.ndim == 2] + [np.size(a) for a in (m, sigma, level)])
    args = [np.broadcast_to(p, (n, S)), np.broadcast_to(v, (n, S))]
    args += [np.broadcast_to(np.asarray(a, dtype), (n,)) for a in (m, sigma, level)]
    out = fn(*(np.concatenate([a, np.repeat(a[:1], N - n, 0)]) for a in args))
    assert out.dtype == dtype and out.shape == (N,)
    return np.asarray(out)[:n]


def _grid(level_name):
    levels = DELTAS if level_name == "delta" else FRACTIONS
    rows = [(name, s, lv) for name in PROBLEMS for s in SIGMAS for lv in levels]
    p = np.stack([PROBLEMS[n][0] for n, _, _ in rows])
    v = np.stack([PROBLEMS[n][1] for n, _, _ in rows])
    sigma = np.array([s for _, s, _ in rows])
    level = np.array([lv for _, _, lv in rows])
    if level_name == "rho":
        mean = np.sum(p * v, -1)
        level = M + mean + level * (v.max(-1) - mean)
    return rows, p, v, sigma, level


def test_kl_ucb_gaussian_matches_dual_reference():
    rows, p, v, sigma, delta = _grid("delta")
    got = _batched(kl_ucb_gaussian, p, v, M, sigma, delta)
    for i, row in enumerate(rows):
        want, _, _ = kl_ucb_gaussian_dual(p[i], v[i], M, sigma[i], delta[i])
        np.testing.assert_allclose(got[i], want, rtol=1e-10, err_msg=str(row))


def test_kinf_gaussian_matches_dual_reference():
    rows, p, v, sigma, rho = _grid("rho")
    got = _batched(kinf_gaussian, p, v, M, sigma, rho)
    for i, row in enumerate(rows):
        want, _, _ = kinf_gaussian_dual(p[i], v[i], M, sigma[i], rho[i])
        np.testing.assert_allclose(got[i], want, rtol=1e-9, err_msg=str(row))


def test_matches_slsqp_primal():
    p, v = PROBLEMS["dirichlet"]
    sigma, level = np.array([0.05, 1.0, 0.3]), np.array([0.1, 2.0, 0.5])
    rho = M + p @ v + level * (v.max() - p @ v)
    c_g = _batched(kl_ucb_gaussian, p, v, M, sigma, level)
    d_g = _batched(kinf_gaussian, p, v, M, sigma, rho)
    for i in range(3):
        want = kl_ucb_gaussian_slsqp(p, v, M, sigma[i], level[i])
        np.testing.assert_allclose(c_g[i], want, rtol=1e-6)
        np.testing.assert_allclose(d_g[i], kinf_gaussian_slsqp(p, v, M, sigma[i], rho[i]),
                                   rtol=1e-6)


def test_sigma_zero_reduces_to_kl_indices():
    """sigma = 0 is kl_ucb + m and kinf at rho - m; sigma -> 0 converges to them."""
    rows, p, v, _, delta = _grid("delta")
    _, _, _, _, rho = _grid("rho")
    zero = np.zeros(N)
    c, d = np.asarray(kl_ucb(p, v, delta)), np.asarray(kinf(p, v, rho - M))
    # Equal up to the ulps by which kl.py's with-zeros and without-zeros paths differ.
    np.testing.assert_allclose(_batched(kl_ucb_gaussian, p, v, M, zero, delta), c + M,
                               rtol=1e-14)
    np.testing.assert_allclose(_batched(kinf_gaussian, p, v, M, zero, rho), d, rtol=1e-12)
    # 0 <= C_G - (m + C) <= sigma sqrt(2 delta); D_G <= kinf(rho - m), and close to it.
    tiny = 1e-9
    gap = _batched(kl_ucb_gaussian, p, v, M, tiny, delta) - (c + M)
    assert np.all(gap >= -1e-15) and np.all(gap <= tiny * np.sqrt(2 * delta) + 1e-15)
    reachable = rho - M < v.max(-1)
    d_g = _batched(kinf_gaussian, p, v, M, tiny, rho)
    np.testing.assert_allclose(d_g[reachable], d[reachable], rtol=1e-6)
    assert np.all(d_g <= d * (1 + 1e-14)) and np.all(np.isfinite(d_g))


def test_constant_values_closed_form():
    """Constant v, or p only on the argmax states: the reward carries everything."""
    sigma = np.array([1e-3, 0.5, 2.0])
    delta = np.array([1e-4, 0.3, 5.0])
    rho = M + 0.4 + np.array([1e-3, 0.5, 7.0])
    for p, v in [(np.array([0.2, 0.3, 0.1, 0.4, 0.0]), np.full(S, 0.4)),
                 (np.array([0.0, 0.5, 0.2, 0.3, 0.0]), np.array([0.0, 0.4, 0.4, 0.4, 0.1]))]:
        np.testing.assert_allclose(_batched(kl_ucb_gaussian, p, v, M, sigma, delta),
                                   M + 0.4 + sigma * np.sqrt(2 * delta), rtol=1e-14)
        np.testing.assert_allclose(_batched(kinf_gaussian, p, v, M, sigma, rho),
                                   (rho - M - 0.4) ** 2 / (2 * sigma**2), rtol=1e-12)


def test_inverse_pair():
    """D_G(C_G(delta)) = delta and C_G(D_G(rho)) = rho."""
    rows, p, v, sigma, delta = _grid("delta")
    # At delta = 30 and sigma = 1e-6, C_G sits within ulps of max v + m, where D_G is
    # ill-conditioned (dD_G/drho = 1/c* is ~1e13).
    keep = ~((delta == 30) & (sigma == 1e-6))
    c_g = _batched(kl_ucb_gaussian, p, v, M, sigma, delta)
    np.testing.assert_allclose(_batched(kinf_gaussian, p, v, M, sigma, c_g)[keep],
                               delta[keep], rtol=1e-8)
    _, _, _, _, rho = _grid("rho")
    d_g = _batched(kinf_gaussian, p, v, M, sigma, rho)
    np.testing.assert_allclose(_batched(kl_ucb_gaussian, p, v, M, sigma, d_g), rho, rtol=1e-11)


def test_degenerate_cases_and_nan():
    p, v = PROBLEMS["zeros"]
    mean = p @ v
    c = _batched(kl_ucb_gaussian, p, v, M, 0.5, np.array([-1.0, -1e-300, 0.0]))
    assert c[0] == -np.inf and c[1] == -np.inf
    np.testing.assert_allclose(c[2], M + mean, rtol=1e-15)
    # rho <= m + p.v gives 0; far beyond max v + m it stays finite (mu grows).
    d = _batched(kinf_gaussian, p, v, M, 0.5, M + mean + np.array([-1.0, 0.0, 1e3]))
    assert d[0] == 0 and d[1] == 0 and np.isfinite(d[2]) and d[2] > 0
    # Negative sigma: only sigma^2 matters.
    c = _batched(kl_ucb_gaussian, p, v, M, np.array([-0.5, 0.5]), 0.2)
    assert c[0] == c[1]
    # NaN in any argument gives NaN, and only in its own row.
    args = [np.tile(p, (6, 1)), np.tile(v, (6, 1)), np.full(6, M), np.full(6, 0.5),
            np.full(6, 0.2)]
    args[0][0, 1] = np.nan
    args[1][1, 2] = np.nan
    args[2][2] = np.nan
    args[3][3] = np.nan
    args[4][4] = np.nan
    for fn, shift in ((kl_ucb_gaussian, 0.0), (kinf_gaussian, 1.0)):
        out = _batched(fn, *args[:4], args[4] + shift)
        assert np.all(np.isnan(out[:5])) and np.isfinite(out[5])


def test_vmap_and_batch_match_loop():
    """jax.vmap, the batched call and one problem at a time agree (each row of the loop is
    broadcast to the same padded batch, so no extra compilation)."""
    rows, p, v, sigma, delta = _grid("delta")
    m = np.linspace(-1.0, 2.0, N)
    batched = _batched(kl_ucb_gaussian, p, v, m, sigma, delta)
    mapped = np.asarray(jax.vmap(kl_ucb_gaussian)(p, v, m, sigma, delta))
    idx = range(0, N, 5)
    loop = np.array([_batched(kl_ucb_gaussian, p[i], v[i], m[i], sigma[i], delta[i])[0]
                     for i in idx])
    np.testing.assert_allclose(batched[idx], loop, rtol=1e-13)
    np.testing.assert_allclose(mapped, batched, rtol=1e-13)
    rho = batched  # levels where D_G is positive
    batched = _batched(kinf_gaussian, p, v, m, sigma, rho)
    loop = np.array([_batched(kinf_gaussian, p[i], v[i], m[i], sigma[i], rho[i])[0]
                     for i in idx])
    np.testing.assert_allclose(batched[idx], loop, rtol=1e-12)


def test_broadcasting_and_shape_errors():
    p, v = PROBLEMS["dirichlet"]
    out = kl_ucb_gaussian(np.stack([p, p[::-1]])[:, None], v, np.array([0.0, 1.0, 2.0]),
                          0.5, 0.1)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out[:, 1:] - out[:, :-1], 1.0, rtol=1e-13)
    with pytest.raises(ValueError, match="got p.shape"):
        kl_ucb_gaussian(p, v[:3], 0.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="do not broadcast"):
        kinf_gaussian(np.stack([p, p]), v, np.zeros(3), 1.0, 0.1)


def test_float32_finite_and_close_to_float64():
    rows, p, v, sigma, delta = _grid("delta")
    _, _, _, _, rho = _grid("rho")
    keep = sigma > 1e-6  # below that, float32 resolves sigma sqrt(2 d2) only to a few ulps
    for fn, level, rtol in ((kl_ucb_gaussian, delta, 2e-5), (kinf_gaussian, rho, 1e-3)):
        args = [a.astype(np.float32).astype(np.float64) for a in (p, v, sigma, level)]
        got = _batched(fn, args[0], args[1], M, args[2], args[3], dtype=np.float32)
        assert np.all(np.isfinite(got))
        want = _batched(fn, args[0], args[1], np.float32(M), args[2], args[3])
        np.testing.assert_allclose(got[keep], want[keep], rtol=rtol, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Gradients: envelope formulas, central differences, JVP against VJP.

GRAD_CASES = [("dirichlet", 0.3, 0.4), ("zeros", 1.0, 2.0), ("argmax_unseen", 0.05, 5.0)]


def _grad_and_jvp(fn):
    """Per-row gradients of all five arguments and the JVP along `dirs`, in one program."""
    def both(args, dirs):
        grads = jax.grad(lambda *a: jnp.sum(fn(*a)), argnums=(0, 1, 2, 3, 4))(*args)
        # p's tangent is left out of the JVP: dC/dp_x is +-inf at a zero-probability state
        # that q* uses, and inf * 0 is NaN (kl.py's convention); it is checked above.
        jvp = jax.jvp(lambda *a: fn(args[0], *a), args[1:], dirs[1:])[1]
        return grads, jvp

    return jax.jit(both)


_GRAD = {"C": _grad_and_jvp(kl_ucb_gaussian), "D": _grad_and_jvp(kinf_gaussian)}


def test_gradients_envelope_finite_differences_and_jvp():
    rng = np.random.default_rng(7)
    cases, want, dirs = [], {"C": [], "D": []}, []
    for name, sigma, level in GRAD_CASES:
        p, v = PROBLEMS[name]
        supp = p > 0
        mean = p @ v
        rho = M + mean + 0.6 * (v.max() - mean)
        _, c, q_c = kl_ucb_gaussian_dual(p, v, M, sigma, level)
        _, lam, q_d = kinf_gaussian_dual(p, v, M, sigma, rho)
        ratio_c = np.where(supp, p / np.where(q_c > 0, q_c, 1.0), 1.0)
        ratio_d = np.where(supp, p / np.where(q_d > 0, q_d, 1.0), 1.0)
        want["C"].append((-c * (np.log(ratio_c) + 1), q_c, 1.0, sigma / c, c))
        want["D"].append((np.log(ratio_d) + 1, -lam * q_d, -lam, -(lam**2) * sigma, lam))
        d_p = rng.normal(size=S) * supp
        d_p = (d_p - d_p[supp].mean() * supp) * 0.2 * p[supp].min()  # on the simplex
        dirs.append((d_p, rng.normal(size=S), 0.7, -0.4, 0.9))
        cases.append((p, v, sigma, level, rho))
    k = len(cases)
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], N - k, 0)])  # noqa: E731
    p, v = pad(np.stack([c[0] for c in cases])), pad(np.stack([c[1] for c in cases]))
    sigma = pad(np.array([c[2] for c in cases]))
    level = {"C": pad(np.array([c[3] for c in cases])), "D": pad(np.array([c[4] for c in cases]))}
    tangents = [pad(np.stack([np.broadcast_to(d[j], np.shape(d[j])) for d in dirs]).astype(float))
                for j in range(5)]
    for which, fn in (("C", kl_ucb_gaussian), ("D", kinf_gaussian)):
        args = (p, v, np.full(N, M), sigma, level[which])
        grads, jvp = _GRAD[which](args, tuple(tangents))
        grads = [np.asarray(g) for g in grads]
        # Central differences: all five directions and both signs in one batched call.
        h = 1e-6
        shifted = []
        for j in range(5):
            for sign in (1.0, -1.0):
                shifted.append([a + sign * h * t if i == j else a
                                for i, (a, t) in enumerate(zip(args, tangents))])
        for i in range(k):
            supp = p[i] > 0
            w_p, w_v, w_m, w_s, w_l = want[which][i]
            msg = f"{which} {GRAD_CASES[i]}"
            np.testing.assert_allclose(_on_simplex(grads[0][i][supp]), _on_simplex(w_p[supp]),
                                       rtol=1e-8, atol=1e-12, err_msg=msg)
            np.testing.assert_allclose(grads[1][i], w_v, rtol=1e-8, atol=1e-13, err_msg=msg)
            np.testing.assert_allclose([grads[2][i], grads[3][i], grads[4][i]],
                                       [w_m, w_s, w_l], rtol=1e-8, err_msg=msg)
            dot = sum(np.sum(grads[j][i] * tangents[j][i]) for j in range(1, 5))
            np.testing.assert_allclose(jvp[i], dot, rtol=1e-12, err_msg=msg)
        for j in range(5):
            plus = fn(*shifted[2 * j])
            minus = fn(*shifted[2 * j + 1])
            fd = (np.asarray(plus) - np.asarray(minus))[:k] / (2 * h)
            for i in range(k):
                # dC/dp_x is +inf at a zero-probability state that q* uses; the direction
                # keeps such p_x at zero, so only the support contributes.
                supp = p[i] > 0 if j == 0 else np.ones(np.shape(tangents[j][i]), bool)
                analytic = np.sum(np.asarray(grads[j][i])[supp] * np.asarray(tangents[j][i])[supp])
                np.testing.assert_allclose(analytic, fd[i], rtol=1e-6, atol=1e-9,
                                           err_msg=f"{which} argument {j} {GRAD_CASES[i]}")


def _on_simplex(g):
    return g - g.mean()


def test_gradients_never_nan_in_degenerate_cases():
    """delta < 0, rho <= m + p.v, rho far beyond max v + m, and sigma = 0."""
    p, v = PROBLEMS["dirichlet"]
    tangents = tuple(np.zeros((N, S)) if j < 2 else np.zeros(N) for j in range(5))
    for which, levels in (("C", [-1.0, 0.3]), ("D", [0.0, 1e3])):
        sigma = np.tile([0.0, 0.5], N // 2)
        level = np.repeat(levels, N // 2)
        args = (np.tile(p, (N, 1)), np.tile(v, (N, 1)), np.full(N, M), sigma, level)
        grads, jvp = _GRAD[which](args, tangents)
        assert all(np.all(~np.isnan(np.asarray(g))) for g in (*grads, jvp)), which


def test_public_names():
    for name in ("kl_ucb_gaussian", "kinf_gaussian"):
        assert name in jaxmdp.__all__ and callable(getattr(jaxmdp, name))
