"""Tests for jaxmdp.planning.estimate: p_hat, good actions and the estimated MDP's solution."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.planning import estimated_mdp, good_actions, transition_estimate
from tests.reference import mdp as ref


def _counts(seed, shape=(3, 2, 3), high=20):
    return np.random.default_rng(seed).integers(0, high, size=shape).astype(np.int32)


def test_transition_estimate_formula():
    counts = _counts(0)
    p_hat = np.asarray(transition_estimate(counts))
    expected = (counts + 1.0) / (counts.sum(-1, keepdims=True) + 3)
    np.testing.assert_allclose(p_hat, expected, rtol=1e-14)
    np.testing.assert_allclose(p_hat.sum(-1), 1.0, rtol=1e-14)
    assert np.all(p_hat > 0)


def test_transition_estimate_uniform_without_data():
    p_hat = transition_estimate(jnp.zeros((4, 3, 4), jnp.int32))
    np.testing.assert_allclose(p_hat, 0.25)


@pytest.mark.parametrize(
    "visits, expected",
    [
        # n_x = 0 and n_x = 1: ln n_x <= 0, every action is good.
        ([0, 0, 0], [True, True, True]),
        ([1, 0, 0], [True, True, True]),
        # n_x = 11: (ln 11)^2 = 5.75; only the action with 10 visits passes.
        ([10, 1, 0], [True, False, False]),
        # n_x = 100: (ln 100)^2 = 21.2; two actions pass.
        ([40, 38, 22], [True, True, True]),
        ([60, 30, 10], [True, True, False]),
        # n_x = 1000: (ln 1000)^2 = 47.7.
        ([334, 333, 333], [True, True, True]),
        ([950, 47, 3], [True, False, False]),
    ],
)
def test_good_actions_threshold(visits, expected):
    counts = np.zeros((1, 3, 2), np.int32)
    counts[0, :, 0] = visits
    np.testing.assert_array_equal(np.asarray(good_actions(counts))[0], expected)


def test_good_actions_empty_set_falls_back_to_all_admissible():
    # n_x = 30, (ln 30)^2 = 11.6: no action reaches it.
    counts = np.zeros((1, 3, 2), np.int32)
    counts[0, :, 0] = [10, 10, 10]
    admissible = np.array([[True, False, True]])
    np.testing.assert_array_equal(good_actions(counts, admissible), admissible)


def test_good_actions_is_subset_of_admissible():
    counts = np.zeros((2, 3, 2), np.int32)
    counts[:, 0, 0] = 100  # action 0 heavily used, but inadmissible in state 1
    counts[:, 1, 0] = 1
    admissible = np.array([[True, True, True], [False, True, True]])
    good = np.asarray(good_actions(counts, admissible))
    np.testing.assert_array_equal(good[0], [True, False, False])
    # In state 1 the visits of the inadmissible action do not count: n_x = 1, all good.
    np.testing.assert_array_equal(good[1], [False, True, True])


def test_estimated_mdp_fields():
    mdp = jm.MDP(jm.envs.paper_mdp().P, jm.envs.paper_mdp().R,
                 mask=np.array([[True, True], [False, True], [True, True]]))
    counts = _counts(1)
    counts[1, 0] = 0
    est = estimated_mdp(counts, mdp)
    np.testing.assert_allclose(est.P, transition_estimate(counts))
    np.testing.assert_array_equal(est.R, mdp.R)
    np.testing.assert_array_equal(est.mask, good_actions(counts, mdp.mask))
    assert not bool(est.mask[1, 0])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_estimate_matches_numpy_reference(seed):
    """The estimated MDP and its solution agree with the hand-written NumPy loop."""
    mdp = jm.envs.paper_mdp()
    counts = _counts(seed, high=200)
    est = jm.estimate(counts, mdp)
    S = 3
    n_xa = counts.sum(-1)
    p_hat = (counts + 1.0) / (n_xa[:, :, None] + S)
    log_nx = np.log(np.maximum(n_xa.sum(1), 1.0))
    good = n_xa >= (log_nx ** 2)[:, None]
    good = np.where(good.any(1, keepdims=True), good, True)
    gain, bias, policy = ref.policy_iteration(p_hat, ref.PAPER_R, good)
    np.testing.assert_allclose(est.mdp.P, p_hat, rtol=1e-13)
    np.testing.assert_array_equal(est.mdp.mask, good)
    np.testing.assert_allclose(est.gain, gain, rtol=1e-10)
    np.testing.assert_allclose(est.bias, bias, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(est.policy, policy)
    np.testing.assert_array_equal(est.visits, n_xa)


def test_estimate_warm_start_gives_same_solution():
    mdp = jm.envs.paper_mdp()
    counts = _counts(5, high=50)
    cold = jm.estimate(counts, mdp)
    for init in ([0, 0, 0], [1, 1, 1], [1, 0, 1]):
        warm = jm.estimate(counts, mdp, init_policy=jnp.array(init, jnp.int32))
        np.testing.assert_array_equal(warm.policy, cold.policy)
        np.testing.assert_allclose(warm.bias, cold.bias, rtol=1e-10, atol=1e-12)


def test_estimate_vmap_matches_loop():
    mdp = jm.envs.paper_mdp()
    batch = np.stack([_counts(s, high=30) for s in range(4)])
    batched = jax.vmap(lambda c: jm.estimate(c, mdp))(batch)
    for i in range(4):
        single = jm.estimate(batch[i], mdp)
        np.testing.assert_allclose(batched.bias[i], single.bias, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(batched.policy[i], single.policy)
        np.testing.assert_array_equal(batched.mdp.mask[i], single.mdp.mask)
