"""The ``jaxmdp`` command line: regret experiments on named environments or saved MDPs.

::

    jaxmdp run --env riverswim-6 --agents ucb,ps,ucrl2 --horizon 100000 \\
               --replications 100 --out results/rs6
    jaxmdp run --env my_mdp.npz --agents ucb,ps --out results/mine  # from MDP.save
    jaxmdp envs            # the environments, with S, A, optimal gain and lower bound
    jaxmdp agents          # the agents jaxmdp.get_agent knows

``jaxmdp run`` writes ``<out>/results.npz`` and its settings ``<out>/results.json``
(atomically after each agent; re-running resumes and reuses finished agents unless
``--force``), ``<out>/table.csv``, ``<out>/table.md`` and ``<out>/regret.png``;
``--plot-only`` redraws the table and figure from saved results. ``--env`` takes an
environment name or an ``.npz`` file written by :meth:`jaxmdp.MDP.save`. Also
``python -m jaxmdp``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

REWARDS = ("default", "known", "learned")


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxmdp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run agents on an environment; write results, table "
                                     "and figure")
    run.add_argument("--env", required=True,
                     help="environment name (see `jaxmdp envs`) or an .npz file written by "
                          "MDP.save")
    run.add_argument("--agents", required=True,
                     help="comma-separated agent names (see `jaxmdp agents`)")
    run.add_argument("--horizon", type=_positive_int("--horizon"), default=10_000)
    run.add_argument("--replications", type=_positive_int("--replications"), default=100)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", type=Path, required=True, help="output folder")
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
    run.add_argument("--no-progress", action="store_true")

    sub.add_parser("envs", help="list the environments (S, A, optimal gain, lower bound)")
    sub.add_parser("agents", help="list the agents")
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

    jax.config.update("jax_enable_x64", args.x64)
    import jaxmdp as jm
    from jaxmdp import plotting, runner

    mdp = _mdp(args)
    options = {} if args.rewards == "default" else {"known_rewards": args.rewards == "known"}
    agents = runner.parse_agents(args.agents, **options)
    labels = [label for label, _ in agents]
    path = args.out / "results.npz"
    if args.plot_only:
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
                                 progress=not args.no_progress,
                                 lower_bound=float(bound.constant), env=args.env_label)
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
    return 0


def envs() -> int:
    """``jaxmdp envs``: the environments with S, A, optimal gain and lower-bound constant."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxmdp as jm

    print(f"{'name':22s} {'S':>4s} {'A':>3s} {'gain':>10s} {'lower bound C':>14s}  description")
    for name in jm.envs.names():
        concrete = {"garnet-S-A-b": "garnet-100-4-5", "random-S-A": "random-10-4"}.get(name,
                                                                                       name)
        mdp = jm.envs.make(concrete)
        bound = jm.regret_lower_bound(mdp)
        gain = float(jm.solve_average_reward(mdp)[0])
        print(f"{concrete:22s} {mdp.num_states:4d} {mdp.num_actions:3d} {gain:10.6f} "
              f"{float(bound.constant):14.4g}  {jm.envs.ENVIRONMENTS[name]}")
    return 0


def agents() -> int:
    """``jaxmdp agents``: the registered agents and their options."""
    import jaxmdp as jm

    for name in jm.agent_names():
        config = jm.get_agent(name).config
        fields = getattr(config, "_asdict", None)
        options = ", ".join(f"{k}={v!r}" for k, v in fields().items()) if fields else ""
        print(f"{name:10s} {options}")
    return 0


def main(argv=None) -> int:
    """Entry point of the ``jaxmdp`` console script."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return run(args)
        if args.command == "envs":
            return envs()
        return agents()
    except ValueError as error:
        print(f"jaxmdp: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
