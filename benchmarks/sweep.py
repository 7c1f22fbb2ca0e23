"""A hyperparameter sweep against the same work as one run, and as separate runs.

Three ways to run a ``G``-point sweep of one agent's option (default: UCRL2's ``delta``
over 16 values from ``1e-4`` to ``0.5``, on RiverSwim-6, T = 10,000, 100 replications per
point), each in a fresh process with the persistent compilation cache off, so that every
wall time includes its compilation:

* ``sweep``: one ``jm.sweep`` call (one program, the points one more batch axis);
* ``simulate``: one ``jm.simulate`` call of ``G x R`` replications of the agent at one
  value (the same work: the target is ``sweep`` at most 1.2x this);
* ``separate``: ``G`` ``jm.simulate`` calls of ``R`` replications, one per value, in one
  process (what a script without sweeps does); with ``--baseline-root PATH`` (another
  checkout, e.g. one whose options are static, one compilation per value) it runs there
  too.

Prints the calibration line of ``benchmarks/_calibration.py`` first and writes the rows
as JSON under ``--out`` (default ``results/``). The results page's row:

    python benchmarks/sweep.py --baseline-root PATH
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import _timing

HERE = Path(__file__).resolve().parent
DELTAS = [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3,
          0.4, 0.5]


def one(mode: str, agent: str, option: str, values, env: str, horizon: int,
        replications: int) -> dict:
    """One mode in this process: ``{"mode", "seconds", "final_mean"}``."""
    import numpy as np

    import jaxmdp as jm

    mdp = jm.envs.make(env)
    if mode == "sweep":
        traj, seconds, _ = _timing.timed(lambda: jm.sweep(
            mdp, agent, {option: values}, horizon, replications, progress=False,
            record_every=horizon).pseudo_regret)
        final = np.asarray(traj)[..., -1]
    elif mode == "simulate":
        traj, seconds, _ = _timing.timed(lambda: jm.simulate(
            mdp, jm.get_agent(agent, **{option: values[0]}), horizon,
            replications * len(values), progress=False, record_every=horizon).pseudo_regret)
        final = np.asarray(traj)[..., -1]
    else:
        def separate():
            return [jm.simulate(mdp, jm.get_agent(agent, **{option: v}), horizon,
                                replications, progress=False,
                                record_every=horizon).pseudo_regret for v in values]

        traj, seconds, _ = _timing.timed(separate)
        final = np.stack([np.asarray(t)[..., -1] for t in traj])
    return {"mode": mode, "seconds": seconds, "final_mean": float(final.mean())}


def _in_process(args, mode: str, root: Path | None = None) -> dict:
    """Runs one mode in a fresh process (of this checkout, or of ``root``)."""
    command = [sys.executable, str(HERE / "sweep.py"), "--one", mode, "--agent", args.agent,
               "--option", args.option, "--env", args.env, "--horizon", str(args.horizon),
               "--replications", str(args.replications), "--values",
               *map(str, args.values)]
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
        command[1] = str(Path(root) / "benchmarks" / "sweep.py") if (
            Path(root) / "benchmarks" / "sweep.py").is_file() else command[1]
        command += ["--jaxmdp-root", str(root)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return dict(row, root=str(root) if root else "this checkout")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="ucrl2")
    parser.add_argument("--option", default="delta")
    parser.add_argument("--values", nargs="+", type=float, default=DELTAS)
    parser.add_argument("--env", default="riverswim-6")
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--baseline-root", type=Path, default=None,
                        help="another checkout whose separate runs are timed too")
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--jaxmdp-root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:  # a child process: one mode, one JSON line
        if args.jaxmdp_root is not None:
            sys.path.insert(0, str(args.jaxmdp_root))
        _timing.setup(x64=False, calibrate=False)
        print(json.dumps(one(args.one, args.agent, args.option, args.values, args.env,
                             args.horizon, args.replications)))
        return {}
    calibration = _timing.setup(x64=False)
    rows = [_in_process(args, mode) for mode in ("sweep", "simulate", "separate")]
    if args.baseline_root is not None:
        rows.append(_in_process(args, "separate", args.baseline_root))
    after = _timing._calibration.calibrate()
    print(_timing._calibration.calibration_line(after), flush=True)
    for row in rows:
        print(f"{row['mode']:9s} {row['root']:>20s}: {row['seconds']:7.1f} s "
              f"(mean final pseudo-regret {row['final_mean']:.2f})", flush=True)
    sweep, simulate = rows[0]["seconds"], rows[1]["seconds"]
    print(f"sweep / one simulate of the same work: {sweep / simulate:.2f}x; separate runs / "
          f"sweep: " + ", ".join(f"{r['seconds'] / sweep:.2f}x ({r['root']})"
                                  for r in rows[2:]))
    record = {"settings": {k: (str(v) if isinstance(v, Path) else v)
                           for k, v in vars(args).items()},
              "calibration": [calibration, after], "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"sweep-{args.agent}-{args.env}-G{len(args.values)}-R{args.replications}"
    (args.out / f"{stem}.json").write_text(json.dumps(record, indent=2))
    return record


if __name__ == "__main__":
    main()
