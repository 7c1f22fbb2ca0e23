"""Shared plumbing for experiment scripts: paths, atomic resumable results, CLI helpers,
and the regret runs that several scripts make (options, saved-or-run, the summary table).

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
import math
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

import numpy as np  # noqa: E402

# The atomic, resumable results files are the package's (jaxmdp.runner), shared with the
# command line.
from jaxmdp import _cache  # noqa: E402
from jaxmdp.runner import load_npz, run_agents, save_npz_atomic, write_atomic  # noqa: E402, F401

#: The paper's four agents: what the regret scripts run by default.
PAPER_AGENTS = ("ucb", "dmed", "olp", "ps")


def save_figure(fig, name: str, *, figures_dir: Path | str | None = None) -> Path:
    """Saves a matplotlib figure to ``figures/<name>.png`` atomically and returns the path."""
    out_dir = Path(figures_dir) if figures_dir is not None else FIGURES
    return write_atomic(out_dir / f"{name}.png",
                         lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight", format="png"),
                         ".png")


class ExperimentParser(argparse.ArgumentParser):
    """An argument parser that sets the compilation cache up once the arguments are parsed:
    on (jaxmdp's persistent cache) unless ``--no-compile-cache``, ``JAXMDP_NO_COMPILE_CACHE``
    or ``compile_cache=False`` (scripts that measure compile times) say otherwise; and,
    first, runs ``check(arguments)`` if given (it may fill defaults in or raise)."""

    def __init__(self, *args, compile_cache: bool = True, check=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.compile_cache = compile_cache
        self.check = check

    def parse_known_args(self, args=None, namespace=None):
        parsed, extra = super().parse_known_args(args, namespace)
        if self.check is not None:
            self.check(parsed)
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


def run_parser(description: str, **sizes) -> argparse.ArgumentParser:
    """:func:`base_parser` with the options of a regret run (:func:`add_run_options`,
    ``sizes`` its sizes), checked and filled in as the arguments are parsed
    (:func:`check_run_options`)."""
    parser = add_run_options(base_parser(description), **sizes)
    parser.check = check_run_options
    return parser


def add_run_options(parser, *, horizon=10_000, replications=100, record_every=1):
    """Adds the options of a regret run: ``--horizon``, ``--replications``, ``--agents``
    (default :data:`PAPER_AGENTS`), ``--record-every`` and ``--no-progress``.

    ``horizon`` and ``replications`` are numbers or ``(default, with --full)`` pairs;
    ``record_every=None`` keeps about 1,000 points of the curves. :func:`check_run_options`
    fills these in and validates the options.
    """
    sizes = {}
    for name, value in (("horizon", horizon), ("replications", replications)):
        if isinstance(value, tuple):
            sizes[name] = value
            parser.add_argument(f"--{name}", type=int, default=None,
                                help=f"default {value[0]}; {value[1]} with --full")
        else:
            parser.add_argument(f"--{name}", type=int, default=value)
    parser.add_argument("--agents", nargs="+", default=list(PAPER_AGENTS),
                        help=f"agents to run (default {' '.join(PAPER_AGENTS)})")
    parser.add_argument("--record-every", type=int, default=record_every,
                        help="keep every k-th round of the curves (memory)" +
                             (", default: about 1,000 points" if record_every is None else ""))
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(run_sizes=sizes)
    return parser


def check_run_options(args):
    """Fills in the sizes of :func:`add_run_options` left to ``--full`` (and
    ``--record-every``) and validates the options, raising ValueError naming the option."""
    import jaxmdp as jm

    for name, (default, full) in args.run_sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, full if args.full else default)
    if args.record_every is None:
        args.record_every = max(1, math.ceil(args.horizon / 1000))
    positive_int("--horizon", args.horizon)
    positive_int("--replications", args.replications)
    positive_int("--record-every", args.record_every)
    for name in args.agents:
        jm.get_agent(name)  # ValueError listing the known agents


def saved_or_run(args, path: Path, mdp, *, env: str, agents=None, **options) -> dict:
    """The results saved at ``path`` with ``--plot-only``, else those of
    :func:`jaxmdp.runner.run_agents` with the run options of ``args`` (resumed from
    ``path`` unless ``--force``)."""
    if args.plot_only:
        return saved_results(path)
    return run_agents(path, mdp, agents=args.agents if agents is None else agents,
                      horizon=args.horizon, replications=args.replications, seed=args.seed,
                      record_every=args.record_every, force=args.force,
                      progress=not args.no_progress, env=env, **options)


def regret_figure(args, data, name: str, *, title: str, background=None, **options):
    """Draws ``figures/<name>.png``: the mean cumulative pseudo-regret with its 95% band of
    the agents of ``--agents`` that ``data`` holds, and the lower bound ``C ln t``.

    ``title`` may name ``{replications}``. ``background``: other results (same times)
    whose curves of the same agents are drawn faint behind; ``options`` go to
    :func:`jaxmdp.plotting.regret_figure`.

    Returns:
        ``(agents, path)``: the agents drawn and the figure's path.
    """
    from jaxmdp import plotting
    from jaxmdp.runner import curves

    agents = [a for a in args.agents if f"pseudo_regret_{a}" in data]
    replications = data[f"pseudo_regret_{agents[0]}"].shape[0]
    if background is not None:
        options["background"] = curves(background, agents)
    fig = plotting.regret_figure(data["times"], curves(data, agents),
                                 lower_bound=float(data["lower_bound"]),
                                 title=title.format(replications=replications), **options)
    return agents, save_figure(fig, name, figures_dir=args.figures_dir)


def regret_summary(data, agents, *, title: str) -> str:
    """A table of mean +- 95% CI half-width at the horizon, per agent: pseudo-regret,
    realised regret, the standard deviation of the pseudo-regret and the run's seconds."""
    from jaxmdp import plotting

    times = data["times"]
    lines = [f"{title}: t = {int(times[-1])}, lower bound C ln t = "
             f"{float(data['lower_bound']):.4f} x {np.log(times[-1]):.3f} = "
             f"{float(data['lower_bound']) * np.log(times[-1]):.3f}",
             f"{'agent':9s} {'pseudo-regret':>22s} {'realised regret':>22s} {'sd':>7s}"
             f" {'seconds':>8s}"]
    for name in agents:
        final = data[f"pseudo_regret_{name}"][:, -1]
        mean, lo, hi = plotting.mean_ci(final)
        rmean, rlo, rhi = plotting.mean_ci(data[f"regret_{name}"][:, -1])
        seconds = float(data.get(f"seconds_{name}", np.nan))
        lines.append(f"{plotting.agent_label(name):9s} {mean:10.3f} +- {hi - mean:7.3f}   "
                     f"{rmean:10.3f} +- {rhi - rmean:7.3f} {final.std(ddof=1):7.3f}"
                     f" {seconds:8.1f}")
    return "\n".join(lines)
