"""A plain NumPy loop for TSDE (Ouyang et al. 2017), written the way a careful researcher
would: one replication at a time, one round at a time, no jaxmdp inside the loop (the
command line loads ``P``, ``R`` and the admissible mask of a named environment from
``jaxmdp.envs`` once at startup; the true MDP's gain and gaps come from
:func:`tests.reference.mdp.true_gaps`).

An episode starts at round ``t`` when ``t > t_k + T_{k-1}`` or the pair just visited now
has ``N > 2 N_{t_k}`` (the only pair whose count changed, so checking it alone is the rule
over all pairs); ``t_0 = 0``, so ``T_0 = 1``. At an episode start: ``P~ = Gamma(1 + N)``
draws normalised per row (``Generator.standard_gamma``, one vectorised call), learned
rewards ``R~ ~ Beta(1 + sum r, 1 + n - sum r)`` (one vectorised ``Generator.beta``), then
policy iteration warm-started from the last policy
(:func:`tests.reference.mdp.policy_iteration`). Between episode starts a round is a few
Python scalar operations.

Randomness: ``numpy.random.SeedSequence(seed).spawn(replications)``; the uniforms that
draw next states and Bernoulli rewards are drawn in one block per replication, the next
state by ``bisect`` on the row's cumulative probabilities (Python lists).

Run, for example (from the repository root),
``python -m tests.reference.tsde --env riverswim-6 --horizon 2000 --replications 64`` to
print the mean pseudo-regret +- se and us per step.
"""

from __future__ import annotations

import argparse
import math
import time
from bisect import bisect_right

import numpy as np

from tests.reference.mdp import load_env, policy_iteration, true_gaps


def run_one(P, R, mask, horizon, rng, gap, *, known_rewards=False,
            reward_law="deterministic"):
    """One TSDE replication; returns (final pseudo-regret, episodes)."""
    S, A, _ = P.shape
    cum = np.cumsum(P, axis=-1).tolist()
    Rl = R.tolist()
    gapl = gap.tolist()
    counts = np.zeros((S, A, S))
    sums = np.zeros((S, A))
    n = [[0] * A for _ in range(S)]
    n_start = [[0] * A for _ in range(S)]
    policy = np.argmax(mask, axis=1)
    pol = policy.tolist()
    u_next = rng.random(horizon).tolist()
    u_reward = rng.random(horizon).tolist() if reward_law == "bernoulli" else None
    x = 0
    t_k, T_prev = 0, 0  # t_0 = 0: the first round starts episode 1, T_0 = 1
    doubled = False
    episodes = 0
    regret = 0.0
    for t in range(1, horizon + 1):
        if doubled or t > t_k + T_prev:
            T_prev, t_k = t - t_k, t
            n_start = [row[:] for row in n]
            doubled = False
            episodes += 1
            g = rng.standard_gamma(counts + 1.0)
            Pt = g / g.sum(axis=-1, keepdims=True)
            if known_rewards:
                Rt = R
            else:
                nn = counts.sum(axis=-1)
                Rt = rng.beta(1.0 + sums, 1.0 + np.maximum(nn - sums, 0.0))
            _, _, policy = policy_iteration(Pt, Rt, mask, policy)
            pol = policy.tolist()
        a = pol[x]
        row = cum[x][a]
        y = min(bisect_right(row, u_next[t - 1] * row[-1]), S - 1)
        r = Rl[x][a] if u_reward is None else (1.0 if u_reward[t - 1] < Rl[x][a] else 0.0)
        counts[x, a, y] += 1.0
        sums[x, a] += r
        k = n[x][a] + 1
        n[x][a] = k
        if k > 2 * n_start[x][a]:
            doubled = True  # the next round starts a new episode
        regret += gapl[x][a]
        x = y
    return regret, episodes


def run(P, R, mask, horizon, replications, seed, *, known_rewards=False,
        reward_law="deterministic"):
    """``replications`` independent runs.

    Returns:
        dict with ``mean`` and ``se`` of the final pseudo-regret, ``final``
        ``[replications]``, ``episodes`` (per replication), ``seconds`` (wall time of
        the loops, the true MDP's solve excluded) and ``us_per_step``.
    """
    P, R, mask = np.asarray(P, float), np.asarray(R, float), np.asarray(mask, bool)
    _, gap = true_gaps(P, R, mask)
    seeds = np.random.SeedSequence(seed).spawn(replications)
    start = time.perf_counter()
    out = [run_one(P, R, mask, horizon, np.random.default_rng(s), gap,
                   known_rewards=known_rewards, reward_law=reward_law) for s in seeds]
    seconds = time.perf_counter() - start
    final = np.array([o[0] for o in out])
    se = final.std(ddof=1) / math.sqrt(len(final)) if len(final) > 1 else float("nan")
    return {"mean": float(final.mean()), "se": float(se), "final": final,
            "episodes": np.array([o[1] for o in out]), "seconds": seconds,
            "us_per_step": seconds / (horizon * replications) * 1e6}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="riverswim-6")
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--known-rewards", action="store_true")
    args = parser.parse_args(argv)
    P, R, mask, _ = load_env(args.env)
    from benchmarks import _calibration

    print(_calibration.calibration_line(), flush=True)
    out = run(P, R, mask, args.horizon, args.replications, args.seed,
              known_rewards=args.known_rewards)
    print(f"tsde {args.env} T={args.horizon} R={args.replications} seed={args.seed} "
          f"known_rewards={args.known_rewards}: mean pseudo-regret {out['mean']:.3f} "
          f"se {out['se']:.3f}  ({out['us_per_step']:.2f} us/step)", flush=True)


if __name__ == "__main__":
    main()
