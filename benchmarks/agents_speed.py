"""Microseconds per replication-step of every registered agent on the benchmark MDPs.

For each agent of ``jm.agent_names()`` (default options) and each environment
(default: ``riverswim-6``, ``riverswim-25``, ``grid-4-room``, ``grid-2-room``, the
MDPs StatisticalRL registers as ``river-swim-6``, ``river-swim-25``, ``grid-4-room``,
``grid-2-room``), ``jm.simulate(mdp, agent, horizon, replications)`` is called once to
compile (``first_s``, compilation included), then ``--repeats`` times with other seeds,
each ended by ``block_until_ready``; ``us_per_step`` is the median of those calls over
``horizon * replications``, and ``evi_sweeps`` the EVI sweeps per replication of the
last call (for the agents that plan by extended value iteration; in the JSON). The
calibration line of ``benchmarks/_calibration.py`` is printed first (and stored), the
table as each row is done, and everything is saved as JSON under ``--out`` (default
``results/``). Compare with the published code's microseconds per step on the same MDPs
from ``benchmarks/statisticalrl.py --speed-envs ...``.

The defaults are small (a check that every agent runs); the audit's sizes are::

    python benchmarks/agents_speed.py --horizon 10000 --replications 100 --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

#: The environments of the audit.
ENVS = ("riverswim-6", "riverswim-25", "grid-4-room", "grid-2-room")


def time_agent(name: str, env: str, horizon: int, replications: int, repeats: int) -> dict:
    """``first_s``, the timed calls' seconds and ``us_per_step`` of one agent on one MDP."""
    import jax

    import jaxmdp as jm

    mdp = jm.envs.make(env)
    agent = jm.get_agent(name)

    runs = []

    def call(seed):
        start = time.perf_counter()
        runs.append(jax.block_until_ready(
            jm.simulate(mdp, agent, horizon, replications, seed=seed, progress=False)))
        return time.perf_counter() - start

    first = call(0)
    times = [call(seed) for seed in range(1, repeats + 1)]
    median = statistics.median(times)
    # The EVI sweeps per replication of the last call (the agents that plan by EVI).
    steps = getattr(runs[-1].agent_state, "evi_steps", None)
    return {"agent": name, "env": env, "first_s": first, "times_s": times,
            "us_per_step": 1e6 * median / (horizon * replications),
            "evi_sweeps": None if steps is None else float(np.mean(np.asarray(steps)))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=None,
                        help="agent names (default: every registered agent)")
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--replications", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed calls after the compiling one (the median is reported)")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    args = parser.parse_args(argv)
    for name in ("horizon", "replications", "repeats"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(args, name)!r}")
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    import _calibration

    import jaxmdp as jm

    agents = args.agents or list(jm.agent_names())
    unknown = sorted(set(agents) - set(jm.agent_names()))
    if unknown:
        raise ValueError(f"agents must be registered names, got {unknown}")
    unknown = sorted(set(args.envs) - set(jm.envs.names()))
    if unknown:
        raise ValueError(f"envs must be environment names, got {unknown}")
    _calibration.no_compile_cache()
    calibration = _calibration.calibrate()
    print(_calibration.calibration_line(calibration), flush=True)
    print(f"T = {args.horizon}, {args.replications} replications; us per replication-step "
          f"(median of {args.repeats} compiled calls) and the first call's seconds")
    print(f"{'agent':16s}" + "".join(f" {env:>22s}" for env in args.envs), flush=True)
    rows = []
    for name in agents:
        cells = []
        for env in args.envs:
            row = time_agent(name, env, args.horizon, args.replications, args.repeats)
            rows.append(row)
            cells.append(f"{row['us_per_step']:12.2f} ({row['first_s']:6.1f} s)")
        print(f"{name:16s}" + "".join(f" {cell:>22s}" for cell in cells), flush=True)
    record = {"settings": {k: (str(v) if isinstance(v, Path) else v)
                           for k, v in vars(args).items()},
              "calibration": calibration, "rows": rows}
    _calibration.save_record(args.out, f"agents_speed-T{args.horizon}-R{args.replications}", record)
    return record


if __name__ == "__main__":
    main()
