"""The agent protocol: a new agent runs without touching the simulator; the redesign keeps
the paper's agents' behaviour; reward laws and learned rewards."""

import functools
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
import jaxmdp.agents
from jaxmdp.agents import Observation, env_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "ucb_olp_paths.npz"


# --- A small agent with its own state and its own planner, defined here --------------------
class GreedyState(NamedTuple):
    rounds: jax.Array  # rounds this agent has played
    visits: jax.Array  # its own count of n[x, a], to compare with the simulator's
    values: jax.Array  # its planner's relative values, [S]
    policy: jax.Array  # greedy policy of its last plan, [S]


def _greedy_init(key, spec, config):
    del key
    S, A = spec.num_states, spec.num_actions
    return GreedyState(jnp.int32(0), jnp.zeros((S, A), jnp.int32),
                       jnp.zeros(S, spec.rewards.dtype), jnp.zeros(S, jnp.int32))


def _greedy_step(key, state, obs, spec, config):
    """Certainty equivalence with its own planner: every `config` rounds, a few sweeps of
    relative value iteration on the empirical MDP (uniform where untried); plays the plan's
    action, or a random admissible action with probability 0.1."""
    counts = obs.counts.astype(state.values.dtype)
    n = counts.sum(-1, keepdims=True)
    p = jnp.where(n > 0, counts / jnp.maximum(n, 1), 1.0 / spec.num_states)

    def replan(values):
        def sweep(v, _):
            q = jnp.where(spec.mask, spec.rewards + p @ v, -jnp.inf)
            v = q.max(-1)
            return v - v[0], None

        values, _ = jax.lax.scan(sweep, values, None, length=20)
        q = jnp.where(spec.mask, spec.rewards + p @ values, -jnp.inf)
        return values, jnp.argmax(q, -1).astype(jnp.int32)

    values, policy = jax.lax.cond(obs.step % config == 0, replan,
                                  lambda v: (v, state.policy), state.values)
    explore_key, choice_key = jax.random.split(key)
    logits = jnp.where(spec.mask[obs.state], 0.0, -jnp.inf)
    random_action = jax.random.categorical(choice_key, logits).astype(jnp.int32)
    action = jnp.where(jax.random.uniform(explore_key) < 0.1, random_action,
                       policy[obs.state])
    visits = state.visits.at[obs.state, action].add(1)
    return action, GreedyState(state.rounds + 1, visits, values, policy)


GREEDY = jm.Agent("greedy", _greedy_init, _greedy_step, config=5)


def test_an_agent_defined_outside_the_package_runs_in_the_simulator():
    mdp = jm.envs.make("riverswim-6")
    kwargs = dict(horizon=300, replications=8, seed=3, progress=False, chunk_size=100)
    traj = jm.simulate(mdp, GREEDY, **kwargs)
    state = traj.agent_state
    # Its state went through the scan, vmap and the chunk loop untouched by the simulator.
    np.testing.assert_array_equal(state.rounds, 300)
    np.testing.assert_array_equal(state.visits, traj.counts.sum(-1))
    np.testing.assert_array_equal(traj.policy, state.policy)
    assert state.values.shape == (8, 6)
    # Deterministic, and chunking changes nothing.
    again = jm.simulate(mdp, GREEDY, **{**kwargs, "chunk_size": 300})
    np.testing.assert_array_equal(again.pseudo_regret, traj.pseudo_regret)
    np.testing.assert_array_equal(again.agent_state.values, state.values)
    # Its planner ran: in the last state "right" earns 1 and is the greedy choice.
    np.testing.assert_array_equal(np.asarray(state.policy)[:, -1], 1)


def test_an_agent_without_policy_has_none():
    def init(key, spec, config):
        return ()

    def step(key, state, obs, spec, config):
        return jnp.int32(0), state

    traj = jm.simulate(jm.envs.make("paper-mdp"), jm.Agent("zero", init, step), 20, 2,
                       progress=False, record_path=True)
    assert traj.policy is None and traj.agent_state == ()
    np.testing.assert_array_equal(traj.actions, 0)


def test_observation_rounds_are_unbatched_and_count_initial_transitions():
    seen = []

    def init(key, spec, config):
        return jnp.int32(0)

    def step(key, state, obs, spec, config):
        # Under vmap over replications the round counters are plain (unbatched) values.
        seen.append(isinstance(obs.t, jax.core.Tracer) and obs.t.ndim == 0)
        return jnp.int32(0), state + obs.t - obs.step

    rigged = jm.envs.rigged_counts()
    traj = jm.simulate(jm.envs.make("paper-mdp"), jm.Agent("t", init, step), 10, 3,
                       initial_counts=rigged, progress=False)
    # t = 61 + step for every round: the sum of (t - step) over 10 rounds is 610.
    np.testing.assert_array_equal(traj.agent_state, 10 * (int(rigged.sum()) + 1))
    assert seen and all(seen)


