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
from _common import regret_figure, regret_summary, run_parser, saved_or_run  # noqa: E402

import jaxmdp as jm  # noqa: E402
from jaxmdp import runner  # noqa: E402

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
    return saved_or_run(args, args.results_dir / f"{NAME}_baseline.npz", mdp, env="paper-mdp")


def main(argv=None):
    parser = run_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    path = args.results_dir / f"{NAME}.npz"
    mdp = jm.envs.paper_mdp()
    data = saved_or_run(args, path, mdp, env="paper-mdp",
                        initial_counts=jm.envs.rigged_counts())
    base = baseline(args, mdp)
    if base is not None and not np.array_equal(base.get("times"), data["times"]):
        base = None
    agents, figure = regret_figure(
        args, data, NAME, background=base, background_label="same agents, normal start",
        title="Robustness: pseudo-regret after the rigged start of section 5.1 "
              "({replications} replications, mean and 95% CI)")
    print(regret_summary(data, agents, title="robustness (rigged start)"))
    if base is not None:
        print(regret_summary(base, agents, title="same settings, normal start"))
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
