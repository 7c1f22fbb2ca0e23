"""Tests of ``jaxmdp.l1_ucb`` (the OLP index B) and of the maximiser behind it,
``jaxmdp.l1_ball_maximiser``: values against scipy's LP solver on the paper's linear
program, maximisers against a NumPy greedy reference, the three methods against each other,
degenerate cases, properties, gradients, batching and dtypes."""

from functools import partial

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from scipy.optimize import linprog

import jaxmdp
from jaxmdp.indices.l1 import METHODS, SORT_MAX_STATES

_over_radii = jax.jit(jax.vmap(jaxmdp.l1_ucb, in_axes=(None, None, 0)))
_grad = jax.jit(jax.grad(jaxmdp.l1_ucb, argnums=(0, 1, 2)))


def _olp_linprog(p, v, d):
    """B(p, v, d) by the paper's LP (section 4, OLP): q = p - q_plus + q_minus."""
    n = len(p)
    ones = np.ones(n)
    cost = np.concatenate([v, -v])  # minimise -(v . (q_minus - q_plus))
    a_ub = np.vstack([np.concatenate([ones, ones]), np.hstack([np.eye(n), -np.eye(n)])])
    b_ub = np.concatenate([[d], p])
    a_eq = np.concatenate([-ones, ones])[None]
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=[0.0],
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return float(p @ v - res.fun)


def _problem(seed, n, *, ties=False, zeros=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n, 0.7))
    if zeros:
        p[rng.choice(n, zeros, replace=False)] = 0.0
        p /= p.sum()
    v = rng.normal(size=n)
    if ties:
        v = np.round(2 * v) / 2
    return p, v


LP_CASES = [
    (0, 2, False, 0),
    (1, 8, False, 0),
    (2, 8, True, 0),
    (3, 8, True, 3),
    (4, 30, False, 5),
    (5, 30, True, 0),
    (6, 100, True, 10),
    (7, 1000, False, 100),
]


@pytest.mark.parametrize("seed,n,ties,zeros", LP_CASES)
def test_matches_paper_linear_program(seed, n, ties, zeros):
    p, v = _problem(seed, n, ties=ties, zeros=zeros)
    radii = np.array([1e-6, 0.05, 0.3, 0.9, 1.5, 1.99])
    got = np.asarray(_over_radii(p, v, radii))
    want = np.array([_olp_linprog(p, v, d) for d in radii])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def _maximiser_grad(method):
    return jax.jit(jax.grad(partial(jaxmdp.l1_ball_maximiser, method=method), argnums=(0, 1, 2)))


@pytest.mark.parametrize("method", ["select", "scan"])
@pytest.mark.parametrize("ties", [False, True])
def test_methods_agree_with_sorting(method, ties, dtype=np.float64):
    """The selection (a bisection over bit patterns, l1_ucb's method above SORT_MAX_STATES)
    and the scan must match the sort, with ties, zeros, negative values and at the kinks."""
    assert SORT_MAX_STATES < 100
    p, v = _problem(40 + ties, 100, ties=ties, zeros=20)
    v[3] = -0.0
    v[4] = 0.0
    p, v = p.astype(dtype), v.astype(dtype)
    radii = np.array([-1.0, 0.0, 1e-7, 0.01, 0.3, 0.8, 1.3, 1.6, 1.9999, 2.0, 3.0], dtype)
    radii = np.concatenate([radii, 2 * np.cumsum(np.sort(p))[::17]]).astype(dtype)  # kinks
    sorted_, q_sorted = jaxmdp.l1_ball_maximiser(p, v, radii, with_q=True)
    other, q_other = jaxmdp.l1_ball_maximiser(p, v, radii, with_q=True, method=method)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(other, sorted_, rtol=0, atol=8 * eps * np.abs(v).max())
    # Maximisers: equal where v has no ties (with ties each method may pick another one).
    if not ties:
        np.testing.assert_allclose(q_other, q_sorted, rtol=0, atol=8 * eps)
        g_sorted = _maximiser_grad("sort")(p, v, dtype(0.77))
        g_other = _maximiser_grad(method)(p, v, dtype(0.77))
        for a, b in zip(g_sorted, g_other):
            np.testing.assert_allclose(a, b, rtol=0, atol=8 * eps)


