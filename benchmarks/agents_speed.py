"""Microseconds per replication-step of jaxmdp's agents on the benchmark MDPs, and of two
versions of jaxmdp side by side.

For each agent of ``--agents`` (default: every registered agent; ``--options`` JSON for
all of them) and each environment of ``--envs`` (default: ``riverswim-6``,
``riverswim-25``, ``grid-4-room``, ``grid-2-room``, the MDPs StatisticalRL registers as
``river-swim-6``, ``river-swim-25``, ``grid-4-room``, ``grid-2-room``),
``jm.simulate(mdp, agent, horizon, replications)`` is called once to compile
(``first_s``, compilation included), then ``--repeats`` times with other seeds, each ended
by ``block_until_ready`` (``_timing.time_calls``); ``us_per_step`` is the median of those
calls over ``horizon * replications``. For the agents that plan by extended value
iteration the JSON also holds ``evi_sweeps`` (per replication, the last call),
``sweeps_per_start`` (EVI sweeps per episode start over every timed call; the sweeps that
EVI's cycle detection skips count, as ``num_steps`` counts them) and ``capped`` (episode
starts whose EVI stopped at ``max_evi_steps``); and for every agent ``final_regret``
(each replication's final pseudo-regret of every timed call), so that two versions can be
checked for identical trajectories. The calibration line of ``benchmarks/_calibration.py``
is printed first (and stored), the table as each row is done, and everything is saved as
JSON under ``--out`` (default ``results/``). Compare with the published code's
microseconds per step on the same MDPs from
``benchmarks/statisticalrl.py --speed-envs ...``.

With ``--baseline-root PATH`` (another checkout of jaxmdp, e.g. ``git worktree add
/tmp/base 9cadd30``) every measurement runs for that checkout and for this one, each in a
process of its own (importing jaxmdp from its root), alternating ``--rounds`` times; each
row prints both versions, the ratio of their medians and whether their final
pseudo-regrets are identical. The ratio of two versions measured in one run is what to
compare on a shared machine.

The defaults are small (a check that every agent runs); the audit's sizes are::

    python benchmarks/agents_speed.py --horizon 10000 --replications 100 --repeats 1

and UCRL3 on grid-4-room against another checkout::

    python benchmarks/agents_speed.py --agents ucrl3 --envs grid-4-room --horizon 10000 \\
        --replications 100 --repeats 1 --baseline-root PATH
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import _timing
import numpy as np

HERE = Path(__file__).resolve().parent

#: The environments of the audit.
ENVS = ("riverswim-6", "riverswim-25", "grid-4-room", "grid-2-room")


def _total(traj, field: str):
    """The sum of the agent state's ``field`` over the replications (None if it has none)."""
    value = getattr(traj.agent_state, field, None)
    return None if value is None else int(np.sum(np.asarray(value)))


def measure(name: str, env: str, horizon: int, replications: int, repeats: int,
            options: dict) -> dict:
    """One agent on one MDP, in this process: the row described in the module docstring."""
    import jaxmdp as jm

    mdp = jm.envs.make(env)
    agent = jm.get_agent(name, **options)

    def keep(traj):
        return {"final_regret": np.asarray(traj.pseudo_regret)[:, -1].tolist(),
                "evi_steps": _total(traj, "evi_steps"), "episodes": _total(traj, "episodes"),
                "capped": _total(traj, "evi_unconverged")}

    timing = _timing.time_calls(
        lambda seed: jm.simulate(mdp, agent, horizon, replications, seed=seed,
                                 progress=False), repeats, keep=keep)
    last = timing.kept[-1]
    evi = last["evi_steps"] is not None
    sweeps = sum(k["evi_steps"] for k in timing.kept) if evi else None
    starts = sum(k["episodes"] or 0 for k in timing.kept)
    return {"agent": name, "env": env, "jaxmdp": jm.__file__, "first_s": timing.first_s,
            "times_s": timing.wall_s, "median_s": timing.median_s,
            "us_per_step": timing.us_per_step(horizon * replications),
            "evi_sweeps": last["evi_steps"] / replications if evi else None,
            "sweeps_per_start": sweeps / max(starts, 1) if evi else None,
            "capped": sum(k["capped"] or 0 for k in timing.kept),
            "final_regret": [k["final_regret"] for k in timing.kept]}


