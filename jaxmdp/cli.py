"""The ``jaxmdp`` command line: regret experiments on named environments or saved MDPs.

::

    jaxmdp run --env riverswim-6 --agents ucb,ps,ucrl2 --horizon 100000 \\
               --replications 100 --out results/rs6
    jaxmdp run --env riverswim-6 --agents ucb,ucrl2   # writes to results/riverswim-6
    jaxmdp run --env my_mdp.npz --agents ucb,ps --out results/mine  # from MDP.save
    jaxmdp bench --out results/bench [--agents ucb,ps] [--suite standard] [--full]
    jaxmdp envs            # the environments: S, A, gain, lower bound, hardness measures
    jaxmdp agents          # the agents jaxmdp.get_agent knows
    jaxmdp cache [--clear] # the compilation cache's location and size; delete its entries

``jaxmdp run`` writes ``<out>/results.npz`` and its settings ``<out>/results.json``
(atomically after each agent; re-running resumes and reuses finished agents unless
``--force``), ``<out>/table.csv``, ``<out>/table.md`` and ``<out>/regret.png`` (``<out>``
is ``--out``, by default ``results/<env>`` in the current directory);
``--plot-only`` redraws the table and figure from saved results. ``--env`` takes an
environment name or an ``.npz`` file written by :meth:`jaxmdp.MDP.save`. Also
``python -m jaxmdp``.

``jaxmdp bench`` runs every registered agent on a suite of environments and ensembles
(:mod:`jaxmdp.bench`) and writes ``<out>/leaderboard.csv`` and ``.md`` (two leaderboards:
the agents told the mean rewards and the agents that learn them, each normalised by the
lower bound of its setting), one figure per environment and a regret-versus-hardness
figure per agent; it resumes like ``jaxmdp run``.

**Your own agent.** ``--agents`` of ``run`` and ``bench`` takes, beside registered names,
``module:factory`` (``--agents ucb,my_agents:uniform_agent``): the module is imported (the
current directory is on the path), ``factory`` is registered with
:func:`jaxmdp.register_agent` under the name of the agent ``factory()`` returns, and that
name is run. A ``module:factory`` reference is chosen over a plugin entry point: it needs
no package, no installation and no metadata, so a script next to the results works as it
is, and the command line says which code runs; a package that wants its agents always
available registers them on import.

Both run as one job over several processes (hosts) with ``jax.distributed``: every
process runs the same command with ``--distributed`` (the cluster found by
``jax.distributed.initialize()``: SLURM, Open MPI, mpi4py, Kubernetes, or
``JAX_COORDINATOR_ADDRESS``) or with ``--coordinator HOST:PORT --num-processes N
--process-id I``. The replications are split over the devices of all processes; process
0 alone reads and writes the output folder and draws the progress bars, and every process
skips the agents process 0 finds saved. Processes started with different arguments stop
with an error before any work. When a process dies the others stop with a non-zero exit:
within ``--heartbeat-timeout`` seconds (default 60) of a killed process, within the 60 s
shutdown timeout of one that stopped on an error; a rerun resumes from the saved agents.

Compiled programs are kept in JAX's persistent compilation cache, so a second run of the
same configuration loads them instead of compiling them again: in
``platformdirs.user_cache_dir("jaxmdp")`` (``~/.cache/jaxmdp`` on Linux), moved by
``JAXMDP_CACHE_DIR``, turned off by ``jaxmdp run --no-compile-cache`` or
``JAXMDP_NO_COMPILE_CACHE=1``, cleared by ``jaxmdp cache --clear`` (or by deleting the
directory). A cache directory configured in JAX itself (``JAX_COMPILATION_CACHE_DIR``)
takes precedence and is used as it is. ``jaxmdp envs`` and ``jaxmdp agents`` compile
nothing: the listing's numbers come from a table shipped with the package.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

__all__ = ["main"]

REWARDS = ("default", "known", "learned")


_CACHE_HELP = ("Compiled programs are cached on disk (JAX's persistent compilation cache) "
               "and loaded by later runs instead of compiled again: in JAX's own "
               "JAX_COMPILATION_CACHE_DIR when set, else in $JAXMDP_CACHE_DIR when set, "
               "else in platformdirs.user_cache_dir('jaxmdp') (~/.cache/jaxmdp on "
               "Linux). Turn it off with `jaxmdp run --no-compile-cache` or "
               "JAXMDP_NO_COMPILE_CACHE=1; `jaxmdp cache` prints its location and size, "
               "`jaxmdp cache --clear` deletes its entries.")


_AGENTS_HELP = ("comma-separated agent names (see `jaxmdp agents`) or module:factory "
                "references to your own agent factories: the module is imported, the "
                "factory is registered under the name of the agent factory() returns, and "
                "that name runs")


def _resolve_agents(text: str | None) -> str | None:
    """``--agents`` with each ``module:factory`` replaced by the name it registers.

    The module is imported with the current directory on the path; ``factory`` is
    registered (:func:`jaxmdp.register_agent`) under ``factory().name``, unless that name
    already holds this very factory.
    """
    if text is None or ":" not in text:
        return text
    import importlib

    import jaxmdp as jm
    from jaxmdp.agents import agent_factory

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    names = []
    for item in (part.strip() for part in text.split(",")):
        if ":" not in item:
            names.append(item)
            continue
        module_name, _, attribute = item.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"--agents: cannot load {item!r}: {error}") from None
        agent = factory()
        if not isinstance(agent, jm.Agent):
            raise ValueError(f"--agents: {item}() must return a jaxmdp.Agent, got "
                             f"{type(agent).__name__}")
        if agent_factory(agent.name) is not factory:
            jm.register_agent(agent.name, factory)
        names.append(agent.name.lower())
    return ",".join(names)


def _positive_int(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, "
                                             f"got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {text!r}")
        return value
    return parse


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that make one run of several processes (``jax.distributed``)."""
    from jaxmdp._distributed import HEARTBEAT_TIMEOUT

    group = parser.add_argument_group(
        "several processes (jax.distributed)",
        "Every process runs the same command; replications are split over the devices of "
        "all of them and process 0 alone writes files. A process that dies stops the "
        "others after --heartbeat-timeout seconds.")
    group.add_argument("--distributed", action="store_true",
                       help="join a cluster found by jax.distributed.initialize() (SLURM, "
                            "Open MPI, mpi4py, Kubernetes, or JAX_COORDINATOR_ADDRESS)")
    group.add_argument("--coordinator", metavar="HOST:PORT", default=None,
                       help="process 0's address and a free port (with --num-processes "
                            "and --process-id)")
    group.add_argument("--num-processes", type=_positive_int("--num-processes"),
                       default=None, metavar="N",
                       help="the number of processes of the run (with --coordinator and "
                            "--process-id)")
    group.add_argument("--process-id", type=int, default=None, metavar="I",
                       help="this process's id, 0 to N - 1")
    group.add_argument("--heartbeat-timeout", type=_positive_int("--heartbeat-timeout"),
                       default=HEARTBEAT_TIMEOUT, metavar="SECONDS",
                       help=f"seconds without a heartbeat after which a process counts "
                            f"as lost and the others stop (default {HEARTBEAT_TIMEOUT})")