MAXIMISER_CASES = [
    (60, 2, False, 0),
    (61, 5, False, 0),
    (62, 8, True, 3),
    (63, 40, False, 10),
    (64, 40, True, 0),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed,n,ties,zeros", MAXIMISER_CASES)
def test_maximiser_against_linear_program_and_greedy_q(method, seed, n, ties, zeros):
    p, v = _problem(seed, n, ties=ties, zeros=zeros)
    radii = np.array([-0.5, 0.0, 1e-6, 0.05, 0.3, 0.9, 1.5, 1.99, 2.0, 7.0])
    values, q = jaxmdp.l1_ball_maximiser(p, v, radii, with_q=True, method=method)
    values, q = np.asarray(values), np.asarray(q)
    assert values.shape == radii.shape and q.shape == radii.shape + (n,)
    want = np.array([_olp_linprog(p, v, max(d, 0.0)) for d in radii])
    np.testing.assert_allclose(values, want, rtol=0, atol=1e-9)
    # Every q is feasible (on the simplex, within the ball) and attains the value.
    assert np.all(q >= 0)
    np.testing.assert_allclose(q.sum(-1), 1, rtol=0, atol=1e-13)
    assert np.all(np.abs(q - p).sum(-1) <= np.maximum(radii, 0) + 1e-12)
    np.testing.assert_allclose(q @ v, values, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(q[:2], [p, p])  # d <= 0 moves nothing
    # A NaN radius moves nothing; an infinite one moves all of the mass to the best state.
    edge_values, edge_q = jaxmdp.l1_ball_maximiser(p, v, np.array([np.nan, np.inf]),
                                                   with_q=True, method=method)
    np.testing.assert_array_equal(edge_q[0], p)
    np.testing.assert_allclose(edge_values, [p @ v, v.max()], rtol=1e-14)
    assert np.all(np.asarray(edge_q[1])[v < v.max()] == 0)
    assert np.count_nonzero(edge_q[1]) == 1
    np.testing.assert_allclose(edge_q[1].sum(), 1, rtol=0, atol=1e-15)
    if not ties:  # the maximiser is unique
        greedy = np.array([_optimal_q(p, v, max(d, 0.0)) for d in radii])
        np.testing.assert_allclose(q, greedy, rtol=0, atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_maximiser_rows_share_v_along_either_axis(method):
    """EVI's use: every pair (s, a) a row sharing one v; the states on the last axis or the
    first, with the radii broadcast."""
    rng = np.random.default_rng(70)
    S, A = 7, 3
    p = rng.dirichlet(np.full(S, 0.6), size=(S, A))
    v = rng.normal(size=S)
    d = rng.uniform(0, 2.5, size=(S, A))
    values, q = jaxmdp.l1_ball_maximiser(p, v, d, with_q=True, method=method)
    assert values.shape == (S, A) and q.shape == (S, A, S)
    for s in range(S):
        for a in range(A):
            assert float(values[s, a]) == pytest.approx(_olp_linprog(p[s, a], v, d[s, a]),
                                                        abs=1e-9)
            np.testing.assert_allclose(q[s, a], _optimal_q(p[s, a], v, d[s, a]), atol=1e-14)
    first = np.moveaxis(p, -1, 0)
    values_0, q_0 = jaxmdp.l1_ball_maximiser(first, v, d, with_q=True, method=method, axis=0)
    np.testing.assert_allclose(values_0, values, rtol=0, atol=1e-15)
    np.testing.assert_allclose(q_0, np.moveaxis(np.asarray(q), -1, 0), rtol=0, atol=1e-15)
    one_radius = jaxmdp.l1_ball_maximiser(p, v, 0.3, method=method)
    np.testing.assert_allclose(one_radius, [[_olp_linprog(row, v, 0.3) for row in rows]
                                            for rows in p], rtol=0, atol=1e-9)
    single = jax.vmap(jax.vmap(partial(jaxmdp.l1_ball_maximiser, method=method),
                               in_axes=(0, None, 0)), in_axes=(0, None, 0))(p, v, d)
    np.testing.assert_allclose(single, values, rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
def test_maximiser_float32(method):
    p, v = _problem(80, 50, zeros=5)
    p[:10] = 1e-12
    p /= p.sum()
    radii = np.array([0.0, 1e-3, 0.5, 1.999, 2.0, 3.0])
    v64, q64 = jaxmdp.l1_ball_maximiser(p, v, radii, with_q=True, method=method)
    v32, q32 = jaxmdp.l1_ball_maximiser(p.astype(np.float32), v.astype(np.float32),
                                        radii.astype(np.float32), with_q=True, method=method)
    assert v32.dtype == q32.dtype == jnp.float32 and v64.dtype == np.float64
    np.testing.assert_allclose(v32, v64, rtol=0, atol=1e-5 * np.abs(v).max())
    np.testing.assert_allclose(q32, q64, rtol=0, atol=1e-5)


def test_maximiser_rejects_bad_arguments():
    p, v = np.full(3, 1 / 3), np.arange(3.0)
    with pytest.raises(ValueError, match="method must be one of .* got 'bisect'"):
        jaxmdp.l1_ball_maximiser(p, v, 0.1, method="bisect")
    with pytest.raises(ValueError, match="with_q must be a bool, got 1"):
        jaxmdp.l1_ball_maximiser(p, v, 0.1, with_q=1)
    with pytest.raises(ValueError, match=r"v must have shape \[S\].*v.shape=\(2, 3\)"):
        jaxmdp.l1_ball_maximiser(np.stack([p, p]), np.stack([v, v]), 0.1)
    with pytest.raises(ValueError, match=r"axis=1 for p.shape=\(3,\)"):
        jaxmdp.l1_ball_maximiser(p, v, 0.1, axis=1)
    with pytest.raises(ValueError, match=r"p and v must have shape \[\.\.\., S\]"):
        jaxmdp.l1_ball_maximiser(np.float64(1.0), v, 0.1)
    with pytest.raises(ValueError, match="same last dimension"):
        jaxmdp.l1_ball_maximiser(p, np.arange(4.0), 0.1)
    with pytest.raises(ValueError, match="batch shapes do not broadcast"):
        jaxmdp.l1_ball_maximiser(np.stack([p, p]), v, np.ones(3))


def test_zero_probability_on_argmax_state():
    # All the moved mass lands on the zero-probability best state.
    p = np.array([0.5, 0.5, 0.0])
    v = np.array([0.0, 1.0, 3.0])
    # d = 0.6 moves 0.3 from v=0 to v=3: 0.5 + 0.9 = 1.4.
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, 0.6), 1.4, rtol=1e-15)
    # d = 1.4 moves 0.5 from v=0 and 0.2 from v=1: 0.5 + 1.5 + 0.4 = 2.4.
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, 1.4), 2.4, rtol=1e-15)
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, 2.0), 3.0, rtol=0)


