"""Microseconds per replication-step of ``jaxmdp.simulate``, beside a plain NumPy loop.

For each agent (MDP-UCB, MDP-DMED, OLP, MDP-PS) on the paper's 3-state MDP, at 100 and
1,000 replications:

* compile time: the first call (a fresh compile of the chunk function) minus a second,
  cached call of the same size;
* steady-state cost: the fastest of ``--repeats`` cached calls (other seeds), divided by
  ``horizon * replications``; wall time and process CPU time (the machine may be shared:
  CPU time is what this process used, on all its threads);
* the same work done by ``tests/reference/paper.py`` (one replication at a time,
  one step at a time, NumPy + SciPy), measured in the same run, and the speed-up.

    python benchmarks/simulate.py [--horizon 2000] [--replications 100 1000]
                                  [--numpy-steps 2000] [--agents ucb dmed olp ps] [--x64]

To compare two versions of jaxmdp on the same machine, time another checkout (a git
worktree) with ``--jaxmdp-root PATH --no-numpy`` in alternation with this one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import _timing


def _use_root(root: Path | None) -> None:
    """Imports jaxmdp from ``root`` (another checkout) instead of this one."""
    if root is not None:
        sys.path.insert(0, str(Path(root).resolve()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["ucb", "dmed", "olp", "ps"])
    parser.add_argument("--replications", nargs="+", type=int, default=[100, 1000])
    parser.add_argument("--horizon", type=int, default=2000,
                        help="rounds per timed jaxmdp call")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--numpy-steps", type=int, default=2000,
                        help="rounds per replication of the timed NumPy loop")
    parser.add_argument("--numpy-replications", type=int, default=1,
                        help="replications of the timed NumPy loop, per agent")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per configuration; the fastest is reported")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--jaxmdp-root", type=Path, default=None,
                        help="import jaxmdp from this checkout (e.g. a git worktree of an "
                             "older commit) to compare versions")
    parser.add_argument("--no-numpy", action="store_true", help="skip the NumPy loop")
    args = parser.parse_args(argv)
    from tests.reference import paper as ref  # this checkout's NumPy loop

    _use_root(args.jaxmdp_root)
    _timing.setup(x64=args.x64)
    import jax
    import numpy as np

    import jaxmdp as jm

    mdp = jm.envs.paper_mdp()
    mask = np.ones(ref.PAPER_R.shape, dtype=bool)
    print(f"jaxmdp from {Path(jm.__file__).parent}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, "
          f"{'float64' if args.x64 else 'float32'}, {os.cpu_count()} CPUs, "
          f"load average {_timing.load()} at start", flush=True)
    print(f"{'agent':6s} {'reps':>5s} {'compile s':>9s} {'us/rep-step':>11s} "
          f"{'cpu us':>7s} {'numpy us':>9s} {'speed-up':>8s} {'mean regret':>11s}",
          flush=True)
    rows = []
    for name in args.agents:
        # NumPy loop: replications of numpy_steps rounds (the same horizon as the JAX
        # runs by default, so both spend the same share of rounds on early exploration).
        np_reps = args.numpy_replications
        np_horizon = args.numpy_steps
        numpy_us = np.nan
        if not args.no_numpy:
            out = ref.run(ref.PAPER_P, ref.PAPER_R, mask, name, np_horizon, np_reps, seed=0)
            numpy_us = out["seconds"] / (np_horizon * np_reps) * 1e6
        for reps in args.replications:
            timing = _timing.time_calls(
                lambda seed, reps=reps: jm.simulate(mdp, name, args.horizon, reps, seed,
                                                    progress=False,
                                                    chunk_size=args.chunk_size),
                args.repeats, keep=lambda traj: float(np.mean(traj.pseudo_regret[:, -1])))
            fastest = timing.fastest
            wall, cpu = timing.wall_s[fastest], timing.cpu_s[fastest]
            steps = args.horizon * reps
            us = wall / steps * 1e6
            cpu_us = cpu / steps * 1e6
            row = dict(agent=name, reps=reps, compile_s=timing.first_s - wall, us=us,
                       cpu_us=cpu_us, numpy_us=numpy_us, speedup=numpy_us / us,
                       regret=timing.kept[0])  # seed 1, whichever call was fastest
            rows.append(row)
            print(f"{name:6s} {reps:5d} {row['compile_s']:9.2f} {us:11.3f} {cpu_us:7.3f} "
                  f"{numpy_us:9.1f} {row['speedup']:7.0f}x {row['regret']:11.3f}",
                  flush=True)
    print(f"load average {_timing.load()} at end; us/rep-step is the wall time of "
          f"the fastest of {args.repeats} cached {args.horizon}-round calls; numpy: "
          f"{args.numpy_replications} x {args.numpy_steps} rounds of "
          f"tests/reference/paper.py per agent")
    return rows


if __name__ == "__main__":
    main()
