"""TSDE and IMED-RL in jaxmdp beside their plain NumPy loops, in one run.

For each agent, environment and replication count: the compile time (first call minus
the fastest cached one), microseconds per replication-step of the fastest of
``--repeats`` compiled ``jaxmdp.simulate`` calls (other seeds; each call's figure is
printed too), the NumPy loop's microseconds per step (``baselines.NUMPY_LOOPS``: the loops
of ``tests/reference/tsde.py`` and ``tests/reference/published.py``, same horizon) and the
ratio. For TSDE also, from one more call that records the paths (not
timed: recording costs time the NumPy loop does not spend): the fraction of rounds in
which at least one replication starts an episode, the mean number of replications planning per
round, and the cost of one batched agent round with no replication planning, with one, with
16 and with all of them planning (``jit(vmap(agent.step))`` on the run's final states).
The machine's load average is printed with each line (the machine may be shared).

Run ``python benchmarks/baselines_psrl_imed.py`` (defaults: horizon 2000, replications
100 and 1000, riverswim-6 and grid-4-room, float32) or with ``--x64``.

``--cpu-devices 2`` splits the CPU into two JAX devices (``jax_num_cpu_devices``; the
replications split over them, same results): on a 2-core CPU both cores, where a NumPy
loop uses one. Not an option of ``jaxmdp`` itself because it can hang: with jaxlib 0.10.2
on this 2-core CPU, IMED-RL on grid-4-room never returns from its first call (both threads
of XLA's intra-op pool wait inside the batched LU's ``ParallelBatchMap`` for work that no
free thread can run); UCRL2, KL-UCRL and TSDE ran to completion. (So run
``--cpu-devices 2`` with ``--agents tsde`` or ``--envs riverswim-6``.)
"""

from __future__ import annotations

import argparse
import math
import os
import time

import _timing
import numpy as np
from baselines import NUMPY_LOOPS


def _load():
    return f"load {_timing.load()}"


def planning_fraction(states, actions, S, A):
    """Fraction of rounds where some replication starts a TSDE episode, and the mean
    number of replications starting one per round (rounds t = 1, 2, ...)."""
    reps, horizon = states.shape
    rows = np.arange(reps)
    n = np.zeros((reps, S, A), int)
    start_n = np.zeros_like(n)
    start = np.zeros(reps, int)
    previous = np.zeros(reps, int)
    any_rounds, starts = 0, 0
    for t in range(1, horizon + 1):
        new = (t > start + previous) | np.any(n > 2 * start_n, axis=(1, 2))
        if new.any():
            any_rounds += 1
            starts += int(new.sum())
            previous = np.where(new, t - start, previous)
            start = np.where(new, t, start)
            start_n[new] = n[new]
        n[rows, states[:, t - 1], actions[:, t - 1]] += 1
    return any_rounds / horizon, starts / horizon


