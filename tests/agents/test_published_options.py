"""The options that reproduce published rules in the existing baselines: UCRL2 / KL-UCRL
``ties="random_least_visited"`` and IMED-RL ``index="statisticalrl"`` / ``"authors"``,
against the NumPy loops of the same rules and direct evaluations."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from published_runs import assert_same_mean, jax_final_regrets, nb, numpy_final_regrets

import jaxmdp as jm
from jaxmdp.agents.imed import imed_index
from jaxmdp.agents.ucrl import tied_choices


def test_tied_choices_keep_the_least_visited_exact_maximisers():
    q = jnp.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])  # [S=1, A=3, S'=2]
    u = jnp.array([0.0, 1.0])
    r = jnp.array([[1.0, 1.0, 0.0]])  # values 1, 1, 1: all tie
    mask = jnp.ones((1, 3), bool)
    visits = jnp.array([[4, 2, 2]])
    got = tied_choices(q, r, u, mask, visits, "random_least_visited")
    assert got.tolist() == [[False, True, True]]
    got = tied_choices(q, r, u, mask, visits, "random_most_visited")
    assert got.tolist() == [[True, False, False]]
    expected = nb.tied_policy(np.array([[1.0, 1.0, 1.0]]), np.array([[4, 2, 2]]))
    assert expected == [[1, 2]]


def test_random_ties_resample_at_every_step():
    """At t = 1 every pair is untried and ties: the first action is uniform over the two
    actions across replications (lowest index with the default rule)."""
    env = jm.envs.make("riverswim-6")
    traj = jm.simulate(env, jm.get_agent("ucrl2", ties="random_least_visited"), 3, 64,
                       seed=0, progress=False, record_path=True)
    first = np.asarray(traj.actions)[:, 0]
    assert 16 < first.sum() < 48
    default = jm.simulate(env, jm.get_agent("ucrl2"), 3, 8, seed=0, progress=False,
                          record_path=True)
    assert np.all(np.asarray(default.actions)[:, 0] == 0)


@pytest.mark.parametrize("name", ["ucrl2", "kl_ucrl"])
def test_ties_option_is_checked_and_default_is_lowest(name):
    assert jm.get_agent(name).config.ties == "lowest"
    assert jm.get_agent(name).config.warm_start is False
    with pytest.raises(ValueError, match="ties"):
        jm.get_agent(name, ties="random")
    with pytest.raises(ValueError, match="warm_start"):
        jm.get_agent(name, warm_start=1)


def test_warm_start_carries_the_values_between_episodes():
    """With ``warm_start`` the state keeps the last EVI values: after a run they are the
    values EVI returns from them on the last episode's confidence set (a fixed point up
    to the tolerance). Without it the state has the same structure (one state pytree for
    every option), and EVI starts each episode from zeros."""
    env = jm.envs.make("riverswim-6")
    traj = jm.simulate(env, jm.get_agent("ucrl2", warm_start=True), 300, 2, seed=0,
                       progress=False)
    values = np.asarray(traj.agent_state.values)
    assert values.shape == (2, 6) and np.all(values.min(axis=1) == 0)
    assert np.any(values > 0)
    cold = jm.simulate(env, jm.get_agent("ucrl2"), 300, 2, seed=0, progress=False)
    assert (jax.tree_util.tree_structure(cold.agent_state)
            == jax.tree_util.tree_structure(traj.agent_state))


def test_ucrl2_random_ties_agree_with_the_numpy_loop():
    assert_same_mean(
        jax_final_regrets("ucrl2", 24, ties="random_least_visited", epsilon_rule="t",
                          warm_start=True),
        numpy_final_regrets("ucrl2", 24))


def test_kl_ucrl_random_ties_agree_with_the_numpy_loop():
    assert_same_mean(
        jax_final_regrets("kl_ucrl", 16, ties="random_least_visited", epsilon_rule="t",
                          warm_start=True),
        numpy_final_regrets("kl_ucrl", 16))


def test_kl_ucrl_search_up_bug_agrees_with_the_numpy_loop():
    options = dict(ties="random_least_visited", epsilon_rule="t", warm_start=True,
                   search_up_bug=True)
    assert jm.get_agent("kl_ucrl", **options).config.cond == "chunked"
    finals = jax_final_regrets("kl_ucrl", 16, **options)
    assert_same_mean(finals, numpy_final_regrets("kl_ucrl", 16, search_up_bug=True))
    # Its closed-form maximiser plans alike in any batch: the default "chunked" (8
    # replications a pass) plays the runs of "compact" (buckets of 4 to 256) bit for bit.
    np.testing.assert_array_equal(
        finals, jax_final_regrets("kl_ucrl", 16, cond="compact", **options))
    with pytest.raises(ValueError, match=r"agent 'ucrl2' takes the options .*, got options "
                                         r"\['search_up_bug'\]"):
        jm.get_agent("ucrl2", search_up_bug=True)


def test_imed_indices_are_the_published_formulas():
    """``x = ln B + K``: the published maximisation of ``E log(B - (V - mu) y)`` over
    ``y in [0, B / (B - mu))``, evaluated on a grid, equals ln B + jaxmdp's K."""
    p = jnp.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]])
    r = jnp.array([0.1, 0.4])
    n = jnp.array([7.0, 30.0])
    bias = jnp.array([0.3, 1.2, 0.0])
    level = 1.6
    paper = imed_index(p, r, n, bias, level, False, "paper")
    srl = imed_index(p, r, n, bias, level, False, "statisticalrl")
    authors = imed_index(p, r, n, bias, level, False, "authors")
    B = 1.0 + 1.2
    for a in range(2):
        # The joint law of (reward in {0, 1}, next state): values V = reward + bias.
        w = np.concatenate([(1 - float(r[a])) * np.asarray(p[a]), float(r[a]) * np.asarray(p[a])])
        V = np.concatenate([np.asarray(bias), 1 + np.asarray(bias)])
        ys = np.linspace(0, B / (B - level), 200_001)[:-1]
        x = max(float(w @ np.log(B - (V - level) * y)) for y in ys[::50])
        K = (float(paper[a]) - math.log(float(n[a]))) / float(n[a])
        assert x == pytest.approx(math.log(B) + K, abs=1e-4)
        nx = float(n[a]) * (math.log(B) + K)
        assert float(srl[a]) == pytest.approx(nx + math.log(float(n[a])), rel=1e-12)
        assert float(authors[a]) == pytest.approx(nx + math.log(math.log(B) + K), rel=1e-12)


