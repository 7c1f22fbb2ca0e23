"""Every registered agent (``jm.agent_names()``) through the agent protocol: ``init`` and
``step`` called directly, under ``jit``, against ``jm.simulate``'s ``jit``/``vmap``/``scan``
run, with known and with learned rewards, on two environments. A new agent is tested here
by registering it.

The reference for each run is a replay: the simulator documents its keys (replication
``i`` of seed ``s`` has ``k = split(key(s), R)[i]``, ``init`` gets ``fold_in(k, 1)`` and
round ``t``'s ``step`` gets ``fold_in(fold_in(k, 3), t)``) and its observations (the round,
the state, the counts and reward sums so far, the previous transition and its reward), so
feeding one replication's recorded states back to the agent's own ``init`` and ``step``,
unbatched, must reproduce every action that the batched run played (in the first
``REPLAY`` rounds of each replication).
"""

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.agents import EnvSpec, Observation, env_spec

SIMULATE_MODULE = sys.modules["jaxmdp._simulate"]  # jm.simulate is the function

# Two environments of one shape (S = 6, A = 2; other transitions, rewards and optimal
# policies): jm.simulate's program takes the MDP as an argument, so each agent's programs
# compile once and serve both.
ENVS = ["riverswim-6", "riverswim-osband-6"]
# The horizon and replications of the recorded runs (tests/data/
# make_agent_trajectories.py): the simulations of the agents recorded there are the
# same programs (loaded from the suite's compilation cache, not compiled again). The
# unbatched replay checks the first REPLAY rounds of every replication.
HORIZON = 400
REPLICATIONS = 3
REPLAY = 40
SEED = 4


def _accepts_known_rewards(name: str) -> bool:
    """Whether the agent has a ``known_rewards`` option; an agent without one must say so
    by name when it is given one (checked in ``test_every_agent_runs``)."""
    try:
        jm.get_agent(name, known_rewards=True)
    except (TypeError, ValueError) as error:
        if "known_rewards" not in str(error):
            raise
        return False
    return True


def test_every_registered_agent_is_collected():
    # The parametrisation below is built from the registry at import time: the paper's four,
    # the field's baselines, and nothing registered twice under two spellings.
    names = jm.agent_names()
    assert {"ucb", "dmed", "olp", "ps", "ucrl2", "kl_ucrl", "tsde", "imed_rl"} <= set(names)
    assert len(names) == len(set(names)) == len({name.lower() for name in names})
    assert [case[0] for case in CASES] == [n for n in names for _ in ENVS for _ in (0, 1)]


@functools.cache
def _jit_step(agent, num_states, num_actions, reward_law, reward_sigma):
    """``agent.step`` under ``jit``, unbatched, with the spec's mask and rewards arguments
    (one compilation for every replay of an agent on environments of one shape)."""
    def step(key, state, observation, mask, rewards):
        spec = EnvSpec(num_states, num_actions, mask, rewards, reward_law, reward_sigma)
        return agent.step(key, state, observation, spec)

    return jax.jit(step)


def _replay(agent, step, mdp, traj, replication, rewards):
    """The actions ``agent`` plays, unbatched (``step``: :func:`_jit_step`), on the
    recorded states of one replication of ``traj`` (``jm.simulate`` with ``SEED``), its
    spec's rewards replaced by ``rewards``."""
    spec = env_spec(mdp)
    states = np.asarray(traj.states[replication])
    R = np.asarray(mdp.R)
    S, A = R.shape
    with jax.threefry_partitionable(SIMULATE_MODULE.PARTITIONABLE_THREEFRY):
        k = jax.random.split(jax.random.key(SEED), REPLICATIONS)[replication]
        agent_state = agent.init(jax.random.fold_in(k, 1), spec._replace(rewards=rewards))
        round_key = jax.random.fold_in(k, 3)
        counts = np.zeros((S, A, S), np.int32)
        sums = np.zeros((S, A), R.dtype)
        actions = []
        previous, reward = (-1, -1), R.dtype.type(0)
        for t in range(REPLAY):
            x = int(states[t])
            observation = Observation(t=jnp.int32(t + 1), step=jnp.int32(t),
                                      state=jnp.int32(x), counts=jnp.asarray(counts),
                                      reward_sums=jnp.asarray(sums),
                                      previous_state=jnp.int32(previous[0]),
                                      previous_action=jnp.int32(previous[1]),
                                      reward=jnp.asarray(reward))
            action, agent_state = step(jax.random.fold_in(round_key, t), agent_state,
                                       observation, spec.mask, jnp.asarray(rewards, R.dtype))
            assert action.shape == () and action.dtype == jnp.int32
            a = int(action)
            actions.append(a)
            if t + 1 < REPLAY:  # deterministic rewards: the observed reward is R[x, a]
                counts[x, a, int(states[t + 1])] += 1
                sums[x, a] += R[x, a]
                previous, reward = (x, a), R[x, a]
    return np.array(actions)


CASES = [(name, env, mode) for name in jm.agent_names() for env in ENVS
         for mode in ("known", "learned")]