def _join(args) -> None:
    """Joins the cluster when the command line asks for it, then checks that every process
    was started with the same arguments (before any work)."""
    if not (args.distributed or args.coordinator is not None or args.num_processes is not None
            or args.process_id is not None):
        return
    from jaxmdp._distributed import check_same, initialize

    initialize(auto=args.distributed, coordinator=args.coordinator,
               num_processes=args.num_processes, process_id=args.process_id,
               heartbeat_timeout=args.heartbeat_timeout)
    same = {key: str(value) if isinstance(value, Path) else value
            for key, value in vars(args).items() if key not in ("process_id", "coordinator")}
    check_same("arguments", same)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxmdp", description=__doc__.splitlines()[0],
                                     epilog=_CACHE_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run agents on an environment; write results, table "
                                     "and figure")
    run.add_argument("--env", required=True,
                     help="environment name (see `jaxmdp envs`) or an .npz file written by "
                          "MDP.save")
    run.add_argument("--agents", required=True, help=_AGENTS_HELP)
    run.add_argument("--horizon", type=_positive_int("--horizon"), default=10_000,
                     help="rounds per run, T")
    run.add_argument("--replications", type=_positive_int("--replications"), default=100,
                     help="independent runs of each agent")
    run.add_argument("--seed", type=int, default=0,
                     help="the simulator's seed (every agent runs on the same seeds)")
    run.add_argument("--out", type=Path, default=None,
                     help="output folder (default: results/ENV in the current directory, "
                          "ENV the environment's name or the .npz file's stem)")
    run.add_argument("--rewards", choices=REWARDS, default="default",
                     help="agents told the mean rewards (known), learning them (learned), "
                          "or each agent's default (the paper's four: known; the "
                          "baselines: learned)")
    run.add_argument("--reward-law", choices=("deterministic", "bernoulli", "gaussian"),
                     default=None, help="observed rewards (default: the environment's, "
                                        "deterministic)")
    run.add_argument("--sigma", type=float, default=None, help="Gaussian reward sd")
    run.add_argument("--record-every", type=_positive_int("--record-every"), default=None,
                     help="keep every k-th round of the curves (default: about 1,000 "
                          "points)")
    run.add_argument("--x64", action="store_true", help="float64 (default float32)")
    run.add_argument("--force", action="store_true", help="recompute saved agents")
    run.add_argument("--plot-only", action="store_true",
                     help="redraw table and figure from saved results")
    run.add_argument("--no-progress", action="store_true", help="draw no progress bar")
    run.add_argument("--no-compile-cache", action="store_true",
                     help="compile every program afresh and write nothing to the "
                          "compilation cache (also: JAXMDP_NO_COMPILE_CACHE=1)")
    _cluster_arguments(run)

    bench = sub.add_parser("bench", help="every agent on a suite of environments and "
                                         "ensembles: leaderboards and figures")
    bench.add_argument("--out", type=Path, required=True, help="output folder")
    bench.add_argument("--agents", default=None,
                       help=_AGENTS_HELP + " (default: every registered agent)")
    bench.add_argument("--suite", default="standard",
                       help="a suite (standard, extended, tiny) or comma-separated "
                            "environment names (garnet-S-A-b and random-S-A become "
                            "ensembles)")
    bench.add_argument("--full", action="store_true",
                       help="the GPU size (T = 100,000, 100 replications, 100 instances) "
                            "instead of the CPU default (T = 5,000, 8 replications, 16 "
                            "instances)")
    bench.add_argument("--seed", type=int, default=0,
                       help="the simulator's seed (every agent and environment runs on the "
                            "same seeds)")
    bench.add_argument("--force", action="store_true", help="recompute saved results")
    bench.add_argument("--no-progress", action="store_true", help="draw no progress bar")
    _cluster_arguments(bench)

    sweep = sub.add_parser("sweep", help="one agent at every point of a grid of its number "
                                         "options, in one compiled program: results, table "
                                         "and figure")
    sweep.add_argument("--env", required=True,
                       help="environment name (see `jaxmdp envs`) or an .npz file written "
                            "by MDP.save")
    sweep.add_argument("--agent", required=True, help="the agent's name (see `jaxmdp agents`)")
    sweep.add_argument("--grid", action="append", required=True, metavar="OPTION=V1,V2,...",
                       help="an option and its values (repeat for a product grid, e.g. "
                            "--grid delta=0.01,0.05 --grid span_constraint=2,5); only "
                            "number options (jm.agent_options) can be swept")
    sweep.add_argument("--option", action="append", default=[], metavar="OPTION=VALUE",
                       help="an option shared by every point (repeatable)")
    sweep.add_argument("--horizon", type=_positive_int("--horizon"), default=10_000,
                       help="rounds per run, T")
    sweep.add_argument("--replications", type=_positive_int("--replications"), default=100,
                       help="independent runs per point")
    sweep.add_argument("--seed", type=int, default=0,
                       help="the simulator's seed (every point runs on the same seeds)")
    sweep.add_argument("--out", type=Path, default=None,
                       help="output folder (default: results/sweep-AGENT-ENV)")
    sweep.add_argument("--record-every", type=_positive_int("--record-every"), default=None,
                       help="keep every k-th round of the curves (default: about 1,000 "
                            "points)")
    sweep.add_argument("--x64", action="store_true", help="float64 (default float32)")
    sweep.add_argument("--plot-only", action="store_true",
                       help="redraw table and figure from saved results")
    sweep.add_argument("--no-progress", action="store_true", help="draw no progress bar")

    sub.add_parser("envs", help="list the environments (S, A, gain, lower bound, diameter, "
                                "bias span, mixing time, smallest gap)")
    sub.add_parser("agents", help="list the agents")
    cache = sub.add_parser("cache", help="print the compilation cache's location and size",
                           description=_CACHE_HELP)
    cache.add_argument("--clear", action="store_true", help="delete the cache's entries")
    return parser


