"""The regret-experiment runner (jaxmdp.runner): named settings saved beside the arrays,
read back by name, and resuming by comparing them."""

import dataclasses
import importlib.metadata
import json
import math
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import runner

HORIZON, REPLICATIONS = 30, 3


def _paper():
    return jm.envs.make("paper-mdp")


@pytest.fixture
def fake_simulate(monkeypatch):
    """Replaces the simulator seen by the runner with one that records its calls and
    returns curves that identify the call (its number), so reuse is visible."""
    calls = []

    def simulate(mdp, agent, horizon, replications, seed, initial_counts, *,
                 record_every, progress, devices, optimum):
        agent = jm.get_agent(agent)
        calls.append((agent.name, agent.config, horizon, replications, seed))
        k = horizon // record_every
        value = np.full((replications, k), float(len(calls)))
        return SimpleNamespace(pseudo_regret=value, regret=-value,
                               times=record_every * np.arange(1, k + 1))

    monkeypatch.setattr(runner, "simulate", simulate)
    return calls


def _run(path, agents=("ucb", "ps"), mdp=None, **changes):
    options = dict(horizon=HORIZON, replications=REPLICATIONS, seed=5, record_every=1,
                   progress=False, lower_bound=1.5, env="paper-mdp")
    options.update(changes)
    return runner.run_agents(path, _paper() if mdp is None else mdp, agents=list(agents),
                             **options)


def test_settings_and_arrays_round_trip(tmp_path):
    # A real run: the saved arrays are the simulator's own, the settings name each option.
    path = tmp_path / "r.npz"
    agents = ["ucb", ("ps-learned", jm.get_agent("ps", known_rewards=False))]
    data = runner.run_agents(path, _paper(), agents=agents, horizon=HORIZON,
                             replications=REPLICATIONS, seed=5, record_every=3,
                             progress=False, env="paper-mdp")
    settings, arrays = runner.load_results(path)
    assert set(arrays) == set(data)
    for key in data:
        np.testing.assert_array_equal(arrays[key], data[key])
    reference = jm.simulate(_paper(), jm.get_agent("ps", known_rewards=False), HORIZON,
                            REPLICATIONS, 5, record_every=3, progress=False)
    np.testing.assert_array_equal(arrays["pseudo_regret_ps-learned"],
                                  np.asarray(reference.pseudo_regret, np.float32))
    np.testing.assert_array_equal(arrays["times"], [3, 6, 9, 12, 15, 18, 21, 24, 27, 30])
    np.testing.assert_allclose(arrays["lower_bound"],
                               jm.regret_lower_bound(_paper()).constant, rtol=1e-12)
    # Named settings, also in the plain JSON file beside the arrays.
    assert settings == json.loads(runner.settings_path(path).read_text())
    assert runner.settings_path(path) == tmp_path / "r.json"
    assert settings["jaxmdp_version"] == importlib.metadata.version("jaxmdp")
    assert settings["results_version"] == runner.RESULTS_VERSION
    assert settings["format"] == runner.SETTINGS_FORMAT
    assert (settings["environment"], settings["horizon"], settings["replications"],
            settings["seed"], settings["record_every"], settings["initial_counts"]) == (
        "paper-mdp", HORIZON, REPLICATIONS, 5, 3, None)
    assert settings["mdp"] | {"sha256": None} == {
        "num_states": 3, "num_actions": 2, "dtype": "float64",
        "reward_law": "deterministic", "reward_sigma": 0.0, "sha256": None}
    assert list(settings["agents"]) == ["ucb", "ps-learned"]
    config = jm.get_agent("ucb").config
    assert settings["agents"]["ucb"]["name"] == "ucb"
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    assert list(settings["agents"]["ucb"]["options"]) == list(fields)
    for field, value in fields.items():
        if value is None or isinstance(value, bool | int | float | str):
            assert settings["agents"]["ucb"]["options"][field] == value, field
    assert settings["agents"]["ps-learned"]["name"] == "ps"
    assert settings["agents"]["ps-learned"]["options"]["known_rewards"] is False