def round_costs(jm, mdp, agent, traj, repeats=20):
    """Microseconds of one batched TSDE round with 0, 1, 16 and all replications planning."""
    import jax
    import jax.numpy as jnp

    from jaxmdp.agents import Observation, env_spec

    spec = env_spec(mdp)
    traj = jax.device_put(traj, jax.devices()[0])  # one device, also with --cpu-devices
    state = traj.agent_state
    reps = state.policy.shape[0]
    counts = traj.counts
    visits = counts.sum(-1).astype(jnp.int32)
    t = jnp.int32(traj.times[-1] + 1)
    obs = Observation(t=t, step=t - 1, state=traj.state, counts=counts,
                      reward_sums=traj.reward_sums)
    # The replications' state, counts and reward sums are batched; the round is not.
    batched = Observation(*(None,) * len(Observation._fields))._replace(
        state=0, counts=0, reward_sums=0)
    step = jax.jit(jax.vmap(lambda k, s, o: agent.step(k, s, o, spec),
                            in_axes=(0, 0, batched)))
    keys = jax.random.split(jax.random.key(0), reps)
    out = {}
    for m in (0, 1, 16, reps):
        planning = jnp.arange(reps) < m
        s = state._replace(episode_start=jnp.full(reps, t, jnp.int32),
                           previous_length=jnp.full(reps, 10**6, jnp.int32),
                           start_visits=jnp.where(planning[:, None, None], -1, visits))
        jax.block_until_ready(step(keys, s, obs))
        begin = time.perf_counter()
        for _ in range(repeats):
            result = step(keys, s, obs)
        jax.block_until_ready(result)
        out[m] = (time.perf_counter() - begin) / repeats * 1e6
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["tsde", "imed_rl"])
    parser.add_argument("--envs", nargs="+", default=["riverswim-6", "grid-4-room"])
    parser.add_argument("--replications", nargs="+", type=int, default=[100, 1000])
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--numpy-replications", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed cached calls (other seeds); the fastest is reported")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--cpu-devices", type=int, default=1,
                        help="JAX CPU devices, replications split over them (default 1; "
                             "see the module docstring: 2 can hang)")
    args = parser.parse_args(argv)
    _timing.setup(x64=args.x64, cpu_devices=args.cpu_devices)
    import jax

    import jaxmdp as jm

    print(f"jax {jax.__version__} {len(jax.devices())} {jax.devices()[0].platform} "
          f"device(s) x64={args.x64} "
          f"cpus={os.cpu_count()} horizon={args.horizon} {_load()}", flush=True)
    for env in args.envs:
        mdp = jm.envs.make(env)
        P, R = np.asarray(mdp.P, np.float64), np.asarray(mdp.R, np.float64)
        mask = np.asarray(mdp.mask, bool)
        S, A = R.shape
        for name in args.agents:
            seconds, final = NUMPY_LOOPS[name](P, R, mask, mdp.reward_law, args.horizon,
                                               args.numpy_replications, 0)
            np_us = seconds / (args.horizon * args.numpy_replications) * 1e6
            se = (final.std(ddof=1) / math.sqrt(len(final)) if len(final) > 1
                  else float("nan"))
            print(f"{env:12s} {name:8s} numpy loop: {np_us:.2f} us/step "
                  f"(regret {final.mean():.1f} +- {se:.1f}, "
                  f"{args.numpy_replications} replications) {_load()}", flush=True)
            agent = jm.get_agent(name)
            for reps in args.replications:
                kwargs = dict(horizon=args.horizon, replications=reps, progress=False,
                              chunk_size=args.horizon)
                timing = _timing.time_calls(  # the fastest of cached calls
                    lambda seed: jm.simulate(mdp, agent, seed=seed, **kwargs).pseudo_regret,
                    args.repeats, keep=lambda regret: float(np.mean(regret[:, -1])))
                run = timing.wall_s[timing.fastest]
                us = run / (args.horizon * reps) * 1e6
                line = (f"{env:12s} {name:8s} R={reps:5d}: {us:.3f} us/rep-step (calls "
                        + ", ".join(f"{r / (args.horizon * reps) * 1e6:.3f}"
                                    for r in timing.wall_s)
                        + f"), compile {timing.first_s - run:.1f} s, ratio to numpy "
                        f"{np_us / us:.1f}x, regret {timing.kept[-1]:.1f}")
                if name == "tsde":  # a separate recorded run (recording costs time)
                    traj = jm.simulate(mdp, agent, seed=1, record_path=True, **kwargs)
                    fraction, per_round = planning_fraction(
                        np.asarray(traj.states), np.asarray(traj.actions), S, A)
                    costs = round_costs(jm, mdp, agent, traj)
                    line += (f"; rounds with planning {100 * fraction:.1f}% "
                             f"({per_round:.1f} replications/round); us per round: "
                             + ", ".join(f"{m} planning {c:.0f}" for m, c in costs.items()))
                print(line + f" {_load()}", flush=True)

if __name__ == "__main__":
    main()
