"""TUCRL against UCRL2 (and SCAL) on a weakly communicating MDP, ``toy3d-weak``.

``toy3d-weak`` (rlexplorer's ``Toy3D_1`` with ``delta=0``, the TUCRL paper's runs) has a
state that no policy reaches from the start (state 1). UCRL2 keeps an optimistic model
that reaches it, so it keeps paying to look for it: its regret grows linearly. TUCRL
truncates the confidence sets of well-visited pairs to the states observed so far and
stops looking; SCAL, told a bound on the bias span, also stops. The figure draws the
mean cumulative pseudo-regret of each agent with a band of one standard error of the
mean (replications are independent).

Writes ``results/tucrl_weak.npz`` atomically after each agent (re-running reuses the
saved agents of the same settings unless ``--force``; ``--plot-only`` redraws the figure
from them) and ``figures/tucrl_weak.png``. Defaults: horizon 20,000, 32 replications,
every 20th round kept; ``--full``: horizon 100,000.

    python experiments/tucrl_weak.py [--full] [--horizon 20000] [--replications 32]
                                     [--agents tucrl ucrl2 scal]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    base_parser,
    load_npz,
    positive_int,
    save_figure,
    save_npz_atomic,
    saved_results,
)

import jaxmdp as jm  # noqa: E402

NAME = "tucrl_weak"
ENV = "toy3d-weak"
DEFAULT_AGENTS = ("tucrl", "ucrl2", "scal")
COLOURS = {"tucrl": "tab:blue", "ucrl2": "tab:red", "scal": "tab:green"}


def run(path: Path, *, agents, horizon: int, replications: int, seed: int,
        record_every: int, force: bool, progress: bool) -> dict:
    """Simulates each agent not yet saved with these settings; saves after each one."""
    settings = np.array([horizon, replications, seed, record_every])
    data = load_npz(path)
    if data is None or force or not np.array_equal(data.get("settings"), settings):
        data = {"settings": settings}
    mdp = jm.envs.make(ENV)
    for name in agents:
        if f"pseudo_regret_{name}" in data:
            continue
        traj = jm.simulate(mdp, name, horizon=horizon, replications=replications, seed=seed,
                           progress=progress)
        regret = np.asarray(traj.pseudo_regret)
        keep = np.arange(record_every - 1, horizon, record_every)
        data["times"] = keep + 1
        data[f"pseudo_regret_{name}"] = regret[:, keep]
        save_npz_atomic(path, **data)
    return data


def figure(data: dict, agents):
    """Mean cumulative pseudo-regret with one-standard-error bands, linear axes."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    times = data["times"]
    for name in agents:
        r = data[f"pseudo_regret_{name}"]
        mean = r.mean(0)
        se = r.std(0, ddof=1) / np.sqrt(r.shape[0])
        ax.plot(times, mean, color=COLOURS.get(name), label=name)
        ax.fill_between(times, mean - se, mean + se, color=COLOURS.get(name), alpha=0.25)
    replications = data[f"pseudo_regret_{agents[0]}"].shape[0]
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative pseudo-regret")
    ax.set_title(f"{ENV}: weakly communicating ({replications} replications, mean ± s.e.)")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def summary(data: dict, agents) -> str:
    lines = [f"{'agent':8s} {'final pseudo-regret':>22s}  (mean ± s.e.)"]
    for name in agents:
        final = data[f"pseudo_regret_{name}"][:, -1]
        se = final.std(ddof=1) / np.sqrt(final.size)
        lines.append(f"{name:8s} {final.mean():14.1f} ± {se:6.1f}")
    return "\n".join(lines)


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=None,
                        help="default 20000; 100000 with --full")
    parser.add_argument("--replications", type=int, default=32)
    parser.add_argument("--agents", nargs="+", default=list(DEFAULT_AGENTS))
    parser.add_argument("--record-every", type=int, default=20)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.horizon is None:
        args.horizon = 100_000 if args.full else 20_000
    for option in ("--horizon", "--replications", "--record-every"):
        positive_int(option, getattr(args, option[2:].replace("-", "_")))
    if args.replications < 2:
        raise ValueError(f"--replications must be at least 2, got {args.replications}")
    unknown = [a for a in args.agents if a not in jm.agent_names()]
    if unknown:
        raise ValueError(f"--agents must be registered agents, got {unknown}")
    path = args.results_dir / f"{NAME}.npz"
    if args.plot_only:
        data = saved_results(path)
    else:
        data = run(path, agents=args.agents, horizon=args.horizon,
                   replications=args.replications, seed=args.seed,
                   record_every=args.record_every, force=args.force,
                   progress=not args.no_progress)
    agents = [a for a in args.agents if f"pseudo_regret_{a}" in data]
    saved = save_figure(figure(data, agents), NAME, figures_dir=args.figures_dir)
    print(summary(data, agents))
    print(f"results: {path}")
    print(f"figure: {saved}")


if __name__ == "__main__":
    main()
