"""One process against two: ``jaxmdp.simulate`` over ``jax.distributed`` on one machine.

Runs the same experiment (default: UCRL2 on RiverSwim-6, T = 100,000, 200 replications,
seed 0) first in one process with one CPU device, then in two processes with one CPU
device each (``jax.distributed`` on 127.0.0.1, gloo collectives), in the same run of the
script. Each process first simulates one chunk of the same shapes (a warm-up: every
program of the timed call is compiled then, the compilation cache is off), the processes
wait for each other at a barrier, and the timed call is the whole ``simulate``, results
gathered to every process included. Prints the machine's calibration line, each wall
time, their ratio (one process / two processes) and whether the two runs agree bit for
bit (pseudo-regret, regret, final counts and states), and saves it all as JSON::

    python benchmarks/distributed.py [--horizon 100000] [--replications 200]
                                     [--agent ucrl2] [--env riverswim-6] [--x64]
                                     [--out results/distributed.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

#: The simulator's rounds per jitted call (``jaxmdp.simulate``'s default).
CHUNK_SIZE = 2000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="ucrl2")
    parser.add_argument("--env", default="riverswim-6")
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--timeout", type=int, default=3600,
                        help="seconds each group of processes may run")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "distributed.json")
    # Internal: one worker process.
    parser.add_argument("--worker", nargs=4, metavar=("PROCESS", "PROCESSES", "PORT", "FILE"),
                        help=argparse.SUPPRESS)
    return parser


def _warm_up_horizon(horizon: int) -> int:
    """A horizon whose run compiles every program of the timed run: one chunk of the same
    length (as :func:`jaxmdp.simulate` cuts the horizon, with its default record_every)."""
    from jaxmdp._simulate import MAX_DEFAULT_RECORDS, _records_per_chunk

    record_every = max(1, math.ceil(horizon / MAX_DEFAULT_RECORDS))
    records = _records_per_chunk(horizon // record_every, max(1, CHUNK_SIZE // record_every))
    return records * record_every


def worker(args) -> None:
    """One process of the experiment: warm-up, barrier, the timed ``simulate``."""
    import _timing

    _timing.setup(x64=args.x64, calibrate=False)  # before jax.distributed starts
    process, processes, port, path = args.worker
    process, processes = int(process), int(processes)
    if processes > 1:
        from jaxmdp import _distributed

        _distributed.initialize(coordinator=f"127.0.0.1:{port}", num_processes=processes,
                                process_id=process)
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    import jaxmdp as jm

    assert (jax.process_count(), len(jax.local_devices())) == (processes, 1), jax.devices()
    mdp = jm.envs.make(args.env)

    def run(horizon):
        traj = jm.simulate(mdp, args.agent, horizon, args.replications, args.seed,
                           progress=False, chunk_size=CHUNK_SIZE)
        return jax.block_until_ready(traj)

    run(_warm_up_horizon(args.horizon))
    multihost_utils.sync_global_devices("warm")
    multihost_utils.sync_global_devices("timed")
    traj, seconds, _ = _timing.timed(lambda: run(args.horizon))
    if process == 0:
        np.savez(path, pseudo_regret=traj.pseudo_regret, regret=traj.regret,
                 counts=traj.counts, state=traj.state, seconds=seconds,
                 devices=len(jax.devices()))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(args, argv: list[str], processes: int, path: Path) -> dict:
    """Runs ``processes`` workers (one CPU device each) and returns process 0's arrays."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags + ["--xla_force_host_platform_device_count=1"])
    env["JAX_PLATFORMS"] = "cpu"
    port = _free_port()
    children = [subprocess.Popen([sys.executable, __file__, *argv, "--worker", str(i),
                                  str(processes), str(port), str(path)], env=env)
                for i in range(processes)]
    try:
        for child in children:
            child.wait(timeout=args.timeout)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    codes = [child.returncode for child in children]
    if any(codes):
        raise SystemExit(f"{processes} process(es): exit codes {codes}")
    import numpy as np

    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def main(argv=None) -> dict | None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    if args.worker:
        worker(args)
        return None
    import tempfile

    import _timing
    import numpy as np

    calibration = _timing.setup()
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for processes in (1, 2):
            runs[processes] = _launch(args, argv, processes,
                                      Path(folder) / f"{processes}.npz")
            print(f"{processes} process(es), {int(runs[processes]['devices'])} CPU "
                  f"device(s): {float(runs[processes]['seconds']):.2f} s", flush=True)
    fields = ("pseudo_regret", "regret", "counts", "state")
    same = all(np.array_equal(runs[1][f], runs[2][f]) for f in fields)
    ratio = float(runs[1]["seconds"]) / float(runs[2]["seconds"])
    print(f"{args.agent} on {args.env}, T = {args.horizon}, {args.replications} "
          f"replications: wall time 1 process / 2 processes = {ratio:.2f}; "
          f"bit for bit: {same}", flush=True)
    record = {"command": " ".join(["python", "benchmarks/distributed.py", *argv]),
              "agent": args.agent, "env": args.env, "horizon": args.horizon,
              "replications": args.replications, "seed": args.seed,
              "dtype": "float64" if args.x64 else "float32",
              "seconds_one_process": float(runs[1]["seconds"]),
              "seconds_two_processes": float(runs[2]["seconds"]),
              "ratio": ratio, "bit_for_bit": same, "fields_compared": list(fields),
              "calibration": calibration,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from jaxmdp._files import write_atomic

    text = json.dumps(record, indent=2) + "\n"
    write_atomic(args.out, lambda tmp: Path(tmp).write_text(text), ".json")
    print(f"saved {args.out}")
    return record


if __name__ == "__main__":
    main()
