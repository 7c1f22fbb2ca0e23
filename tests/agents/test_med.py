"""MED-RL (jaxmdp.agents.med) against the NumPy loop of the published rule
(tests/reference/published.py, class MEDRL): value iteration, the index, the law of the
sampled action, and the mean regret."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from published_runs import nb

import jaxmdp as jm
from jaxmdp.agents import Observation, env_spec
from jaxmdp.agents.imed import imed_model
from jaxmdp.agents.med import _reward_law, med_index, med_value_iteration

RIVERSWIM = jm.envs.make("riverswim-6")

# Mean final realised regret of the NumPy loop on river-swim-6 (deterministic rewards)
# and its standard error. MED-RL breaks every tie at random, so the action order (the
# script's StatisticalRL order, jaxmdp's swapped) does not change the law of the regret.
# Produced by
#   python -m tests.reference.published --agent med_rl --horizon 300 --replications 400
NUMPY_REFERENCE = (300, 105.82, 1.65)


def _fed_loop(counts, R):
    """The NumPy MEDRL after observing ``counts`` (rewards ``R[s, a]``), via ``update``."""
    S, A, _ = counts.shape
    agent = nb.MEDRL(S, A, np.random.default_rng(0))
    agent.reset(0)
    for s, a, y in zip(*np.nonzero(counts), strict=True):
        for _ in range(counts[s, a, y]):
            agent.update(s, a, float(R[s, a]), y)
    return agent


def _counts():
    counts = np.zeros((6, 2, 6), np.int32)
    counts[0, 0, 0] = 7
    counts[0, 1, [0, 1]] = [2, 1]
    counts[1, 1, [0, 1, 2]] = [1, 4, 3]
    counts[1, 0, 0] = 2
    counts[2, 1, [2, 3]] = [5, 2]
    counts[2, 0, 1] = 1
    counts[3, 1, [3, 4]] = [2, 2]
    counts[4, 1, 5] = 1
    counts[5, 1, 5] = 3
    return counts


def _model(counts, R):
    sums = counts.sum(-1) * R
    return imed_model(jnp.asarray(counts), jnp.asarray(sums), jnp.asarray(R),
                      jnp.ones((6, 2), bool), known_rewards=False), sums


def test_value_iteration_and_index_against_numpy():
    R = np.asarray(RIVERSWIM.R)
    counts = _counts()
    loop = _fed_loop(counts, R)
    (p_hat, r_hat, skeleton, n), sums = _model(counts, R)
    np.testing.assert_allclose(p_hat, loop.p_hat, rtol=1e-13)
    np.testing.assert_allclose(r_hat, loop.r_hat, rtol=1e-13)
    np.testing.assert_array_equal(skeleton, loop.skeleton)
    start = np.array([0.0, 0.1, 0.4, 0.2, 0.9, 1.3])
    loop.phi = start.copy()
    phi_loop = loop.bias()
    phi = med_value_iteration(p_hat, r_hat, skeleton, jnp.asarray(start), epsilon=1e-3,
                              max_steps=3000)
    np.testing.assert_allclose(phi, phi_loop, rtol=1e-12, atol=1e-12)
    assert float(jnp.min(phi)) == 0.0
    for x in (0, 1, 2):
        values, weights = _reward_law(jnp.asarray(sums[x]), n[x], jnp.asarray(R[x]),
                                      known_rewards=False, reward_law="deterministic")
        index = med_index(p_hat[x], r_hat[x], n[x], phi, values, weights,
                          jnp.ones(2, bool))
        np.testing.assert_allclose(index, loop.med_index(x, phi_loop), rtol=1e-8)
        assert min(np.asarray(index)) == pytest.approx(math.log(loop.n[x][
            np.argmax(loop.r_hat[x] + loop.p_hat[x] @ phi_loop)]))


def test_bernoulli_reward_law_is_the_observed_values():
    # sum r = 3 over n = 5 Bernoulli rewards: three ones, two zeros, the atom at 1/2.
    values, weights = _reward_law(jnp.array([3.0]), jnp.array([5.0]), jnp.array([0.2]),
                                  known_rewards=False, reward_law="bernoulli")
    law = {}
    for v, w in zip(np.asarray(values[0]), np.asarray(weights[0]), strict=True):
        law[float(v)] = law.get(float(v), 0.0) + float(w)
    assert law == pytest.approx({0.0: 2 / 6, 0.5: 1 / 6, 1.0: 3 / 6})


def test_actions_are_drawn_with_probability_exp_minus_index():
    R = np.asarray(RIVERSWIM.R)
    counts = _counts()
    loop = _fed_loop(counts, R)
    agent = jm.get_agent("med_rl")
    spec = env_spec(RIVERSWIM)
    x = 2
    obs = Observation(t=jnp.int32(50), step=jnp.int32(49), state=jnp.int32(x),
                      counts=jnp.asarray(counts),
                      reward_sums=jnp.asarray(counts.sum(-1) * R))
    state = agent.init(jax.random.key(0), spec)
    draws = 20_000
    actions, states = jax.jit(jax.vmap(lambda k: agent.step(k, state, obs, spec)))(
        jax.random.split(jax.random.key(1), draws))
    loop.phi = np.zeros(6)
    index = loop.med_index(x, loop.bias())
    prob = np.exp(-index) / np.exp(-index).sum()
    assert 0.02 < prob[0] < 0.98  # both actions drawn: the check has power
    freq = np.bincount(np.asarray(actions), minlength=2) / draws
    # 5 binomial standard deviations
    assert abs(freq[0] - prob[0]) < 5 * math.sqrt(prob[0] * prob[1] / draws), (freq, prob)
    np.testing.assert_allclose(states.phi[0], loop.phi, rtol=1e-12, atol=1e-12)


def test_untried_actions_are_forced_uniformly():
    agent = jm.get_agent("med_rl")
    spec = env_spec(RIVERSWIM)
    counts = np.zeros((6, 2, 6), np.int32)
    counts[1, 0, 0] = 4  # state 1: action 1 untried, forced; state 0: both untried
    for x, expected in ((1, [0.0, 1.0]), (0, [0.5, 0.5])):
        obs = Observation(t=jnp.int32(5), step=jnp.int32(4), state=jnp.int32(x),
                          counts=jnp.asarray(counts), reward_sums=jnp.zeros((6, 2)))
        state = agent.init(jax.random.key(0), spec)._replace(phi=jnp.arange(6.0))
        actions, states = jax.vmap(lambda k: agent.step(k, state, obs, spec))(  # noqa: B023
            jax.random.split(jax.random.key(2), 4000))
        freq = np.bincount(np.asarray(actions), minlength=2) / 4000
        np.testing.assert_allclose(freq, expected, atol=0.04)
        np.testing.assert_array_equal(states.phi[0], np.arange(6.0))  # phi kept


def test_mean_regret_matches_numpy_loop():
    horizon, mean, se = NUMPY_REFERENCE
    replications = 64
    traj = jm.simulate(RIVERSWIM, "med_rl", horizon, replications, seed=5, progress=False)
    final = np.asarray(traj.regret[:, -1])
    jax_se = final.std(ddof=1) / math.sqrt(replications)
    # 4 standard errors of the difference of two independent means.
    assert abs(final.mean() - mean) < 4 * math.hypot(se, jax_se), (final.mean(), mean)


def test_options_are_validated():
    for option, value in (("known_rewards", "no"), ("epsilon", 0.0), ("max_steps", 0),
                          ("epsilon", True)):
        with pytest.raises(ValueError, match=option):
            jm.get_agent("med_rl", **{option: value})
    with pytest.raises(ValueError, match="gaussian"):
        jm.simulate(RIVERSWIM.with_reward_law("gaussian", 0.5), "med_rl", 5, 2,
                    progress=False)
    big = jm.MDP(RIVERSWIM.P, 2.0 * RIVERSWIM.R)
    with pytest.raises(ValueError, match=r"R\[5, 1\] = 2"):
        jm.simulate(big, jm.get_agent("med_rl", known_rewards=True), 5, 2, progress=False)
