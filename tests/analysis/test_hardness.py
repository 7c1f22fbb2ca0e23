"""Tests for ``jaxmdp.hardness`` against closed forms and brute force in NumPy."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.analysis.hardness import diameter, hitting_times, mixing_time, spectral_gap

# --------------------------------------------------------------------------------------
# Independent references (NumPy).


def brute_hitting_times(P):
    """min over all deterministic policies of E[tau_y] from every x, per target y."""
    S, A, _ = P.shape
    T = np.full((S, S), np.inf)
    for y in range(S):
        T[y, y] = 0.0
        others = [x for x in range(S) if x != y]
        for policy in itertools.product(range(A), repeat=S):
            P_pi = P[np.arange(S), policy]
            Q = P_pi[np.ix_(others, others)]
            if len(others) and np.max(np.abs(np.linalg.eigvals(Q))) > 1 - 1e-9:
                continue  # improper: some state never reaches y
            times = np.linalg.solve(np.eye(len(others)) - Q, np.ones(len(others)))
            T[others, y] = np.minimum(T[others, y], times)
    return T


def stationary(P_pi):
    S = P_pi.shape[0]
    A = np.vstack([P_pi.T - np.eye(S), np.ones(S)])
    b = np.zeros(S + 1)
    b[-1] = 1
    return np.linalg.lstsq(A, b, rcond=None)[0]


def brute_gain(P, R):
    """Best gain over all deterministic policies (every policy irreducible)."""
    S, A, _ = P.shape
    best, best_policy = -np.inf, None
    for policy in itertools.product(range(A), repeat=S):
        P_pi, r_pi = P[np.arange(S), policy], R[np.arange(S), policy]
        gain = stationary(P_pi) @ r_pi
        if gain > best + 1e-12:
            best, best_policy = gain, np.array(policy)
    return best, best_policy


def evaluate(P_pi, r_pi):
    """Gain and bias (bias[0] = 0) of an irreducible chain."""
    S = P_pi.shape[0]
    M = np.eye(S) - P_pi
    M[:, 0] = 1
    x = np.linalg.solve(M, r_pi)
    return x[0], np.concatenate([[0.0], x[1:]])


def brute_mixing_time(P_pi, limit, cap=100_000):
    Pt = np.eye(P_pi.shape[0])
    for t in range(cap + 1):
        if 0.5 * np.abs(Pt - limit).sum(axis=1).max() <= 0.25 + 1e-12:
            return t
        Pt = Pt @ P_pi
    return np.inf


def dense_mdp(rng, S, A):
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.uniform(size=(S, A))
    return jm.MDP(P, R)


def sparse_mdp(rng, S, A, zeros=0.5):
    """Random rows with random zeros (at least one positive entry per row)."""
    P = rng.uniform(size=(S, A, S)) * (rng.uniform(size=(S, A, S)) > zeros)
    for x, a in itertools.product(range(S), range(A)):
        if P[x, a].sum() == 0:
            P[x, a, rng.integers(S)] = 1.0
    P /= P.sum(-1, keepdims=True)
    return jm.MDP(P, rng.uniform(size=(S, A)))


# --------------------------------------------------------------------------------------
# Closed forms.


def riverswim_right_times(n):
    """E[time from k to k + 1] under "right": t_0 = 1/0.4, t_k = (1 + 0.05 t_{k-1})/0.4."""
    t = [1 / 0.4]
    for _ in range(1, n - 1):
        t.append((1 + 0.05 * t[-1]) / 0.4)
    return t


@pytest.mark.parametrize("n", [2, 3, 6, 12])
def test_riverswim_hitting_times_and_diameter_closed_form(n):
    mdp = jm.envs.make(f"riverswim-{n}")
    t = riverswim_right_times(n)
    expected = np.zeros((n, n))
    for x, y in itertools.product(range(n), repeat=2):
        expected[x, y] = sum(t[x:y]) if x < y else x - y  # left is deterministic
    np.testing.assert_allclose(hitting_times(mdp), expected, rtol=1e-12)
    assert float(diameter(mdp)) == pytest.approx(sum(t), rel=1e-12)
    if n == 6:  # hardness's field is diameter(); one shape (each is a program of its own)
        assert float(jm.hardness(mdp).diameter) == pytest.approx(sum(t), rel=1e-12)


@pytest.mark.parametrize("a, b", [(0.1, 0.1), (0.3, 0.05), (0.9, 0.7), (0.02, 0.5),
                                  (1.0, 1.0), (0.0, 0.4)])
def test_two_state_chain_mixing_time_and_spectral_gap(a, b):
    P_pi = np.array([[1 - a, a], [b, 1 - b]])
    lam = abs(1 - a - b)
    # d(t) = max(a, b) / (a + b) * |1 - a - b|^t (the state with the smaller stationary
    # mass is the farthest from stationarity).
    scale = max(a, b) / (a + b)
    if lam == 1:
        expected = math.inf  # periodic (a = b = 1): d(t) = 1/2 for every t
    else:
        expected = math.ceil(math.log(0.25 / scale) / math.log(lam) - 1e-12)
    assert float(mixing_time(jnp.asarray(P_pi))) == expected
    assert float(spectral_gap(jnp.asarray(P_pi))) == pytest.approx(1 - lam, abs=1e-12)
    # Through hardness: a one-action MDP has one policy, whose chain is P_pi.
    h = jm.hardness(jm.MDP(P_pi[:, None, :], np.array([[1.0], [0.0]])))
    assert float(h.mixing_time) == expected
    assert float(h.spectral_gap) == pytest.approx(1 - lam, abs=1e-12)
    assert float(h.gain) == pytest.approx(b / (a + b), abs=1e-12)


def test_mixing_time_cap_and_periodic_chains():
    three_cycle = jnp.asarray(np.roll(np.eye(3), 1, axis=1))
    assert float(mixing_time(three_cycle)) == math.inf
    assert float(spectral_gap(three_cycle)) == pytest.approx(0, abs=1e-12)
    slow = jnp.array([[0.999, 0.001], [0.001, 0.999]])
    # d(t) = 0.5 * 0.998^t <= 1/4 first at t = ceil(ln 0.5 / ln 0.998) = 347.
    assert float(mixing_time(slow)) == 347
    assert float(mixing_time(slow, max_steps=347)) == 347
    assert float(mixing_time(slow, max_steps=346)) == math.inf
    assert float(mixing_time(jnp.eye(1))) == 0
    # Two recurrent classes: P^t = P* from t = 0, no mixing needed.
    assert float(mixing_time(jnp.eye(2))) == 0
    assert float(spectral_gap(jnp.eye(2))) == 0


# --------------------------------------------------------------------------------------
# Brute force on small random MDPs.


@pytest.mark.parametrize("seed", range(4))
def test_dense_random_mdps_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    S, A = 4, 2
    mdp = dense_mdp(rng, S, A)
    P, R = np.asarray(mdp.P), np.asarray(mdp.R)
    h = jm.hardness(mdp)
    gain, policy = brute_gain(P, R)
    P_pi, r_pi = P[np.arange(S), policy], R[np.arange(S), policy]
    _, bias = evaluate(P_pi, r_pi)
    assert float(h.gain) == pytest.approx(gain, abs=1e-12)
    assert float(h.bias_span) == pytest.approx(np.ptp(bias), abs=1e-10)
    delta = gain + bias[:, None] - R - P @ bias
    delta = np.where(delta > 1e-9, delta, 0)
    np.testing.assert_allclose(h.gaps, delta, atol=1e-10)
    positive = delta[delta > 0]
    assert float(h.min_gap) == pytest.approx(positive.min(), rel=1e-9)
    assert float(h.sum_inverse_gaps) == pytest.approx((1 / positive).sum(), rel=1e-9)
    T = brute_hitting_times(P)
    np.testing.assert_allclose(hitting_times(mdp), T, rtol=1e-10)
    assert float(h.diameter) == pytest.approx(T.max(), rel=1e-10)
    limit = np.tile(stationary(P_pi), (S, 1))
    assert float(h.mixing_time) == brute_mixing_time(P_pi, limit)
    moduli = np.sort(np.abs(np.linalg.eigvals(P_pi)))[::-1]
    assert float(h.spectral_gap) == pytest.approx(1 - moduli[1], abs=1e-10)
    assert float(h.lower_bound) == pytest.approx(
        float(jm.regret_lower_bound(mdp).constant), rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_sparse_random_mdps_diameter_against_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    mdp = sparse_mdp(rng, 4, 2, zeros=0.6)
    T = brute_hitting_times(np.asarray(mdp.P))
    np.testing.assert_allclose(hitting_times(mdp), T, rtol=1e-10)
    expected = T[~np.eye(4, dtype=bool)].max()
    assert float(diameter(mdp)) == pytest.approx(expected, rel=1e-10)


def test_a_non_communicating_mdp_has_infinite_diameter_as_a_value():
    # State 0 is left forever by both actions; states 1 and 2 communicate. The optimal
    # gain is the same from every state (weakly communicating), D = inf.
    P = np.zeros((3, 2, 3))
    P[0, 0, 1] = P[0, 1, 2] = 1.0
    P[1, 0, 2] = P[1, 1, 1] = 1.0
    P[2, 0, 1] = P[2, 1, 2] = 1.0
    R = np.array([[0.0, 0.0], [0.5, 0.2], [1.0, 0.1]])
    h = jm.hardness(jm.MDP(P, R))
    assert float(h.diameter) == math.inf
    assert float(h.gain) == pytest.approx(0.75)
    T = np.asarray(hitting_times(jm.MDP(P, R)))
    assert np.isinf(T[1:, 0]).all() and T[0, 1] == 1 and T[1, 2] == 1
    # Multichain (two absorbing states): no error, D = inf, the gain from state 0.
    absorbing = np.zeros((2, 1, 2))
    absorbing[0, 0, 0] = absorbing[1, 0, 1] = 1.0
    h = jm.hardness(jm.MDP(absorbing, np.array([[0.3], [0.9]])))
    assert float(h.diameter) == math.inf and float(h.gain) == pytest.approx(0.3)


# --------------------------------------------------------------------------------------
# Batches, transformations, gradients.


def _assert_equal_hardness(a, b):
    for name, x, y in zip(jm.Hardness._fields, a, b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14,
                                   err_msg=name)


def test_batch_equals_one_by_one_and_transforms():
    seeds = range(5)
    batch = jm.envs.batch("garnet-6-2-3", seeds=seeds)
    h = jm.hardness(batch)
    assert h.gain.shape == (5,) and h.gaps.shape == (5, 6, 2)
    for i, seed in enumerate(seeds):
        one = jm.hardness(jm.envs.make("garnet-6-2-3", seed=seed))
        # Indexed as NumPy arrays (an eager jax index compiles a program per field).
        _assert_equal_hardness([np.asarray(x)[i] for x in h], one)
    _assert_equal_hardness(jax.jit(jm.hardness)(batch), h)
    _assert_equal_hardness(jax.vmap(jm.hardness)(batch), h)
    nested = jax.tree_util.tree_map(lambda x: x[:4].reshape(2, 2, *x.shape[1:]), batch)
    assert jm.hardness(nested).diameter.shape == (2, 2)


def test_learned_rewards_lower_bound():
    mdps = jm.envs.batch("random-4-2", seeds=range(3))
    h = jm.hardness(mdps, known_rewards=False)
    for i in range(3):
        one = jm.envs.make("random-4-2", seed=i)
        expected = jm.regret_lower_bound(one, known_rewards=False).constant
        assert float(h.lower_bound[i]) == pytest.approx(float(expected), rel=1e-12)
        assert float(h.lower_bound[i]) > float(jm.hardness(one).lower_bound)  # harder
    gaussian = jm.envs.make("random-4-2").with_reward_law("gaussian", 0.5)
    h = jax.jit(lambda m: jm.hardness(m, known_rewards=False))(gaussian)
    expected = jm.regret_lower_bound(gaussian, known_rewards=False).constant
    assert float(h.lower_bound) == pytest.approx(float(expected), rel=1e-12)
    with pytest.raises(ValueError, match=r"known_rewards=False\) needs concrete"):
        jax.jit(lambda m: jm.hardness(m, known_rewards=False))(jm.envs.make("random-4-2"))


@pytest.mark.parametrize("field", ["gain", "bias_span"])
def test_gradients_match_central_differences(field):
    rng = np.random.default_rng(7)
    mdp = dense_mdp(rng, 4, 2)
    P, R = jnp.asarray(mdp.P), jnp.asarray(mdp.R)
    dR = jnp.asarray(rng.normal(size=R.shape))
    dP = rng.normal(size=P.shape)
    dP = jnp.asarray(dP - dP.mean(-1, keepdims=True))  # stays on the simplex

    def f(eps):
        return getattr(jm.hardness(jm.MDP.unchecked(P + eps * dP, R + eps * dR)), field)

    grad = float(jax.grad(f)(0.0))
    h = 1e-6
    central = (float(f(h)) - float(f(-h))) / (2 * h)
    assert grad == pytest.approx(central, rel=1e-6, abs=1e-9)
    assert abs(grad) > 1e-6


def test_bad_input():
    with pytest.raises(ValueError, match="mdp must be a jaxmdp.MDP"):
        jm.hardness(np.zeros((2, 1, 2)))
    mdp = jm.envs.make("paper-mdp")
    with pytest.raises(ValueError, match="known_rewards must be a bool"):
        jm.hardness(mdp, known_rewards=1)
    with pytest.raises(ValueError, match="max_mixing_time must be a positive"):
        jm.hardness(mdp, max_mixing_time=0)
    with pytest.raises(ValueError, match="max_mixing_time must be a positive"):
        mixing_time(jnp.eye(2), max_steps=2.5)
