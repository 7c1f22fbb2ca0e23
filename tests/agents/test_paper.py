"""Tests for jaxmdp.agents.paper: the four per-step rules against the NumPy reference."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.agents import paper
from jaxmdp.random import gamma as _gamma
from tests.reference import paper as ref

NAMES = ["ucb", "dmed", "olp", "ps"]
RULES = {"ucb": paper.ucb_select_action, "dmed": paper.dmed_select_action,
         "olp": paper.olp_select_action, "ps": paper.ps_select_action}
PS_DRAWS = 4000  # posterior draws in the MDP-PS frequency test


@jax.jit
def _decide(key, t, x, counts, mdp):
    """Every agent's action at (t, x, counts): one compile for all tests."""
    est = jm.estimate(counts, mdp)
    return jnp.stack([RULES[n](key, t, x, counts, est) for n in NAMES])


def _decisions(counts, t, x, mdp=None, key=0):
    mdp = jm.envs.paper_mdp() if mdp is None else mdp
    out = _decide(jax.random.key(key), jnp.int32(t), jnp.int32(x),
                  jnp.asarray(counts, jnp.int32), mdp)
    return dict(zip(NAMES, np.asarray(out).tolist()))


def test_get_agent_names_and_objects():
    for name in NAMES:
        agent = jm.get_agent(name)
        assert agent.name == name
        assert jm.get_agent(agent) is agent
        assert agent.config == paper.PaperConfig()  # the paper's setting by default
    assert jm.get_agent("UCB") == jm.get_agent("ucb")
    assert set(NAMES) <= set(jm.agent_names())


def test_get_agent_unknown_name_lists_known():
    with pytest.raises(ValueError, match=r"one of \[.*'dmed', .*'ucb'.*\], got 'ucbx'"):
        jm.get_agent("ucbx")
    with pytest.raises(ValueError, match="got 3"):
        jm.get_agent(3)


@pytest.mark.parametrize(
    "name, options, match",
    [
        ("ucb", dict(known_rewards="no"), "known_rewards must be a bool, got 'no'"),
        ("ps", dict(known_rewards=1), "known_rewards must be a bool, got 1"),
        ("ucb", dict(force_untried=True), "force_untried applies to 'dmed' and 'ps'"),
        ("dmed", dict(planner="lu"), r"planner must be a jaxmdp.planning.Planner, "
                                     r"'incremental' or 'full', got 'lu'"),
        ("olp", dict(refresh_every=0), "refresh_every must be a positive integer, got 0"),
        ("ucb", dict(optimism=2), r"agent 'ucb' takes the options \['known_rewards', "
                                  r"'force_untried', 'planner', 'refresh_every'\], got "
                                  r"options \['optimism'\]"),
    ],
)
def test_get_agent_rejects_bad_options(name, options, match):
    with pytest.raises((ValueError, TypeError), match=match):
        jm.get_agent(name, **options)


def test_options_with_an_agent_object_are_rejected():
    with pytest.raises(ValueError, match="options can only configure a named agent"):
        jm.get_agent(jm.get_agent("ucb"), known_rewards=False)


def test_agents_are_hashable_static_config():
    assert hash(jm.get_agent("ucb")) == hash(jm.get_agent("ucb"))
    assert jm.get_agent("ps", known_rewards=False) == jm.get_agent("ps", known_rewards=False)
    assert jm.get_agent("ps", known_rewards=False) != jm.get_agent("ps")
    custom = jm.Agent("first", lambda key, spec, config: (),
                      lambda key, state, obs, spec, config: (jnp.int32(0), state))
    assert jm.get_agent(custom) is custom


def test_ucb_and_olp_play_untried_actions_first_lowest_index():
    counts = np.zeros((3, 2, 3), np.int32)
    got = _decisions(counts, 1, 0)
    assert (got["ucb"], got["olp"]) == (0, 0)
    counts[0, 0, 1] = 5  # action 0 tried in state 0, action 1 not
    got = _decisions(counts, 6, 0)
    assert (got["ucb"], got["olp"]) == (1, 1)
    counts[0, 1, 2] = 1  # both tried in state 0; state 1 untouched
    got = _decisions(counts, 7, 1)
    assert (got["ucb"], got["olp"]) == (0, 0)