def _environment(text: str):
    """``(mdp, label)`` for ``--env``: an existing ``.npz`` file read by
    :meth:`jaxmdp.MDP.load` (label ``"file:<path>"``), else a :func:`jaxmdp.envs.make`
    name."""
    import jaxmdp as jm

    path = Path(text)
    if path.suffix.lower() == ".npz" or os.sep in text or (os.altsep and os.altsep in text):
        if not path.is_file():
            raise ValueError(f"--env: no MDP file at {text!r} (a value ending in .npz or "
                             f"holding a path separator names a file written by MDP.save)")
        try:
            return jm.MDP.load(path), f"file:{text}"
        except ValueError as error:
            raise ValueError(f"--env: {error}") from None
    try:
        return jm.envs.make(text), text
    except ValueError as error:
        raise ValueError(f"--env: {error}") from None


def _mdp(args):
    mdp, args.env_label = _environment(args.env)
    if args.reward_law is not None:
        mdp = mdp.with_reward_law(args.reward_law, args.sigma)
    elif args.sigma is not None:
        raise ValueError(f"--sigma needs --reward-law gaussian, got --sigma {args.sigma}")
    return mdp


def run(args) -> int:
    """``jaxmdp run``: returns the exit code."""
    import jax

    import jaxmdp._cache as cache_module

    if args.no_compile_cache:
        cache_module.disable_compilation_cache()
    cache_module.enable_compilation_cache()
    jax.config.update("jax_enable_x64", args.x64)
    _join(args)
    import jaxmdp as jm
    from jaxmdp import plotting, runner

    writer = jax.process_index() == 0
    mdp = _mdp(args)
    if args.out is None:
        from_file = args.env_label.startswith("file:")
        args.out = Path("results") / (Path(args.env).stem if from_file else args.env)
    options = {} if args.rewards == "default" else {"known_rewards": args.rewards == "known"}
    agents = runner.parse_agents(_resolve_agents(args.agents), **options)
    labels = [label for label, _ in agents]
    path = args.out / "results.npz"
    if args.plot_only:
        if not writer:
            return 0
        if not path.is_file():
            raise ValueError(f"--plot-only: no saved results at {path}")
    else:
        learned = [not a.config.known_rewards for _, a in agents
                   if hasattr(a.config, "known_rewards")]
        bound = jm.regret_lower_bound(mdp, known_rewards=not (learned and all(learned)))
        record_every = args.record_every or max(1, math.ceil(args.horizon / 1000))
        data = runner.run_agents(path, mdp, agents=agents, horizon=args.horizon,
                                 replications=args.replications, seed=args.seed,
                                 record_every=record_every, force=args.force,
                                 progress=not args.no_progress and writer,
                                 lower_bound=float(bound.constant), env=args.env_label)
        if not writer:  # process 0 writes the table and the figure
            return 0
    settings, data = runner.load_results(path)
    csv_path, md_path = runner.write_tables(data, labels, args.out / "table")
    fig = plotting.comparison_figure(
        data["times"], runner.curves(data, labels), lower_bound=float(data["lower_bound"]),
        title=f"{args.env}: cumulative pseudo-regret "
              f"({settings['replications']} replications)")
    figure = runner.write_atomic(args.out / "regret.png",
                                 lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight",
                                                         format="png"), ".png")
    print(md_path.read_text())
    for what, p in (("results", path), ("table", csv_path), ("table", md_path),
                    ("figure", figure)):
        print(f"{what}: {p}")
    print(f"results written to {args.out}")
    return 0


