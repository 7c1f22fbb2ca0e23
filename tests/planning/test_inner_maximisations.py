"""The box (UCRL2B) and UCRL3 inner maximisations of extended value iteration against
scipy's linprog on the same constraint sets, and UCRL3's near-optimistic support against
the NumPy loop of the published rule."""

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

import jaxmdp as jm
from jaxmdp import planning
from jaxmdp.agents.ucrl3_support import UCRL3Bounds, near_optimistic_support
from jaxmdp.planning.evi import BoxBounds, box_maximise

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy_baselines25 as nb  # noqa: E402


def _lp(lower, upper, u):
    res = linprog(-u, A_eq=np.ones((1, len(u))), b_eq=[1.0], bounds=list(zip(lower, upper)),
                  method="highs")
    assert res.status == 0
    return -res.fun


def _random_box(rng, S):
    p = rng.dirichlet(np.ones(S))
    w = rng.uniform(0, 0.3, S)
    return np.clip(p - w, 0, 1), np.clip(p + w, 0, 1)


@pytest.mark.parametrize("seed", range(8))
def test_box_maximise_is_the_linear_programme(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 9))
    lower, upper = zip(*[_random_box(rng, S) for _ in range(3)])
    lower, upper = np.array(lower), np.array(upper)
    u = rng.normal(size=S)
    if seed % 2:
        u[rng.integers(S)] = u.max()  # a tie
    values, q = box_maximise(jnp.asarray(lower), jnp.asarray(upper), jnp.asarray(u), True)
    for i in range(3):
        assert float(values[i]) == pytest.approx(_lp(lower[i], upper[i], u), abs=1e-10)
        assert np.all(np.asarray(q[i]) >= lower[i] - 1e-12)
        assert np.all(np.asarray(q[i]) <= upper[i] + 1e-12)
        assert float(jnp.sum(q[i])) == pytest.approx(1.0, abs=1e-12)
        assert float(q[i] @ u) == pytest.approx(float(values[i]), abs=1e-12)


def _ucrl3_case(rng, S, A):
    counts = rng.integers(0, 4, (S, A, S)) * (rng.random((S, A, S)) < 0.5)
    counts[0, 0] = 0  # an untried pair
    n = counts.sum(-1)
    p = counts / np.maximum(n, 1)[..., None]
    support = counts > 0
    w = rng.uniform(0, 0.3, (S, A, S))
    lower = np.where(support, np.clip(p - w, 0, 1), 0.0)
    upper = np.where(support, np.clip(p + w, 0, 1), 0.0)
    upper_out = np.where(n > 0, rng.uniform(0.05, 0.4, (S, A)), 1.0)
    kappa = rng.choice([0.0, 0.3, np.inf], (S, A))
    return UCRL3Bounds(lower, upper, upper_out, support, kappa)


class _Ref(nb.UCRL3):
    """The NumPy loop's support and maximiser on given bounds."""

    def __init__(self, b, s, a, key_sums):
        S = b.support.shape[-1]
        super().__init__(S, b.support.shape[1], None, key_sums=key_sums)
        self.support = [[list(np.flatnonzero(b.support[x, y])) for y in range(self.A)]
                        for x in range(S)]
        self.up, self.low, self.up_out = b.upper, b.lower, b.upper_out


