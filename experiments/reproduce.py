"""Runs every experiment script at its default size and prints where each figure went.

Discovers ``experiments/*.py`` (skipping names that start with ``_`` and this script) and
runs each, in name order, as a subprocess with the current interpreter. One progress
display follows them all (the running script's latest progress line is shown beside it);
each script's full output goes to ``results/logs/<script>.log``. Results are reused as
each script decides (``--force`` is passed through to recompute).

    python experiments/reproduce.py [--force] [--only regret robustness] [--list]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
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


def run_script(script: Path, extra: list[str], log_path: Path, bar: Progress
               ) -> tuple[int, list[str], float]:
    """Runs one script; returns (exit code, figure paths it reported or wrote, seconds)."""
    figures_dir = ROOT / "figures"
    before = {p: p.stat().st_mtime for p in figures_dir.glob("*.png")} \
        if figures_dir.exists() else {}
    start = time.perf_counter()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    last = [""]
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(script), *extra], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1)
        reader = threading.Thread(target=_pump, args=(proc.stdout, log, last), daemon=True)
        reader.start()
        while proc.poll() is None:
            bar.update(0, info=f"{script.stem}: {last[0]}")
            time.sleep(0.5)
        reader.join()
    seconds = time.perf_counter() - start
    reported = []
    for line in log_path.read_text().splitlines():
        if line.lower().startswith("figure:"):
            reported.append(line.split(":", 1)[1].strip())
    if figures_dir.exists():
        for p in sorted(figures_dir.glob("*.png")):
            if p.stat().st_mtime > before.get(p, -1) and str(p) not in reported:
                reported.append(str(p))
    return proc.returncode, reported, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="recompute saved results")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these scripts (names without .py)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    args = parser.parse_args(argv)

    scripts = discover()
    if args.only:
        known = {p.stem for p in scripts}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise ValueError(f"--only must name experiment scripts from {sorted(known)}, "
                             f"got {unknown}")
        scripts = [p for p in scripts if p.stem in args.only]
    if args.list:
        print("\n".join(p.name for p in scripts))
        return 0
    extra = ["--force"] if args.force else []
    logs = ROOT / "results" / "logs"
    failures = []
    report = []
    with Progress(len(scripts), "reproduce") as bar:
        for script in scripts:
            code, figures, seconds = run_script(script, extra, logs / f"{script.stem}.log", bar)
            bar.update(1, info=f"{script.stem} done ({seconds:.0f}s)")
            report.append((script, code, figures, seconds))
            if code != 0:
                failures.append(script.name)
    for script, code, figures, seconds in report:
        status = "ok" if code == 0 else f"FAILED (exit {code}, see results/logs/{script.stem}.log)"
        print(f"{script.name}: {status}, {seconds:.1f}s")
        for figure in figures:
            print(f"  figure: {figure}")
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
