"""UCRL2B (``jm.get_agent("ucrl2b")``): its bounds against the published formulas, its
episodes replayed from recorded paths, its regret against the NumPy loop."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from published_runs import assert_same_mean, jax_final_regrets, numpy_final_regrets

import jaxmdp as jm
from jaxmdp.agents import env_spec
from jaxmdp.agents.confidence import ucrl2b_reward_upper, ucrl2b_transition_box
from jaxmdp.agents.ucrl import EpisodeStats, replay_episodes


@pytest.mark.parametrize("n, k, delta", [(1, 0, 0.05), (1, 1, 0.05), (7, 3, 0.05),
                                         (100, 1, 0.01), (2500, 2000, 0.1)])
def test_transition_box_is_the_published_formula(n, k, delta):
    S, A = 6, 2
    p = k / n
    L = math.log(n / (delta / (18 * S * A)))  # UCRL2B.py lines 11, 76
    width = 2 * math.sqrt(p * (1 - p) * L / n) + 6 * L / n  # lines 59-67
    lo, up = map(float, ucrl2b_transition_box(p, n, L))
    assert lo == pytest.approx(max(0.0, p - width), abs=1e-15)
    assert up == pytest.approx(min(1.0, p + width), abs=1e-15)


@pytest.mark.parametrize("n, mean, var", [(3, 0.2, 0.16), (500, 0.7, 0.21), (40, 1.0, 0.0)])
def test_reward_bound_is_the_published_formula(n, mean, var):
    L = math.log(n / (0.05 / 216))
    expected = min(1.0, mean + 2 * math.sqrt(var * L / n) + 6 * L / n)  # lines 69-72
    assert float(ucrl2b_reward_upper(mean, var, n, L)) == pytest.approx(expected, rel=1e-14)
    assert float(ucrl2b_reward_upper(0.0, np.inf, 1, L)) == 1.0


def test_confidence_set_from_counts_and_reward_squares():
    """The agent's bounds from the simulator's statistics: population variance from the
    squares, untried pairs get the box [0, 1] and reward 1, options change the constants."""
    mdp = jm.envs.make("riverswim-6")
    spec = env_spec(mdp)
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, (6, 2, 6))
    counts[2, 1] = 0
    rewards = [[rng.random(c) for c in row] for row in counts.sum(-1)]
    sums = np.array([[r.sum() for r in row] for row in rewards])
    squares = np.array([[(r**2).sum() for r in row] for row in rewards])
    for full in (jm.get_agent("ucrl2b").config,
                 jm.get_agent("ucrl2b", c_sqrt=1.0, c_lin=3.0, delta_split=6).config):
        config = full.sets
        stats = EpisodeStats(jnp.asarray(counts), jnp.asarray(sums), jnp.asarray(squares),
                             jnp.asarray(10.0), jnp.int32(0), jnp.zeros(2))
        p_hat, r_tilde, box = config.confidence(stats, spec, full.delta)
        n = np.maximum(counts.sum(-1), 1)
        L = np.log(n / (0.05 / (config.delta_split * 12)))
        for s in range(6):
            for a in range(2):
                if counts[s, a].sum() == 0:
                    assert float(r_tilde[s, a]) == 1.0
                    np.testing.assert_array_equal(box.lower[s, a], 0.0)
                    np.testing.assert_array_equal(box.upper[s, a], 1.0)
                    continue
                var = np.var(rewards[s][a])
                expected = min(1.0, rewards[s][a].mean() + config.c_sqrt * math.sqrt(
                    var * L[s, a] / n[s, a]) + config.c_lin * L[s, a] / n[s, a])
                assert float(r_tilde[s, a]) == pytest.approx(expected, rel=1e-10)
                p = counts[s, a] / n[s, a]
                w = config.c_sqrt * np.sqrt(p * (1 - p) * L[s, a] / n[s, a]) + (
                    config.c_lin * L[s, a] / n[s, a])
                np.testing.assert_allclose(box.lower[s, a], np.maximum(p - w, 0), atol=1e-14)
                np.testing.assert_allclose(box.upper[s, a], np.minimum(p + w, 1), atol=1e-14)


def test_episodes_follow_the_doubling_rule():
    traj = jm.simulate(jm.envs.make("riverswim-6"), jm.get_agent("ucrl2b", ties="lowest"),
                       800, 4, seed=5, progress=False, record_path=True)
    state = jax.tree_util.tree_map(np.asarray, traj.agent_state)
    starts, stationary = replay_episodes(traj.states, traj.actions, 6, 2)
    np.testing.assert_array_equal(starts.sum(1), state.episodes)
    assert stationary.all()


def test_options_are_checked():
    for bad in ({"c_sqrt": -1.0}, {"c_lin": float("nan")}, {"delta_split": 0},
                {"ties": "x"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            jm.get_agent("ucrl2b", **bad)


def test_regret_agrees_with_the_numpy_loop():
    """Riverswim-6, T = 2,000 (the loop warm-starts EVI and stops on ``sp|u1 - u0|``)."""
    assert_same_mean(jax_final_regrets("ucrl2b", 24), numpy_final_regrets("ucrl2b", 24))