def test_hand_example_from_docstring():
    p = np.array([0.5, 0.3, 0.2])
    v = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, 0.4), 1.1, rtol=1e-15)
    # Past d/2 = 1 - p_best = 0.8 nothing is left to move: B = max v.
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, 1.7), 2.0, rtol=1e-15)


@pytest.mark.parametrize("d", [0.0, -0.5, -np.inf])
def test_nonpositive_radius_gives_mean(d):
    p, v = _problem(7, 8)
    np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, d), p @ v, rtol=1e-14)


@pytest.mark.parametrize("d", [2.0, 2.5, 1e9, np.inf])
def test_radius_two_or_more_gives_max(d):
    p, v = _problem(8, 8)
    assert float(jaxmdp.l1_ucb(p, v, d)) == v.max()


def test_constant_values_give_the_constant():
    p, _ = _problem(9, 8)
    v = np.full(8, 0.25)
    radii = np.array([0.0, 0.3, 1.0, 1.7, 2.0, 3.0])
    np.testing.assert_allclose(_over_radii(p, v, radii), 0.25, rtol=1e-15)


def test_reduces_to_bernoulli_closed_form():
    # Two states with v in {0, 1} and P(v=1) = a: B = min(a + d/2, 1).
    a = np.array([0.0, 0.1, 0.5, 0.93])
    p = np.stack([1 - a, a], axis=-1)
    v = np.array([0.0, 1.0])
    for d in [0.0, 0.1, 0.5, 1.9]:
        np.testing.assert_allclose(jaxmdp.l1_ucb(p, v, d), np.minimum(a + d / 2, 1), rtol=1e-15)


# Properties (hypothesis), at a fixed S so that one compilation serves every example.
S_PROP = 8
_weights = st.lists(
    st.floats(0.0, 1.0, allow_subnormal=False), min_size=S_PROP, max_size=S_PROP
).filter(lambda w: sum(w) > 1e-3)
_values = st.lists(
    st.one_of(st.floats(-10.0, 10.0, allow_subnormal=False), st.sampled_from([-1.0, 0.0, 1.0])),
    min_size=S_PROP,
    max_size=S_PROP,
)
_radii = st.lists(st.floats(-0.5, 2.5), min_size=8, max_size=8)