def test_dmed_follows_the_paper_at_zero_counts():
    """Section 3.2: no untried-first rule; D = ln t / K~ - n with K~ = 0 at a tie."""
    counts = np.zeros((3, 2, 3), np.int32)
    # In an unvisited state p_hat is uniform for both actions, so the leader is the
    # action of larger reward (state 0: r = 0.13, 0.18) and the other one ties with it
    # (K~ = 0): D = 0 at t = 1 (ln t = 0: a* is played), D = +inf for t > 1.
    assert _decisions(counts, 1, 0)["dmed"] == 1
    assert _decisions(counts, 5, 0)["dmed"] == 0
    assert _decisions(counts, 5, 1)["dmed"] == 0  # state 1: r = 0.47, 0.71, leader 1
    # Action 1 tried many times and leading, action 0 untried: its discrepancy is
    # ln t / K~ > 0 and it is played, as the forced rule would too.
    counts[0, 1] = [300, 300, 300]
    assert _decisions(counts, 901, 0)["dmed"] == 0


def test_force_untried_restores_the_old_rule_for_dmed_and_ps():
    counts = jnp.zeros((3, 2, 3), jnp.int32)
    est = jm.estimate(counts, jm.envs.paper_mdp())
    keys = jax.random.split(jax.random.key(0), 40)

    @jax.jit
    def choices(keys):
        def one(key):
            return jnp.stack([
                paper.dmed_select_action(key, 1, 0, counts, est, force_untried=True),
                paper.ps_select_action(key, 1, 0, counts, est, force_untried=True),
                paper.ps_select_action(key, 1, 0, counts, est)])
        return jax.vmap(one)(keys)

    forced_dmed, forced_ps, ps = np.asarray(choices(keys)).T
    assert np.all(forced_dmed == 0) and np.all(forced_ps == 0)
    # Without it, MDP-DMED plays its leader at t = 1 (above) and MDP-PS samples: from a
    # uniform posterior both actions occur.
    assert set(ps.tolist()) == {0, 1}


def test_inadmissible_action_never_chosen():
    P = jm.envs.paper_mdp().P
    R = jnp.array([[0.13, 5.0], [0.47, 0.71], [0.89, 0.63]])  # tempting, inadmissible
    mask = np.array([[True, False], [True, True], [True, True]])
    mdp = jm.MDP(P, R, mask)
    counts = np.zeros((3, 2, 3), np.int32)
    counts[0, 0] = [3, 4, 3]
    for t in (11, 1000):
        assert set(_decisions(counts, t, 0, mdp).values()) == {0}


def _random_counts(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 30, size=(3, 2, 3))
    counts[rng.random((3, 2)) < 0.5] *= 8  # uneven visits, so the indices disagree
    counts[counts.sum(-1) == 0] = 1
    return counts.astype(np.int32)


@pytest.mark.parametrize("seed", range(12))
def test_deterministic_agents_match_numpy_reference(seed):
    """UCB, DMED and OLP pick the same action as the NumPy/SciPy reference."""
    counts = _random_counts(seed)
    t = int(counts.sum()) + 1
    rng = np.random.default_rng(seed)
    x = int(rng.integers(0, 3))
    got = _decisions(counts, t, x)
    S = 3
    n_xa = counts.sum(-1)
    p_hat = (counts + 1.0) / (n_xa[:, :, None] + S)
    log_nx = np.log(np.maximum(n_xa.sum(1), 1.0))
    good = n_xa >= (log_nx ** 2)[:, None]
    good = np.where(good.any(1, keepdims=True), good, True)
    mask = np.ones((3, 2), bool)
    _, bias, _ = ref.policy_iteration(p_hat, ref.PAPER_R, good)
    for name in ("ucb", "dmed", "olp"):
        expected = ref.select_action(name, None, t, x, counts, p_hat, ref.PAPER_R, mask, bias)
        assert got[name] == expected, (name, counts.tolist(), t, x)


def test_agents_disagree_somewhere():
    """The parametrized comparison above is not vacuous: agents do differ."""
    seen = set()
    for seed in range(12):
        counts = _random_counts(seed)
        rng = np.random.default_rng(seed)
        got = _decisions(counts, int(counts.sum()) + 1, int(rng.integers(0, 3)))
        seen.add(tuple(got[n] for n in ("ucb", "dmed", "olp")))
    assert len(seen) > 1


