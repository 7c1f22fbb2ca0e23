"""One GPU benchmark: index solvers and every agent, on the device and on its CPU.

The index solvers, every registered agent and the paper's agents at 10^5 replications,
each row timed on the device and again on the same machine's CPU.

The rows of the full run (they run in this order, except that the paper's agents and
UCRL2 come first among the agents, then UCRL2's ``kernel`` rows, then the ``scale`` rows,
then the other agents):

* ``index``: ``jm.kl_ucb_solve`` and ``jm.kinf_solve`` on 15 random problems of
  S = 10^3, 10^4, 10^5 and 10^6 states (p ~ Dirichlet(1), v ~ U(0, 1), delta
  log-uniform on [1e-3, 1], rho 0.1-0.9 of the way from p.v to max v), float32 and
  float64: microseconds per index and the solve's passes over its data (on an
  accelerator ``max(6, the most root-finder steps)``, its fixed steps then the
  data-dependent trips; on a CPU the loop's trips, summed over the problems solved one
  after another from 4,096 states);
* ``agent``: every registered agent (``jm.agent_names()``) on riverswim-6 and
  grid-4-room, 10^4 replications, T = 10^4, float32, ``record_every = T // 10``;
* ``kernel``: UCRL2 with its EVI loop as one Pallas kernel (``evi_kernel="pallas"``,
  ``jaxmdp.planning._evi_kernel``) on the same MDPs at 10^4 replications, beside its
  ``agent`` row (the XLA loop); their CPU row is the agent's default;
* ``scale``: the paper's agents (ucb, dmed, olp, ps) and UCRL2 on the same MDPs at 10^5
  replications.

``--command-buffers`` runs the device rows with XLA's command buffers capturing ``while``
and ``cond`` (``XLA_FLAGS=--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL``, CUDA 12.3
or later; off by default in XLA): a loop then runs as a CUDA graph without a host wait per
trip where XLA can capture it. A second run with the flag, against one without, says
what it pays.

Each row: a first call (compile and run; ``first_s``), with its compile time apart
(``compile_s``: XLA's backend compiles, ``trace_s``: tracing and lowering, from
``jax.monitoring``'s duration events during that call), then ``--repeats`` timed calls with
another seed, each ended by ``jax.block_until_ready`` (``benchmarks/_timing.py``); the
median gives microseconds per replication-step (agents) or per index (solvers). An agent
row's first call plays one chunk of the simulator (1,000 rounds: the same compiled
program as the full horizon) and predicts the timed call; where that call would exceed
the row's cap (``--agent-cap``, ``--scale-cap`` seconds) T is cut to the largest multiple
of 1,000 that fits and the row says so (``record_every`` stays that of T = 10^4).

The same rows run on the machine's CPU (``jax.devices("cpu")``) in a second process
(``JAX_PLATFORMS=cpu``, so that every backend-dependent choice is the CPU's), at the
index rows' sizes and at ``--cpu-replications`` replications and ``--cpu-horizon``
rounds for the agents (the ``scale`` rows compare with their agent's CPU row); each row
gives the ratio CPU / device of the per-step (per-index) times. On a machine of 8 cores
or more, that process runs beside the device rows on its own cores (all but
``--device-cores``; the device process keeps the others), else after them. Rows that the
budget (``--budget`` seconds from the start) does not reach are listed as not run.

Everything is saved under ``--out`` (default ``results/``) as JSON (settings, the
calibration of ``benchmarks/_calibration.py``, the rows) and as a markdown table beside
it; the calibration line is printed first.

**Time plan of the full run on one H200** (an estimate, not a measurement of this script).
Index rows: from the issue's numbers (20-30 us per index in 3-5 passes, 150-220 us in
30-43: 5-7 us a pass, launches and host waits), at most 8 passes cost under 60 us per
index up to 10^5 states, and at 10^6 about as much again in memory traffic (15 x 10^6
entries, three arrays, 8 passes at 4.8 TB/s: 0.6 ms a call); their 16 rows take about
35 s, mostly compiles of 1-2 s. Agent rows: ``docs/measurements/scaling.md`` ("On a
GPU") has the paper's agents at 10^4 replications on an H200 at 0.019-0.067 us per
replication-step (190-670 us a round) after compiles of 1.7-4.7 s; so a row is a compile
of about 4 s, a first call of 0.2-0.7 s and a timed call of at most the cap (3 s; the
agents that plan by extended value iteration, a host wait per sweep and every round at
this many replications, are those whose T it cuts): about 7 s, 250 s for the 36 rows (34
agent rows, 2 kernel rows). The 10 scale rows (10^5 replications, about 1-3 ms a round): a
compile, a first call of 1-3 s and at most 6 s, about 120 s. With 15 s of start-up and
calibration that is about 425 s, at the budget (420 s, after which no row starts, so that
the run ends within the 8 minutes of one device session even where the estimate is
short): where the estimate holds, the last of the other agents' rows are listed as not
run. The CPU rows (on 12 of
16 cores, beside the device rows) take about 200 s, mostly compiles.

Usage::

    python benchmarks/gpu.py            # the full run, on a machine with a GPU
    python benchmarks/gpu.py --smoke    # the same code at tiny sizes, on the CPU (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import _calibration
import _timing
import numpy as np

HERE = Path(__file__).resolve().parent

ENVS = ("riverswim-6", "grid-4-room")
PAPER_AGENTS = ("ucb", "dmed", "olp", "ps")
SCALE_AGENTS = PAPER_AGENTS + ("ucrl2",)
#: The ``kernel`` rows: an agent and the options that run its planning loop as one kernel.
KERNEL_ROWS = (("ucrl2", {"evi_kernel": "pallas"}),)
#: ``--command-buffers``: XLA's command buffers capture loops and conditionals too.
COMMAND_BUFFERS = "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL"
SOLVERS = ("kl_ucb", "kinf")
#: Problems per index row (as in ``benchmarks/indices.py`` and the paper's timing study).
PROBLEMS = 15
#: Rounds of an agent row's first call: one chunk of ``jm.simulate`` (the chunk size of
#: every call, so that the first call compiles the program of the timed ones).
CHUNK = 1000

FULL = {"sizes": [1000, 10_000, 100_000, 1_000_000], "dtypes": ["float32", "float64"],
        "agents": None, "envs": list(ENVS), "replications": 10_000, "horizon": 10_000,
        "scale_replications": 100_000, "problems": PROBLEMS, "index_repeats": 5,
        "repeats": 1, "cpu_replications": 100, "cpu_horizon": 2000, "cpu_repeats": 1,
        "budget": 420.0, "agent_cap": 3.0, "scale_cap": 6.0}
SMOKE = {"sizes": [16], "dtypes": ["float32", "float64"], "agents": ["ucb"],
         "envs": ["riverswim-6"], "replications": 4, "horizon": 20, "scale_replications": 4,
         "problems": 4, "index_repeats": 2, "repeats": 1, "cpu_replications": 4,
         "cpu_horizon": 20, "cpu_repeats": 1, "budget": 0.0, "agent_cap": 0.0,
         "scale_cap": 0.0}


# ---------------------------------------------------------------------------------------
# Measurements (run in the device process and in the CPU process alike).


class _CompileEvents:
    """Sums ``jax.monitoring``'s compile duration events while it is entered: ``compile``
    (XLA backend compiles) and ``trace`` (tracing and lowering to MLIR)."""

    COMPILE = "/jax/core/compile/backend_compile_duration"
    TRACE = ("/jax/core/compile/jaxpr_trace_duration",
             "/jax/core/compile/jaxpr_to_mlir_module_duration")

    def __init__(self):
        self.compile = 0.0
        self.trace = 0.0

    def _listen(self, event, duration, **_):
        if event == self.COMPILE:
            self.compile += duration
        elif event in self.TRACE:
            self.trace += duration

    def __enter__(self):
        import jax

        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        import jax

        jax.monitoring.unregister_event_duration_listener(self._listen)


_PROBLEMS: dict = {}


def _index_problems(size: int, count: int, seed: int):
    """``count`` random problems of ``size`` states (float64, cached per size and seed)."""
    key = (size, count, seed)
    if key not in _PROBLEMS:
        for other in [k for k in _PROBLEMS if k[:2] != key[:2]]:
            del _PROBLEMS[other]  # one size at a time (10^6 states: 240 MB a seed)
        rng = np.random.default_rng([size, seed])
        p = rng.dirichlet(np.ones(size), size=count)
        v = rng.uniform(size=(count, size))
        delta = np.exp(rng.uniform(np.log(1e-3), 0.0, size=count))
        mean = np.sum(p * v, axis=-1)
        rho = mean + rng.uniform(0.1, 0.9, size=count) * (v.max(axis=-1) - mean)
        _PROBLEMS[key] = (p, v, {"kl_ucb": delta, "kinf": rho})
    return _PROBLEMS[key]


def _passes(steps: np.ndarray, size: int, batched: bool) -> int:
    """The solve's passes over its data: ``max(6, most steps)`` on an accelerator (fixed
    steps, then the data-dependent trips); on a CPU the loop's trips (summed over the
    problems solved one after another from 4,096 states)."""
    from jaxmdp.indices import kl

    if kl._layout() == "accelerator":
        return max(kl._ACCELERATOR_STEPS, int(steps.max()))
    if batched and size >= kl._SEQUENTIAL_MIN_STATES:
        return int(steps.sum())
    return int(steps.max())


def measure_index(row: dict) -> dict:
    """An ``index`` row: the solve on ``row["problems"]`` problems (seed 0 for the first
    call, seed 1 for the ``row["repeats"]`` timed calls)."""
    import jax

    import jaxmdp as jm

    jax.config.update("jax_enable_x64", row["dtype"] == "float64")
    solve = jax.jit(getattr(jm, f"{row['solver']}_solve"))
    dtype = np.dtype(row["dtype"])

    def arrays(seed):
        p, v, levels = _index_problems(row["size"], row["problems"], seed)
        return jax.device_put(tuple(np.asarray(x, dtype)
                                    for x in (p, v, levels[row["solver"]])))

    first_args = arrays(0)
    with _CompileEvents() as events:
        _, first_s, _ = _timing.timed(lambda: solve(*first_args))
    args = arrays(1)
    times = []
    for _ in range(row["repeats"]):
        out, wall, _ = _timing.timed(lambda: solve(*args))
        times.append(wall)
    steps = np.asarray(out.num_steps)
    median = statistics.median(times)
    return {**row, "first_s": first_s, "compile_s": events.compile, "trace_s": events.trace,
            "times_s": times, "median_s": median,
            "us": 1e6 * median / row["problems"], "max_steps": int(steps.max()),
            "passes": _passes(steps, row["size"], True),
            "converged": bool(np.all(np.asarray(out.converged))),
            "device": str(jax.devices()[0].device_kind)}


def measure_agent(row: dict) -> dict:
    """An ``agent`` or ``scale`` row: ``jm.simulate`` of ``row["replications"]``
    replications, a first call of one chunk (seed 0), then ``row["repeats"]`` timed calls
    of ``row["horizon"]`` rounds (seeds 1, 2, ...), cut to fit ``row["cap_s"]``."""
    import jax

    import jaxmdp as jm

    jax.config.update("jax_enable_x64", False)
    mdp = jm.envs.make(row["env"])
    agent = jm.get_agent(row["agent"], **row.get("options", {}))
    horizon, replications = row["horizon"], row["replications"]
    record_every = max(1, horizon // 10)
    first_rounds = horizon if horizon <= CHUNK or CHUNK % record_every else CHUNK

    def run(seed, rounds):
        return jm.simulate(mdp, agent, rounds, replications, seed=seed,
                           record_every=record_every, chunk_size=CHUNK, progress=False)

    with _CompileEvents() as events:
        _, first_s, _ = _timing.timed(lambda: run(0, first_rounds))
    per_round = max(first_s - events.compile - events.trace, 1e-9) / first_rounds
    note = ""
    cap, repeats = row.get("cap_s") or 0.0, row["repeats"]
    if cap and per_round * horizon * repeats > cap and horizon > first_rounds:
        cut = max(first_rounds, int(cap / (per_round * repeats)) // first_rounds
                  * first_rounds)
        note = (f"T cut from {horizon:,} to {cut:,}: the first call projected "
                f"{per_round * horizon * repeats:.1f} s > cap {cap:g} s")
        horizon = cut
    times = []
    for seed in range(1, repeats + 1):
        traj, wall, _ = _timing.timed(lambda seed=seed: run(seed, horizon))
        times.append(wall)
    regret = np.asarray(traj.pseudo_regret)[:, -1]
    median = statistics.median(times)
    return {**row, "horizon_run": horizon, "record_every": record_every,
            "first_rounds": first_rounds, "first_s": first_s, "compile_s": events.compile,
            "trace_s": events.trace, "times_s": times, "median_s": median,
            "us": 1e6 * median / (horizon * replications),
            "mean_final_regret": float(np.mean(regret)), "note": note,
            "device": str(jax.devices()[0].device_kind)}


def measure(row: dict) -> dict:
    """One row, whatever its kind; an error is recorded in the row, not raised."""
    try:
        return measure_index(row) if row["kind"] == "index" else measure_agent(row)
    except Exception as error:  # noqa: BLE001 (one failing row must not end the run)
        return {**row, "error": f"{type(error).__name__}: {error}"[:2000]}


# ---------------------------------------------------------------------------------------
# The plan: rows of the device and of the CPU.


def plan(settings: dict, agent_names) -> list[dict]:
    """The device rows, in order of priority (the index solvers; the paper's agents and
    UCRL2 at 10^4 replications, UCRL2's kernel rows, the same agents at 10^5
    replications; the other agents); each has an ``id`` and a ``cpu_id`` naming its CPU
    row."""
    rows = []
    for size in settings["sizes"]:
        for dtype in settings["dtypes"]:
            for solver in SOLVERS:
                rows.append({"id": f"index {solver} S={size} {dtype}", "kind": "index",
                             "solver": solver, "size": size, "dtype": dtype,
                             "problems": settings["problems"],
                             "repeats": settings["index_repeats"]})
    agents = list(settings["agents"] or agent_names)
    wanted = [a for a in agents if a in SCALE_AGENTS]
    kernels = [(a, options) for a, options in KERNEL_ROWS if a in agents]
    groups = (("agent", [(a, {}) for a in wanted], settings["replications"],
               settings["agent_cap"]),
              ("kernel", kernels, settings["replications"], settings["agent_cap"]),
              ("scale", [(a, {}) for a in wanted], settings["scale_replications"],
               settings["scale_cap"]),
              ("agent", [(a, {}) for a in agents if a not in SCALE_AGENTS],
               settings["replications"], settings["agent_cap"]))
    for kind, names, replications, cap in groups:
        for name, options in names:
            for env in settings["envs"]:
                rows.append({"id": f"{kind} {name} {env}", "kind": kind, "agent": name,
                             "options": options, "env": env, "replications": replications,
                             "horizon": settings["horizon"], "repeats": settings["repeats"],
                             "cap_s": cap, "cpu_id": f"agent {name} {env}"})
    return rows


def cpu_rows(rows: list[dict], settings: dict) -> list[dict]:
    """The CPU's rows: each index row at its size; each agent once (its ``agent`` and
    ``scale`` rows compare with it) at the CPU's replications and horizon."""
    out, seen = [], set()
    for row in rows:
        key = row.get("cpu_id", row["id"])
        if key in seen:
            continue
        seen.add(key)
        if row["kind"] == "index":
            out.append(dict(row))
        else:
            out.append({**row, "id": key, "kind": "agent", "options": {},
                        "replications": settings["cpu_replications"],
                        "horizon": settings["cpu_horizon"],
                        "repeats": settings["cpu_repeats"], "cap_s": 0.0})
    return out