def _value(text: str):
    """A command-line option value: JSON (a number, ``true``, ``null``, a string in
    quotes), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _assignments(items, flag: str, *, many: bool) -> dict:
    """``{option: value}`` (or ``{option: [values]}`` with ``many``) from
    ``OPTION=VALUE`` texts."""
    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name or not text:
            raise ValueError(f"{flag} must be OPTION=VALUE{',VALUE...' if many else ''}, "
                             f"got {item!r}")
        if name in out:
            raise ValueError(f"{flag} names {name!r} twice")
        out[name] = [_value(v) for v in text.split(",")] if many else _value(text)
    return out


def sweep_command(args) -> int:
    """``jaxmdp sweep``: returns the exit code."""
    import jax

    import jaxmdp._cache as cache_module

    cache_module.enable_compilation_cache()
    jax.config.update("jax_enable_x64", args.x64)
    from jaxmdp import sweeps

    mdp, label = _environment(args.env)
    grid = _assignments(args.grid, "--grid", many=True)
    options = _assignments(args.option, "--option", many=False)
    if args.out is None:
        stem = Path(args.env).stem if label.startswith("file:") else args.env
        args.out = Path("results") / f"sweep-{args.agent}-{stem}"
    path = args.out / "results.npz"
    record_every = args.record_every or max(1, math.ceil(args.horizon / 1000))
    if args.plot_only:
        from jaxmdp.runner import load_results

        if not path.is_file():
            raise ValueError(f"--plot-only: no saved results at {path}")
        settings, arrays = load_results(path)
    else:
        settings, arrays = sweeps.run_sweep(
            path, mdp, args.agent, grid, horizon=args.horizon,
            replications=args.replications, seed=args.seed, options=options,
            record_every=record_every, progress=not args.no_progress, env=label)
    import jaxmdp as jm

    points = jm.grid_points(grid)
    written = sweeps.write_sweep_outputs(settings, arrays, args.out, points)
    print(written["md"].read_text())
    for what, p in (("results", path), *written.items()):
        print(f"{what}: {p}")
    return 0


def envs() -> int:
    """``jaxmdp envs``: the environments with S, A, optimal gain, lower-bound constant and
    the hardness measures of :func:`jaxmdp.hardness` (diameter, bias span, mixing time,
    smallest gap; ``inf`` where infinite).

    The numbers are read from the table shipped with the package
    (``jaxmdp/envs_table.json``, written by ``python -m jaxmdp._envs_table``), so the
    listing compiles nothing; a name missing from it is computed with the solvers.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxmdp as jm
    import jaxmdp._envs_table as envs_table

    names = jm.envs.names()
    print(envs_table.format_header())
    for name, row in zip(names, envs_table.rows(names)):
        print(envs_table.format_row(row, jm.envs.ENVIRONMENTS[name]))
    return 0