@pytest.mark.parametrize("key_sums", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_near_optimistic_support_matches_the_numpy_rule(seed, key_sums):
    rng = np.random.default_rng(seed)
    S, A = 6, 2
    b = _ucrl3_case(rng, S, A)
    u = rng.uniform(0, 3, S)
    got = np.asarray(near_optimistic_support(
        UCRL3Bounds(*map(jnp.asarray, b)), jnp.asarray(u), key_sums=key_sums))
    order = np.argsort(u, kind="stable")
    span = u.max() - u.min()
    for s in range(S):
        for a in range(A):
            ref = _Ref(b, s, a, key_sums)
            sup = ref.near_optimistic_support(s, a, u, order, float(b.kappa[s, a] * span))
            np.testing.assert_array_equal(np.flatnonzero(got[s, a]), sorted(sup))


@pytest.mark.parametrize("key_sums", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_ucrl3_inner_is_the_linear_programme_on_its_support(seed, key_sums):
    """One EVI sweep: the value of every pair is the LP over the box restricted to the
    near-optimistic support (lower bounds on the empirical support, 0 elsewhere; upper
    bounds on the support, the outside bound off the empirical support), as the NumPy
    loop's ``max_proba``."""
    rng = np.random.default_rng(100 + seed)
    S, A = 6, 2
    b = _ucrl3_case(rng, S, A)
    u = rng.uniform(0, 3, S)
    ball = "ucrl3_key_sums" if key_sums else "ucrl3"
    res = planning.evi(np.full((S, A, S), 1.0 / S), np.zeros((S, A)), b, ball=ball, epsilon=1.0,
                 max_steps=1, u0=u)
    sup = np.asarray(near_optimistic_support(UCRL3Bounds(*map(jnp.asarray, b)),
                                             jnp.asarray(u), key_sums=key_sums))
    order = np.argsort(u, kind="stable")
    q_values = np.asarray(res.q_opt) @ u
    for s in range(S):
        for a in range(A):
            lo = np.where(b.support[s, a], b.lower[s, a], 0.0)
            hi = np.where(b.support[s, a], b.upper[s, a], b.upper_out[s, a])
            hi = np.where(sup[s, a], hi, lo)
            assert q_values[s, a] == pytest.approx(_lp(lo, hi, u), abs=1e-10)
            ref = _Ref(b, s, a, key_sums)
            q_ref = ref.max_proba(s, a, u, order, list(np.flatnonzero(sup[s, a])))
            assert q_values[s, a] == pytest.approx(q_ref @ u, abs=1e-7)


def test_box_ball_evi_converges_and_checks_its_radius():
    mdp = jm.envs.make("riverswim-6")
    P = np.asarray(mdp.P)
    bounds = BoxBounds(np.clip(P - 0.1, 0, 1), np.clip(P + 0.1, 0, 1))
    res = planning.evi(P, mdp.R, bounds, ball="box", epsilon=1e-8)
    assert int(res.status) == jm.planning.Status.CONVERGED
    np.testing.assert_allclose(np.asarray(res.q_opt).sum(-1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="radius must be a BoxBounds"):
        planning.evi(P, mdp.R, np.zeros(mdp.R.shape), ball="box", epsilon=1e-8)
    with pytest.raises(ValueError, match=r"radius.upper must have shape"):
        planning.evi(P, mdp.R, BoxBounds(P, P[:, :1]), ball="box", epsilon=1e-8)


@pytest.mark.parametrize("seed", range(4))
def test_kl_published_inner_is_the_numpy_maximiser_with_the_bug(seed):
    """``ball="kl_published"`` against the NumPy ``kl_inner(search_up_bug=True)``
    (``KLUCRL.MaxKL`` as published) on random rows, ties at the maximum and zeros."""
    from jaxmdp.planning.evi import INNER_MAXIMISATIONS

    solve = INNER_MAXIMISATIONS["kl_published"]().solve
    rng = np.random.default_rng(seed)
    S = 6
    for trial in range(40):
        counts = rng.integers(0, 4, S) * (rng.random(S) < 0.6)
        p = counts / max(1, counts.sum())
        u = rng.uniform(0, 3, S)
        if trial % 3 == 0:
            u[rng.integers(S)] = u.max()
        if trial % 5 == 0:
            u = np.round(u)
        radius = rng.choice([0.01, 0.5, 5.0])
        _, q = solve(jnp.asarray(p)[None, None], jnp.asarray(u), jnp.asarray([[radius]]), True)
        np.testing.assert_allclose(np.asarray(q[0, 0]),
                                   nb.kl_inner(p, u, radius, search_up_bug=True), atol=1e-14)
    _, q = solve(jnp.asarray(p)[None, None], jnp.zeros(S), jnp.asarray([[0.5]]), True)
    np.testing.assert_array_equal(np.asarray(q[0, 0]), p)  # all u below 1e-6: p_hat