class _CpuProcess:
    """The CPU rows in a second process (``JAX_PLATFORMS=cpu``), pinned to ``cores`` if
    given; its results are read as they come."""

    def __init__(self, rows: list[dict], cores, smoke: bool):
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        env["XLA_FLAGS"] = env.get("XLA_FLAGS", "").replace(COMMAND_BUFFERS, "").strip()
        command = [sys.executable, str(Path(__file__).resolve()), "--cpu-worker"]
        if cores:
            command += ["--cores", ",".join(map(str, cores))]
        if smoke:
            command.append("--smoke")
        self.results: dict = {}
        self.errors: list[str] = []
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.process.stdin.write(json.dumps(rows) + "\n")
        self.process.stdin.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr = threading.Thread(target=self._read_errors, daemon=True)
        self._stderr.start()

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("ROW "):
                result = json.loads(line[4:])
                self.results[result["id"]] = result

    def _read_errors(self):
        for line in self.process.stderr:
            self.errors.append(line)
            del self.errors[:-200]

    def finish(self, deadline: float | None) -> dict:
        """Waits for the process until ``deadline`` (``time.time()``; None: for ever),
        then stops it; returns the rows done."""
        timeout = None if deadline is None else max(0.0, deadline - time.time())
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # the budget is spent: the rows not done stay so
            self.process.kill()
            self.process.wait()
            self._reader.join(timeout=10)
            return self.results
        self._reader.join(timeout=10)
        if self.process.returncode != 0:
            raise RuntimeError("the CPU process failed:\n" + "".join(self.errors[-40:]))
        return self.results