def test_published_imed_indices_at_and_above_the_level():
    """Below the level the published indices take the paper's ``K`` (``x = ln B + K``);
    at or above it they are ``ln n``, the ``K`` they would not use left unsolved."""
    p = jnp.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
    r = jnp.array([0.1, 0.4, 0.2])
    n = jnp.array([7.0, 30.0, 12.0])
    bias = jnp.array([0.3, 1.2, 0.0])
    values = r + p @ bias  # 0.76, 0.82, 0.35
    level = float(values[1])  # action 1 at the level, 2 and 0 below
    paper = imed_index(p, r, n, bias, level, False, "paper")
    B = 1.0 + 1.2
    for index in ("statisticalrl", "authors"):
        got = imed_index(p, r, n, bias, level, False, index)
        assert float(got[1]) == pytest.approx(math.log(30.0), rel=1e-12)
        for a in (0, 2):
            K = (float(paper[a]) - math.log(float(n[a]))) / float(n[a])
            assert K > 0
            x = math.log(B) + K
            tail = math.log(float(n[a])) if index == "statisticalrl" else math.log(x)
            assert float(got[a]) == pytest.approx(float(n[a]) * x + tail, rel=1e-12)


@pytest.mark.parametrize("index, loop", [("statisticalrl", "imed_rl_statisticalrl"),
                                         ("authors", "imed_rl_authors")])
def test_imed_indices_agree_with_the_numpy_loop(index, loop):
    assert_same_mean(jax_final_regrets("imed_rl", 16, index=index),
                     numpy_final_regrets(loop, 16))


def _masked_riverswim():
    # RiverSwim-6 without "left" in state 3 (still communicating: "right" leaves 3 both
    # ways); 400 rounds, 3 replications, paths recorded: the shape and settings of
    # agents/test_all_agents.py, whose programs serve the agents' default options here.
    mdp = jm.envs.make("riverswim-6")
    mask = np.asarray(mdp.mask).copy()
    mask[3, 0] = False
    return jm.MDP(mdp.P, mdp.R, jnp.asarray(mask))


@pytest.mark.parametrize("options", [("ucrl2b", {}), ("ucrl3", {}), ("ucrl3", {"lazy": True}),
                                     ("psrl", {}), ("imed_rl", {"index": "authors"}),
                                     ("kl_ucrl", {"ties": "random_least_visited"})])
def test_new_agents_run_batched_and_respect_the_mask(options):
    name, opts = options
    traj = jm.simulate(_masked_riverswim(), jm.get_agent(name, **opts), 400, 3, seed=1,
                       progress=False, record_path=True)
    states, actions = np.asarray(traj.states), np.asarray(traj.actions)
    assert np.any(states == 3)
    assert not np.any((states == 3) & (actions == 0))
    assert np.all(np.isfinite(np.asarray(traj.regret)))
