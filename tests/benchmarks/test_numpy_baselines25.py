"""The building blocks of tests/reference/published.py (the NumPy references of the
published baselines) against independent computations: the published formulas evaluated
directly, scipy's linprog, brute-force grids and tests/reference/indices.py's KL solver."""

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from tests.reference import indices as npref
from tests.reference import published as nb

DELTA_SA = 0.05 / (6 * 2 * (3 + 3 * 6))


@pytest.mark.parametrize("n", [1, 3, 10, 57, 400])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_ucrl3_bounds_are_the_interval_ends(n, k):
    """Exact bounds: the published condition holds on a fine grid up to the bound and
    fails just beyond; the published 1e-4 bisection lies within 1e-4 inside."""
    p = min(k, n) / n
    up = nb.ucrl3_q_upper(p, n, DELTA_SA)
    lo = nb.ucrl3_q_lower(p, n, DELTA_SA)
    holds_up = lambda x: x - p <= min(  # noqa: E731  (UCRL3.py lines 129-133)
        nb.bernstein_peeling(x, n, DELTA_SA), nb.subgaussian_bar(x, n, DELTA_SA)) + 1e-12
    holds_lo = lambda x: p - x <= min(  # noqa: E731  (UCRL3.py lines 139-143)
        nb.bernstein_peeling(x, n, DELTA_SA), nb.subgaussian(x, n, DELTA_SA)) + 1e-12
    assert all(holds_up(x) for x in np.linspace(p, up, 200))
    # the lower root can sit below 1e-15 (the sub-Gaussian proxy (1/2 - x) / ln(1/x - 1)
    # vanishes only logarithmically at 0): there it is returned as 0 to brentq's 1e-15
    assert lo < 1e-12 or holds_lo(lo)
    assert all(holds_lo(x) for x in np.linspace(lo, p, 200)[1:])
    if up < 1 - 1e-6:
        assert not holds_up(up + 1e-6)
    if lo > 1e-6:
        assert not holds_lo(lo - 1e-6)
    assert up - 1e-4 - 1e-12 <= nb.ucrl3_q_upper(p, n, DELTA_SA, bisection=True) <= up + 1e-12
    assert lo - 1e-12 <= nb.ucrl3_q_lower(p, n, DELTA_SA, bisection=True) <= lo + 1e-4 + 1e-12


def test_ucrl3_peeling_and_reward_bound_hand_values():
    n, d = 10, 1e-3
    eta = 1.12
    ell = eta * math.log(math.log(n * eta) * math.log(n * eta**2) / (math.log(eta) ** 2 * d)) / n
    assert nb.elln(n, d) == pytest.approx(ell, rel=1e-15)
    mean, var = 0.3, 0.21
    eb = mean + math.sqrt(2 * var * ell) + 7 * ell / 3
    hl = mean + math.sqrt((1 + 1 / n) * math.log(math.sqrt(n + 1) / d) / (2 * n))
    assert nb.ucrl3_r_upper(mean, var, n, d) == pytest.approx(min(1, eb, hl), rel=1e-15)
    assert nb.ucrl3_r_upper(mean, var, 0, d) == 1.0


def _box_lp(lo, hi, u):
    res = linprog(-u, A_eq=np.ones((1, len(u))), b_eq=[1.0], bounds=list(zip(lo, hi)),
                  method="highs")
    assert res.status == 0
    return -res.fun


def test_ucrl2b_inner_maximisation_against_linprog():
    rng = np.random.default_rng(3)
    S, A = 5, 2
    for _ in range(20):
        agent = nb.UCRL2B(S, A, rng)
        agent.reset(0)
        counts = rng.integers(0, 6, size=(S, A, S)).astype(float)
        agent.counts = counts
        agent.Nk = counts.sum(-1)
        agent.plan()
        u = rng.random(S)
        order = np.argsort(u)
        for s in range(S):
            for a in range(A):
                q = agent.inner(s, a, u, order)
                assert q.sum() == pytest.approx(1.0, abs=1e-8)
                assert np.all(q >= agent.lo[s, a] - 1e-12) and np.all(q <= agent.hi[s, a] + 1e-12)
                assert q @ u == pytest.approx(_box_lp(agent.lo[s, a], agent.hi[s, a], u),
                                              abs=1e-7)


