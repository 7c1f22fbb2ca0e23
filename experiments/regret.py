"""The paper's figure "average cumulative regret" (section 5) with the lower-bound line.

Runs MDP-UCB, MDP-DMED, OLP and MDP-PS on the paper's 3-state example (100 replications,
horizon 10^4 by default), and draws the mean cumulative pseudo-regret with a 95%
confidence band beside the Burnetas–Katehakis asymptotic lower bound ``C ln t``, on a
log-time and a linear panel.

Writes ``results/regret.npz`` (atomically, after each agent; re-running reuses the agents
already saved for the same settings unless ``--force``) and ``figures/regret.png``.

    python experiments/regret.py [--horizon 10000] [--replications 100]
                                 [--agents ucb dmed olp ps] [--seed 0]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import regret_figure, regret_summary, run_parser, saved_or_run  # noqa: E402

import jaxmdp as jm  # noqa: E402

NAME = "regret"


def main(argv=None):
    parser = run_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    path = args.results_dir / f"{NAME}.npz"
    data = saved_or_run(args, path, jm.envs.paper_mdp(), env="paper-mdp")
    agents, figure = regret_figure(
        args, data, NAME, title="Average cumulative pseudo-regret, paper's 3-state MDP "
                                "({replications} replications, mean and 95% CI)")
    print(regret_summary(data, agents, title="regret"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
