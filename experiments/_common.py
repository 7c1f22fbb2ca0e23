"""Shared plumbing for experiment scripts: paths, atomic resumable results, CLI helpers.

Every experiment writes ``results/<name>.npz`` atomically (temporary file, then rename)
and ``figures/<name>.png``. Re-running reuses saved results unless ``--force``; pass
``--plot-only`` to redraw a figure from saved results without computing anything.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FIGURES = ROOT / "figures"

# Make `import jaxmdp` work when a script is run from a source checkout without install.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

# The atomic, resumable results files are the package's (jaxmdp.runner), shared with the
# command line.
from jaxmdp.runner import load_npz, save_npz_atomic, write_atomic  # noqa: E402, F401


def save_figure(fig, name: str, *, figures_dir: Path | str | None = None) -> Path:
    """Saves a matplotlib figure to ``figures/<name>.png`` atomically and returns the path."""
    out_dir = Path(figures_dir) if figures_dir is not None else FIGURES
    return write_atomic(out_dir / f"{name}.png",
                         lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight", format="png"),
                         ".png")


def base_parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every experiment shares."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--force", action="store_true", help="recompute even if results exist")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the figure from saved results; compute nothing")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--figures-dir", type=Path, default=FIGURES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--full", action="store_true",
                        help="the published sizes instead of the CPU-friendly default "
                             "(explicit size options still win)")
    return parser


def positive_int(name: str, value: int) -> int:
    """Validates a CLI integer, raising ValueError that names the argument."""
    if int(value) != value or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