def test_ucrl2b_widths_hand_values():
    """``UCRL2B.py`` lines 59-72 at n = 7, p_hat = 2/7, delta' = 0.05 / (18 * 6 * 2)."""
    agent = nb.UCRL2B(6, 2, np.random.default_rng(0))
    agent.reset(0)
    agent.counts[1, 0, 3], agent.counts[1, 0, 4] = 2.0, 5.0
    agent.Nk[1, 0] = 7
    agent.plan()
    d = 0.05 / (18 * 12)
    L = math.log(7 / d)
    w = 2 * math.sqrt((2 / 7) * (5 / 7) * L / 7) + 6 * L / 7
    assert agent.hi[1, 0, 3] == pytest.approx(min(1.0, 2 / 7 + w), rel=1e-14)
    assert agent.lo[1, 0, 3] == pytest.approx(max(0.0, 2 / 7 - w), abs=1e-15)


def test_ucrl3_max_proba_against_linprog_on_published_support():
    """With the published support (empirical support plus argmax u), ``max_proba`` is the
    LP over the box restricted to that support."""
    rng = np.random.default_rng(7)
    S, A = 6, 2
    for _ in range(10):
        agent = nb.UCRL3(S, A, rng)
        agent.reset(0)
        counts = rng.integers(0, 4, size=(S, A, S)) * (rng.random((S, A, S)) < 0.5)
        agent.counts = counts.astype(float)
        agent.Nk = agent.counts.sum(-1)
        agent.plan()
        u = rng.random(S)
        order = np.argsort(u)
        for s in range(S):
            for a in range(A):
                sup = agent.near_optimistic_support(s, a, u, order)
                assert set(sup) == set(agent.support[s][a]) | {int(order[-1])}
                q = agent.max_proba(s, a, u, order, sup)
                lo = np.array([agent.p_l(s, a, y) if y in sup else 0.0 for y in range(S)])
                hi = np.array([agent.p_u(s, a, y) if y in sup else 0.0 for y in range(S)])
                if hi.sum() < 1 - 1e-9:
                    continue  # box infeasible on the support: max_proba leaves mass out
                assert q @ u == pytest.approx(_box_lp(lo, hi, u), abs=1e-7)


@pytest.mark.parametrize("radius", [0.01, 0.1, 0.7])
def test_kl_inner_exact_against_reference_solver(radius):
    p = np.array([0.2, 0.5, 0.3, 0.0])
    u = np.array([0.0, 0.4, 1.0, 0.7])
    q = nb.kl_inner(p, u, radius)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    assert q @ u == pytest.approx(npref.kl_ucb(p, u, radius), abs=1e-8)
    kl = float(np.sum(p[p > 0] * np.log(p[p > 0] / q[p > 0])))
    assert kl == pytest.approx(radius, rel=1e-6)


def test_kl_inner_published_bug_gives_p_hat():
    p = np.array([0.2, 0.5, 0.3])
    u = np.array([0.0, 0.4, 1.0])
    q = nb.kl_inner(p, u, 0.5, search_up_bug=True)
    np.testing.assert_allclose(q, p, atol=1e-6)
    assert nb.kl_inner(p, u, 0.5) @ u > q @ u + 0.05


def test_imed_index_x_against_grid():
    """x = max_y E log(B - (V - mu) y) over [0, B/(B - mu) - 0.01] (IMED_RL.py 146-176)."""
    agent = nb.IMEDRL(3, 2, np.random.default_rng(0), index="statisticalrl")
    agent.reset(0)
    rng = np.random.default_rng(1)
    for _ in range(200):
        s, a = int(rng.integers(3)), int(rng.integers(2))
        agent.update(s, a, float(rng.random() < 0.4), int(rng.integers(3)))
    phi = agent.bias()
    B = 1 + phi.max()
    q = agent.r_hat[0] + agent.p_hat[0] @ phi
    mu = q.max()
    a = int(np.argmin(q))
    law = agent.reward_law[0][a]
    vr, pr = np.array(list(law)), np.array(list(law.values()), float)
    pr /= pr.sum()
    pj = np.outer(agent.p_hat[0, a], pr).ravel()
    d = (phi[:, None] + vr[None, :]).ravel() - mu
    grid = np.linspace(0, B / (B - mu) - 1e-2, 20001)
    x_grid = float(np.max(pj @ np.log(B - np.outer(d, grid))))
    x = agent.x_value(0, a, phi, B, mu)
    assert x_grid - 1e-12 <= x <= x_grid + 1e-6
    assert x >= math.log(B) - 1e-12  # y = 0 gives ln B