@settings(max_examples=150, deadline=None)
@given(_weights, _values, _radii)
def test_property_monotone_in_radius_and_bounded(w, v, radii):
    p = np.asarray(w) / np.sum(w)
    v = np.asarray(v)
    radii = np.sort(np.asarray(radii))
    b = np.asarray(_over_radii(p, v, radii))
    scale = 1e-12 * (1 + np.abs(v).max())
    assert np.all(np.diff(b) >= -scale)
    assert np.all(b >= p @ v - scale)
    assert np.all(b <= v.max())


@settings(max_examples=60, deadline=None)
@given(_weights, _values, st.floats(0.1, 5.0), st.floats(-3.0, 3.0), _radii)
def test_property_affine_equivariance(w, v, scale, shift, radii):
    p = np.asarray(w) / np.sum(w)
    v = np.asarray(v)
    radii = np.asarray(radii)
    b = np.asarray(_over_radii(p, v, radii))
    b_affine = np.asarray(_over_radii(p, scale * v + shift, radii))
    np.testing.assert_allclose(
        b_affine, scale * b + shift, rtol=1e-12, atol=1e-12 * (1 + 10 * scale)
    )


# Gradients.
def _optimal_q(p, v, d):
    """The greedy optimiser q* of B (numpy, for the closed-form gradients)."""
    q = p.copy()
    best = int(np.argmax(v))
    move = min(d / 2, 1 - p[best])
    left = move
    for x in np.argsort(v, kind="stable"):
        if x == best:
            continue
        take = min(left, q[x])
        q[x] -= take
        left -= take
    q[best] += move
    return q


GRAD_CASES = [(10, 8, 0.3), (11, 8, 0.7), (12, 8, 1.2), (13, 8, 0.05), (14, 100, 0.9)]


@pytest.mark.parametrize("seed,n,d", GRAD_CASES)
def test_gradients_closed_form_and_finite_differences(seed, n, d):
    p, v = _problem(seed, n)
    grads = _grad(p, v, d)
    g_p, g_v, g_d = (np.asarray(g) for g in grads)
    q = _optimal_q(p, v, d)
    # dB/dv = q*; dB/dd = (V - v_k)/2 with k the state mass is being taken from.
    np.testing.assert_allclose(g_v, q, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g_v.sum(), 1.0, rtol=0, atol=1e-14)  # B(v + a) = B(v) + a
    k = np.argsort(v)[np.searchsorted(np.cumsum(p[np.argsort(v)]), d / 2)]
    np.testing.assert_allclose(g_d, (v.max() - v[k]) / 2, rtol=1e-12)

    rng = np.random.default_rng(seed + 100)
    h = 1e-7
    dir_p = rng.normal(size=n)
    dir_p -= dir_p.mean()  # stay on the simplex
    dir_v = rng.normal(size=n)

    def central(f):
        return (f(h) - f(-h)) / (2 * h)

    fd_p = central(lambda t: float(jaxmdp.l1_ucb(p + t * dir_p, v, d)))
    fd_v = central(lambda t: float(jaxmdp.l1_ucb(p, v + t * dir_v, d)))
    fd_d = central(lambda t: float(jaxmdp.l1_ucb(p, v, d + t)))
    np.testing.assert_allclose(g_p @ dir_p, fd_p, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g_v @ dir_v, fd_v, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g_d, fd_d, rtol=1e-6, atol=1e-9)

    # JVP against VJP.
    tangents = (dir_p, dir_v, 0.37)
    _, jvp = jax.jvp(jaxmdp.l1_ucb, (p, v, d), tangents)
    vjp_dot = g_p @ dir_p + g_v @ dir_v + g_d * 0.37
    np.testing.assert_allclose(jvp, vjp_dot, rtol=1e-12)


