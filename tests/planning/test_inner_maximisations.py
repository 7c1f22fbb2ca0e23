"""The box (UCRL2B) and UCRL3 inner maximisations of extended value iteration against
scipy's linprog on the same constraint sets, and UCRL3's near-optimistic support against
the NumPy loop of the published rule, the published loop in exact rational arithmetic and
a transcription of the published loops into nested ``lax.while_loop``s."""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from scipy.optimize import linprog

import jaxmdp as jm
from jaxmdp import planning
from jaxmdp.planning import BoxBounds, UCRL3Bounds, box_maximise, near_optimistic_support
from tests.reference import published as nb


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


# -----------------------------------------------------------------------------------------
# The support in closed form against the loops it replaces.


def _published_support(upper, lower, upper_out, emp, u, kap):
    """``UCRL3.computeSupport`` (StatisticalRL ``learners``,
    ``src/statisticalrl_learners/MDPs_discrete/UCRL3.py`` lines 211-261, helpers lines
    174-207) for one pair, in exact rational arithmetic, with the helpers' ``sum(p)`` read
    as the sum of the dict's values (the published code sums its keys)::

        while temp2 > min(kappa, temp) and ll < self.nS - 1:
            while sorted_indices[self.nS - 1 - ll] in support and ll < self.nS - 1:
                ll += 1
            next_s = sorted_indices[self.nS - 1 - ll]
            if (next_s not in support):
                support.append(next_s)
            if self.nS - 1 - ll > idx_in:
                ...p_in[next_s] = self.p_upper[s, a][next_s] (or ['out'])
                p_in, idx_in = self.aux_compute_Fplus_in(...)
            p_out[next_s] = 0
            p_out, idx_out = self.aux_compute_Fplus_out(...)

    ``kap`` is ``kappa span(u)`` (a float: ``inf`` compares with the inside value only,
    NaN never extends, as Python's ``min`` and ``>`` do). Returns the sorted support.
    """
    S = len(u)
    order = [int(y) for y in np.argsort(u, kind="stable")]
    u = [Fraction(float(x)) for x in u]
    p_upper = {y: Fraction(float(upper[y])) for y in range(S) if emp[y]}
    p_lower = {y: Fraction(float(lower[y])) for y in range(S) if emp[y]}
    out = Fraction(float(upper_out))
    support = [y for y in range(S) if emp[y]]
    if order[S - 1] not in support:
        support.append(order[S - 1])
    min_u = min(u)

    def fplus_in(p, idx):  # lines 174-188
        sum_p = sum(p.values())
        while sum_p > 1 and idx < S:
            y = order[idx]
            if y in support:
                temp = max(0, p[y] - sum_p + 1, p_lower.get(y, 0))
                sum_p -= p[y] - temp
                p[y] = temp
            idx += 1
        return idx

    def fplus_out(p, idx):  # lines 192-207
        sum_p = sum(p.values())
        while sum_p < 1 and idx >= 0:
            y = order[idx]
            if y not in support:
                temp = min(p_upper.get(y, out), max(0, 1 - sum_p))
                sum_p += temp
                p[y] = temp
            idx -= 1
        return idx

    def value(p):
        return sum(p[y] * (u[y] - min_u) for y in p)

    def test(v_out, v_in):  # line 241: temp2 > min(kappa, temp)
        if math.isnan(kap):
            return False
        return v_out > (v_in if math.isinf(kap) else min(Fraction(kap), v_in))

    p_in = {y: p_upper.get(y, out) for y in support}
    p_out = {S - 1: Fraction(0)}  # line 230
    idx_in = fplus_in(p_in, 0)
    idx_out = fplus_out(p_out, S - 1)
    ll = 1
    while test(value(p_out), value(p_in)) and ll < S - 1:
        while order[S - 1 - ll] in support and ll < S - 1:
            ll += 1
        y = order[S - 1 - ll]
        if y not in support:
            support.append(y)
        if S - 1 - ll > idx_in:
            p_in[y] = p_upper.get(y, out)
            idx_in = fplus_in(p_in, idx_in)
        p_out[y] = Fraction(0)
        idx_out = fplus_out(p_out, idx_out)
    return sorted(support)


