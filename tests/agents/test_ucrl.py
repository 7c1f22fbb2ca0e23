"""UCRL2 and KL-UCRL (jaxmdp.agents.ucrl): options, the doubling rule and Jaksch et al.'s
episode bound, the first action, regret against the NumPy loop, cond_any vs lax.cond.
(Sharding: tests/test_sharding.py, on the runs checked here.)"""

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from shared_runs import SHARED_RUNS, shared_run

import jaxmdp as jm
from jaxmdp import cli, runner
from jaxmdp.agents import env_spec
from jaxmdp.agents.ucrl import kl_ucrl_constants, replay_episodes

ROOT = Path(__file__).resolve().parents[2]
HORIZON, REPLICATIONS = 2000, 16
for _name in ("ucrl2", "kl_ucrl"):  # the shared runs below: chunk_size=HORIZON, paths
    assert SHARED_RUNS[_name][:3] == ("riverswim-6", _name, {})
    assert SHARED_RUNS[_name][3] == dict(horizon=HORIZON, replications=REPLICATIONS, seed=0,
                                         record_path=True, chunk_size=HORIZON)

# Mean pseudo-regret at T = 2000 on riverswim-6 (deterministic rewards, learned; delta
# 0.05; EVI to span < 1/sqrt(t_k)) and its standard error, from
#   python -m tests.reference.ucrl --horizon 2000 --replications 256 --seed 0
NUMPY_REGRET = {"ucrl2": (1747.5782, 2.3683), "kl_ucrl": (1510.4891, 7.5002)}


@pytest.fixture(scope="module")
def runs():
    """riverswim-6, seed 0 (tests/shared_runs.py; also sharded in test_sharding.py)."""
    return {name: shared_run(name) for name in ("ucrl2", "kl_ucrl")}


def test_registered_with_defaults():
    assert {"ucrl2", "kl_ucrl"} <= set(jm.agent_names())
    agent = jm.get_agent("kl_ucrl")
    assert agent.config.ball == "kl" and agent.config.known_rewards is False
    assert agent.config.delta == 0.05 and agent.config.epsilon_rule == "sqrt"
    assert jm.get_agent("ucrl2", delta=0.1) == jm.get_agent("ucrl2", delta=0.1)


@pytest.mark.parametrize("option, value", [
    ("delta", 0.0), ("delta", 1.5), ("delta", "0.1"), ("epsilon_rule", "log"),
    ("max_evi_steps", 0), ("max_evi_steps", 2.5), ("known_rewards", 1), ("cond", "select"),
])
def test_bad_options_raise_naming_them(option, value):
    with pytest.raises(ValueError, match=f"{option} .*got {value!r}"):
        jm.get_agent("ucrl2", **{option: value})


def test_learned_rewards_outside_unit_interval_raise():
    base = jm.envs.make("riverswim-6")
    mdp = jm.MDP(base.P, 2.0 * base.R)
    with pytest.raises(ValueError, match=r"rewards in \[0, 1\], got R\[5, 1\] = 2.0"):
        jm.simulate(mdp, "kl_ucrl", 10, 1, progress=False)
    jm.get_agent("ucrl2", known_rewards=True).check(env_spec(mdp))  # no error
    gaussian = jm.MDP(base.P, base.R, reward_law="gaussian", reward_sigma=0.1)
    with pytest.raises(ValueError, match="'gaussian' reward law"):
        jm.get_agent("ucrl2").check(env_spec(gaussian))


def test_kl_constants_match_the_formula():
    S, A, t, delta = 6, 2, 1000, 0.05
    log_t = math.log(t)
    B = math.log(2 * math.e * S**2 * A * log_t / delta)
    C_P = S * (B + math.log(B + 1 / log_t) * (1 + 1 / (B + 1 / log_t)))
    C_R = math.log(4 * S * A * log_t / delta) / 1.99
    np.testing.assert_allclose(kl_ucrl_constants(S, A, float(t), delta), (C_P, C_R))
    np.testing.assert_allclose(kl_ucrl_constants(S, A, jnp.float64(t), delta), (C_P, C_R))
    # t_k < 2 uses T = 2 (ln ln t finite), as the StatisticalRL code does.
    np.testing.assert_allclose(kl_ucrl_constants(S, A, 1.0, delta),
                               kl_ucrl_constants(S, A, 2.0, delta))