# Each agent's cases are one xdist group of their own (tests/conftest.py): their programs
# are the agent's, so the agents spread over the workers.
@pytest.mark.parametrize(
    "name, env, mode",
    [pytest.param(*case, marks=pytest.mark.xdist_group(f"all_agents_{case[0]}"))
     for case in CASES],
)
def test_every_agent_runs(name, env, mode):
    mdp = jm.envs.make(env)
    R = np.asarray(mdp.R)
    if not _accepts_known_rewards(name):
        # No known_rewards option: the agent learns its rewards (it must not read the spec's),
        # and asking for either setting is refused naming the option.
        for value in (True, False):
            with pytest.raises(ValueError, match="known_rewards"):
                jm.get_agent(name, known_rewards=value)
        if mode == "known":
            return
        agent = jm.get_agent(name)
    else:
        agent = jm.get_agent(name, known_rewards=(mode == "known"))
        assert agent.config.known_rewards == (mode == "known")
    assert agent.name == name and hash(agent) == hash(jm.get_agent(agent))
    agent.check(env_spec(mdp))  # the eager validation simulate runs

    traj = jm.simulate(mdp, agent, horizon=HORIZON, replications=REPLICATIONS, seed=SEED,
                       record_path=True, progress=False)
    states, actions = np.asarray(traj.states), np.asarray(traj.actions)
    assert states.shape == actions.shape == (REPLICATIONS, HORIZON)
    assert np.all(states[:, 0] == 0)
    assert np.all(np.asarray(mdp.mask)[states, actions])  # admissible actions only
    # Every played transition is possible, and the counts are those of the path.
    assert np.all(np.asarray(mdp.P)[states[:, :-1], actions[:, :-1], states[:, 1:]] > 0)
    counts = np.asarray(traj.counts)
    for i in range(REPLICATIONS):
        visits = np.zeros(R.shape, int)
        np.add.at(visits, (states[i], actions[i]), 1)
        np.testing.assert_array_equal(counts[i].sum(-1), visits)
    regret = np.asarray(traj.pseudo_regret)
    assert regret.shape == (REPLICATIONS, HORIZON) and np.all(np.isfinite(regret))
    assert np.all(np.diff(regret, axis=1) >= -1e-12) and np.all(regret[:, 0] >= -1e-12)

    # The unbatched replay reproduces each replication of the vmapped run; an agent that
    # learns its rewards plays the same with other rewards in its spec.
    spec = env_spec(mdp)
    step = _jit_step(agent, spec.num_states, spec.num_actions, spec.reward_law,
                     spec.reward_sigma)
    other = [1.0 - R] if mode == "learned" else []
    for i in range(REPLICATIONS):
        for rewards in [R, *other]:
            np.testing.assert_array_equal(_replay(agent, step, mdp, traj, i, rewards),
                                          actions[i, :REPLAY])

    # A sweep over one of the agent's number options (one compiled program for both
    # points) plays each point's runs as the separate simulation of that point: the run
    # above for the default value, and one more (the same program as above: numbers are
    # traced) for half of it.
    numbers = {key: o for key, o in jm.agent_options(name).items()
               if o.kind == "number" and o.default is not None}
    if mode == "learned" and env == ENVS[0] and numbers:
        option, spec_option = next(iter(numbers.items()))
        fixed = {} if not _accepts_known_rewards(name) else {"known_rewards": False}
        values = [spec_option.default, spec_option.default / 2]
        swept = jm.sweep(mdp, name, {option: values}, HORIZON, REPLICATIONS, seed=SEED,
                         options=fixed, progress=False)
        np.testing.assert_array_equal(swept.pseudo_regret[0], traj.pseudo_regret)
        other = jm.simulate(mdp, jm.get_agent(name, **fixed, **{option: values[1]}),
                            horizon=HORIZON, replications=REPLICATIONS, seed=SEED,
                            record_path=True, progress=False)
        np.testing.assert_array_equal(swept.pseudo_regret[1], other.pseudo_regret)
        np.testing.assert_array_equal(swept.regret[1], other.regret)

    # The batching an accelerator chooses (one masked pass over the batch: cond_any for
    # the episodic agents, one loop over the batch for the incremental planner's later
    # evaluations), forced here on the CPU, plays the CPU default's runs.
    if mode == "learned" and env == ENVS[0]:
        gpu = _accelerator_layout(name)
        if gpu:
            fixed = {} if not _accepts_known_rewards(name) else {"known_rewards": False}
            forced = jm.simulate(mdp, jm.get_agent(name, **fixed, **gpu), horizon=HORIZON,
                                 replications=REPLICATIONS, seed=SEED, record_path=True,
                                 progress=False)
            np.testing.assert_array_equal(forced.actions, traj.actions)
            np.testing.assert_array_equal(forced.pseudo_regret, traj.pseudo_regret)


def _accelerator_layout(name: str) -> dict:
    """The options that give ``name`` an accelerator's batching (none: no batching
    choice)."""
    options = jm.agent_options(name)
    if "cond" in options:
        return {"cond": "cond_any"}
    if "planner" in options:
        return {"planner": jm.planning.incremental_planner(chunk=None)}
    return {}