# --- The paper's agents keep their behaviour ------------------------------------------------
def _mdp(case):
    paper = jm.envs.make("paper-mdp")
    if case == "garnet":
        data = np.load(DATA)
        return jm.MDP(data["garnet_P"], data["garnet_R"])
    if case == "bernoulli":
        return paper.with_reward_law("bernoulli")
    if case == "shifted":  # rewards outside [0, 1]
        return jm.MDP(paper.P, paper.R + 1.0)
    return paper  # "paper", "rigged"


@functools.cache
def _regression_run(agent, case="paper"):
    """1,500 rounds, 4 replications, seed 7, paths recorded: the setting of the saved
    trajectories. Tests of other properties use it too, so that each agent's program
    (for an MDP's shape and reward law) compiles once."""
    counts = jm.envs.rigged_counts() if case == "rigged" else None
    return jm.simulate(_mdp(case), agent, 1500, 4, 7, initial_counts=counts, progress=False,
                       chunk_size=1500, record_path=True)


@functools.partial(jax.jit, static_argnames="agent")
def _replay(agent, mdp, counts0, states, actions, keys):
    """The agent's actions along saved paths: at round ``i`` of replication ``r`` it is
    handed the history of the saved run (state ``states[r, i]``, the counts of the saved
    transitions ``(states, actions, next states)`` so far, ``t``) and, for its random
    decisions, the key the simulator gave it in that run (the key chain of commit 3fc08ff:
    ``key, action_key, _ = split(key, 3)`` every round, non-partitionable threefry). The
    saved next state is ``states[r, i + 1]``; the agent's own action changes nothing."""
    spec = env_spec(mdp)
    t0 = jnp.sum(counts0).astype(jnp.int32) + 1

    def one(key, path, played):
        following = jnp.append(path[1:], 0)  # the last round's next state is not needed

        def step(carry, inputs):
            key, counts, sums, agent_state = carry
            index, x, a, y = inputs
            key, action_key, _ = jax.random.split(key, 3)
            obs = Observation(t=t0 + index, step=index, state=x, counts=counts,
                              reward_sums=sums)
            action, agent_state = agent.step(action_key, agent_state, obs, spec)
            carry = (key, counts.at[x, a, y].add(1), sums.at[x, a].add(mdp.R[x, a]),
                     agent_state)
            return carry, action

        init = (key, counts0, counts0.sum(-1) * mdp.R, agent.init(jax.random.fold_in(key, 1), spec))
        rounds = jnp.arange(path.shape[0], dtype=jnp.int32)
        return jax.lax.scan(step, init, (rounds, path, played, following))[1]

    return jax.vmap(one)(keys, states.astype(jnp.int32), actions.astype(jnp.int32))


def _replayed_actions(agent, case, states, actions):
    counts = jm.envs.rigged_counts() if case == "rigged" else np.zeros((3, 2, 3))
    mdp = _mdp(case)
    if case == "garnet":
        counts = np.zeros(mdp.P.shape)
    with jax.threefry_partitionable(False):
        keys = jax.random.split(jax.random.key(7), states.shape[0])
        return np.asarray(_replay(agent, mdp, jnp.asarray(counts, jnp.int32),
                                  jnp.asarray(states), jnp.asarray(actions), keys))


# The saved runs are 1,500 rounds of 4 replications, seed 7. They are replayed rather than
# re-simulated: the simulator's environment draws have changed since (counter-based round
# uniforms), while an agent's decisions depend only on the history and its own keys.
@pytest.mark.parametrize("name", ["ucb", "olp"])
@pytest.mark.parametrize("case", ["paper", "rigged", "garnet"])
def test_ucb_and_olp_replay_their_saved_paths(name, case):
    """The saved paths of tests/data/ucb_olp_paths.npz (simulated by jaxmdp at commit 3fc08ff)."""
    data = np.load(DATA)
    states, actions = data[f"{name}_{case}_states"], data[f"{name}_{case}_actions"]
    np.testing.assert_array_equal(
        _replayed_actions(jm.get_agent(name), case, states, actions), actions)
    # The saved pseudo-regret is the sum of the true gaps along the saved path.
    gaps = np.asarray(jm.gaps(_mdp(case)))
    np.testing.assert_allclose(np.cumsum(gaps[states, actions], axis=1),
                               data[f"{name}_{case}_pseudo_regret"], rtol=1e-12, atol=1e-12)


