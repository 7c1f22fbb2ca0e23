"""Runs every experiment script at its default size and prints where each figure went.

Discovers ``experiments/*.py`` (skipping names that start with ``_`` and this script) and
runs each as a subprocess with the current interpreter. Most scripts spend their time
compiling, which is single-threaded, so they run ``--jobs`` at a time (default: one per
CPU core, at most 2); the scripts that measure time (they say ``REPRODUCE_ALONE = True``)
run afterwards, one at a time, with nothing beside them. One progress display follows
them all (each running script's latest progress line is shown beside it); each script's
full output goes to ``results/logs/<script>.log``. Results are reused as each script
decides (``--force`` is passed through to recompute); ``--full`` asks every script for
the published sizes instead of its CPU-friendly default. The machine's calibration line
(``benchmarks/_calibration.py``) is printed before the first script and after the last,
and saved with each script's time in ``results/logs/reproduce.json``.

Compiled programs are shared between the scripts, and between runs, through jaxmdp's
persistent compilation cache (``jaxmdp._cache``: the user's cache directory,
``JAXMDP_CACHE_DIR`` to move it, ``jaxmdp cache --clear`` to empty it), which each script
turns on when it starts; ``--no-compile-cache`` turns it off for every script (it sets
``JAXMDP_NO_COMPILE_CACHE=1`` for them). Several scripts simulate the same agent on the
same environment shape (``robustness.py`` runs ``regret.py``'s programs from a rigged
start, ``rewards.py``'s learned-reward agents are ``compare.py``'s on two of its
environments), and a program compiled by one is loaded by the next instead of compiled
again; a second run of the main job loads them all. The scripts that measure time run
without it (they turn it off themselves, and are started with
``JAXMDP_NO_COMPILE_CACHE=1``), so their compile times are real compiles.

    python experiments/reproduce.py [--full] [--force] [--only regret robustness]
                                    [--jobs 2] [--list] [--no-compile-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import _calibration  # noqa: E402

from jaxmdp import _cache  # noqa: E402
from jaxmdp._progress import Progress  # noqa: E402


def discover(folder: Path = HERE) -> list[Path]:
    """Experiment scripts in ``folder``: ``*.py`` not starting with ``_``, not this one."""
    me = Path(__file__).name
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_") and p.name != me)


def _pump(stream, sink, last: list[str]):
    """Copies a child's stream into the log file and remembers its last non-empty line."""
    for raw in iter(stream.readline, ""):
        sink.write(raw)
        sink.flush()
        text = raw.replace("\r", "\n").strip().splitlines()
        if text:
            last[0] = text[-1][-70:]
    stream.close()


def runs_alone(script: Path) -> bool:
    """Whether ``script`` measures time (``REPRODUCE_ALONE = True`` at the top level)."""
    return re.search(r"^REPRODUCE_ALONE\s*=\s*True\b", script.read_text(), re.M) is not None


_LOCK = threading.Lock()
_RUNNING: dict[str, str] = {}  # script -> its latest progress line


def _show(bar: Progress) -> None:
    with _LOCK:
        bar.update(0, info=" | ".join(f"{k}: {v}" for k, v in _RUNNING.items()))


def script_env(script: Path, compile_cache: bool) -> dict[str, str]:
    """The child's environment: ours, with jaxmdp's compilation cache turned off
    (``JAXMDP_NO_COMPILE_CACHE=1``) when ``compile_cache`` is False or the script
    measures time (its compile times must be compiles, not cache loads)."""
    env = dict(os.environ)
    if not compile_cache or runs_alone(script):
        env[_cache.DISABLE_VARIABLE] = "1"
    return env


def run_script(script: Path, extra: list[str], log_path: Path, bar: Progress,
               env: dict[str, str] | None = None) -> tuple[int, list[str], float]:
    """Runs one script; returns (exit code, figure paths it reported, seconds)."""
    start = time.perf_counter()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    last = [""]
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(script), *extra], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, env=env)
        reader = threading.Thread(target=_pump, args=(proc.stdout, log, last), daemon=True)
        reader.start()
        while proc.poll() is None:
            with _LOCK:
                _RUNNING[script.stem] = last[0][-40:]
            _show(bar)
            time.sleep(0.5)
        reader.join()
    with _LOCK:
        _RUNNING.pop(script.stem, None)
    seconds = time.perf_counter() - start
    reported = []
    for line in log_path.read_text().splitlines():
        if line.lower().startswith("figure:"):
            reported.append(line.split(":", 1)[1].strip())
    return proc.returncode, reported, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="recompute saved results")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these scripts (names without .py)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    parser.add_argument("--full", action="store_true",
                        help="the published sizes (each script's --full) instead of the "
                             "CPU-friendly defaults")
    parser.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)),
                        help="scripts run side by side (those that measure time run alone)")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help=f"compile every program afresh in every script (default: "
                             f"jaxmdp's persistent compilation cache, now "
                             f"{_cache.active_cache_dir()})")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be a positive integer, got {args.jobs}")

    scripts = discover()
    if args.only:
        known = {p.stem for p in scripts}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise ValueError(f"--only must name experiment scripts from {sorted(known)}, "
                             f"got {unknown}")
        scripts = [p for p in scripts if p.stem in args.only]
    if args.list:
        print("\n".join(p.name + ("  (runs alone)" if runs_alone(p) else "")
                        for p in scripts))
        return 0
    extra = (["--force"] if args.force else []) + (["--full"] if args.full else [])
    logs = ROOT / "results" / "logs"
    shared = [p for p in scripts if not runs_alone(p)]
    alone = [p for p in scripts if runs_alone(p)]
    results = {}
    calibration = {"start": _calibration.calibrate()}
    print(_calibration.calibration_line(calibration["start"]) + " (start)", flush=True)
    start = time.perf_counter()
    with Progress(len(scripts), "reproduce") as bar:
        def one(script):
            env = script_env(script, not args.no_compile_cache)
            results[script] = run_script(script, extra, logs / f"{script.stem}.log", bar, env)
            with _LOCK:
                bar.update(1, info=f"{script.stem} done ({results[script][2]:.0f}s)")

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, shared))
        for script in alone:
            one(script)
    report = [(script, *results[script]) for script in scripts]
    failures = [script.name for script, code, _, _ in report if code != 0]
    for script, code, figures, seconds in report:
        status = "ok" if code == 0 else f"FAILED (exit {code}, see results/logs/{script.stem}.log)"
        print(f"{script.name}: {status}, {seconds:.1f}s")
        for figure in figures:
            print(f"  figure: {figure}")
    total = time.perf_counter() - start
    print(f"total: {total:.1f}s ({args.jobs} side by side)")
    calibration["end"] = _calibration.calibrate()
    print(_calibration.calibration_line(calibration["end"]) + " (end)")
    summary = {"calibration": calibration, "total_s": round(total, 1), "jobs": args.jobs,
               "compile_cache": not args.no_compile_cache,
               "scripts": {script.stem: {"exit": code, "seconds": round(seconds, 1)}
                           for script, code, _, seconds in report}}
    (logs / "reproduce.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"summary: {logs / 'reproduce.json'}")
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
