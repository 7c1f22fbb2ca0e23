"""Regret against the lower-bound constant over an ensemble of GARNET MDPs, every agent.

For each registered agent (the paper's MDP-UCB, MDP-DMED, OLP and MDP-PS and the
baselines: ``jaxmdp.agent_names()``), one batched ``jaxmdp.simulate`` call runs it on
``M`` GARNET MDPs at once (``jm.envs.batch("garnet-S-A-b", seeds=range(M))``, ``R``
replications each). Every agent that has the option is told the mean rewards
(``known_rewards=True``; a GARNET's rewards are deterministic), so each instance's
reference is the Burnetas–Katehakis constant ``C`` for known rewards
(``jaxmdp.hardness(mdps).lower_bound``); an agent without the option (optimistic
Q-learning) learns them. The figure has one panel per agent and one point per instance:
the instance's mean pseudo-regret at the horizon divided by ``ln T`` against its ``C``,
with the line ``y = C`` that an asymptotically optimal agent approaches as ``T`` grows
(an instance with ``C = 0``, where no sub-optimal action is critical, is left out).
Each panel's title gives the interquartile mean of ``R(T) / (C ln T)`` over instances and
replications with its 95% stratified-bootstrap interval (instances as strata).

Writes ``results/regret_ensemble.npz`` and its settings ``.json`` (atomically after each
agent; re-running reuses saved agents for the same settings unless ``--force``) and
``figures/regret_ensemble.png``; ``--plot-only`` redraws from the saved results.
Defaults (CPU, a few minutes): GARNET(10, 2, 3), 50 instances, 2 replications, horizon
2,000, every agent. ``--full``: 200 instances, 10 replications, horizon 100,000.

    python experiments/regret_ensemble.py [--full] [--instances 50] [--replications 2]
                                          [--horizon 2000] [--family garnet-10-2-3]
                                          [--agents ucb ps ...]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from _common import base_parser, positive_int, save_figure  # noqa: E402

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting, runner  # noqa: E402
from jaxmdp.analysis.statistics import (  # noqa: E402
    interquartile_mean,
    normalised_regret,
    stratified_bootstrap_ci,
)

NAME = "regret_ensemble"


def _agents(names):
    """``(label, Agent)`` pairs: told the mean rewards where the agent has the option."""
    return runner.parse_agents(names, known_rewards=True)


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--family", default="garnet-10-2-3",
                        help="a seeded family instance (garnet-S-A-b or random-S-A)")
    parser.add_argument("--instances", type=int, default=None, help="default 50; 200 --full")
    parser.add_argument("--replications", type=int, default=None,
                        help="per instance; default 2; 10 with --full")
    parser.add_argument("--horizon", type=int, default=None,
                        help="default 2000; 100000 with --full")
    parser.add_argument("--agents", nargs="+", default=None,
                        help="default: every registered agent (jaxmdp.agent_names())")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    instances = positive_int("--instances", args.instances or (200 if args.full else 50))
    replications = positive_int("--replications",
                                args.replications or (10 if args.full else 2))
    horizon = positive_int("--horizon", args.horizon or (100_000 if args.full else 2_000))
    if horizon < 2:
        raise ValueError(f"--horizon must be at least 2, got {horizon}")
    names = args.agents or list(jm.agent_names())
    path = args.results_dir / f"{NAME}.npz"
    if args.plot_only:
        if not path.is_file():
            raise SystemExit(f"--plot-only: no saved results at {path}")
        settings, data = runner.load_results(path)
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        mdps = jm.envs.batch(args.family, seeds=range(instances))
        constants = np.asarray(jm.hardness(mdps).lower_bound, np.float64)
        data = runner.run_agents(path, mdps, agents=_agents(names), horizon=horizon,
                                 replications=replications, seed=args.seed,
                                 record_every=max(1, math.ceil(horizon / 200)),
                                 force=args.force, progress=not args.no_progress,
                                 lower_bound=constants,
                                 env=f"{args.family} x seeds 0-{instances - 1}")
        settings, data = runner.load_results(path)
    labels = [label for label in names if f"pseudo_regret_{label}" in data]
    if not labels:
        raise SystemExit(f"no agent of {names} in {path}")
    fig, lines = figure(data, labels, settings)
    out = save_figure(fig, NAME, figures_dir=args.figures_dir)
    print("\n".join(lines))
    print(f"results: {path}")
    print(f"figure: {out}")


def figure(data, labels, settings):
    """The figure (one panel per agent) and the summary lines."""
    import matplotlib.pyplot as plt

    constants = np.asarray(data["lower_bound"], np.float64)
    horizon = int(data["times"][-1])
    columns = min(3, len(labels))
    rows = -(-len(labels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.7 * rows),
                             squeeze=False, sharex=True, sharey=True,
                             constrained_layout=True)
    finals = {label: np.asarray(data[f"pseudo_regret_{label}"][..., -1], np.float64)
              for label in labels}
    values = np.concatenate([f.mean(axis=1) for f in finals.values()]) / math.log(horizon)
    positive = np.concatenate([values[values > 0], constants[constants > 0]])
    low, high = positive.min() / 1.5, positive.max() * 1.5
    kept = np.isfinite(constants) & (constants > 0)
    lines = [f"{settings['environment']}: {constants.size} instances x "
             f"{settings['replications']} replications, T = {horizon}; IQM of "
             f"R(T) / (C ln T) with 95% stratified-bootstrap interval over the "
             f"{int(kept.sum())} instances with C > 0"]
    for i, label in enumerate(labels):
        ax = axes.flat[i]
        final = finals[label][kept]
        scores = normalised_regret(final, constants[kept], horizon)
        iqm = interquartile_mean(scores)
        ci = stratified_bootstrap_ci(scores, seed=0)
        y = final.mean(axis=1) / math.log(horizon)
        ax.scatter(constants[kept], np.maximum(y, low), s=9, alpha=0.6,  # 0: bottom edge
                   color=plotting.agent_color(label, i))
        ax.plot([low, high], [low, high], "k--", lw=1, label="y = C")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.grid(alpha=0.3, which="both")
        ax.set_title(f"{plotting.agent_label(label)}: IQM {iqm:.2f} "
                     f"[{ci.low:.2f}, {ci.high:.2f}]", fontsize=9)
        if i % columns == 0:
            ax.set_ylabel("R(T) / ln T (instance mean)")
        if i >= len(labels) - columns:
            ax.set_xlabel("lower-bound constant C")
        lines.append(f"  {label:14s} IQM {iqm:8.3f}  [{ci.low:.3f}, {ci.high:.3f}]  "
                     f"wall {float(data[f'seconds_{label}']):.1f} s")
    for ax in axes.flat[len(labels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Pseudo-regret / ln T against the Burnetas–Katehakis constant, one point "
                 f"per MDP: {settings['environment']}, {settings['replications']} "
                 f"replications, T = {horizon}", fontsize=10)
    return fig, lines


if __name__ == "__main__":
    main()
