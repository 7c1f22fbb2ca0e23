"""Runs recorded before the planning package and the shared agent rules existed
(tests/data/make_trajectories_pre_redesign.py) are re-simulated bit for bit."""

import sys
from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA_DIR))
import make_trajectories_pre_redesign as recorded  # noqa: E402

sys.path.remove(str(DATA_DIR))


@pytest.mark.parametrize("agent,options,env", recorded.runs(),
                         ids=[recorded.key(*r) for r in recorded.runs()])
def test_same_states_actions_and_regret_as_recorded(agent, options, env):
    data = np.load(DATA_DIR / "trajectories_pre_redesign.npz")
    name = recorded.key(agent, options, env)
    states, actions, pseudo = recorded.run(agent, options, env)
    np.testing.assert_array_equal(states, data[f"{name}/states"])
    np.testing.assert_array_equal(actions, data[f"{name}/actions"])
    np.testing.assert_array_equal(pseudo, data[f"{name}/pseudo_regret"])
    # The recorded runs are informative: each plays more than one action.
    assert len(np.unique(actions)) > 1
