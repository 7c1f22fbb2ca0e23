"""Simulations checked by tests in several modules (see ``SHARED_RUNS``).

Each is simulated once per process, on first use (``shared_run``), so that its program
compiles once and its results serve every test that checks them;
tests/test_sharding.py runs four of them split over 4 host devices in a subprocess and
compares. (Under pytest-xdist, a worker that runs a module using them simulates them again,
loading the programs from the suite's compilation cache.) Plain Python, no pytest: the
subprocess imports it too.
"""

import functools

import jax

import jaxmdp as jm

# name: (environment, agent, agent options, simulate's keyword arguments). The
# environment is a ``jm.envs`` name or ``"garnet-8-3-4/key5"`` (``jm.envs.garnet``
# with ``jax.random.key(5)``), optionally with ``"+bernoulli"`` (Bernoulli reward draws).
SHARED_RUNS = {
    # tests/agents/test_ucrl.py: the doubling rule, the first action, regret against NumPy.
    "ucrl2": ("riverswim-6", "ucrl2", {},
              dict(horizon=2000, replications=16, seed=0, record_path=True, chunk_size=2000)),
    "kl_ucrl": ("riverswim-6", "kl_ucrl", {},
                dict(horizon=2000, replications=16, seed=0, record_path=True,
                     chunk_size=2000)),
    # tests/agents/test_psrl.py and test_imed.py: TSDE's default batching path
    # ("chunked") in the batching test (6 replications: 4 devices split them unevenly),
    # IMED-RL's regret run.
    "tsde": ("riverswim-6", "tsde", {}, dict(horizon=120, replications=6, seed=2)),
    "imed_rl": ("riverswim-6", "imed_rl", {},
                dict(horizon=300, replications=64, seed=11, record_path=True)),
    # tests/test_sharding.py's replication blocks: MDP-PS on a garnet, two chunks of 30
    # records of 2 rounds, the incremental planner refreshed every 16 rounds (across the
    # chunk boundary), 7 replications (blocks of 3, 3 and 1 in
    # test_blocked_replications_equal_one_batch; 2, 2, 2 and 1, padded, on 4 devices).
    "ps_garnet": ("garnet-8-3-4/key5", "ps", dict(refresh_every=16),
                  dict(horizon=120, replications=7, seed=7, record_every=2, chunk_size=60,
                       record_path=True)),
    # The same learning Bernoulli rewards; its options are the agent's own, not simulate's.
    "ps_learner_garnet": ("garnet-8-3-4/key5+bernoulli", "ps",
                          dict(known_rewards=False, refresh_every=16),
                          dict(horizon=120, replications=7, seed=7, record_every=2,
                               chunk_size=60, record_path=True)),
}


def make_env(env: str) -> jm.MDP:
    name, _, law = env.partition("+")
    if name == "garnet-8-3-4/key5":
        mdp = jm.envs.garnet(jax.random.key(5), 8, 3, 4)
    else:
        mdp = jm.envs.make(name)
    return mdp.with_reward_law(law) if law else mdp


def run_spec(spec, devices=None, **overrides):
    """``jm.simulate`` of a spec (a named agent, or an Agent object when it has options)."""
    env, agent, options, kwargs = spec
    agent = jm.get_agent(agent, **options) if options else agent
    return jm.simulate(make_env(env), agent, devices=devices, progress=False,
                       **{**kwargs, **overrides})


@functools.cache
def shared_run(name: str):
    """The one-device run of ``SHARED_RUNS[name]``, simulated once per process."""
    return run_spec(SHARED_RUNS[name])