def test_dmed_plays_estimated_best_when_explored_enough():
    counts = np.zeros((3, 2, 3), np.int32)
    counts[:, :, :] = 400  # every action sampled a lot: no discrepancy is positive
    est = jm.estimate(counts, jm.envs.paper_mdp())
    values = est.mdp.R[0] + est.mdp.P[0] @ est.bias
    assert _decisions(counts, int(counts.sum()) + 1, 0)["dmed"] == int(jnp.argmax(values))


def test_dmed_explores_undersampled_challenger():
    counts = np.zeros((3, 2, 3), np.int32)
    counts[:, :, :] = 400
    est = jm.estimate(counts, jm.envs.paper_mdp())
    best = int(jnp.argmax(est.mdp.R[0] + est.mdp.P[0] @ est.bias))
    counts[0, 1 - best] = [1, 1, 0]  # the challenger barely sampled, ln t large
    assert _decisions(counts, 10**6, 0)["dmed"] == 1 - best


def test_ps_choice_frequencies_match_numpy_reference():
    """MDP-PS: the probability of each action matches Dirichlet(N+1) draws in NumPy.

    The Dirichlet draws come from the agents' gamma sampler (checked against scipy in
    tests/test_random.py); the index and argmax are MDP-PS's.
    """
    counts = np.array([[[3, 5, 2], [4, 1, 6]], [[2, 2, 2], [1, 3, 2]],
                       [[5, 1, 1], [2, 2, 3]]], np.int32)
    mdp = jm.envs.paper_mdp()
    est = jm.estimate(counts, mdp)
    n = PS_DRAWS
    alpha = np.tile((counts[0] + 1.0).ravel(), n)
    weights = np.asarray(_gamma_batch(jax.random.key(7), jnp.asarray(alpha)))
    q = weights.reshape(n, 2, 3)
    q = q / q.sum(-1, keepdims=True)
    bias = np.asarray(est.bias)
    index = np.asarray(est.mdp.R[0]) + q @ bias
    freq = float(np.mean(np.argmax(index, axis=1) == 1))
    rng = np.random.default_rng(7)
    ref_choices = [ref.select_action("ps", rng, 50, 0, counts.astype(float),
                                     np.asarray(est.mdp.P), ref.PAPER_R,
                                     np.ones((3, 2), bool), bias) for _ in range(n)]
    ref_freq = float(np.mean(np.asarray(ref_choices) == 1))
    # Two independent binomial proportions of n = 4000: sd of the difference < 0.0112.
    assert 0.05 < ref_freq < 0.95
    assert abs(freq - ref_freq) < 0.045


def test_ps_concentrated_posterior_plays_estimated_best():
    counts = np.full((3, 2, 3), 10**6, np.int32)
    counts[0, 0] = [10**6, 3 * 10**6, 10**6]
    est = jm.estimate(counts, jm.envs.paper_mdp())
    best = int(jnp.argmax(est.mdp.R[0] + est.mdp.P[0] @ est.bias))
    for key in range(5):
        assert _decisions(counts, 10**7, 0, key=key)["ps"] == best


@jax.jit
def _gamma_batch(key, shape):
    return _gamma(key, shape)


def _learned_case(seed, model):
    """Random counts and reward sums for learned-reward decisions, with the NumPy
    reference's estimates (r_hat, good actions, bias)."""
    counts = _random_counts(seed)
    rng = np.random.default_rng(100 + seed)
    n_xa = counts.sum(-1)
    if model == "bounded":
        sums = np.round(rng.uniform(0, 1, n_xa.shape) * n_xa)  # Bernoulli successes
    else:
        sums = rng.normal(0.5, 0.7, n_xa.shape) * n_xa
    r_hat = ref.reward_estimates(model, n_xa, sums, None)
    S = 3
    p_hat = (counts + 1.0) / (n_xa[:, :, None] + S)
    log_nx = np.log(np.maximum(n_xa.sum(1), 1.0))
    good = n_xa >= (log_nx ** 2)[:, None]
    good = np.where(good.any(1, keepdims=True), good, True)
    _, bias, _ = ref.policy_iteration(p_hat, r_hat, good)
    return counts, sums, r_hat, p_hat, bias, rng


