"""Microseconds per replication-step of the field's baselines in ``jaxmdp.simulate``,
beside plain NumPy loops of the same agents, in the same run.

For each agent (``--agents``: names from the registry, default UCRL2 and KL-UCRL) on each
environment (``--envs``, default riverswim-6 and grid-4-room) at each replication count
(default 100 and 1,000):

* compile time: the first call minus a cached call of the same size;
* steady state: the fastest of ``--repeats`` cached ``--horizon``-round calls (other
  seeds) divided by ``horizon * replications`` (wall time; the machine may be shared, so
  ``os.getloadavg()`` is printed at start and end);
* the NumPy loop of the same agent (``NUMPY_LOOPS``), one replication at a time over the
  same horizon, and the speed-up: for UCRL2 and KL-UCRL the tight loop of
  ``tests/reference/ucrl.py`` (plain Python ints between episode starts), for TSDE that of
  ``tests/reference/tsde.py``; for UCRL3, UCRL2B, PSRL, optimistic Q-learning and IMED-RL
  the loops of ``tests/reference/published.py``, written as the published classes are
  (NumPy arrays, one ``play``/``update`` object per replication), with jaxmdp's default
  options;
* for the UCRL family (episodes by the doubling rule): ``plan frac``, the fraction of
  rounds in which at least one replication starts an episode (recovered from a recorded
  run with ``jaxmdp.agents.ucrl.replay_episodes``); ``m/plan``, the mean number of
  replications starting one in such a round; and microseconds per round three ways:
  ``us/round`` (the agent as it runs: compact planning), ``no-plan`` (a fixed-policy agent
  in the same simulator and batch: what a round costs with no planning at all, the floor)
  and ``lax`` (the agent with ``cond="lax"``: the whole batch plans every round).

Any registered agent runs by name (``--agents ucrl3 ucrl2b psrl optimistic_q``); to give
another one a NumPy loop, add ``name: callable`` to ``NUMPY_LOOPS``
(``callable(P, R, mask, reward_law, horizon, replications, seed) -> seconds``).

    python benchmarks/baselines.py [--agents ucrl2 kl_ucrl] [--envs riverswim-6 grid-4-room]
        [--replications 100 1000] [--horizon 2000] [--numpy-replications 2] [--x64]
    python benchmarks/baselines.py --ucrl3-size [--ucrl3-size-agents ucrl2 ucrl3]

``--cpu-devices 2`` splits the CPU into two JAX devices (``jax_num_cpu_devices``; the
replications split over them, same results): on a 2-core CPU both cores, where a NumPy
loop uses one. Not an option of ``jaxmdp`` itself because it can hang: with jaxlib 0.10.2
on this 2-core CPU, IMED-RL on grid-4-room never returns from its first call (both threads
of XLA's intra-op pool wait inside the batched LU's ``ParallelBatchMap`` for work that no
free thread can run); UCRL2, KL-UCRL and TSDE ran to completion.

``--ucrl3-size`` runs once the size of the UCRL3 paper's RiverSwim-6 experiment (Bourel,
Maillard & Talebi 2020: T = 10^7, 50 replications) for each agent of
``--ucrl3-size-agents`` (default UCRL2 and UCRL3, one after the other) and prints, per
agent, the wall time, compile included, with the mean pseudo-regret and its standard
error (and the episodes and EVI sweeps of the UCRL family). ``--ucrl3-size-horizon`` and
``--ucrl3-size-replications`` shrink it to check the command.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import _timing


def _numpy_ucrl(agent):
    def run(P, R, mask, reward_law, horizon, replications, seed):
        from tests.reference import ucrl

        out = ucrl.run(P, R, mask, agent, horizon, replications, seed,
                       reward_law=reward_law)
        return out["seconds"], out["pseudo_regret"]

    return run


def _numpy_tsde(P, R, mask, reward_law, horizon, replications, seed):
    from tests.reference import tsde

    out = tsde.run(P, R, mask, horizon, replications, seed, reward_law=reward_law)
    return out["seconds"], out["final"]


def _numpy_published(loop, **options):
    """The loop ``loop`` of ``tests/reference/published.py`` with ``options``, timed
    around its replications (agent construction and rounds; not the true gaps computed
    once before)."""

    def run(P, R, mask, reward_law, horizon, replications, seed):
        import numpy as np

        from tests.reference import mdp, published

        if loop == "imed_rl":  # jaxmdp's rules: admissible actions only
            masked = {"mask": mask}
        elif np.all(mask):
            masked = {}
        else:
            raise ValueError(f"the {loop} NumPy loop plays every action: mask must be all "
                             f"True, got {int(np.sum(~np.asarray(mask)))} masked pairs")
        S, A, _ = P.shape
        gain_gap = mdp.true_gaps(P, R, mask)
        seconds, finals = 0.0, []
        for child in np.random.SeedSequence(seed).spawn(replications):
            rng = np.random.default_rng(child)
            start = time.perf_counter()
            agent = published.make_agent(loop, S, A, rng, **masked, **options)
            path = published.run_one(P, R, agent, horizon, rng, reward_law=reward_law,
                                     gain_gap=gain_gap)
            seconds += time.perf_counter() - start
            finals.append(path.pseudo_regret[-1])
        return seconds, np.array(finals)

    return run


#: Agent name -> NumPy loop ``(P, R, mask, reward_law, horizon, replications, seed) ->
#: (seconds, final pseudo-regrets)`` (the loop's own time). Agents without one are timed
#: in jaxmdp only. UCRL2 and KL-UCRL: the tight loop of ``tests/reference/ucrl.py``; TSDE:
#: that of ``tests/reference/tsde.py``; UCRL3, UCRL2B, PSRL, optimistic Q-learning and
#: IMED-RL: the loops of ``tests/reference/published.py``, written as the published
#: classes are (NumPy arrays, a ``play``/``update`` object per replication), with the
#: options of jaxmdp's defaults (UCRL3: exact bounds, probabilities summed,
#: ``key_sums=False``; IMED-RL: jaxmdp's rules).
NUMPY_LOOPS = {"ucrl2": _numpy_ucrl("ucrl2"), "kl_ucrl": _numpy_ucrl("kl_ucrl"),
               "tsde": _numpy_tsde,
               "ucrl3": _numpy_published("ucrl3", key_sums=False),
               "ucrl2b": _numpy_published("ucrl2b"),
               "psrl": _numpy_published("psrl"),
               "optimistic_q": _numpy_published("optimistic_q"),
               "imed_rl": _numpy_published("imed_rl")}
UCRL_FAMILY = ("ucrl2", "kl_ucrl")


def _planning(jm, mdp, name, reps, horizon, chunk_size):
    """(fraction of rounds where some replication starts an episode, mean number of
    replications starting one in those rounds) from a recorded run."""

    from jaxmdp.agents.ucrl import replay_episodes

    traj = jm.simulate(mdp, name, horizon, reps, seed=0, progress=False, record_path=True,
                       chunk_size=chunk_size)
    starts, _ = replay_episodes(traj.states, traj.actions, mdp.num_states, mdp.num_actions)
    per_round = starts.sum(0)
    some = per_round > 0
    return float(some.mean()), float(per_round[some].mean()) if some.any() else 0.0


def _fixed_policy_agent(jm):
    import jax.numpy as jnp

    def init(key, spec, config):
        return jnp.argmax(spec.mask, axis=-1).astype(jnp.int32)

    def step(key, state, obs, spec, config):
        return state[obs.state], state

    return jm.Agent("fixed", init, step)


def ucrl3_size(args):
    import jax
    import numpy as np

    import jaxmdp as jm

    mdp = jm.envs.make("riverswim-6")
    horizon, reps = args.ucrl3_size_horizon, args.ucrl3_size_replications
    for name in args.ucrl3_size_agents:
        jm.get_agent(name)  # unknown names fail before any work
    results = {}
    for name in args.ucrl3_size_agents:
        print(f"{name} on riverswim-6, T = {horizon:.0e}, {reps} replications, "
              f"{'float64' if args.x64 else 'float32'}, chunk {args.long_chunk} rounds, "
              f"{len(jax.devices())} device(s), load average {_timing.load()} at start",
              flush=True)
        traj, wall, _ = _timing.timed(lambda name=name: jm.simulate(
            mdp, name, horizon, reps, seed=0, progress=args.progress,
            chunk_size=min(args.long_chunk, horizon)))
        final = np.asarray(traj.pseudo_regret[:, -1])
        se = final.std(ddof=1) / math.sqrt(reps) if reps > 1 else float("nan")
        state = traj.agent_state
        extra = ""
        if hasattr(state, "episodes"):
            extra += (f"; episodes {np.mean(state.episodes):.1f} "
                      f"(max {int(np.max(state.episodes))})")
        if hasattr(state, "evi_steps"):
            extra += (f"; EVI sweeps {np.mean(state.evi_steps):.0f} per replication, "
                      f"{int(np.sum(state.evi_unconverged))} unconverged")
        print(f"{name}: wall time {wall:.1f} s compile included "
              f"({wall / (horizon * reps) * 1e9:.1f} ns per replication-step); mean "
              f"pseudo-regret {final.mean():.1f} se {se:.1f}{extra}; load average "
              f"{_timing.load()} at end", flush=True)
        results[name] = dict(wall_s=wall, regret=float(final.mean()), se=se)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=list(UCRL_FAMILY),
                        help="registered agent names")
    parser.add_argument("--envs", nargs="+", default=["riverswim-6", "grid-4-room"])
    parser.add_argument("--replications", nargs="+", type=int, default=[100, 1000])
    parser.add_argument("--horizon", type=int, default=2000,
                        help="rounds per timed jaxmdp call (and per NumPy replication)")
    parser.add_argument("--chunk-size", type=int, default=2000)
    parser.add_argument("--split-horizon", type=int, default=200,
                        help="rounds per timed call of the no-plan and lax variants")
    parser.add_argument("--numpy-replications", type=int, default=2,
                        help="replications of the timed NumPy loop, per agent and env")
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed cached calls per configuration; the fastest is kept")
    parser.add_argument("--no-numpy", action="store_true", help="skip the NumPy loops")
    parser.add_argument("--no-planning-split", action="store_true",
                        help="skip the planning fraction and the with/without-planning "
                             "timings")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--cpu-devices", type=int, default=1,
                        help="JAX CPU devices, replications split over them (default 1; "
                             "see the module docstring: 2 can hang)")
    parser.add_argument("--ucrl3-size", action="store_true",
                        help="run each of --ucrl3-size-agents on riverswim-6 for T = 10^7 "
                             "with 50 replications once and print the wall time (compile "
                             "included) and the mean pseudo-regret")
    parser.add_argument("--ucrl3-size-agents", nargs="+", default=["ucrl2", "ucrl3"],
                        help="registered agent names run by --ucrl3-size")
    parser.add_argument("--ucrl3-size-horizon", type=int, default=10_000_000,
                        help="rounds of --ucrl3-size (the paper's 10^7; smaller to check)")
    parser.add_argument("--ucrl3-size-replications", type=int, default=50,
                        help="replications of --ucrl3-size (the paper's 50)")
    parser.add_argument("--long-chunk", type=int, default=200_000,
                        help="rounds per jitted call in --ucrl3-size")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)

    _timing.setup(x64=args.x64, cpu_devices=args.cpu_devices)
    import jax
    import numpy as np

    import jaxmdp as jm

    print(f"jax {jax.__version__} on {len(jax.devices())} {jax.devices()[0].platform} "
          f"device(s), "
          f"{'float64' if args.x64 else 'float32'}, {os.cpu_count()} CPUs, load average "
          f"{_timing.load()} at start", flush=True)
    if args.ucrl3_size:
        return ucrl3_size(args)

    for name in args.agents:
        jm.get_agent(name)  # unknown names fail before any work
    fixed = _fixed_policy_agent(jm)
    header = (f"{'agent':12s} {'env':12s} {'reps':>5s} {'compile s':>9s} {'us/rep-step':>11s} "
              f"{'numpy us':>9s} {'speed-up':>8s} {'regret':>8s} {'plan frac':>9s} "
              f"{'m/plan':>6s} {'us/round':>9s} {'no-plan':>8s} {'lax':>8s} {'load':>5s}")
    print(header, flush=True)
    rows = []
    for env in args.envs:
        mdp = jm.envs.make(env)
        P, R = np.asarray(mdp.P, np.float64), np.asarray(mdp.R, np.float64)
        mask = np.asarray(mdp.mask, bool)
        for name in args.agents:
            numpy_us = float("nan")
            if not args.no_numpy and name in NUMPY_LOOPS:
                seconds, _ = NUMPY_LOOPS[name](P, R, mask, mdp.reward_law, args.horizon,
                                               args.numpy_replications, 0)
                numpy_us = seconds / (args.horizon * args.numpy_replications) * 1e6
            for reps in args.replications:
                def call(agent, seed, horizon=args.horizon, chunk=args.chunk_size, reps=reps):
                    return jm.simulate(mdp, agent, horizon, reps, seed, progress=False,
                                       chunk_size=chunk)

                timing = _timing.time_calls(
                    lambda seed: call(name, seed), args.repeats,
                    keep=lambda traj: float(np.mean(traj.pseudo_regret[:, -1])))
                wall = timing.wall_s[timing.fastest]
                us = wall / (args.horizon * reps) * 1e6
                row = dict(agent=name, env=env, reps=reps, compile_s=timing.first_s - wall,
                           us=us, numpy_us=numpy_us, speedup=numpy_us / us,
                           regret=timing.kept[timing.fastest],
                           frac=float("nan"), per_plan=float("nan"),
                           round_us=wall / args.horizon * 1e6, floor_us=float("nan"),
                           lax_us=float("nan"))
                if name in UCRL_FAMILY and not args.no_planning_split:
                    row["frac"], row["per_plan"] = _planning(jm, mdp, name, reps, args.horizon,
                                                             args.chunk_size)
                    for key, agent in (("floor_us", fixed),
                                       ("lax_us", jm.get_agent(name, cond="lax"))):
                        split = _timing.time_calls(
                            lambda seed, agent=agent: call(agent, seed, args.split_horizon,
                                                           args.split_horizon), 1)
                        row[key] = split.wall_s[0] / args.split_horizon * 1e6
                rows.append(row)
                print(f"{name:12s} {env:12s} {reps:5d} {row['compile_s']:9.2f} {us:11.3f} "
                      f"{numpy_us:9.2f} {row['speedup']:7.1f}x {row['regret']:8.1f} "
                      f"{row['frac']:9.3f} {row['per_plan']:6.1f} {row['round_us']:9.1f} "
                      f"{row['floor_us']:8.1f} {row['lax_us']:8.1f} {_timing.load():>5s}",
                      flush=True)
    print(f"load average {_timing.load()} at end. us/rep-step: fastest of {args.repeats} cached "
          f"{args.horizon}-round calls; numpy: {args.numpy_replications} x {args.horizon} "
          f"rounds of the NumPy loop (its own loop time); plan frac: rounds in which some "
          f"replication starts an episode, m/plan: replications starting one in such a "
          f"round; us/round: the timed call per round (compact planning); no-plan: per "
          f"round of a fixed-policy agent (the simulator's floor: no planning); lax: per "
          f"round with the whole batch planning every round (cond='lax'); no-plan and lax "
          f"from {args.split_horizon}-round calls")
    return rows


if __name__ == "__main__":
    main()
