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
from _common import (  # noqa: E402
    positive_int,
    regret_figure,
    regret_summary,
    run_parser,
    saved_or_run,
)

import jaxmdp as jm  # noqa: E402

NAME = "regret_garnet"


def main(argv=None):
    parser = run_parser(__doc__.splitlines()[0], horizon=(2_000, 5_000), replications=16,
                        record_every=10)
    parser.add_argument("--states", type=int, default=100, help="GARNET |S| (A = 4, b = 5)")
    parser.add_argument("--quick", action="store_true", help="horizon 1000, 8 replications")
    args = parser.parse_args(argv)
    if args.quick:
        args.horizon, args.replications = 1_000, 8
    positive_int("--states", args.states)
    if args.states < 5:
        raise ValueError(f"--states must be at least the branching 5, got {args.states}")
    name = NAME if args.states == 100 else f"{NAME}_{args.states}"
    path = args.results_dir / f"{name}.npz"
    mdp = jm.envs.garnet(jax.random.key(args.seed), args.states, 4, 5)
    data = saved_or_run(args, path, mdp,
                        env=f"examples.garnet(key({args.seed}), {args.states}, 4, 5)")
    agents, figure = regret_figure(
        args, data, name, title=f"Average cumulative pseudo-regret, {args.states}-state "
                                f"GARNET MDP (A = 4, b = 5; {{replications}} replications, "
                                f"mean and 95% CI)")
    print(regret_summary(data, agents, title=f"regret, {args.states}-state GARNET"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
