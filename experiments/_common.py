"""Shared plumbing for experiment scripts: paths, atomic resumable results, CLI helpers.

Every experiment writes ``results/<name>.npz`` atomically (temporary file, then rename)
and ``figures/<name>.png``. Re-running reuses saved results unless ``--force``; pass
``--plot-only`` to redraw a figure from saved results without computing anything.

Compiled programs go to jaxmdp's persistent compilation cache (``jaxmdp._cache``: the
user's cache directory, ``JAXMDP_CACHE_DIR`` to move it), turned on when a script parses
its arguments, so that a second run of a script, or another script that needs the same
program, loads it instead of compiling it again; ``--no-compile-cache`` (or
``JAXMDP_NO_COMPILE_CACHE=1``) turns it off. Scripts that measure time pass
``compile_cache=False`` to :func:`base_parser`: their compile times are compiles.
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
from jaxmdp import _cache  # noqa: E402
from jaxmdp.runner import load_npz, save_npz_atomic, write_atomic  # noqa: E402, F401


def save_figure(fig, name: str, *, figures_dir: Path | str | None = None) -> Path:
    """Saves a matplotlib figure to ``figures/<name>.png`` atomically and returns the path."""
    out_dir = Path(figures_dir) if figures_dir is not None else FIGURES
    return write_atomic(out_dir / f"{name}.png",
                         lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight", format="png"),
                         ".png")


class ExperimentParser(argparse.ArgumentParser):
    """An argument parser that sets the compilation cache up once the arguments are parsed:
    on (jaxmdp's persistent cache) unless ``--no-compile-cache``, ``JAXMDP_NO_COMPILE_CACHE``
    or ``compile_cache=False`` (scripts that measure compile times) say otherwise."""

    def __init__(self, *args, compile_cache: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.compile_cache = compile_cache

    def parse_known_args(self, args=None, namespace=None):
        parsed, extra = super().parse_known_args(args, namespace)
        if getattr(parsed, "no_compile_cache", False) or not self.compile_cache:
            _cache.disable_compilation_cache()
        _cache.enable_compilation_cache()
        return parsed, extra


def base_parser(description: str, *, compile_cache: bool = True) -> argparse.ArgumentParser:
    """An argument parser with the options every experiment shares.

    ``compile_cache=False`` (scripts that measure time) keeps the persistent compilation
    cache off, so every program is compiled; otherwise it is on unless
    ``--no-compile-cache``.
    """
    parser = ExperimentParser(description=description, compile_cache=compile_cache)
    parser.add_argument("--force", action="store_true", help="recompute even if results exist")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the figure from saved results; compute nothing")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--figures-dir", type=Path, default=FIGURES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--full", action="store_true",
                        help="the published sizes instead of the CPU-friendly default "
                             "(explicit size options still win)")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help="compile every program afresh, write nothing to the "
                             "persistent compilation cache" +
                             ("" if compile_cache else " (always, in this script: it "
                                                       "measures compile times)"))
    return parser


def saved_results(path: Path | str) -> dict:
    """The arrays saved at ``path`` (``--plot-only``); exits naming the path if there are
    none."""
    data = load_npz(path)
    if data is None:
        raise SystemExit(f"--plot-only: no saved results at {path}")
    return data


def positive_int(name: str, value: int) -> int:
    """Validates a CLI integer, raising ValueError that names the argument."""
    if int(value) != value or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