def test_force_untried_reproduces_the_old_dmed():
    data = np.load(DATA)
    states, actions = data["dmed_paper_states"], data["dmed_paper_actions"]
    forced = _replayed_actions(jm.get_agent("dmed", force_untried=True), "paper", states,
                               actions)
    np.testing.assert_array_equal(forced, actions)
    # The paper's rule (the default) decides differently along the same paths.
    default = _replayed_actions(jm.get_agent("dmed"), "paper", states, actions)
    assert not np.array_equal(default, actions)


def test_force_untried_ps_overrides_only_with_untried_actions():
    """MDP-PS's decisions depend on its Gamma sampler's draws, which have changed since
    commit 3fc08ff, so its old actions are not replayed bit for bit. Along the saved PS
    paths with the same keys, ``force_untried=True`` plays the lowest untried action
    wherever one exists and the default rule's action everywhere else."""
    data = np.load(DATA)
    states, actions = data["ps_paper_states"], data["ps_paper_actions"]
    forced = _replayed_actions(jm.get_agent("ps", force_untried=True), "paper", states,
                               actions)
    default = _replayed_actions(jm.get_agent("ps"), "paper", states, actions)
    # Visits of (x, a) before each round along the saved history.
    reps, horizon = states.shape
    visits = np.zeros((reps, 3, 2), int)
    expected = np.empty_like(forced)
    for i in range(horizon):
        x = states[:, i]
        untried = visits[np.arange(reps), x] == 0  # [reps, A]; every action is admissible
        expected[:, i] = np.where(untried.any(-1), np.argmax(untried, -1), default[:, i])
        visits[np.arange(reps), x, actions[:, i]] += 1
    np.testing.assert_array_equal(forced, expected)
    assert np.any(forced != default)  # the override happens


def test_known_rewards_ignore_the_reward_law_for_decisions():
    """With known rewards the agents see only transitions: drawing the rewards changes the
    realised regret, not the pseudo-regret (the draws use their own key)."""
    a = _regression_run("ps")  # PS: decisions use keys too
    b = _regression_run("ps", "bernoulli")
    np.testing.assert_array_equal(a.pseudo_regret, b.pseudo_regret)
    assert not np.array_equal(a.regret, b.regret)


# --- Reward laws ----------------------------------------------------------------------------
ONLY_ACTION = jm.Agent("only-action", lambda key, spec, config: (),
                       lambda key, state, obs, spec, config: (jnp.int32(0), state))


@pytest.mark.parametrize("law, sigma", [("bernoulli", None), ("gaussian", 0.7)])
def test_reward_draws_have_the_right_mean_and_variance(law, sigma):
    # One state, one action, mean 0.3: the realised regret of T rounds is T * 0.3 - sum r.
    mdp = jm.MDP(jnp.ones((1, 1, 1)), jnp.array([[0.3]]), reward_law=law, reward_sigma=sigma)
    T, reps = 400, 2000
    # The draws are the simulator's: an agent with nothing to decide (its program compiles
    # in a fraction of MDP-UCB's).
    traj = jm.simulate(mdp, ONLY_ACTION, T, reps, 5, progress=False)
    sums = np.asarray(traj.reward_sums[:, 0, 0])
    np.testing.assert_allclose(T * 0.3 - sums, np.asarray(traj.regret[:, -1]), atol=1e-9)
    var = 0.3 * 0.7 if law == "bernoulli" else sigma ** 2
    # Mean of reps sums: within 4 standard errors; variance within 15% (reps = 2000).
    assert abs(sums.mean() / T - 0.3) < 4 * np.sqrt(var / (T * reps))
    np.testing.assert_allclose(sums.var(ddof=1) / T, var, rtol=0.15)
    if law == "bernoulli":
        np.testing.assert_array_equal(sums, np.round(sums))  # 0/1 rewards
    np.testing.assert_array_equal(traj.pseudo_regret, 0.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(reward_law="poisson"), r"reward_law must be one of \['deterministic', "
                                     r"'bernoulli', 'gaussian'\], got 'poisson'"),
        (dict(reward_law="gaussian", reward_sigma=-0.5), "reward_sigma must be a positive"
                                                        " finite number.*got reward_sigma=-0.5"),
        (dict(reward_law="gaussian"), "got reward_sigma=None"),
        (dict(reward_law="bernoulli", reward_sigma=0.5), "reward_sigma is only used by the "
                                                         "Gaussian reward law"),
    ],
)
def test_reward_law_validation(kwargs, match):
    paper = jm.envs.make("paper-mdp")
    with pytest.raises(ValueError, match=match):
        jm.MDP(paper.P, paper.R, **kwargs)


def test_bernoulli_law_needs_means_in_unit_interval():
    paper = jm.envs.make("paper-mdp")
    with pytest.raises(ValueError, match=r"R must lie in \[0, 1\] for the Bernoulli reward law"
                                         r".*got R\[1, 1\] = 1.42"):
        jm.MDP(paper.P, paper.R * 2, reward_law="bernoulli")