def _sequential_support(bounds: UCRL3Bounds, u):
    """The support by the published loops transcribed into nested ``lax.while_loop``s that
    move one state at a time (``key_sums=False``), summing the laws in floating point as
    the loops go."""
    S = u.shape[0]
    order = jnp.argsort(u, stable=True)
    best = order[-1]
    start = bounds.support | (jnp.arange(S) == best)
    w = u - jnp.min(u)
    w_ord = w[order]
    kappa = bounds.kappa * (jnp.max(u) - jnp.min(u))

    def one(lower, upper, upper_out, emp, sup0, kap):
        p_u = jnp.where(emp, upper, upper_out)[order]
        p_l = jnp.where(emp, lower, 0.0)[order]
        sup0 = sup0[order]

        def fill_in(p_in, present, sup, idx):
            def cond(c):
                p_in, idx = c
                return (jnp.sum(jnp.where(present, p_in, 0.0)) > 1) & (idx < S)

            def body(c):
                p_in, idx = c
                total = jnp.sum(jnp.where(present, p_in, 0.0))
                new = jnp.maximum(jnp.maximum(0.0, p_in[idx] - total + 1), p_l[idx])
                p_in = jnp.where(sup[idx] & present[idx], p_in.at[idx].set(new), p_in)
                return p_in, idx + 1

            return lax.while_loop(cond, body, (p_in, idx))

        def fill_out(p_out, sup, idx):
            def cond(c):
                p_out, idx = c
                return (jnp.sum(p_out) < 1) & (idx >= 0)

            def body(c):
                p_out, idx = c
                add = jnp.minimum(p_u[idx], jnp.maximum(0.0, 1 - jnp.sum(p_out)))
                p_out = jnp.where(sup[idx], p_out, p_out.at[idx].set(add))
                return p_out, idx - 1

            return lax.while_loop(cond, body, (p_out, idx))

        p_in0 = jnp.where(sup0, p_u, 0.0)
        p_in, idx_in = fill_in(p_in0, sup0, sup0, 0)
        p_out, idx_out = fill_out(jnp.zeros(S, u.dtype), sup0, S - 1)

        def cond(c):
            sup, present, p_in, idx_in, p_out, idx_out, ll = c
            v_in = jnp.sum(jnp.where(present, p_in, 0.0) * w_ord)
            v_out = jnp.sum(p_out * w_ord)
            return (v_out > jnp.minimum(kap, v_in)) & (ll < S - 1)

        def body(c):
            sup, present, p_in, idx_in, p_out, idx_out, ll = c
            positions = jnp.arange(S)
            candidates = (~sup) & (positions <= S - 1 - ll)
            pos = jnp.max(jnp.where(candidates, positions, -1))
            found = pos >= 0
            ll = jnp.where(found, S - 1 - pos, S - 1)
            pos = jnp.maximum(pos, 0)
            sup = sup.at[pos].set(sup[pos] | found)
            inside = found & (pos > idx_in)
            p_in = jnp.where(inside, p_in.at[pos].set(p_u[pos]), p_in)
            present = present.at[pos].set(present[pos] | inside)
            p_in, idx_in = fill_in(p_in, present, sup, idx_in)
            p_out = jnp.where(found, p_out.at[pos].set(0.0), p_out)
            p_out, idx_out = fill_out(p_out, sup, idx_out)
            return sup, present, p_in, idx_in, p_out, idx_out, ll

        init = (sup0, sup0, p_in, idx_in, p_out, idx_out, jnp.asarray(1))
        sup = lax.while_loop(cond, body, init)[0]
        return jnp.zeros(S, bool).at[order].set(sup)

    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    out = jax.vmap(one)(flat(bounds.lower), flat(bounds.upper), flat(bounds.upper_out),
                        flat(bounds.support), flat(start), flat(kappa))
    return out.reshape(bounds.support.shape)


_closed_form = jax.jit(near_optimistic_support)
_loops = jax.jit(_sequential_support)
SUPPORT_SHAPE = (9, 24)  # S, and the number of pairs (one row of "states" x pairs)


def _support_case(rng, grid):
    """Random UCRL3 bounds for ``SUPPORT_SHAPE`` pairs and values ``u``. With ``grid``,
    every number is a multiple of ``1/64`` (``u`` of ``1/8``, with ties), so that every sum
    the loops form is exact in float32 and float64 and the loops' float results are
    their exact results; otherwise uniform draws."""
    S, n = SUPPORT_SHAPE
    snap = (lambda x, q: np.round(x * q) / q) if grid else (lambda x, q: x)
    emp = rng.random((1, n, S)) < rng.choice([0.2, 0.5, 0.8], (1, n, 1))
    centre = rng.dirichlet(np.ones(S), (1, n))
    width = rng.uniform(0, 0.4, (1, n, S))
    lower = np.where(emp, snap(np.clip(centre - width, 0, 1), 64), 0.0)
    upper = np.where(emp, np.maximum(snap(np.clip(centre + width * 2, 0, 1), 64), lower), 0.0)
    upper_out = snap(np.where(rng.random((1, n)) < 0.15, 1.0, rng.uniform(0.01, 0.6, (1, n))),
                     64)
    upper_out = np.maximum(upper_out, 1 / 64)
    kappa = rng.choice([0.0, 0.25, 0.5, np.inf, np.nan], (1, n), p=[0.1, 0.2, 0.2, 0.4, 0.1])
    u = snap(rng.uniform(0, 3, S), 8)
    return UCRL3Bounds(lower, upper, upper_out, emp, kappa), u


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(6))
def test_support_in_closed_form_equals_the_loops_where_their_sums_are_exact(seed, dtype):
    rng = np.random.default_rng(300 + seed)
    bounds, u = _support_case(rng, grid=True)
    args = (UCRL3Bounds(*(jnp.asarray(x, bool if x.dtype == bool else dtype)
                          for x in bounds)), jnp.asarray(u, dtype))
    got = np.asarray(_closed_form(*args))
    np.testing.assert_array_equal(got, np.asarray(_loops(*args)))
    span = float(u.max() - u.min())
    grew = 0
    for i in range(SUPPORT_SHAPE[1]):
        b = [x[0, i] for x in bounds]
        ref = _published_support(b[1], b[0], b[2], b[3], u, float(b[4] * span))
        assert np.flatnonzero(got[0, i]).tolist() == ref
        grew += len(ref) > np.sum(b[3] | (np.arange(len(u)) == np.argsort(u, kind="stable")[-1]))
    assert grew >= 3  # the cases extend the support


@pytest.mark.parametrize("seed", range(6))
def test_support_in_closed_form_is_the_published_rule_in_exact_arithmetic(seed):
    rng = np.random.default_rng(400 + seed)
    bounds, u = _support_case(rng, grid=False)
    got = np.asarray(_closed_form(UCRL3Bounds(*map(jnp.asarray, bounds)), jnp.asarray(u)))
    span = float(u.max() - u.min())
    for i in range(SUPPORT_SHAPE[1]):
        b = [x[0, i] for x in bounds]
        ref = _published_support(b[1], b[0], b[2], b[3], u, float(b[4] * span))
        assert np.flatnonzero(got[0, i]).tolist() == ref


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
    from jaxmdp.planning import BALLS

    solve = BALLS["kl_published"]().solve
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
