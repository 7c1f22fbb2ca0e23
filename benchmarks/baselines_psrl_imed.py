"""TSDE and IMED-RL in jaxmdp beside their plain NumPy loops, in one run.

For each agent, environment and replication count: the compile time (first call minus
the fastest cached one), microseconds per replication-step of the fastest of
``--repeats`` compiled ``jaxmdp.simulate`` calls (other seeds; each call's figure is
printed too), the NumPy loop's microseconds per step (``numpy_psrl_imed.run``, same
horizon) and the ratio. For TSDE also, from one more call that records the paths (not
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
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _load():
    return f"load {os.getloadavg()[0]:.1f}"


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

    from jaxmdp.agents import Observation
    from jaxmdp.simulate import env_spec

    spec = env_spec(mdp)
    traj = jax.device_put(traj, jax.devices()[0])  # one device, also with --cpu-devices
    state = traj.agent_state
    reps = state.policy.shape[0]
    counts = traj.counts
    visits = counts.sum(-1).astype(jnp.int32)
    t = jnp.int32(traj.times[-1] + 1)
    obs = Observation(t=t, step=t - 1, state=traj.state, counts=counts,
                      reward_sums=traj.reward_sums)
    step = jax.jit(jax.vmap(lambda k, s, o: agent.step(k, s, o, spec),
                            in_axes=(0, 0, Observation(None, None, 0, 0, 0))))
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
    import _calibration
    _calibration.no_compile_cache()  # timings: real compiles, no cache
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    import numpy_psrl_imed as ref

    import jaxmdp as jm

    if args.cpu_devices != 1:  # before JAX's first computation
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    print(f"jax {jax.__version__} {len(jax.devices())} {jax.devices()[0].platform} "
          f"device(s) x64={args.x64} "
          f"cpus={os.cpu_count()} horizon={args.horizon} {_load()}", flush=True)
    print(_calibration.calibration_line(), flush=True)
    for env in args.envs:
        mdp = jm.envs.make(env)
        P, R, mask = ref.load_env(env)
        S, A = R.shape
        for name in args.agents:
            np_out = ref.run(P, R, mask, name, args.horizon, args.numpy_replications, 0)
            print(f"{env:12s} {name:8s} numpy loop: {np_out['us_per_step']:.2f} us/step "
                  f"(regret {np_out['mean']:.1f} +- {np_out['se']:.1f}, "
                  f"{args.numpy_replications} replications) {_load()}", flush=True)
            agent = jm.get_agent(name)
            for reps in args.replications:
                kwargs = dict(horizon=args.horizon, replications=reps, progress=False,
                              chunk_size=args.horizon)
                begin = time.perf_counter()
                jax.block_until_ready(jm.simulate(mdp, agent, seed=0, **kwargs).pseudo_regret)
                first = time.perf_counter() - begin
                runs = []
                for seed in range(1, args.repeats + 1):  # fastest of cached calls
                    begin = time.perf_counter()
                    traj = jm.simulate(mdp, agent, seed=seed, **kwargs)
                    jax.block_until_ready(traj.pseudo_regret)
                    runs.append(time.perf_counter() - begin)
                run = min(runs)
                us = run / (args.horizon * reps) * 1e6
                final = np.asarray(traj.pseudo_regret[:, -1])
                line = (f"{env:12s} {name:8s} R={reps:5d}: {us:.3f} us/rep-step (calls "
                        + ", ".join(f"{r / (args.horizon * reps) * 1e6:.3f}" for r in runs)
                        + f"), compile {first - run:.1f} s, ratio to numpy "
                        f"{np_out['us_per_step'] / us:.1f}x, regret {final.mean():.1f}")
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
