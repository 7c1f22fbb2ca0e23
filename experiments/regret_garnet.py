"""Average cumulative regret on a 100-state GARNET MDP, four agents, with the lower bound.

The paper's regret figure stops at its 3-state example; this one runs MDP-UCB, MDP-DMED,
OLP and MDP-PS on ``jaxmdp.envs.garnet(key(seed), 100, 4, 5)`` (100 states, 4
actions, 5 next states per row) from zero counts, and draws the mean cumulative
pseudo-regret with a 95% confidence band beside the Burnetas–Katehakis asymptotic lower
bound ``C ln t`` of that MDP (``jaxmdp.regret_lower_bound(mdp).constant``). With 400
state-action pairs to try, the default horizon is still dominated by exploration: the
curves are not yet in their logarithmic regime, and the bound is asymptotic.

Writes ``results/regret_garnet.npz`` (atomically, after each agent; re-running reuses
saved agents for the same settings unless ``--force``) and ``figures/regret_garnet.png``.
Defaults: horizon 2,000, 16 replications, every 10th round recorded; ``--full``: horizon
5,000 (the README's numbers); ``--quick`` runs horizon 1,000 with 8 replications.

    python experiments/regret_garnet.py [--full] [--horizon 2000] [--replications 16]
                                        [--agents ucb dmed olp ps] [--states 100]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jax  # noqa: E402
from _common import base_parser, positive_int, save_figure, saved_results  # noqa: E402
from regret import DEFAULT_AGENTS, check_options, curves, run_agents, summary  # noqa: E402

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting  # noqa: E402

NAME = "regret_garnet"


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=None,
                        help="default 2000; 5000 with --full")
    parser.add_argument("--replications", type=int, default=16)
    parser.add_argument("--agents", nargs="+", default=list(DEFAULT_AGENTS),
                        help=f"agents to run, from {list(DEFAULT_AGENTS)}")
    parser.add_argument("--record-every", type=int, default=10,
                        help="keep every k-th round of the curves (memory)")
    parser.add_argument("--states", type=int, default=100, help="GARNET |S| (A = 4, b = 5)")
    parser.add_argument("--quick", action="store_true", help="horizon 1000, 8 replications")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.horizon, args.replications = 1_000, 8
    if args.horizon is None:
        args.horizon = 5_000 if args.full else 2_000
    check_options(args)
    positive_int("--states", args.states)
    if args.states < 5:
        raise ValueError(f"--states must be at least the branching 5, got {args.states}")
    name = NAME if args.states == 100 else f"{NAME}_{args.states}"
    path = args.results_dir / f"{name}.npz"
    mdp = jm.envs.garnet(jax.random.key(args.seed), args.states, 4, 5)
    if args.plot_only:
        data = saved_results(path)
    else:
        data = run_agents(path, mdp, agents=args.agents, horizon=args.horizon,
                          replications=args.replications, seed=args.seed,
                          record_every=args.record_every, force=args.force,
                          progress=not args.no_progress,
                          env=f"examples.garnet(key({args.seed}), {args.states}, 4, 5)")
    agents = [a for a in args.agents if f"pseudo_regret_{a}" in data]
    replications = data[f"pseudo_regret_{agents[0]}"].shape[0]
    fig = plotting.regret_figure(
        data["times"], curves(data, agents), lower_bound=float(data["lower_bound"]),
        title=f"Average cumulative pseudo-regret, {args.states}-state GARNET MDP "
              f"(A = 4, b = 5; {replications} replications, mean and 95% CI)")
    figure = save_figure(fig, name, figures_dir=args.figures_dir)
    print(summary(data, agents, title=f"regret, {args.states}-state GARNET"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
