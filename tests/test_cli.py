"""The command line (jaxmdp.cli) and the shared runner (jaxmdp.runner)."""

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import cli, runner


def test_run_writes_results_table_and_figure_and_resumes(tmp_path, capsys, monkeypatch):
    # T = 2000 (recorded every 2 rounds), 64 replications: the programs of test_simulate's
    # RiverSwim-6 runs, compiled once (tests/conftest.py sends both modules to one worker).
    out = tmp_path / "rs6"
    args = ["run", "--env", "riverswim-6", "--agents", "ucb,ps", "--horizon", "2000",
            "--replications", "64", "--out", str(out), "--no-progress", "--x64"]
    assert cli.main(args) == 0
    for name in ("results.npz", "table.csv", "table.md", "regret.png"):
        assert (out / name).stat().st_size > 0
    settings, data = runner.load_results(out / "results.npz")
    assert (settings["environment"], settings["horizon"], settings["replications"],
            settings["record_every"], settings["mdp"]["dtype"]) == (
        "riverswim-6", 2000, 64, 2, "float64")
    assert list(settings["agents"]) == ["ucb", "ps"]
    assert data["pseudo_regret_ucb"].shape == (64, 1000)
    np.testing.assert_array_equal(data["times"], np.arange(2, 2001, 2))
    np.testing.assert_allclose(data["lower_bound"], 39.0596, atol=1e-4)
    table = (out / "table.csv").read_text().splitlines()
    assert table[0].startswith("agent,horizon,replications,mean,ci95,median")
    assert [line.split(",")[0] for line in table[1:]] == ["ucb", "ps"]
    # The same run again reuses both agents; the saved numbers are unchanged.
    capsys.readouterr()
    assert cli.main(args) == 0
    assert capsys.readouterr().out.count("reusing") == 2
    np.testing.assert_array_equal(runner.load_npz(out / "results.npz")["pseudo_regret_ps"],
                                  data["pseudo_regret_ps"])
    # Without --out the results go to results/<env> in the current directory, and the
    # command says so: saved results moved there are found and redrawn (--plot-only).
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    out.rename(tmp_path / "results" / "riverswim-6")
    (tmp_path / "results" / "riverswim-6" / "regret.png").unlink()
    capsys.readouterr()
    assert cli.main(["run", "--env", "riverswim-6", "--agents", "ucb,ps", "--plot-only"]) == 0
    assert "results written to results/riverswim-6" in capsys.readouterr().out
    assert (tmp_path / "results" / "riverswim-6" / "regret.png").stat().st_size > 0


def test_run_help_names_the_default_output_folder(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "default: results/ENV" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "riverswim-seven"],
         "--env: unknown environment name 'riverswim-seven'; known names: "),
        (["--env", "missing.npz"], "--env: no MDP file at 'missing.npz'"),
        (["--env", "no/such/file"], "--env: no MDP file at 'no/such/file'"),
        (["--agents", "ucb,greedy"], r"one of \[.*'ucb'.*\], got 'greedy'"),
        (["--sigma", "0.5"], "--sigma needs --reward-law gaussian"),
        (["--reward-law", "gaussian", "--sigma", "-1"], "reward_sigma must be a positive"),
    ],
)
def test_run_reports_bad_input(tmp_path, capsys, args, message):
    base = {"--env": "riverswim-6", "--agents": "ucb", "--out": str(tmp_path)}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = ["run", "--horizon", "10", "--replications", "2", "--no-progress"]
    for flag, value in base.items():
        argv += [flag, value]
    assert cli.main(argv) == 2
    import re

    assert re.search(message, capsys.readouterr().err)


def test_run_on_a_saved_mdp(tmp_path, capsys):
    # A user's 3-state MDP with a mask and Bernoulli rewards, saved, then run by file name.
    rng = np.random.default_rng(3)
    P = rng.random((3, 2, 3))
    P /= P.sum(axis=-1, keepdims=True)
    mask = np.array([[True, True], [True, False], [True, True]])
    mdp = jm.MDP(P, rng.random((3, 2)), mask, reward_law="bernoulli")
    file = mdp.save(tmp_path / "my_mdp.npz")
    out = tmp_path / "out"
    argv = ["run", "--env", str(file), "--agents", "ucb", "--horizon", "20",
            "--replications", "2", "--seed", "4", "--out", str(out), "--no-progress",
            "--x64"]
    assert cli.main(argv) == 0
    settings, data = runner.load_results(out / "results.npz")
    assert settings["environment"] == f"file:{file}"
    assert settings["mdp"]["reward_law"] == "bernoulli"
    reference = jm.simulate(jm.MDP.load(file), "ucb", 20, 2, 4, record_every=1,
                            progress=False)
    np.testing.assert_array_equal(data["pseudo_regret_ucb"],
                                  np.asarray(reference.pseudo_regret, np.float32))
    np.testing.assert_array_equal(data["regret_ucb"],
                                  np.asarray(reference.regret, np.float32))
    assert (out / "regret.png").stat().st_size > 0
    # A corrupt file is refused, naming the argument and the array.
    bad = tmp_path / "bad.npz"
    with open(bad, "wb") as f:
        np.savez(f, P=-P, R=np.zeros((3, 2)), mask=mask, reward_law=np.asarray("bernoulli"),
                 reward_sigma=np.asarray(0.0))
    capsys.readouterr()
    argv[2] = str(bad)
    assert cli.main(argv) == 2
    assert "--env: " in (err := capsys.readouterr().err) and "P must be non-negative" in err


