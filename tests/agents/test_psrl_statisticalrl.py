"""PSRL (``jm.get_agent("psrl")``), the StatisticalRL ``PSRL.py`` rules with exact planning:
its episodes replayed from recorded paths, its regret against the NumPy loop."""

import jax
import numpy as np
import pytest
from published_runs import assert_same_mean, jax_final_regrets, numpy_final_regrets

import jaxmdp as jm
from jaxmdp.agents.ucrl import replay_episodes


def test_episodes_follow_the_doubling_rule():
    # 400 rounds, 3 replications, paths recorded: the program of agents/test_all_agents.py.
    traj = jm.simulate(jm.envs.make("riverswim-6"), jm.get_agent("psrl"), 400, 3, seed=2,
                       progress=False, record_path=True)
    state = jax.tree_util.tree_map(np.asarray, traj.agent_state)
    starts, stationary = replay_episodes(traj.states, traj.actions, 6, 2)
    np.testing.assert_array_equal(starts.sum(1), state.episodes)
    assert stationary.all()
    # The episode's N_k are the visits before its start.
    last = 400 - 1 - np.argmax(starts[:, ::-1], axis=1)
    assert np.all(state.episodes >= 3)
    for r in range(3):
        visits = np.zeros((6, 2), int)
        np.add.at(visits, (traj.states[r, :last[r]], traj.actions[r, :last[r]]), 1)
        np.testing.assert_array_equal(state.episode_visits[r], visits)


def test_fewer_episodes_than_tsde():
    """The doubling rule starts far fewer episodes than TSDE's (45 against 194 per run at
    T = 10^4 in the published measurement)."""
    env = jm.envs.make("riverswim-6")
    psrl = jm.simulate(env, jm.get_agent("psrl"), 2000, 4, seed=0, progress=False)
    tsde = jm.simulate(env, jm.get_agent("tsde"), 2000, 4, seed=0, progress=False)
    assert np.all(np.asarray(psrl.agent_state.episodes) * 2
                  < np.asarray(tsde.agent_state.episodes))


def test_options_are_checked():
    with pytest.raises(ValueError, match="batching"):
        jm.get_agent("psrl", batching="x")
    with pytest.raises(ValueError, match="known_rewards"):
        jm.get_agent("psrl", known_rewards=1)


def test_regret_agrees_with_the_numpy_loop():
    assert_same_mean(jax_final_regrets("psrl", 40), numpy_final_regrets("psrl", 40))