@pytest.mark.parametrize("model, law", [("bounded", "bernoulli"), ("gaussian", "gaussian")])
@pytest.mark.parametrize("seed", range(6))
def test_learned_reward_rules_match_numpy_reference(seed, model, law):
    """UCB, DMED and OLP with learned rewards pick the reference's action (joint-law KL /
    L1 indices for rewards in [0, 1]; Gaussian joint KL and bonus for Gaussian rewards)."""
    sigma = 0.7
    counts, sums, r_hat, p_hat, bias, rng = _learned_case(seed, model)
    t = int(counts.sum()) + 1
    x = int(rng.integers(0, 3))
    mdp = jm.envs.paper_mdp()
    est = jm.estimate(jnp.asarray(counts), mdp, rewards=jnp.asarray(r_hat))
    np.testing.assert_allclose(est.bias, bias, atol=1e-10)
    info = paper.RewardInfo(law, sigma, jnp.asarray(sums))
    for name in ("ucb", "dmed", "olp"):
        got = int(RULES[name](jax.random.key(0), jnp.int32(t), jnp.int32(x),
                              jnp.asarray(counts), est, info))
        expected = ref.select_action(name, None, t, x, counts, p_hat, r_hat,
                                     np.ones((3, 2), bool), bias, model=model,
                                     reward_sums=sums, sigma=sigma)
        assert got == expected, (name, model, seed)


@pytest.mark.parametrize("model, law", [("bounded", "bernoulli"), ("gaussian", "gaussian")])
def test_learned_reward_ps_frequencies_match_numpy_reference(model, law):
    """MDP-PS with learned rewards: the frequency of each action matches the reference's
    Beta / Normal and Dirichlet draws."""
    sigma = 0.7
    counts, sums, r_hat, p_hat, bias, _ = _learned_case(3, model)
    counts[0] = [[2, 1, 1], [1, 2, 2]]  # few visits in state 0: a real choice
    n0 = counts[0].sum(-1)
    sums[0] = [2, 1] if model == "bounded" else [0.9 * n0[0], 0.5 * n0[1]]
    r_hat = ref.reward_estimates(model, counts.sum(-1), sums, None)
    mdp = jm.envs.paper_mdp()
    est = jm.estimate(jnp.asarray(counts), mdp, rewards=jnp.asarray(r_hat))
    bias = np.asarray(est.bias)
    info = paper.RewardInfo(law, sigma, jnp.asarray(sums))
    n = 2000
    keys = jax.random.split(jax.random.key(11), n)
    rule = jax.jit(jax.vmap(lambda k: paper.ps_select_action(
        k, jnp.int32(50), jnp.int32(0), jnp.asarray(counts), est, info)))
    freq = float(np.mean(np.asarray(rule(keys)) == 1))
    rng = np.random.default_rng(11)
    ref_choices = [ref.select_action("ps", rng, 50, 0, counts.astype(float), p_hat, r_hat,
                                     np.ones((3, 2), bool), bias, model=model,
                                     reward_sums=sums, sigma=sigma) for _ in range(n)]
    ref_freq = float(np.mean(np.asarray(ref_choices) == 1))
    # Two binomial proportions of n = 2000: sd of the difference < 0.016.
    assert 0.05 < ref_freq < 0.95
    assert abs(freq - ref_freq) < 0.064


def test_a_failed_solve_reaches_the_agent_and_is_counted():
    # Policy iteration from the lowest actions [0, 0, 0] needs a second evaluation to
    # confirm the optimal policy [1, 0, 0] of the rigged counts' estimate (section 5.1):
    # with max_steps=1 it stops at MAX_STEPS and the agent counts the round; with the
    # default it converges.
    from jaxmdp.agents import env_spec

    mdp = jm.envs.make("paper-mdp")
    spec = env_spec(mdp)
    counts = jnp.asarray(jm.envs.rigged_counts())
    obs = jm.Observation(jnp.int32(61), jnp.int32(0), jnp.int32(0), counts,
                         jnp.zeros(mdp.R.shape))
    key = jax.random.key(0)
    expected = jm.solve_average_reward(jm.estimate(counts, mdp).mdp)[2]
    for planner, failed in ((jm.planning.exact_planner(max_steps=1), 1),
                            (jm.planning.exact_planner(), 0)):
        agent = jm.get_agent("ucb", planner=planner)
        _, state = jax.jit(lambda s, o, a=agent: a.step(key, s, o, spec))(
            agent.init(key, spec), obs)
        assert int(state.unconverged) == failed
        if not failed:
            np.testing.assert_array_equal(state.policy, expected)