def test_run_rejects_a_zero_horizon(tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["run", "--env", "riverswim-6", "--agents", "ucb", "--horizon", "0",
                  "--out", str(tmp_path)])


def test_envs_and_agents_listings(monkeypatch, capsys):
    monkeypatch.setattr(jm.envs, "names", lambda: ["riverswim-6", "garnet-S-A-b"])
    assert cli.main(["envs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:5] == ["riverswim-6", "6", "2", "0.875003", "39.06"]
    assert out[2].strip().startswith("S=6, A=2: RiverSwim")  # the description line
    assert out[3].split()[:3] == ["garnet-100-4-5", "100", "4"]
    assert cli.main(["agents"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"ucb", "dmed", "olp", "ps"} <= set(listed)


def test_parse_agents_configures_only_agents_with_the_option():
    agents = dict(runner.parse_agents("ucb, PS", known_rewards=False))
    assert agents["ucb"] == jm.get_agent("ucb", known_rewards=False)
    assert agents["ps"].config.known_rewards is False
    with pytest.raises(ValueError, match="at least one agent"):
        runner.parse_agents(" , ")


def test_runner_rejects_duplicate_labels():
    with pytest.raises(ValueError, match="distinct labels"):
        runner.run_agents(None, jm.envs.make("paper-mdp"), agents=["ucb", "ucb"], horizon=5,
                          replications=1, progress=False)


# --- A user's agent, registered by a script, run by name ------------------------------
USER_AGENTS = '''
import jax
import jax.numpy as jnp
import jaxmdp as jm


def lowest_action(*, offset: int = 0):
    """Plays the (offset-th) lowest admissible action of the current state."""
    def init(key, spec, config):
        return ()

    def step(key, state, obs, spec, config):
        admissible = spec.mask[obs.state]
        ranks = jnp.cumsum(admissible) - 1
        choice = jnp.where(admissible & (ranks == config), size=1, fill_value=0)[0][0]
        return jnp.where(jnp.any(admissible & (ranks == config)), choice,
                         jnp.argmax(admissible)).astype(jnp.int32), state

    return jm.Agent("lowest_action", init, step, config=offset)
'''


def test_a_user_agent_runs_by_name_in_simulate_run_and_bench(tmp_path, monkeypatch, capsys):
    (tmp_path / "user_agents.py").write_text(USER_AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # sys.path is restored after the test
    mdp = jm.envs.make("paper-mdp")
    # jaxmdp run --agents module:factory registers it under the agent's own name.
    out = tmp_path / "run"
    assert cli.main(["run", "--env", "paper-mdp", "--agents", "user_agents:lowest_action",
                     "--horizon", "40", "--replications", "2", "--out", str(out),
                     "--no-progress", "--x64"]) == 0
    assert "lowest_action" in jm.agent_names()
    _, data = runner.load_results(out / "results.npz")
    # Action 0 in every state of paper-mdp: its regret is the sum of the gaps of action 0
    # along the chain of P[:, 0], recomputed here from the gaps.
    traj = jm.simulate(mdp, "lowest_action", 40, 2, seed=0, progress=False,
                       record_path=True)
    assert np.all(np.asarray(traj.actions) == 0)
    gaps = np.asarray(jm.gaps(mdp))
    np.testing.assert_allclose(traj.pseudo_regret[:, -1],
                               gaps[np.asarray(traj.states), 0].sum(-1), rtol=1e-12)
    np.testing.assert_allclose(data["pseudo_regret_lowest_action"], traj.pseudo_regret,
                               rtol=1e-6)  # the results file keeps float32
    # Its options are the factory's keyword parameters.
    assert jm.get_agent("lowest_action", offset=1).config == 1
    with pytest.raises(ValueError, match=r"agent 'lowest_action' takes the options "
                                         r"\['offset'\], got options \['speed'\]"):
        jm.get_agent("lowest_action", speed=2)
    # A second registration of the name raises; the same reference again is accepted.
    with pytest.raises(ValueError, match="'lowest_action' is already registered"):
        jm.register_agent("lowest_action", lambda: jm.get_agent("ucb"))
    # jaxmdp bench takes the reference as well (at the tests' size).
    from jaxmdp import bench

    monkeypatch.setitem(bench.SIZES, "default", bench.SIZES["tiny"])
    assert cli.main(["bench", "--out", str(tmp_path / "b"), "--agents",
                     "user_agents:lowest_action", "--suite", "paper-mdp",
                     "--no-progress"]) == 0
    board = (tmp_path / "b" / "leaderboard.csv").read_text()
    assert "lowest_action" in board and "paper-mdp" in board
    capsys.readouterr()