def agents() -> int:
    """``jaxmdp agents``: the registered agents and their options."""
    import jaxmdp as jm
    from jaxmdp import runner

    for name in jm.agent_names():
        config = runner.agent_settings(jm.get_agent(name))["options"]
        options = ", ".join(f"{k}={v!r}" for k, v in config.items()) \
            if isinstance(config, dict) else ""
        print(f"{name:10s} {options}")
    return 0


def cache(args) -> int:
    """``jaxmdp cache [--clear]``: the compilation cache's location, state and size."""
    import jaxmdp._cache as cache_module

    if args.clear:
        info = cache_module.clear_compilation_cache()
        print(f"deleted {info.entries} compiled programs ({info.size_bytes / 1e6:.1f} MB) "
              f"from {info.path}")
        return 0
    import jax

    info = cache_module.compilation_cache_info()
    if cache_module.is_disabled():
        state = f"off ({cache_module.DISABLE_VARIABLE} is set)"
    elif not jax.config.jax_enable_compilation_cache:
        state = "off (jax_enable_compilation_cache is False)"
    else:
        state = "on"
    print(f"compilation cache: {info.path}")
    print(f"state: {state}")
    print(f"entries: {info.entries} compiled programs, {info.size_bytes / 1e6:.1f} MB")
    return 0


def main(argv=None) -> int:
    """Entry point of the ``jaxmdp`` console script."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = _parser().parse_args(argv)
    try:
        code = _command(args)
    except ValueError as error:
        print(f"jaxmdp: error: {error}", file=sys.stderr)
        code = 2
    if getattr(args, "command", None) in ("run", "bench"):
        from jaxmdp._distributed import barrier

        barrier("exit")  # over several processes: after process 0's files
    return code


def _command(args) -> int:
    if args.command == "run":
        return run(args)
    if args.command == "envs":
        return envs()
    if args.command == "sweep":
        return sweep_command(args)
    if args.command == "bench":
        from jaxmdp import bench as bench_module

        _join(args)
        bench_module.run_bench(args.out, agents=_resolve_agents(args.agents),
                               suite=args.suite, size="full" if args.full else "default",
                               seed=args.seed, progress=not args.no_progress,
                               force=args.force)
        return 0
    if args.command == "cache":
        return cache(args)
    return agents()


if __name__ == "__main__":
    sys.exit(main())
