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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import base_parser, positive_int, save_figure, saved_results  # noqa: E402

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting  # noqa: E402
from jaxmdp.runner import RESULTS_VERSION, curves, run_agents  # noqa: E402, F401

NAME = "regret"
DEFAULT_AGENTS = ("ucb", "dmed", "olp", "ps")


def add_options(parser):
    """The options shared by ``regret.py`` and ``robustness.py``."""
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--agents", nargs="+", default=list(DEFAULT_AGENTS),
                        help=f"agents to run, from {list(DEFAULT_AGENTS)}")
    parser.add_argument("--record-every", type=int, default=1,
                        help="keep every k-th round of the curves (memory)")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def check_options(args):
    """Validates the CLI options, raising ValueError naming the option."""
    positive_int("--horizon", args.horizon)
    positive_int("--replications", args.replications)
    positive_int("--record-every", args.record_every)
    for name in args.agents:
        jm.get_agent(name)  # ValueError listing the known agents


def summary(data, agents, *, title: str) -> str:
    """A table of mean +- 95% CI half-width at the horizon, per agent."""
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


def main(argv=None):
    parser = add_options(base_parser(__doc__.splitlines()[0]))
    args = parser.parse_args(argv)
    check_options(args)
    path = args.results_dir / f"{NAME}.npz"
    mdp = jm.envs.paper_mdp()
    if args.plot_only:
        data = saved_results(path)
    else:
        data = run_agents(path, mdp, agents=args.agents, horizon=args.horizon,
                          replications=args.replications, seed=args.seed,
                          record_every=args.record_every, force=args.force,
                          progress=not args.no_progress, env="paper-mdp")
    agents = [a for a in args.agents if f"pseudo_regret_{a}" in data]
    replications = data[f"pseudo_regret_{agents[0]}"].shape[0]
    fig = plotting.regret_figure(
        data["times"], curves(data, agents), lower_bound=float(data["lower_bound"]),
        title=f"Average cumulative pseudo-regret, paper's 3-state MDP "
              f"({replications} replications, mean and 95% CI)")
    figure = save_figure(fig, NAME, figures_dir=args.figures_dir)
    print(summary(data, agents, title="regret"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