@pytest.mark.parametrize("name", ["ucrl2", "kl_ucrl"])
def test_episodes_follow_the_doubling_rule_and_jaksch_bound(runs, name):
    traj = runs[name]
    S, A = 6, 2
    state = jax.tree_util.tree_map(np.asarray, traj.agent_state)
    states, actions = np.asarray(traj.states), np.asarray(traj.actions)
    episodes = state.episodes
    starts, stationary = replay_episodes(states, actions, S, A)
    # Every episode start is the doubling rule on the path (or round 1), every episode
    # plays one stationary policy, and the agent counted the same episodes.
    np.testing.assert_array_equal(starts.sum(1), episodes)
    assert stationary.all()
    # Jaksch et al. (2010), Proposition 18: m <= S A log2(8 T / (S A)).
    assert episodes.max() <= S * A * math.log2(8 * HORIZON / (S * A))
    # The agent's N_k is the visits before the last start.
    last = HORIZON - 1 - np.argmax(starts[:, ::-1], axis=1)
    for r in range(REPLICATIONS):
        visits = np.zeros((S, A), int)
        np.add.at(visits, (states[r, :last[r]], actions[r, :last[r]]), 1)
        np.testing.assert_array_equal(state.episode_visits[r], visits)
        assert state.t_k[r] == last[r] + 1
    assert state.evi_unconverged.sum() == 0
    np.testing.assert_array_equal(traj.unconverged, state.evi_unconverged)  # reported


@pytest.mark.parametrize("name", ["ucrl2", "kl_ucrl"])
def test_first_action_in_state_zero_is_the_lowest_index(runs, name):
    # At t = 1 every pair is untried: all optimistic values tie, the lowest index wins.
    traj = runs[name]
    np.testing.assert_array_equal(traj.states[:, 0], 0)
    np.testing.assert_array_equal(traj.actions[:, 0], 0)


@pytest.mark.parametrize("name", ["ucrl2", "kl_ucrl"])
def test_mean_regret_matches_the_numpy_loop(runs, name):
    final = np.asarray(runs[name].pseudo_regret[:, -1])
    se = final.std(ddof=1) / math.sqrt(len(final))
    ref, ref_se = NUMPY_REGRET[name]
    assert abs(final.mean() - ref) <= 4 * math.hypot(se, ref_se), (final.mean(), se, ref)


@pytest.mark.parametrize("cond", ["lax", "cond_any", "compact"])
def test_compact_planning_equals_plain_cond(runs, cond):
    # UCRL2's default (cond="chunked": only the replications that start an episode plan,
    # one at a time) against a plain lax.cond (every replication plans every round under
    # vmap), cond_any and cond_compact. Same keys (same replication count), a shorter
    # horizon.
    horizon = 400
    other = jm.simulate(jm.envs.make("riverswim-6"), jm.get_agent("ucrl2", cond=cond),
                        horizon, REPLICATIONS, seed=0, progress=False, record_path=True,
                        chunk_size=horizon)
    np.testing.assert_array_equal(other.actions, runs["ucrl2"].actions[:, :horizon])
    np.testing.assert_array_equal(other.pseudo_regret,
                                  runs["ucrl2"].pseudo_regret[:, :horizon])


# --- A new variant of the family: one file, a sets class and one registration ----------
CERTAINTY_EQUIVALENCE = '''
import dataclasses

import jax.numpy as jnp

import jaxmdp as jm
from jaxmdp.agents.options import option, real
from jaxmdp.agents.ucrl import EVISets, ucrl_variant


@dataclasses.dataclass(frozen=True)
class CertaintyEquivalence(EVISets):
    """No optimism: the empirical MDP itself (L1 radius 0, r_hat), rewards scaled."""

    ball = "l1"
    scale: float = option(1.0, real(low=0.0, low_open=True))

    def confidence(self, stats, spec, delta):
        n = jnp.maximum(stats.counts.sum(-1), 1).astype(stats.t_k.dtype)
        return (stats.counts / n[..., None], self.scale * stats.reward_sums / n,
                jnp.zeros(n.shape, stats.t_k.dtype))


factory = ucrl_variant(CertaintyEquivalence, "certainty_equivalence", epsilon_rule="t",
                       max_evi_steps=100_000)
jm.register_agent("certainty_equivalence", factory)
'''


