"""Ablations as sweeps: UCRL2's confidence level and UCRL2B's radius constant.

Each ablation is one :func:`jaxmdp.sweep` call (one compiled program for all its points;
:mod:`jaxmdp.sweeps` saves the points with their settings and computes only the points it
does not have): UCRL2's ``delta`` over eight values from ``1e-4`` to ``0.5``, and UCRL2B's
radius constant ``c_sqrt`` (the factor of the Bernstein widths of its transition and reward
bounds) over five values from ``0.25`` to ``4``, with ``c_lin`` 0 and 6 and EVI capped at
1,000 sweeps per episode start (the StatisticalRL code's cap; narrow sets need many sweeps
to meet UCRL2B's ``1/t_k`` tolerance), on RiverSwim-6 and grid-4-room. The figure draws the
final pseudo-regret of every point (mean and 95% BCa bootstrap interval) against the swept
option.

Writes ``results/sweeps/<agent>-<env>.npz`` (and its settings ``.json``) and
``figures/sweeps.png``. Defaults: horizon 2,000, 10 replications per point; ``--full``:
horizon 10,000 and 100 replications.

    python experiments/sweeps.py [--full] [--horizon 2000] [--replications 10]
                                 [--plot-only] [--force]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import base_parser, positive_int, save_figure  # noqa: E402

from jaxmdp import sweeps  # noqa: E402
from jaxmdp.runner import load_results  # noqa: E402

NAME = "sweeps"
ENVS = ("riverswim-6", "grid-4-room")
#: The ablations: (agent, grid, shared options).
ABLATIONS = (
    ("ucrl2", {"delta": [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.35, 0.5]}, {}),
    ("ucrl2b", {"c_lin": [0.0, 6.0], "c_sqrt": [0.25, 0.5, 1.0, 2.0, 4.0]},
     {"max_evi_steps": 1000}),
)


def run(args) -> dict:
    """Every ablation on every environment: ``(agent, env) -> (settings, arrays)``."""
    import jaxmdp as jm

    out = {}
    for agent, grid, options in ABLATIONS:
        for env in ENVS:
            path = args.results_dir / NAME / f"{agent}-{env}.npz"
            if args.plot_only:
                out[agent, env] = load_results(path)
                continue
            if args.force and path.exists():
                path.unlink()
            out[agent, env] = sweeps.run_sweep(
                path, jm.envs.make(env), agent, grid, horizon=args.horizon,
                replications=args.replications, seed=args.seed, options=options,
                record_every=max(1, args.horizon // 100), progress=not args.no_progress,
                env=env)
    return out


def figure(results: dict):
    """One panel per ablation and environment: final pseudo-regret against the option."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(len(ABLATIONS), len(ENVS), figsize=(5.4 * len(ENVS),
                                                                 3.8 * len(ABLATIONS)),
                             squeeze=False)
    for row, (agent, grid, _) in enumerate(ABLATIONS):
        option = list(grid)[-1]
        for col, env in enumerate(ENVS):
            ax = axes[row][col]
            settings, arrays = results[agent, env]
            rows = sweeps.sweep_rows(settings, arrays)
            others = [o for o in grid if o != option]
            for key in sorted({tuple(r[o] for o in others) for r in rows}):
                group = sorted((r for r in rows if tuple(r[o] for o in others) == key),
                               key=lambda r: r[option])
                x = np.asarray([r[option] for r in group], float)
                label = ", ".join(f"{o}={v:g}" for o, v in zip(others, key)) or None
                line, = ax.plot(x, [r["mean"] for r in group], marker="o", label=label)
                ax.fill_between(x, [r["ci_low"] for r in group], [r["ci_high"] for r in group],
                                color=line.get_color(), alpha=0.2)
            if option == "delta":
                ax.set_xscale("log")
            ax.set_xlabel(option)
            ax.set_ylabel(f"pseudo-regret at t = {settings['horizon']}")
            ax.set_title(f"{agent} on {env} ({settings['replications']} runs per point)")
            ax.grid(alpha=0.3)
            if others:
                ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv=None) -> dict:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=None)
    parser.add_argument("--replications", type=int, default=None)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    args.horizon = positive_int("--horizon", args.horizon or (10_000 if args.full else 2_000))
    args.replications = positive_int("--replications",
                                     args.replications or (100 if args.full else 10))
    results = run(args)
    path = save_figure(figure(results), NAME, figures_dir=args.figures_dir)
    for (agent, env), (settings, arrays) in results.items():
        print(sweeps.sweep_markdown(settings, sweeps.sweep_rows(settings, arrays)))
    print(f"figure: {path}")
    return results


if __name__ == "__main__":
    main()
