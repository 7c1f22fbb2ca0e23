"""Every agent on the field's standard environments, rewards learned: the baseline comparison.

The paper's four agents (MDP-UCB, MDP-DMED, OLP, MDP-PS) and the field's baselines (UCRL2,
KL-UCRL, TSDE, IMED-RL, optimistic Q-learning) on ``riverswim-6``, ``riverswim-25``,
``grid-4-room``, ``grid-2-room`` and the paper's MDP. Observed rewards are Bernoulli draws
of the mean rewards and every agent learns them (``known_rewards=False``); the lower-bound
line is the Burnetas–Katehakis constant for learned Bernoulli rewards
(``jaxmdp.regret_lower_bound(mdp, known_rewards=False)``).

For each environment: ``results/compare_<env>.npz`` (atomic, after each agent; resumed
and reused unless ``--force``), ``figures/compare_<env>.png`` (mean with 95% CI and median
with quartiles, log and linear time). For all of them: ``results/compare.csv`` and
``results/compare.md`` (regret at the horizon and wall time per agent, compile included).
Unless ``--plot-only``, the machine's calibration line (``benchmarks/_calibration.py``) is
printed first, so that wall times from different runs can be compared.

Default (the CPU-friendly size ``reproduce.py`` runs): horizon 2,000, 10 replications, on
``riverswim-6`` and the paper's MDP; ``--full``: horizon 10^5, 50 replications, on all
five environments. (The three larger ones are left out of the default because UCRL3's
extended value iteration, up to 1,000 sweeps of near-optimistic supports at every episode
start, costs minutes on them on a 2-core CPU (see the baselines page of the docs' results);
``--envs`` runs any of them.)

    python experiments/compare.py [--full] [--horizon 2000] [--replications 10]
        [--envs riverswim-6 ...] [--agents ucb,ps,ucrl2,...]
    python experiments/compare.py --envs riverswim-6 --agents ucrl2 \\
        --horizon 10000000 --replications 50          # the UCRL3 paper's size
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _calibration  # noqa: E402
from _common import base_parser, positive_int, save_figure  # noqa: E402

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting, runner  # noqa: E402

NAME = "compare"
FULL_ENVS = ("riverswim-6", "riverswim-25", "grid-4-room", "grid-2-room", "paper-mdp")
DEFAULT_ENVS = ("riverswim-6", "paper-mdp")
PAPER_AGENTS = ("ucb", "dmed", "olp", "ps")
BASELINES = ("ucrl2", "kl_ucrl", "ucrl2b", "ucrl3", "tsde", "psrl", "imed_rl", "optimistic_q")


def default_agents() -> list[str]:
    """The paper's four and every baseline that is registered."""
    known = set(jm.agent_names())
    return list(PAPER_AGENTS) + [b for b in BASELINES if b in known]


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=None,
                        help="default 2000; 100000 with --full")
    parser.add_argument("--replications", type=int, default=None,
                        help="default 10; 50 with --full")
    parser.add_argument("--envs", nargs="+", default=None,
                        help=f"default {' '.join(DEFAULT_ENVS)}; with --full "
                             f"{' '.join(FULL_ENVS)}")
    parser.add_argument("--agents", default=",".join(default_agents()),
                        help="comma-separated agent names")
    parser.add_argument("--record-every", type=int, default=None,
                        help="keep every k-th round (default: about 1,000 points)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.horizon is None:
        args.horizon = 100_000 if args.full else 2_000
    if args.replications is None:
        args.replications = 50 if args.full else 10
    if args.envs is None:
        args.envs = list(FULL_ENVS if args.full else DEFAULT_ENVS)
    positive_int("--horizon", args.horizon)
    positive_int("--replications", args.replications)
    record_every = args.record_every or max(1, math.ceil(args.horizon / 1000))
    positive_int("--record-every", record_every)
    agents = runner.parse_agents(args.agents, known_rewards=False)
    labels = [label for label, _ in agents]
    mdps = {env: jm.envs.make(env).with_reward_law("bernoulli") for env in args.envs}
    if not args.plot_only:  # the machine's speed, beside the wall times this run measures
        print(_calibration.calibration_line(), flush=True)

    all_rows = []
    for env, mdp in mdps.items():
        path = args.results_dir / f"{NAME}_{env}.npz"
        if args.plot_only:
            if not path.is_file():
                raise SystemExit(f"--plot-only: no saved results at {path}")
        else:
            bound = jm.regret_lower_bound(mdp, known_rewards=False).constant
            runner.run_agents(path, mdp, agents=agents, horizon=args.horizon,
                              replications=args.replications, seed=args.seed,
                              record_every=record_every, force=args.force,
                              progress=not args.no_progress, lower_bound=float(bound),
                              env=env)
        settings, data = runner.load_results(path)
        replications = settings["replications"]
        fig = plotting.comparison_figure(
            data["times"], runner.curves(data, labels),
            lower_bound=float(data["lower_bound"]), log_y=True,
            title=f"{env}, Bernoulli rewards learned by every agent ({replications} "
                  f"replications); dashed: lower bound {float(data['lower_bound']):.3g} ln t")
        figure = save_figure(fig, f"{NAME}_{env}", figures_dir=args.figures_dir)
        print(f"figure: {figure}")
        for row in runner.summary_rows(data, labels):
            all_rows.append({"env": env, **row})
    stem = args.results_dir / NAME
    _write_combined(all_rows, stem)
    print(Path(f"{stem}.md").read_text())
    print(f"table: {stem}.csv")
    print(f"table: {stem}.md")


def _write_combined(rows, stem: Path) -> None:
    text = runner.rows_to_csv(rows)
    runner.write_atomic(stem.with_suffix(".csv"), lambda tmp: Path(tmp).write_text(text),
                        ".csv")
    lines = ["| environment | agent | pseudo-regret at T, mean ± 95% CI | median [q1, q3] | "
             "wall s |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['env']} (T = {r['horizon']}) | {plotting.agent_label(r['agent'])}"
                     f" | {r['mean']:.1f} ± {r['ci95']:.1f} | {r['median']:.1f} "
                     f"[{r['q1']:.1f}, {r['q3']:.1f}] | {r['seconds']:.1f} |")
    text = "\n".join(lines) + "\n"
    runner.write_atomic(stem.with_suffix(".md"), lambda tmp: Path(tmp).write_text(text), ".md")


if __name__ == "__main__":
    main()