def _in_process(root: Path, name: str, env: str, args) -> dict:
    """:func:`measure` in a fresh process that imports jaxmdp from ``root``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker-root", str(root),
               "--agents", name, "--envs", env, "--horizon", str(args.horizon),
               "--replications", str(args.replications), "--repeats", str(args.repeats),
               "--options", args.options] + (["--x64"] if args.x64 else [])
    env_vars = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out = subprocess.run(command, env=env_vars, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"the measurement of {root} failed:\n{out.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def compare(name: str, env: str, roots: dict, args) -> dict:
    """The two versions of ``roots`` alternately, ``--rounds`` times: their runs, the ratio
    of their medians and whether their final pseudo-regrets agree."""
    runs = {version: [] for version in roots}
    for _ in range(args.rounds):
        for version, root in roots.items():
            result = _in_process(root, name, env, args)
            runs[version].append(result)
            sweeps = result["sweeps_per_start"]
            evi = "" if sweeps is None else (f", {sweeps:.1f} EVI sweeps per episode start, "
                                             f"{result['capped']} capped")
            print(f"{name} {env} {version:>8}: {result['us_per_step']:10.1f} us per "
                  f"replication-step (median {result['median_s']:.3f} s, first call "
                  f"{result['first_s']:.1f} s){evi}", flush=True)
    summary = {version: statistics.median(r["us_per_step"] for r in results)
               for version, results in runs.items()}
    summary["ratio"] = summary["baseline"] / summary["current"]
    summary["identical_regrets"] = all(b["final_regret"] == c["final_regret"]
                                       for b, c in zip(runs["baseline"], runs["current"]))
    print(f"{name} {env} baseline / current: {summary['ratio']:.2f}x; final pseudo-regrets "
          f"{'identical' if summary['identical_regrets'] else 'DIFFERENT'}", flush=True)
    return {"agent": name, "env": env, "runs": runs, "summary": summary}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=None,
                        help="agent names (default: every registered agent)")
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--replications", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed calls after the compiling one (the median is reported)")
    parser.add_argument("--options", default="{}",
                        help='agent options as JSON, e.g. \'{"lazy": true}\'')
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--baseline-root", type=Path, default=None,
                        help="another jaxmdp checkout, measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternations of the two versions (each a fresh process)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--worker-root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("horizon", "replications", "repeats", "rounds"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(args, name)!r}")
    options = json.loads(args.options)
    if not isinstance(options, dict):
        raise ValueError(f"options must be a JSON object, got {args.options!r}")
    if args.worker_root is not None:  # one measurement, for the parent process
        sys.path.insert(0, str(args.worker_root))
        _timing.setup(x64=args.x64, calibrate=False)
        result = measure(args.agents[0], args.envs[0], args.horizon, args.replications,
                         args.repeats, options)
        print("RESULT " + json.dumps(result), flush=True)
        return result
    calibration = _timing.setup(x64=args.x64)
    import jaxmdp as jm

    agents = args.agents or list(jm.agent_names())
    unknown = sorted(set(agents) - set(jm.agent_names()))
    if unknown:
        raise ValueError(f"agents must be registered names, got {unknown}")
    unknown = sorted(set(args.envs) - set(jm.envs.names()))
    if unknown:
        raise ValueError(f"envs must be environment names, got {unknown}")
    rows = []
    if args.baseline_root is not None:
        roots = {"baseline": args.baseline_root.resolve(), "current": HERE.parent}
        rows = [compare(name, env, roots, args) for name in agents for env in args.envs]
    else:
        print(f"T = {args.horizon}, {args.replications} replications; us per "
              f"replication-step (median of {args.repeats} compiled calls) and the first "
              f"call's seconds")
        print(f"{'agent':16s}" + "".join(f" {env:>22s}" for env in args.envs), flush=True)
        for name in agents:
            cells, details = [], []
            for env in args.envs:
                row = measure(name, env, args.horizon, args.replications, args.repeats,
                              options)
                rows.append(row)
                cells.append(f"{row['us_per_step']:12.2f} ({row['first_s']:6.1f} s)")
                if row["sweeps_per_start"] is not None:
                    details.append(f"  {env}: {row['sweeps_per_start']:.1f} EVI sweeps per "
                                   f"episode start, {row['capped']} capped")
            print(f"{name:16s}" + "".join(f" {cell:>22s}" for cell in cells), flush=True)
            for line in details:
                print(line, flush=True)
    record = {"settings": {k: (str(v) if isinstance(v, Path) else v)
                           for k, v in vars(args).items() if k != "worker_root"},
              "calibration": calibration, "rows": rows}
    import _calibration

    _calibration.save_record(args.out, f"agents_speed-T{args.horizon}-R{args.replications}",
                             record)
    return record


if __name__ == "__main__":
    main()