def test_a_new_variant_is_a_sets_class_and_one_registration(tmp_path, monkeypatch):
    (tmp_path / "certainty.py").write_text(CERTAINTY_EQUIVALENCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    assert cli.main(["run", "--env", "riverswim-6", "--agents", "certainty:factory",
                        "--horizon", "40", "--replications", "2", "--out", str(out),
                        "--no-progress", "--x64"]) == 0
    _, data = runner.load_results(out / "results.npz")
    assert data["pseudo_regret_certainty_equivalence"].shape == (2, 40)
    agent = jm.get_agent("certainty_equivalence", scale=0.5)
    assert agent != jm.get_agent("certainty_equivalence") and hash(agent) != hash(
        jm.get_agent("certainty_equivalence"))
    assert agent.config.ball == "l1" and agent.config.epsilon_rule == "t"
    with pytest.raises(ValueError, match="scale must be a positive finite number"):
        jm.get_agent("certainty_equivalence", scale=0.0)
    # With initial counts of at least 50 per pair, the first episode (the empirical MDP,
    # planned by EVI with radius 0: value iteration) lasts the 40 rounds; its greedy policy
    # is the optimal policy of the empirical MDP that policy iteration finds.
    mdp = jm.envs.make("riverswim-6")
    rng = np.random.default_rng(7)
    counts = rng.integers(50, 60, (6, 2, 6)).astype(np.int32)
    sums = rng.uniform(0, 1, (6, 2)) * counts.sum(-1)
    traj = jm.simulate(mdp, "certainty_equivalence", 40, 2, seed=0, progress=False,
                       initial_counts=counts, initial_reward_sums=sums)
    assert np.all(np.asarray(traj.agent_state.episodes) == 1)
    assert np.all(np.asarray(traj.agent_state.evi_unconverged) == 0)
    n = counts.sum(-1)
    _, _, policy = jm.solve_average_reward(jm.MDP(counts / n[..., None], sums / n))
    np.testing.assert_array_equal(traj.agent_state.policy, np.stack([policy] * 2))


def test_settings_are_options_that_enter_equality_and_hash():
    assert jm.get_agent("ucrl2", episode_chunk=8) != jm.get_agent("ucrl2")
    assert hash(jm.get_agent("ucrl2", episode_chunk=8)) != hash(jm.get_agent("ucrl2"))
    assert jm.get_agent("psrl", episode_chunk=8) != jm.get_agent("psrl")
    for name in ("ucrl2", "kl_ucrl", "ucrl2b", "ucrl3", "scal", "scal_plus", "tucrl",
                 "tsde", "psrl"):
        assert jm.get_agent(name, episode_chunk=4).config.episode_chunk == 4
        for bad in (0, "8", True, 2.0):
            with pytest.raises(ValueError, match="episode_chunk must be 'auto' or a positive "
                                                 f"integer, got {bad!r}"):
                jm.get_agent(name, episode_chunk=bad)
        # "auto" (the default) is fixed by the number of replications of a run: one row
        # per pass below 1,000 replications, eight from 1,000; a given number stays.
        agent = jm.get_agent(name)
        assert agent.config.episode_chunk == "auto"
        assert [agent.for_replications(n).config.episode_chunk
                for n in (1, 999, 1000, 10**5)] == [1, 1, 8, 8]
        assert agent.for_replications(1000) == jm.get_agent(name, episode_chunk=8)
        fixed = jm.get_agent(name, episode_chunk=2)
        assert fixed.for_replications(5000) == fixed
    assert jm.get_agent("ucb").for_replications(5000) == jm.get_agent("ucb")  # no such option


class _Fixed(Exception):
    """Raised by the spy below once the agent is fixed (nothing compiles)."""


def test_simulate_and_sweep_fix_the_options_by_the_replications(monkeypatch):
    seen = []

    def spy(self, replications):
        seen.append((self.name, replications))
        raise _Fixed

    monkeypatch.setattr(jm.Agent, "for_replications", spy)
    mdp = jm.envs.make("riverswim-6")
    with pytest.raises(_Fixed):
        jm.simulate(mdp, "ucrl2", 20, 3000, progress=False)
    with pytest.raises(_Fixed):
        jm.sweep(mdp, "psrl", {"episode_chunk": [1, 2]}, 20, 3000, progress=False)
    assert seen == [("ucrl2", 3000), ("psrl", 3000)]