def test_gradients_under_vmap_match_single_instances():
    cases = [_problem(seed, 8) for seed in range(20, 24)]
    p = np.stack([c[0] for c in cases])
    v = np.stack([c[1] for c in cases])
    d = np.array([0.1, 0.5, 1.0, 1.7])
    batched = jax.vmap(jax.grad(jaxmdp.l1_ucb, argnums=(0, 1, 2)))(p, v, d)
    for i in range(4):
        single = _grad(p[i], v[i], d[i])
        for b, s in zip(batched, single):
            np.testing.assert_allclose(b[i], s, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("d", [0.0, 2.0, 0.4, 1.0, 5.0, -1.0])
def test_gradients_finite_at_kinks(d):
    # d/2 = 0.2 and 0.5 are exactly the cumulative masses of the lowest states; v has ties
    # at the top and p is zero on one of the argmax states.
    p = np.array([0.2, 0.3, 0.25, 0.0, 0.125, 0.125, 0.0, 0.0])
    v = np.array([-1.0, 0.0, 0.5, 0.5, 1.0, 2.0, 2.0, -3.0])
    grads = _grad(p, v, d)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))
    np.testing.assert_allclose(np.sum(grads[1]), 1.0, rtol=0, atol=1e-14)


# Shapes, batching, validation.
def test_shapes_and_broadcasting():
    p, v = _problem(30, 8)
    assert jaxmdp.l1_ucb(p, v, 0.5).shape == ()
    p_batch = np.stack([p, p[::-1], np.roll(p, 2)])
    out = jaxmdp.l1_ucb(p_batch, v, np.array([0.1, 0.5, 1.5]))
    assert out.shape == (3,)
    for i, d in enumerate([0.1, 0.5, 1.5]):
        np.testing.assert_allclose(out[i], jaxmdp.l1_ucb(p_batch[i], v, d), rtol=1e-15)
    grid = jaxmdp.l1_ucb(p_batch[None], v, np.array([[0.1], [0.4]]))
    assert grid.shape == (2, 3)
    np.testing.assert_allclose(grid[1, 2], jaxmdp.l1_ucb(p_batch[2], v, 0.4), rtol=1e-15)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(jaxmdp.l1_ucb, in_axes=(0, None, None)))(p_batch, v, 0.4), grid[1]
    )


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="got shapes"):
        jaxmdp.l1_ucb(np.ones(3) / 3, np.ones(4), 0.1)
    with pytest.raises(ValueError, match="got shapes"):
        jaxmdp.l1_ucb(np.float64(1.0), np.ones(1), 0.1)


@pytest.mark.parametrize("n", [30, 100_000])
def test_float32_close_to_float64_and_no_nan(n):
    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.ones(n))
    p[: n // 10] = 1e-12  # tiny entries
    p /= p.sum()
    v = rng.uniform(size=n)
    v[n // 2] = 1e6  # one huge outlier
    v[: n // 5] = v[0]  # ties
    d = np.array([0.0, 1e-12, 1e-3, 0.5, 1.999, 2.0])
    b64 = np.asarray(_over_radii(p, v, d))
    b32 = _over_radii(p.astype(np.float32), v.astype(np.float32), d.astype(np.float32))
    assert b32.dtype == jnp.float32
    assert b64.dtype == np.float64
    assert np.all(np.isfinite(b64)) and np.all(np.isfinite(np.asarray(b32)))
    np.testing.assert_allclose(np.asarray(b32), b64, rtol=2e-5, atol=2e-5 * np.abs(v).max())
    # The radius-1e-3 index against the LP only where the LP is small enough to be quick.
    if n == 30:
        np.testing.assert_allclose(b64[2], _olp_linprog(p, v, 1e-3), rtol=1e-9)
    g = _grad(p.astype(np.float32), v.astype(np.float32), np.float32(0.5))
    assert all(np.all(np.isfinite(np.asarray(x))) for x in g)


@pytest.mark.parametrize("n", [8, 100])
def test_invalid_input_gives_nan(n):
    """NaN in, NaN out (value and all derivatives), as in jax.numpy; a negative probability
    gives NaN, never a plausible number. The old code returned 0.5 for d = NaN."""
    p, v = _problem(50, n)
    bad_p = p.copy()
    bad_p[:2] = [p[0] + 0.5, -0.5 + p[1]]  # sums to one, one entry negative
    nan_v = v.copy()
    nan_v[1] = np.nan
    for args in [(p, v, np.nan), (p, nan_v, 0.3), (bad_p, v, 0.3), (p, v * np.inf, 0.3)]:
        assert np.isnan(jaxmdp.l1_ucb(*args))
        for g in _grad(*(np.asarray(a, np.float64) for a in args)):
            assert np.all(np.isnan(np.asarray(g)))
    assert np.isfinite(jaxmdp.l1_ucb(p, v, np.inf))  # an infinite radius is valid
