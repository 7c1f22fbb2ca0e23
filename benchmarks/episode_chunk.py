"""Microseconds per replication-step of the episodic agents against their planning chunk.

The UCRL family, PSRL and TSDE plan only the replications whose episode starts, ``c`` of
them per pass (:func:`jaxmdp.agents.batching.cond_chunked`; ``c`` is the agents' option
``episode_chunk``). For each agent, environment and ``c`` of ``--chunks``, a fresh process
takes the agent with ``episode_chunk=c``, calls ``jm.simulate(mdp, agent, horizon,
replications)`` once to compile and ``--repeats`` times with another seed, each ended by
``block_until_ready``; the row holds the median time per
replication-step and the mean final pseudo-regret of the last call (the same seed for
every ``c``: the runs can part at an exact tie, since XLA compiles a pass of another
width to other kernels whose last bits can differ). The calibration line of
``benchmarks/_calibration.py`` is printed first and stored with the rows as JSON under
``--out`` (default ``results/``).

The results page's table::

    python benchmarks/episode_chunk.py --chunks 8 2 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import _timing

HERE = Path(__file__).resolve().parent

#: The environments of the table (those of ``benchmarks/agents_speed.py``).
ENVS = ("riverswim-6", "riverswim-25", "grid-4-room", "grid-2-room")
#: The agents and the options they run with: KL-UCRL with the published maximiser, whose
#: default batching is ``cond="chunked"`` (without it, ``"compact"``, which has no chunk).
AGENTS = {"ucrl2": {}, "kl_ucrl": {"search_up_bug": True}, "ucrl2b": {}, "scal": {},
          "tucrl": {}, "psrl": {}, "tsde": {}}


def time_one(name: str, env: str, chunk: int, horizon: int, replications: int,
             repeats: int) -> dict:
    """One row, in this process (``--one``)."""
    import numpy as np

    import jaxmdp as jm

    mdp = jm.envs.make(env)
    agent = jm.get_agent(name, episode_chunk=chunk, **AGENTS[name])
    timing = _timing.time_calls(
        lambda seed: jm.simulate(mdp, agent, horizon, replications, seed=seed,
                                 progress=False).pseudo_regret,
        repeats, seeds=[1] * repeats, keep=lambda regret: np.asarray(regret)[:, -1])
    final = timing.kept[-1]
    return {"agent": name, "env": env, "chunk": chunk, "first_s": timing.first_s,
            "times_s": timing.wall_s,
            "us_per_step": timing.us_per_step(horizon * replications),
            "regret": float(final.mean()),
            "regret_se": float(final.std(ddof=1) / np.sqrt(len(final)))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--chunks", nargs="+", type=int, default=[8, 2, 1])
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed calls after the compiling one (the median is reported)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("horizon", "replications", "repeats"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(args, name)!r}")
    bad = [c for c in args.chunks if c < 1]
    if bad:
        raise ValueError(f"chunks must be positive integers, got {bad}")
    if args.one:
        _timing.setup(calibrate=False)
        row = time_one(args.agents[0], args.envs[0], args.chunks[0], args.horizon,
                       args.replications, args.repeats)
        print(json.dumps(row), flush=True)
        return row
    import _calibration

    import jaxmdp as jm

    unknown = sorted(set(args.envs) - set(jm.envs.names()))
    if unknown:
        raise ValueError(f"envs must be environment names, got {unknown}")
    calibration = _timing.setup()  # here and in the children: compiles are compiles
    print(f"T = {args.horizon}, {args.replications} replications; us per replication-step "
          f"(median of {args.repeats} compiled calls), mean final pseudo-regret", flush=True)
    rows = []
    for name in args.agents:
        for env in args.envs:
            cells = []
            for chunk in args.chunks:
                command = [sys.executable, __file__, "--one", "--agents", name, "--envs",
                           env, "--chunks", str(chunk), "--horizon", str(args.horizon),
                           "--replications", str(args.replications), "--repeats",
                           str(args.repeats)]
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode:
                    raise RuntimeError(f"{name} on {env}, chunk {chunk}:\n{done.stderr}")
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append(row)
                cells.append(f"c={chunk}: {row['us_per_step']:.3f} us ({row['regret']:.2f})")
            print(f"{name:8s} {env:14s} " + "  ".join(cells), flush=True)
    record = {"settings": {k: (str(v) if isinstance(v, Path) else v)
                           for k, v in vars(args).items()},
              "calibration": calibration, "rows": rows}
    stem = f"episode_chunk-T{args.horizon}-R{args.replications}"
    _calibration.save_record(args.out, stem, record)
    return record


if __name__ == "__main__":
    main()
