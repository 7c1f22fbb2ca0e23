"""The paper's robustness test (section 5.1): regret after a rigged start.

Every run starts from ``examples.rigged_counts()``: 60 made-up transitions under which the
estimated optimal policy picks the sub-optimal action in every state. The first played
round is ``t = 61`` (used in ``ln t``) and regret counts only the played rounds. The
un-rigged curves (from ``results/regret.npz`` when it holds the same settings, otherwise
computed here) are drawn faint behind for comparison.

Writes ``results/robustness.npz`` and ``figures/robustness.png``.

    python experiments/robustness.py [--horizon 10000] [--replications 100]
                                     [--agents ucb dmed olp ps] [--seed 0]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import base_parser, save_figure, saved_results  # noqa: E402
from regret import (  # noqa: E402
    add_options,
    check_options,
    curves,
    run_agents,
    summary,
)

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting, runner  # noqa: E402

NAME = "robustness"


def baseline(args, mdp):
    """Un-rigged runs with the same settings: reused from regret.npz, else computed."""
    requested = runner.run_settings(mdp, args.agents, horizon=args.horizon,
                                    replications=args.replications, seed=args.seed,
                                    record_every=args.record_every)
    regret_path = args.results_dir / "regret.npz"
    try:
        settings, saved = runner.load_results(regret_path)
    except (FileNotFoundError, ValueError):
        settings, saved = None, None
    if (saved is not None and runner.settings_difference(settings, requested) is None
            and all(a in settings["agents"] for a in args.agents)):
        print(f"un-rigged curves: reusing {regret_path}", flush=True)
        return saved
    if args.plot_only:
        return None
    return run_agents(args.results_dir / f"{NAME}_baseline.npz", mdp, agents=args.agents,
                      horizon=args.horizon, replications=args.replications,
                      seed=args.seed, record_every=args.record_every, force=args.force,
                      progress=not args.no_progress, env="paper-mdp")


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
                          record_every=args.record_every,
                          initial_counts=jm.envs.rigged_counts(), force=args.force,
                          progress=not args.no_progress, env="paper-mdp")
    base = baseline(args, mdp)
    agents = [a for a in args.agents if f"pseudo_regret_{a}" in data]
    replications = data[f"pseudo_regret_{agents[0]}"].shape[0]
    background = None
    if base is not None and np.array_equal(base.get("times"), data["times"]):
        background = curves(base, agents)
    fig = plotting.regret_figure(
        data["times"], curves(data, agents), lower_bound=float(data["lower_bound"]),
        background=background, background_label="same agents, normal start",
        title=f"Robustness: pseudo-regret after the rigged start of section 5.1 "
              f"({replications} replications, mean and 95% CI)")
    figure = save_figure(fig, NAME, figures_dir=args.figures_dir)
    print(summary(data, agents, title="robustness (rigged start)"))
    if background is not None:
        print(summary(base, agents, title="same settings, normal start"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