def test_resume_with_equal_settings_reuses_every_agent(tmp_path, fake_simulate, capsys):
    path = tmp_path / "r.npz"
    first = _run(path)
    assert len(fake_simulate) == 2
    capsys.readouterr()
    # The environment's label is informational: an equal MDP under another name is reused.
    again = _run(path, env="file:elsewhere.npz")
    assert len(fake_simulate) == 2
    assert capsys.readouterr().out.count("reusing") == 2
    for key in first:
        np.testing.assert_array_equal(again[key], first[key])
    # A new agent is computed and added; the saved ones stay.
    _run(path, agents=("ucb", "ps", "olp"))
    assert [call[0] for call in fake_simulate] == ["ucb", "ps", "olp"]
    settings, arrays = runner.load_results(path)
    assert list(settings["agents"]) == ["ucb", "ps", "olp"]
    np.testing.assert_array_equal(arrays["pseudo_regret_ucb"], first["pseudo_regret_ucb"])
    assert float(arrays["pseudo_regret_olp"][0, 0]) == 3.0


@pytest.mark.parametrize(
    "changes, setting",
    [
        ({"horizon": HORIZON + 1}, f"horizon: saved {HORIZON}, requested {HORIZON + 1}"),
        ({"replications": 2}, f"replications: saved {REPLICATIONS}, requested 2"),
        ({"seed": 6}, "seed: saved 5, requested 6"),
        ({"record_every": 2}, "record_every: saved 1, requested 2"),
        ({"initial_counts": np.ones((3, 2, 3), int)}, "initial_counts: saved null"),
        ({"mdp": _paper().with_reward_law("bernoulli")},
         'mdp.reward_law: saved "deterministic", requested "bernoulli"'),
        ({"mdp": jm.MDP(_paper().P, _paper().R * 0.5)}, "mdp.sha256: saved "),
    ],
)
def test_resume_with_another_run_setting_recomputes_every_agent(tmp_path, fake_simulate,
                                                                 capsys, changes, setting):
    path = tmp_path / "r.npz"
    _run(path)
    capsys.readouterr()
    data = _run(path, **changes)
    out = capsys.readouterr().out
    assert f"saved with other settings ({setting}" in out
    assert "reusing" not in out
    assert len(fake_simulate) == 4
    settings, arrays = runner.load_results(path)
    assert float(arrays["pseudo_regret_ucb"][0, 0]) == 3.0
    assert float(data["pseudo_regret_ps"][0, 0]) == 4.0
    requested = runner.run_settings(changes.get("mdp", _paper()), ["ucb", "ps"],
                                    horizon=changes.get("horizon", HORIZON),
                                    replications=changes.get("replications", REPLICATIONS),
                                    seed=changes.get("seed", 5),
                                    record_every=changes.get("record_every", 1),
                                    initial_counts=changes.get("initial_counts"),
                                    env="paper-mdp")
    assert runner.settings_difference(settings, requested) is None


def test_resume_with_other_agent_options_recomputes_that_agent(tmp_path, fake_simulate,
                                                               capsys):
    path = tmp_path / "r.npz"
    _run(path)
    capsys.readouterr()
    _run(path, agents=["ucb", ("ps", jm.get_agent("ps", known_rewards=False))])
    out = capsys.readouterr().out
    assert "ucb: reusing" in out
    assert ("ps: saved with other options (agents.ps.options.known_rewards: saved true, "
            "requested false)") in out
    assert fake_simulate[-1][0] == "ps" and fake_simulate[-1][1].known_rewards is False
    settings, arrays = runner.load_results(path)
    assert settings["agents"]["ps"]["options"]["known_rewards"] is False
    assert float(arrays["pseudo_regret_ucb"][0, 0]) == 1.0
    assert float(arrays["pseudo_regret_ps"][0, 0]) == 3.0


