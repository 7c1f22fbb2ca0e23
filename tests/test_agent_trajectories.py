"""The recorded runs of seven agents on three environments (tests/data/agent_trajectories*.npz,
made by tests/data/make_agent_trajectories.py) are re-simulated bit for bit.

The last bits of a run depend on the machine's linear algebra: jaxlib's CPU LAPACK calls
(the planners' linear solves) go through SciPy's OpenBLAS, whose kernels are chosen for the
processor at run time, and on grid-4-room a difference in the last bit of a bias vector
breaks an exact tie the other way. The runs were therefore recorded under each OpenBLAS
kernel family seen on the project's machines
(``RECORDINGS``), and a run must equal one of those recordings bit for bit: every array of
it, from the same recording.
"""

from pathlib import Path

import numpy as np
import pytest

from tests.data import make_agent_trajectories as recorded

DATA_DIR = Path(__file__).resolve().parent / "data"

#: Recording file -> the OpenBLAS kernels (``OPENBLAS_CORETYPE``) it was recorded under.
RECORDINGS = {
    "agent_trajectories.npz": ("Haswell", "Zen"),
    "agent_trajectories_skylakex.npz": ("SkylakeX",),
}


@pytest.fixture(scope="module")
def recordings():
    return {name: dict(np.load(DATA_DIR / name)) for name in RECORDINGS}


@pytest.mark.parametrize("agent,options,env", recorded.runs(),
                         ids=[recorded.key(*r) for r in recorded.runs()])
def test_same_states_actions_and_regret_as_recorded(agent, options, env, recordings):
    name = recorded.key(agent, options, env)
    run = dict(zip(("states", "actions", "pseudo_regret"), recorded.run(agent, options, env)))
    matches = [file for file, data in recordings.items()
               if all(np.array_equal(run[field], data[f"{name}/{field}"]) for field in run)]
    if not matches:  # the closest recording's first difference, for the failure message
        data = recordings[next(iter(RECORDINGS))]
        for field, values in run.items():
            np.testing.assert_array_equal(values, data[f"{name}/{field}"], err_msg=field)
    assert matches
    # The recorded runs are informative: each plays more than one action.
    assert len(np.unique(run["actions"])) > 1


def test_the_recordings_differ_where_the_kernels_break_a_tie_differently(recordings):
    # The two recordings are not copies of one run: on grid-4-room the kernels' last bits
    # send MDP-UCB along another path (so matching "one of them" is a real check).
    first, second = recordings.values()
    assert not np.array_equal(first["ucb/grid-4-room/actions"],
                              second["ucb/grid-4-room/actions"])
    assert np.array_equal(first["ucb/riverswim-6/actions"], second["ucb/riverswim-6/actions"])


@pytest.mark.parametrize("env", ["riverswim-6", "paper-mdp"])
def test_imed_rl_default_planner_plays_the_recorded_runs(env, recordings):
    # The recordings are IMED-RL with LU evaluations (planner="full"). Its default planner
    # (Sherman-Morrison updates of the previous inverse) visits the same policies; where no
    # index tie hangs on the bias's last bits it plays the recorded runs bit for bit. (On
    # grid-4-room three actions at the level, each played once, tie exactly, and the last
    # bits pick another of them.)
    name = recorded.key("imed_rl", {}, env)
    states, actions, pseudo = recorded.run("imed_rl", {"planner": "incremental"}, env)
    assert any(np.array_equal(actions, data[f"{name}/actions"])
               and np.array_equal(states, data[f"{name}/states"])
               and np.array_equal(pseudo, data[f"{name}/pseudo_regret"])
               for data in recordings.values())
