"""``jaxmdp bench`` (jaxmdp/bench.py): files written, values against independent
recomputations, resume, errors."""

import csv
import json
from unittest import mock

import jax
import numpy as np
import pytest
from scipy import stats

import jaxmdp as jm
from jaxmdp import bench, cli, runner

SIZE = bench.Size(horizon=40, replications=2, instances=3)
SUITE = "paper-mdp,garnet-4-2-2"
AGENTS = ["ucb", "ucrl2"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    # Each environment's compiled programs are released once its agents are done (a long
    # suite otherwise exhausts the process's memory mappings).
    with mock.patch.object(jax, "clear_caches", wraps=jax.clear_caches) as clear:
        rows = bench.run_bench(out, agents=AGENTS, suite=SUITE, size=SIZE, progress=False,
                               quiet=True)
    assert clear.call_count == len(SUITE.split(","))
    return out, rows


def test_files_are_written(folder):
    out, _ = folder
    for name in ("leaderboard.csv", "leaderboard.md", "bench.json",
                 "figures/paper-mdp.png", "figures/garnet-4-2-2_x3.png",
                 "figures/hardness-ucb.png", "figures/hardness-ucrl2.png",
                 "results/paper-mdp.npz", "results/paper-mdp.json",
                 "results/garnet-4-2-2_x3.npz", "results/garnet-4-2-2_x3.hardness.json"):
        assert (out / name).is_file(), name
    record = json.loads((out / "bench.json").read_text())
    assert record["agents"] == AGENTS and record["size"]["instances"] == 3
    with open(out / "leaderboard.csv") as f:
        table = list(csv.DictReader(f))
    assert [row["environment"] for row in table] == ["all"] * 2 + (
        ["paper-mdp"] * 2 + ["garnet-4-2-2 x3"] * 2)
    assert {row["rewards"] for row in table} == {"known", "learned"}
    markdown = (out / "leaderboard.md").read_text()
    assert "Horizon T = 40; 2 replications per MDP; ensembles of 3 instances" in markdown
    assert "Agents told the mean rewards" in markdown
    assert "Agents that learn the rewards" in markdown
    assert "stratified percentile bootstrap" in markdown


def test_leaderboard_values_against_recomputations(folder):
    out, rows = folder
    settings, data = runner.load_results(out / "results" / "garnet-4-2-2_x3.npz")
    assert settings["environment"] == "garnet-4-2-2 x3"
    final = np.asarray(data["pseudo_regret_ucb"][..., -1], np.float64)
    assert final.shape == (3, 2)
    # The instances' constants, one by one with the solver.
    constants = np.array([float(jm.regret_lower_bound(jm.envs.make("garnet-4-2-2",
                                                                    seed=s)).constant)
                          for s in range(3)])
    np.testing.assert_allclose(data["lower_bound"], constants, rtol=1e-9)
    row = next(r for r in rows if r["environment"] == "garnet-4-2-2 x3"
               and r["agent"] == "ucb")
    assert row["runs"] == 6 and row["instances"] == 3 and row["horizon"] == 40
    np.testing.assert_allclose(row["regret"], final.mean(), rtol=1e-12)
    scores = final / (constants[:, None] * np.log(40))
    iqm = stats.trim_mean(scores.ravel(), 0.25)  # 6 scores: trims 1 from each end
    np.testing.assert_allclose(row["normalised_iqm"], iqm, rtol=1e-9)
    assert row["normalised_low"] <= iqm <= row["normalised_high"]
    # The suite's row pools the 4 instances (1 + 3) of both environments.
    paper = runner.load_results(out / "results" / "paper-mdp.npz")[1]
    pooled = np.concatenate([
        np.asarray(paper["pseudo_regret_ucb"][:, -1]) / (float(paper["lower_bound"])
                                                         * np.log(40)),
        scores.ravel()])
    overall = next(r for r in rows if r["environment"] == "all" and r["agent"] == "ucb")
    assert overall["instances"] == 4 and overall["runs"] == 8
    np.testing.assert_allclose(overall["normalised_iqm"], stats.trim_mean(pooled, 0.25),
                               rtol=1e-6)
    # Two leaderboards, each ranked within its reward setting: ucb is told the rewards,
    # ucrl2 learns them and is normalised by the constant for learned rewards.
    assert [(r["agent"], r["rewards"], r["rank"]) for r in rows
            if r["environment"] == "all"] == [("ucb", "known", 1), ("ucrl2", "learned", 1)]
    learned = np.array([float(jm.regret_lower_bound(jm.envs.make("garnet-4-2-2", seed=s),
                                                    known_rewards=False).constant)
                        for s in range(3)])
    hardness = json.loads((out / "results" / "garnet-4-2-2_x3.hardness.json").read_text())
    np.testing.assert_allclose(hardness["lower_bound_learned"], learned, rtol=1e-9)
    final = np.asarray(data["pseudo_regret_ucrl2"][..., -1], np.float64)
    row = next(r for r in rows if r["environment"] == "garnet-4-2-2 x3"
               and r["agent"] == "ucrl2")
    assert row["rewards"] == "learned"
    np.testing.assert_allclose(
        row["normalised_iqm"],
        stats.trim_mean((final / (learned[:, None] * np.log(40))).ravel(), 0.25), rtol=1e-9)


def test_resume_reuses_and_force_recomputes(folder, monkeypatch):
    out, rows = folder
    calls = []
    real = runner.simulate

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "simulate", counting)
    again = bench.run_bench(out, agents=AGENTS, suite=SUITE, size=SIZE, progress=False,
                            quiet=True)
    assert calls == []
    for a, b in zip(rows, again, strict=True):
        assert a["environment"] == b["environment"] and a["agent"] == b["agent"]
        np.testing.assert_array_equal(a["normalised_iqm"], b["normalised_iqm"])
    # Another agent is added to the saved files; the others are reused.
    bench.run_bench(out, agents=AGENTS + ["ps"], suite=SUITE, size=SIZE, progress=False,
                    quiet=True)
    assert calls == ["ps", "ps"]
    bench.run_bench(out, agents=["ucb"], suite="paper-mdp", size=SIZE, progress=False,
                    quiet=True, force=True)
    assert calls == ["ps", "ps", "ucb"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(suite=""), "suite must name a suite"),
    (dict(suite=[]), "suite must name a suite"),
    (dict(suite="no-such-suite"), "suite: 'no-such-suite' is neither a suite"),
    (dict(agents="ucb,nope"), "agents: "),
    (dict(agents=""), "agents must name at least one agent"),
    (dict(size="huge"), "size must be one of"),
    (dict(size=bench.Size(1, 2, 3)), "size must have a horizon >= 2"),
])
def test_bad_input(tmp_path, kwargs, message):
    kwargs = dict(dict(suite="paper-mdp", size=SIZE, agents=["ucb"]), **kwargs)
    with pytest.raises(ValueError, match=message):
        bench.run_bench(tmp_path, progress=False, quiet=True, **kwargs)


def test_suites_and_default_agents():
    assert [e.name for e in bench.entries("standard")] == ["paper-mdp", "riverswim-6",
                                                            "garnet-10-2-3"]
    assert bench.entries(["random-5-2", "deepsea-4"]) == [
        bench.Entry("random-5-2", True), bench.Entry("deepsea-4", False)]
    assert bench._agents(None) == jm.agent_names()  # the registry, whatever it holds


def test_cli_bench(monkeypatch, tmp_path, capsys):
    assert cli.main(["bench", "--out", str(tmp_path), "--suite", ""]) == 2
    assert "suite must name a suite" in capsys.readouterr().err
    seen = {}
    monkeypatch.setattr(bench, "run_bench", lambda out, **kwargs: seen.update(kwargs))
    assert cli.main(["bench", "--out", str(tmp_path), "--agents", "ucb,ps", "--full",
                     "--no-progress", "--force"]) == 0
    assert seen == dict(agents="ucb,ps", suite="standard", size="full", seed=0,
                        progress=False, force=True)
