"""Microseconds per replication-step of UCRL3 in ``jaxmdp.simulate``, and its EVI sweeps.

For one environment and one UCRL3 configuration, times ``jm.simulate(jm.envs.make(env),
jm.get_agent("ucrl3", **options), horizon, replications)`` as a user calls it:

* ``first_s``: the first call (compilation included);
* ``median_s``: the median of ``--repeats`` further calls (seeds ``1..repeats``, the
  program already compiled), each ended by ``block_until_ready``; ``us_per_step`` is that
  median over ``horizon * replications``;
* ``sweeps_per_start``: EVI sweeps per episode start (``evi_steps / episodes`` of the
  agent's final state, over all replications and timed calls; the sweeps that EVI's
  cycle detection skips count, as ``num_steps`` counts them), and ``capped``: the
  episode starts whose EVI stopped at ``max_evi_steps``;
* ``final_regret``: each replication's final pseudo-regret of every timed call, so that
  two versions can be checked for identical trajectories.

With ``--baseline-root PATH`` (another checkout of jaxmdp, e.g. ``git worktree add
/tmp/base 9cadd30``) the same measurement runs for that checkout too, each in a process
of its own (importing jaxmdp from its root), alternating ``--rounds`` times, and the
ratio of the medians is printed; the ratio of two versions measured in one run is what
the script is for on a shared machine. The calibration line of
``benchmarks/_calibration.py`` is printed first, and everything is saved as JSON under
``--out`` (default ``results/``).

Example (a couple of minutes on a laptop core)::

    python benchmarks/ucrl3_speed.py --env grid-4-room --horizon 500 --replications 4 \\
        --baseline-root /tmp/base

and at the scale of the published comparisons::

    python benchmarks/ucrl3_speed.py --horizon 10000 --replications 100 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def measure(root: Path, env: str, horizon: int, replications: int, repeats: int,
            options: dict, x64: bool) -> dict:
    """One version's timings (run in a process whose ``sys.path`` starts with ``root``)."""
    import jax

    jax.config.update("jax_enable_x64", x64)
    import numpy as np

    import jaxmdp as jm

    mdp = jm.envs.make(env)
    agent = jm.get_agent("ucrl3", **options)

    def call(seed):
        start = time.perf_counter()
        traj = jm.simulate(mdp, agent, horizon, replications, seed=seed, progress=False)
        jax.block_until_ready(traj)
        return traj, time.perf_counter() - start

    _, first = call(0)
    times, regrets, sweeps, starts, capped = [], [], 0, 0, 0
    for seed in range(1, repeats + 1):
        traj, elapsed = call(seed)
        times.append(elapsed)
        regrets.append(np.asarray(traj.pseudo_regret)[:, -1].tolist())
        state = traj.agent_state
        sweeps += int(np.sum(np.asarray(state.evi_steps)))
        starts += int(np.sum(np.asarray(state.episodes)))
        capped += int(np.sum(np.asarray(state.evi_unconverged)))
    median = statistics.median(times)
    return {"root": str(root), "jaxmdp": jm.__file__, "first_s": first, "times_s": times,
            "median_s": median, "us_per_step": 1e6 * median / (horizon * replications),
            "sweeps_per_start": sweeps / max(starts, 1), "episode_starts": starts,
            "capped": capped, "final_regret": regrets}


def _worker(args) -> None:
    sys.path.insert(0, str(args.worker_root))
    result = measure(args.worker_root, args.env, args.horizon, args.replications,
                     args.repeats, json.loads(args.options), args.x64)
    print("RESULT " + json.dumps(result), flush=True)


def _run(root: Path, args) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker-root", str(root),
               "--env", args.env, "--horizon", str(args.horizon), "--replications",
               str(args.replications), "--repeats", str(args.repeats), "--options",
               args.options] + (["--x64"] if args.x64 else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"the measurement of {root} failed:\n{out.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="grid-4-room")
    parser.add_argument("--horizon", type=int, default=500)
    parser.add_argument("--replications", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls after the first (the median is reported)")
    parser.add_argument("--options", default="{}",
                        help='UCRL3 options as JSON, e.g. \'{"lazy": true}\'')
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--baseline-root", type=Path, default=None,
                        help="another jaxmdp checkout, measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternations of the two versions (each a fresh process)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--worker-root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("horizon", "replications", "repeats", "rounds"):
        _check_positive(name, getattr(args, name))
    if args.worker_root is not None:
        _worker(args)
        return {}
    options = json.loads(args.options)
    if not isinstance(options, dict):
        raise ValueError(f"options must be a JSON object, got {args.options!r}")

    sys.path.insert(0, str(HERE))
    import _calibration

    _calibration.no_compile_cache()
    calibration = _calibration.calibrate()
    print(_calibration.calibration_line(calibration), flush=True)
    roots = {"current": HERE.parent}
    if args.baseline_root is not None:
        roots = {"baseline": args.baseline_root.resolve(), **roots}
    runs = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            result = _run(root, args)
            runs[name].append(result)
            print(f"{name:>8}: {result['us_per_step']:10.1f} us per replication-step "
                  f"(median {result['median_s']:.3f} s, first call {result['first_s']:.1f} s"
                  f"), {result['sweeps_per_start']:.1f} EVI sweeps per episode start, "
                  f"{result['capped']} capped", flush=True)
    summary = {name: statistics.median(r["us_per_step"] for r in results)
               for name, results in runs.items()}
    if "baseline" in runs:
        summary["ratio"] = summary["baseline"] / summary["current"]
        same = all(b["final_regret"] == c["final_regret"]
                   for b, c in zip(runs["baseline"], runs["current"]))
        summary["identical_regrets"] = same
        print(f"baseline / current: {summary['ratio']:.2f}x; final pseudo-regrets "
              f"{'identical' if same else 'DIFFERENT'}", flush=True)
    record = {"settings": {k: (str(v) if isinstance(v, Path) else v)
                           for k, v in vars(args).items() if k != "worker_root"},
              "calibration": calibration, "runs": runs, "summary": summary}
    stem = f"ucrl3_speed-{args.env}-T{args.horizon}-R{args.replications}"
    _calibration.save_record(args.out, stem, record)
    return record


if __name__ == "__main__":
    main()
