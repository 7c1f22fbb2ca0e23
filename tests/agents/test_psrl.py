"""TSDE (jaxmdp.agents.psrl): the episode rule, the sampled plan, the batching paths,
regret against the NumPy loop of tests/reference/tsde.py. (Sharding:
tests/test_sharding.py, on the runs of tests/shared_runs.py checked here.)"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from shared_runs import SHARED_RUNS, run_spec, shared_run

import jaxmdp as jm

RIVERSWIM = jm.envs.make("riverswim-6")

# Mean final pseudo-regret of the NumPy loop on riverswim-6, learned rewards, with its
# standard error. Produced by
#   python -m tests.reference.tsde --horizon 400 --replications 1000
NUMPY_REFERENCE = {"tsde": (400, 162.313, 1.607)}


def _replay_tsde(states, actions, S, A):
    """Episode starts of TSDE's rule, replayed from a recorded path (rounds t = 1, ...)."""
    n = np.zeros((S, A), int)
    start, previous, start_n = 0, 0, np.zeros((S, A), int)
    starts = []
    for t, (x, a) in enumerate(zip(states, actions), start=1):
        if t > start + previous or np.any(n > 2 * start_n):
            previous, start, start_n = t - start, t, n.copy()
            starts.append(t)
        n[x, a] += 1
    return starts, start, previous, start_n


@functools.cache
def _run(agent, replications):
    """The regret test's run, kept for the tests that share it (one compile)."""
    horizon = NUMPY_REFERENCE[agent][0]
    kwargs = dict(horizon=horizon, replications=replications, seed=11, record_path=True)
    return jm.simulate(RIVERSWIM, agent, progress=False, **kwargs)


def _batching_run(batching):
    """TSDE on tests/shared_runs.py's "tsde" setting with a batching path; the default,
    "chunked", is that run itself (also sharded in test_sharding.py)."""
    if batching == "chunked":
        return shared_run("tsde")
    return _other_batching_run(batching)


@functools.cache
def _other_batching_run(batching):
    spec = SHARED_RUNS["tsde"]
    return run_spec((spec[0], "tsde", dict(batching=batching), spec[3]))


def test_tsde_episode_rule_on_a_recorded_run():
    traj = _run("tsde", 128)  # the program of the regret test below (compiled once)
    state = traj.agent_state
    both = {"length": 0, "doubling": 0}
    for i in range(8):
        starts, start, previous, start_n = _replay_tsde(
            np.asarray(traj.states[i]), np.asarray(traj.actions[i]), 6, 2)
        assert int(state.episodes[i]) == len(starts)
        assert int(state.episode_start[i]) == start
        assert int(state.previous_length[i]) == previous
        np.testing.assert_array_equal(state.start_visits[i], start_n)
        lengths = np.diff(starts)
        assert starts[:1] == [1] and np.all(lengths[1:] <= lengths[:-1] + 1)
        both["length"] += int(np.sum(lengths[1:] == lengths[:-1] + 1))
        both["doubling"] += int(np.sum(lengths[1:] <= lengths[:-1]))
    assert both["length"] > 0 and both["doubling"] > 0  # both criteria ended episodes
    # The policy is constant within an episode: the action in a state never changes
    # between two episode starts.
    states, actions = np.asarray(traj.states[0]), np.asarray(traj.actions[0])
    starts = _replay_tsde(states, actions, 6, 2)[0] + [len(states) + 1]
    for begin, end in zip(starts[:-1], starts[1:]):
        seen = {}
        for x, a in zip(states[begin - 1:end - 1], actions[begin - 1:end - 1]):
            assert seen.setdefault(int(x), int(a)) == a


def _policy_gains(P, R):
    """Gain of every deterministic policy of a positive (unichain) MDP, by enumeration
    (NumPy, float64: stationary law of each policy's chain)."""
    S, A = R.shape
    out = {}
    for policy in np.ndindex(*(A,) * S):
        P_pi = P[np.arange(S), policy]
        M = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
        law = np.linalg.lstsq(M, np.r_[np.zeros(S), 1.0], rcond=None)[0]
        out[policy] = float(law @ R[np.arange(S), policy])
    return out


def test_tsde_plan_is_optimal_for_its_sampled_mdp():
    """A plan's policy is an optimal policy of the MDP it sampled, whatever the warm start
    (the previous policy, improved against the previous sample's bias), checked against
    all 64 policies of the sampled RiverSwim-6 MDP; the stored bias is that policy's."""
    from jaxmdp.agents import Observation, env_spec
    from jaxmdp.agents.psrl import sample_mdp

    traj = _run("tsde", 128)
    agent, spec = jm.get_agent("tsde"), env_spec(RIVERSWIM)
    step = jax.jit(lambda key, state, obs: agent.step(key, state, obs, spec))
    sample = jax.jit(lambda key, counts, sums: sample_mdp(key, counts, sums, spec.rewards,
                                                          known_rewards=False))
    t = int(traj.times[-1]) + 1
    for i, seed in [(0, 1), (1, 2), (2, 3), (3, 4)]:
        state = jax.tree_util.tree_map(lambda x: x[i], traj.agent_state)
        state = state._replace(previous_length=jnp.int32(0))  # round t starts an episode
        if i == 3:  # a cold, wrong warm start: the worst policy and a zero bias
            state = state._replace(policy=1 - state.policy, bias=jnp.zeros_like(state.bias))
        obs = Observation(t=jnp.int32(t), step=jnp.int32(t - 1), state=traj.state[i],
                          counts=traj.counts[i], reward_sums=traj.reward_sums[i])
        key = jax.random.key(seed)
        _, new = step(key, state, obs)
        assert int(new.episodes) == int(state.episodes) + 1
        P, R = sample(key, obs.counts, obs.reward_sums)
        gains = _policy_gains(np.asarray(P, np.float64), np.asarray(R, np.float64))
        best = max(gains.values())
        chosen = gains[tuple(int(a) for a in new.policy)]
        assert chosen >= best - 1e-9 * (1 + abs(best)), (i, chosen, best)
        reference = jm.policy_iteration(P, R, spec.mask, new.policy)
        assert int(reference.num_steps) == 1  # stable: the same policy, one evaluation
        np.testing.assert_allclose(new.bias, reference.bias, rtol=1e-10, atol=1e-12)


def test_tsde_batching_paths_give_the_same_run():
    assert jm.get_agent("tsde") == jm.get_agent("tsde", batching="chunked")  # the default
    runs = [_batching_run(b) for b in ("chunked", "compact", "cond")]  # cond: plain
    # lax.cond (any: test_batching)
    for other in runs[1:]:
        np.testing.assert_array_equal(other.pseudo_regret, runs[0].pseudo_regret)
        np.testing.assert_array_equal(other.agent_state.policy, runs[0].agent_state.policy)
        np.testing.assert_array_equal(other.agent_state.episodes, runs[0].agent_state.episodes)


def test_mean_regret_matches_numpy_loop():
    agent, replications = "tsde", 128
    _, mean, se = NUMPY_REFERENCE[agent]
    traj = _run(agent, replications)
    final = np.asarray(traj.pseudo_regret[:, -1])
    jax_se = final.std(ddof=1) / math.sqrt(replications)
    # 4 standard errors of the difference of two independent means.
    assert abs(final.mean() - mean) < 4 * math.hypot(se, jax_se), (final.mean(), mean)


def test_options_are_validated():
    with pytest.raises(ValueError, match="batching"):
        jm.get_agent("tsde", batching="vmap")