def _cpu_worker(args) -> None:
    """The CPU process: reads its rows (JSON) from stdin, prints ``ROW {json}`` each."""
    rows = json.loads(sys.stdin.readline())
    if not args.smoke:
        _calibration.no_compile_cache()
    for row in rows:
        print("ROW " + json.dumps(measure(row)), flush=True)


# ---------------------------------------------------------------------------------------
# Report.


def _fmt(x, digits=3):
    if x is None:
        return "—"
    return f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def _size(row: dict) -> str:
    if row["kind"] == "index":
        return f"{row['problems']} x S={row['size']:,} {row['dtype']}"
    horizon = row.get("horizon_run", row["horizon"])
    return f"R={row['replications']:,} T={horizon:,} float32"


def table(rows: list[dict], cpu: dict) -> str:
    """The markdown table of the device rows beside their CPU rows."""
    lines = ["| row | device size | first call s (compile s) | device us | CPU size | "
             "CPU us | CPU / device | passes (device, CPU) | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        other = cpu.get(row.get("cpu_id", row["id"]))
        unit = "per index" if row["kind"] == "index" else "per replication-step"
        if "error" in row or "skipped" in row:
            lines.append(f"| {row['id']} | {_size(row)} | — | — | — | — | — | — | "
                         f"{row.get('error') or row.get('skipped')} |")
            continue
        first = f"{row['first_s']:.2f} ({row['compile_s'] + row['trace_s']:.2f})"
        ratio, cpu_size, cpu_us = None, "not reached", None
        if other is not None and "error" not in other:
            cpu_size, cpu_us = _size(other), other["us"]
            ratio = other["us"] / row["us"]
        elif other is not None:
            cpu_size = other["error"][:60]
        passes = "—"
        if row["kind"] == "index":
            passes = f"{row['passes']}, {other['passes'] if other and 'passes' in other else '—'}"
        note = "; ".join(x for x in (row.get("note", ""), unit) if x)
        lines.append(f"| {row['id']} | {_size(row)} | {first} | {_fmt(row['us'])} | "
                     f"{cpu_size} | {_fmt(cpu_us)} | {_fmt(ratio)} | {passes} | {note} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Main.


def _cores(device_cores: int):
    """``(device process cores, CPU process cores)``, disjoint, on a machine of 8 cores or
    more; else ``(None, None)`` (the CPU rows then run after the device rows)."""
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(available) < 8 or not 0 < device_cores < len(available):
        return None, None
    return available[:device_cores], available[device_cores:]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="the same code at tiny sizes, on the CPU (the tests run it)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--agents", nargs="+", default=None,
                        help="agent names (default: every registered agent)")
    parser.add_argument("--envs", nargs="+", default=None)
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help="index rows' numbers of states")
    parser.add_argument("--dtypes", nargs="+", default=None, choices=["float32", "float64"])
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds from the start after which no row starts (0: none)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls of an agent row (the median is reported)")
    parser.add_argument("--agent-cap", type=float, default=None,
                        help="seconds of an agent row's timed calls past which T is cut")
    parser.add_argument("--scale-cap", type=float, default=None,
                        help="the same for the rows at 10^5 replications")
    parser.add_argument("--cpu-replications", type=int, default=None)
    parser.add_argument("--cpu-horizon", type=int, default=None)
    parser.add_argument("--command-buffers", action="store_true",
                        help=f"device rows with XLA_FLAGS {COMMAND_BUFFERS} (loops and "
                             f"conditionals captured in CUDA graphs)")
    parser.add_argument("--device-cores", type=int, default=4,
                        help="cores kept by the device process when the CPU rows run "
                             "beside it (machines of 8 cores or more)")
    parser.add_argument("--cpu-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cores", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, [int(c) for c in args.cores.split(",")])
    if args.cpu_worker:
        _cpu_worker(args)
        return {}

    start = time.time()
    settings = dict(SMOKE if args.smoke else FULL)
    for name in ("agents", "envs", "sizes", "dtypes", "budget", "repeats", "agent_cap",
                 "scale_cap", "cpu_replications", "cpu_horizon"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    for name in ("repeats", "cpu_replications", "cpu_horizon"):
        if settings[name] < 1:
            raise ValueError(f"{name} must be a positive integer, got {settings[name]!r}")
    device_cores = cpu_cores = None
    if args.smoke:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    else:
        _calibration.no_compile_cache()  # compile times are compiles, not cache loads
        # Pinned before JAX starts its threads (they inherit the process's cores).
        device_cores, cpu_cores = _cores(args.device_cores)
        if device_cores:
            os.sched_setaffinity(0, device_cores)
    if args.command_buffers:  # read when JAX starts its backend
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {COMMAND_BUFFERS}".strip()
    import jax

    device = jax.devices()[0]
    if device.platform == "cpu":  # no accelerator: the CPU rows run after the device rows
        cpu_cores = None
    calibration = _calibration.calibrate()
    print(_calibration.calibration_line(calibration), flush=True)
    import jaxmdp as jm

    names = jm.agent_names()
    unknown = sorted(set(settings["agents"] or ()) - set(names))
    if unknown:
        raise ValueError(f"agents must be registered names, got {unknown}")
    unknown = sorted(set(settings["envs"]) - set(jm.envs.names()))
    if unknown:
        raise ValueError(f"envs must be environment names, got {unknown}")
    rows = plan(settings, names)
    cpu_plan = cpu_rows(rows, settings)
    where = f"beside the device rows, cores {cpu_cores}" if cpu_cores else "after them"
    print(f"device: {device.device_kind} ({device.platform}); {len(rows)} rows, "
          f"{len(cpu_plan)} CPU rows ({where})", flush=True)
    worker = _CpuProcess(cpu_plan, cpu_cores, args.smoke) if cpu_cores else None
    deadline = start + settings["budget"] if settings["budget"] else None
    done = []
    for row in rows:
        if deadline is not None and time.time() > deadline - 20:
            done.append({**row, "skipped": "not run: budget"})
            continue
        result = measure(row)
        done.append(result)
        status = result.get("error")
        if status is None:
            passes = result.get("passes")
            status = (f"{result['us']:.4g} us, first call {result['first_s']:.2f} s"
                      + (f", {passes} passes" if passes is not None else "")
                      + (f"; {result['note']}" if result.get("note") else ""))
        print(f"{row['id']}: {status}", flush=True)
    if worker is None:
        worker = _CpuProcess(cpu_plan, None, args.smoke)
    cpu = worker.finish(deadline)
    for row in cpu_plan:
        if row["id"] not in cpu:
            cpu[row["id"]] = None
    markdown = table(done, {k: v for k, v in cpu.items() if v is not None})
    print(markdown, flush=True)
    record = {"settings": {**settings, "smoke": args.smoke, "device": device.device_kind,
                           "xla_flags": os.environ.get("XLA_FLAGS", ""),
                           "platform": device.platform, "device_cores": device_cores,
                           "cpu_cores": cpu_cores, "wall_s": time.time() - start},
              "calibration": calibration, "rows": done,
              "cpu_rows": [cpu[row["id"]] or {**row, "skipped": "not reached"}
                           for row in cpu_plan]}
    stem = ("gpu-smoke" if args.smoke else "gpu") + ("-cb" if args.command_buffers else "")
    path = _calibration.save_record(args.out, stem, record)
    path.with_suffix(".md").write_text(
        f"{_calibration.calibration_line(calibration)}\n\n{markdown}\n")
    print(f"saved {path.with_suffix('.md')}", flush=True)
    return record


if __name__ == "__main__":
    main()