def test_learning_unit_interval_rewards_needs_means_in_unit_interval():
    shifted = _mdp("shifted")
    with pytest.raises(ValueError, match=r"known_rewards=False .* models rewards in \[0, 1\], "
                                         r"got R\[0, 0\] = 1.13"):
        jm.simulate(shifted, jm.get_agent("ucb", known_rewards=False), 10, 2, progress=False)
    # Known rewards, or a Gaussian law, are fine.
    _regression_run("ucb", "shifted")


# --- Learned rewards: the estimates the agents plan with ------------------------------------
def test_learning_agents_plan_with_posterior_mean_rewards():
    paper = jm.envs.make("paper-mdp").with_reward_law("bernoulli")
    spec = env_spec(paper)
    agent = jm.get_agent("ucb", known_rewards=False)
    state = agent.init(jax.random.key(0), spec)
    counts = jnp.asarray(jm.envs.rigged_counts())
    sums = jnp.array([[3.0, 7.0], [0.0, 10.0], [9.0, 1.0]])  # n = 10 for every pair
    obs = Observation(jnp.int32(61), jnp.int32(0), jnp.int32(0), counts, sums)
    action, state = jax.jit(lambda s, o: agent.step(jax.random.key(1), s, o, spec))(state, obs)
    # The plan uses r_hat = (sum + 1) / (n + 2), not the true R.
    r_hat = (np.asarray(sums) + 1) / 12
    expected = jm.estimate(counts, paper, rewards=r_hat)
    np.testing.assert_array_equal(state.policy, expected.policy)
    truth = jm.estimate(counts, paper)
    assert not np.array_equal(expected.policy, truth.policy)


def test_learned_reward_lower_bound_against_scipy():
    """K over joint laws of (Bernoulli reward, next state), by SLSQP on the 2S simplex."""
    from scipy.optimize import minimize

    mdp = jm.envs.make("paper-mdp").with_reward_law("bernoulli")
    bound = jm.regret_lower_bound(mdp, known_rewards=False)
    gain, bias, _ = jm.solve_average_reward(mdp)
    P, R, bias = np.asarray(mdp.P), np.asarray(mdp.R), np.asarray(bias)
    for x, a in zip(*np.nonzero(np.asarray(bound.gaps) > 0)):
        p = np.concatenate([(1 - R[x, a]) * P[x, a], R[x, a] * P[x, a]])
        w = np.concatenate([bias, 1 + bias])
        level = float(gain) + bias[x]
        if level >= w.max():
            assert np.isinf(bound.K[x, a])
            continue
        res = minimize(lambda q: np.sum(p * np.log(p / q)), np.full(6, 1 / 6),
                       constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1},
                                    {"type": "ineq", "fun": lambda q: q @ w - level}],
                       bounds=[(1e-12, 1)] * 6, method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 500})
        np.testing.assert_allclose(bound.K[x, a], res.fun, rtol=1e-6)
    # Learning the rewards can only make the problem harder.
    assert bound.constant > jm.regret_lower_bound(mdp).constant
    with pytest.raises(ValueError, match="known_rewards must be a bool"):
        jm.regret_lower_bound(mdp, known_rewards="no")


def test_env_spec_initial_round_is_the_first_played_round():
    mdp = jm.envs.make("paper-mdp")
    seen = []

    def init(key, spec, config):
        seen.append(spec.initial_round)
        return ()

    def step(key, state, obs, spec, config):
        return jnp.int32(0), state

    agent = jm.Agent("first-action", init, step)
    counts = np.zeros((3, 2, 3), int)
    counts[0, 0, 1] = 4
    jm.simulate(mdp, agent, 3, 1, initial_counts=counts, progress=False)
    jm.simulate(mdp, agent, 3, 1, progress=False)
    assert seen == [5, 1]


@pytest.mark.parametrize("name", jm.agent_names())
def test_an_unknown_option_raises_value_error_naming_it(name):
    options = ", ".join(repr(o) for o in jaxmdp.agents.agent_options(name))
    with pytest.raises(ValueError, match=rf"agent '{name}' takes the options \[{options}\], "
                                         rf"got options \['no_such_option'\]"):
        jm.get_agent(name, no_such_option=1)


def test_register_agent_rejects_a_second_registration_unless_replace():
    factory = jaxmdp.agents.AGENTS["ucb"]
    with pytest.raises(ValueError, match="agent 'ucb' is already registered; pass "
                                         "replace=True"):
        jm.register_agent("UCB", lambda: GREEDY)
    jm.register_agent("ucb", lambda: GREEDY, replace=True)
    assert jm.get_agent("ucb") is GREEDY
    jm.register_agent("ucb", factory, replace=True)
    with pytest.raises(ValueError, match="factory must be callable"):
        jm.register_agent("greedy", GREEDY)
