"""Known against learned rewards: the paper's four agents with Bernoulli rewards.

The paper assumes the agent knows the mean rewards ``R`` and leaves unknown rewards to
future work. Here the observed reward of ``(x, a)`` is Bernoulli(``R[x, a]``) and each
agent runs twice: told ``R`` (``known_rewards=True``, dashed) and learning it from the
observed rewards (``known_rewards=False``, solid; the rules are in
``jaxmdp/agents/paper.py``). Two environments: the paper's 3-state MDP and RiverSwim-6.

Two lower-bound lines (Burnetas & Katehakis 1997): ``C ln t`` with rewards known (the
KL divergence is over next-state laws only) and with Bernoulli rewards learned, where
``K(x, a)`` is the minimal KL divergence over joint laws of (reward, next state),
``kinf(((1 - R) P, R P), (v*, 1 + v*), gain* + v*_x)``
(``jaxmdp.regret_lower_bound(mdp, known_rewards=False)``): a larger constant, since the
agent must also tell reward means apart.

Writes ``results/rewards_<env>.npz`` (atomically, after each agent; reused unless
``--force``) and ``figures/rewards_<env>.png``.

Defaults: horizon 2,000, 10 replications, every 2nd round kept (the sizes of
``compare.py``, whose learned-reward runs of these agents on these environments are the
same programs, so ``reproduce.py`` compiles them once); ``--full``: horizon 10,000, 50
replications.

    python experiments/rewards.py [--full] [--horizon 2000] [--replications 10]
                                  [--envs paper-mdp riverswim-6] [--agents ucb dmed olp ps]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    regret_summary,
    run_parser,
    save_figure,
    save_npz_atomic,
    saved_or_run,
)

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting  # noqa: E402
from jaxmdp.runner import curves  # noqa: E402

NAME = "rewards"
DEFAULT_ENVS = ("paper-mdp", "riverswim-6")


def main(argv=None):
    parser = run_parser(__doc__.splitlines()[0], horizon=(2_000, 10_000),
                        replications=(10, 50), record_every=None)
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS),
                        help=f"environments (jaxmdp.envs names), default {list(DEFAULT_ENVS)}")
    args = parser.parse_args(argv)
    for env in args.envs:
        mdp = jm.envs.make(env).with_reward_law("bernoulli")
        path = args.results_dir / f"{NAME}_{env}.npz"
        agents = [(f"{a}-known", jm.get_agent(a)) for a in args.agents]
        agents += [(f"{a}-learned", jm.get_agent(a, known_rewards=False)) for a in args.agents]
        data = saved_or_run(args, path, mdp, env=env, agents=agents)
        if not args.plot_only and "lower_bound_learned" not in data:
            bound = jm.regret_lower_bound(mdp, known_rewards=False).constant
            data["lower_bound_learned"] = np.asarray(float(bound))
            save_npz_atomic(path, **data)
        names = [a for a in args.agents if f"pseudo_regret_{a}-learned" in data]
        learned = curves(data, [f"{n}-learned" for n in names])
        known = curves(data, [f"{n}-known" for n in names])
        replications = next(iter(learned.values())).shape[0]
        fig = plotting.regret_figure(
            data["times"], {n: learned[f"{n}-learned"] for n in names},
            background={n: known[f"{n}-known"] for n in names},
            background_label="same agent told the mean rewards", background_style="dashed",
            lower_bound={
                f"lower bound, rewards known: {float(data['lower_bound']):.3g} ln t":
                    float(data["lower_bound"]),
                f"lower bound, rewards learned: {float(data['lower_bound_learned']):.3g} ln t":
                    float(data["lower_bound_learned"]),
            },
            title=f"{env}, Bernoulli rewards: solid = rewards learned, dashed = known "
                  f"({replications} replications, mean and 95% CI)", log_y=True)
        figure = save_figure(fig, f"{NAME}_{env}", figures_dir=args.figures_dir)
        labels = [f"{n}-{kind}" for n in names for kind in ("known", "learned")]
        print(regret_summary(data, labels, title=f"{env}, Bernoulli rewards"))
        print(f"learned-reward lower bound C = {float(data['lower_bound_learned']):.4f}")
        print(f"results: {path}")
        print(f"figure: {figure}")


if __name__ == "__main__":
    main()
