"""Sweeps (jm.sweep, jaxmdp sweep): number options as a batch axis, compiled once.

The programs are those of tests/agents/test_all_agents.py (riverswim-6, T = 400, 3
replications, seed 4, a sweep of two points), loaded from the suite's compilation cache
where that module ran first. Point-by-point equality with ``simulate`` for every agent
with a number option is checked there."""

import sys

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import cli, runner, sweeps

SIMULATE_MODULE = sys.modules["jaxmdp._simulate"]
HORIZON, REPLICATIONS, SEED = 400, 3, 4


def test_numbers_are_traced_one_program_for_any_numbers():
    mdp = jm.envs.make("riverswim-6")
    chunk = SIMULATE_MODULE._run_chunk
    jm.sweep(mdp, "ucrl2", {"delta": [0.05, 0.025]}, HORIZON, REPLICATIONS, seed=SEED,
             progress=False)
    compiled = chunk._cache_size()
    again = jm.sweep(mdp, "ucrl2", {"delta": [0.2, 0.001]}, HORIZON, REPLICATIONS,
                     seed=SEED, progress=False)
    assert chunk._cache_size() == compiled  # other numbers: the same program
    for delta in (0.2, 0.001):  # simulate too: one program for every delta
        jm.simulate(mdp, jm.get_agent("ucrl2", delta=delta), HORIZON, REPLICATIONS,
                    seed=SEED, progress=False, record_path=True)
    simulated = chunk._cache_size()
    one = jm.simulate(mdp, jm.get_agent("ucrl2", delta=0.001), HORIZON, REPLICATIONS,
                      seed=SEED, progress=False, record_path=True)
    assert chunk._cache_size() == simulated
    np.testing.assert_array_equal(again.pseudo_regret[1], one.pseudo_regret)
    assert again.pseudo_regret.shape == (2, REPLICATIONS, HORIZON)


def test_grid_points_and_structure():
    assert jm.grid_points({"delta": [0.1, 0.2], "c_lin": [1.0]}) == [
        {"delta": 0.1, "c_lin": 1.0}, {"delta": 0.2, "c_lin": 1.0}]
    assert jm.grid_points([{"delta": 0.1}]) == [{"delta": 0.1}]
    for bad in ({}, [], {"delta": []}, [0.1]):
        with pytest.raises(ValueError, match="grid"):
            jm.grid_points(bad)
    mdp = jm.envs.make("riverswim-6")
    with pytest.raises(ValueError, match=r"structure.*\['ties'\]"):
        jm.sweep(mdp, "ucrl2", {"ties": ["lowest", "random_least_visited"]}, 10, 1)
    with pytest.raises(ValueError, match="delta must be a number in"):
        jm.sweep(mdp, "ucrl2", {"delta": [0.1, 2.0]}, 10, 1)
    with pytest.raises(ValueError, match="agent must be the name"):
        jm.sweep(mdp, jm.get_agent("ucrl2"), {"delta": [0.1]}, 10, 1)


def test_memory_is_checked_before_the_run():
    mdp = jm.envs.make("riverswim-6")
    with pytest.raises(ValueError, match=r"grid: 4 points x 3 runs need about .* at most 1 "
                                         r"points of 3 runs fit"):
        jm.sweep(mdp, "ucrl2", {"delta": [0.1, 0.2, 0.3, 0.4]}, HORIZON, REPLICATIONS,
                 memory_bytes=7_000, progress=False)


def test_cli_sweep_resumes_computing_only_the_missing_points(tmp_path, monkeypatch):
    calls = []
    original = sweeps.sweep

    def counted(mdp, agent, points, *args, **kwargs):
        calls.append(list(points))
        return original(mdp, agent, points, *args, **kwargs)

    monkeypatch.setattr(sweeps, "sweep", counted)
    out = tmp_path / "sweep"
    common = ["sweep", "--env", "riverswim-6", "--agent", "ucrl2", "--horizon", "400",
              "--replications", "3", "--seed", "4", "--record-every", "1", "--out",
              str(out), "--no-progress", "--x64"]
    assert cli.main(common + ["--grid", "delta=0.05,0.025"]) == 0
    settings, first = runner.load_results(out / "results.npz")
    assert settings["sweep"]["points"] == [{"delta": 0.05}, {"delta": 0.025}]
    # One more point: only it is computed (the sweep of test_all_agents' other agent
    # points has the same shape); the saved points are kept as they were.
    assert cli.main(common + ["--grid", "delta=0.05,0.025,0.2"]) == 0
    assert calls == [[{"delta": 0.05}, {"delta": 0.025}], [{"delta": 0.2}]]
    settings, arrays = runner.load_results(out / "results.npz")
    np.testing.assert_array_equal(arrays["pseudo_regret"][:2], first["pseudo_regret"])
    assert arrays["pseudo_regret"].shape == (3, 3, 400)
    table = (out / "table.md").read_text()
    assert "| 0.2 |" in table and (out / "sweep.png").is_file()
    # Everything saved: nothing is computed; another setting recomputes.
    assert cli.main(common + ["--grid", "delta=0.2,0.05"]) == 0
    assert len(calls) == 2
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--env", "riverswim-6", "--agent", "ucrl2"])  # no --grid
    assert cli.main(common + ["--grid", "delta"]) == 2  # not OPTION=VALUES