def test_force_recomputes_and_a_file_without_settings_is_recomputed(tmp_path, fake_simulate,
                                                                    capsys):
    path = tmp_path / "r.npz"
    _run(path)
    _run(path, force=True)
    assert len(fake_simulate) == 4
    # Forcing one agent recomputes it alone and keeps the file's other agents.
    _run(path, agents=["ucb"], force=True)
    assert [call[0] for call in fake_simulate] == ["ucb", "ps", "ucb", "ps", "ucb"]
    settings, arrays = runner.load_results(path)
    assert sorted(settings["agents"]) == ["ps", "ucb"]
    assert float(arrays["pseudo_regret_ucb"][0, 0]) == 5.0
    assert float(arrays["pseudo_regret_ps"][0, 0]) == 4.0
    # A results file of the positional format (a 'config' array, no settings file).
    old = tmp_path / "old.npz"
    runner.save_npz_atomic(old, config=np.array([HORIZON, REPLICATIONS, 5, 1, 0, 2]),
                           pseudo_regret_ucb=np.zeros((REPLICATIONS, HORIZON)))
    with pytest.raises(ValueError, match="no settings file .*old.json.*positional 'config'"):
        runner.load_results(old)
    capsys.readouterr()
    _run(old, agents=["ucb"])
    assert "recomputing every agent" in capsys.readouterr().out
    settings, arrays = runner.load_results(old)
    assert "config" not in arrays and float(arrays["pseudo_regret_ucb"][0, 0]) == 6.0


def test_load_results_rejects_settings_of_another_run(tmp_path, fake_simulate):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    _run(a)
    _run(b, seed=9)
    runner.settings_path(a).write_text(runner.settings_path(b).read_text())
    with pytest.raises(ValueError, match="a.json' does not belong to the arrays of"):
        runner.load_results(a)
    runner.settings_path(b).write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        runner.load_results(b)
    with pytest.raises(FileNotFoundError, match="no results file at .*c.npz"):
        runner.load_results(tmp_path / "c.npz")
    # Interrupted between the two writes: the arrays of the new run, the settings of the
    # old one; resuming recomputes instead of pairing them.
    _run(b, seed=9)
    calls = len(fake_simulate)
    _run(a)
    assert len(fake_simulate) == calls + 2


class _Options(NamedTuple):
    known_rewards: bool = True
    widths: tuple = (1, 2.5)
    floor: float = math.inf
    rule: object = np.sqrt


def test_agent_settings_of_a_user_agent_are_json_and_compare_equal():
    base = jm.get_agent("ucb")
    agent = jm.Agent("mine", base.init_fn, base.step_fn, _Options())
    settings = runner.agent_settings(agent)
    assert settings == {"name": "mine", "options": {
        "known_rewards": True, "widths": [1, 2.5], "floor": "inf",
        "rule": "numpy.sqrt"}}
    assert json.loads(json.dumps(settings)) == settings
    other = jm.Agent("mine", base.init_fn, base.step_fn, _Options(widths=(1, 3.0)))
    mdp = _paper()
    a = runner.run_settings(mdp, [agent], horizon=5, replications=1)
    b = runner.run_settings(mdp, [other], horizon=5, replications=1)
    assert runner.settings_difference(a, a) is None
    assert runner.settings_difference(a, b) == ("agents.mine.options.widths: saved [1, 2.5], "
                                                "requested [1, 3.0]")
    # The informational settings and agents only one side has are not differences.
    c = runner.run_settings(mdp, [agent, "ps"], horizon=5, replications=1, env="x")
    assert runner.settings_difference(a, c) is None
    # A config that is neither a NamedTuple nor a dataclass is kept whole.
    plain = jm.Agent("plain", base.init_fn, base.step_fn, 0.25)
    assert runner.agent_settings(plain) == {"name": "plain", "options": {}, "config": 0.25}
