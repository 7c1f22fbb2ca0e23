"""Plain NumPy loops for TSDE and IMED-RL, written the way a careful researcher would.

One replication at a time, one round at a time, no jaxmdp inside the loops (the CLI loads
``P``, ``R`` and the admissible mask of a named environment from ``jaxmdp.envs`` once at
startup; the true MDP's gain and gaps come from ``numpy_reference.true_gaps``).

* **TSDE** (Ouyang et al. 2017): an episode starts at round ``t`` when
  ``t > t_k + T_{k-1}`` or the pair just visited now has ``N > 2 N_{t_k}`` (the only
  pair whose count changed, so checking it alone is the rule over all pairs); ``t_0 = 0``,
  so ``T_0 = 1``. At an episode start: ``P~ = Gamma(1 + N)`` draws normalised per row
  (``Generator.standard_gamma``, one vectorised call), learned rewards
  ``R~ ~ Beta(1 + sum r, 1 + n - sum r)`` (one vectorised ``Generator.beta``), then policy
  iteration warm-started from the last policy (``numpy.linalg.solve``). Between episode
  starts a round is a few Python scalar operations.
* **IMED-RL** (Pesquerel & Maillard 2022), the rules of :mod:`jaxmdp.agents.imed`: each
  round, the model ``p_hat = (N + 1/S) / (n + 1)``,
  ``r_hat = (sum r + 1/2) / (n + 1)``, the skeleton
  ``{a : n[s, a] >= ln(max_a' n[s, a'])^2}``, policy iteration on the skeleton MDP
  (warm-started), then at the current state ``H_a = n K_a + ln n`` with ``K_a`` the kinf
  (``numpy_reference.kinf``, brentq on Theorem 4's equation) of the joint law of (reward
  in {0, 1}, next state) against the skeleton's best ``r_hat + p_hat . v``; untried
  actions first (``H = -inf``), argmin, ties to the lowest index.

Randomness: ``numpy.random.SeedSequence(seed).spawn(replications)``; the uniforms that
draw next states and Bernoulli rewards are drawn in one block per replication, the next
state by ``bisect`` on the row's cumulative probabilities (Python lists).

Run, for example,
``python benchmarks/numpy_psrl_imed.py --agent tsde imed_rl --env riverswim-6
--horizon 2000 --replications 64`` to print mean pseudo-regret +- se and us per step.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from bisect import bisect_right
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numpy_reference import joint_law, kinf, true_gaps  # noqa: E402

AGENTS = ("tsde", "imed_rl")


def policy_iteration(P, R, mask, policy, max_iter=100):
    """Unichain average-reward policy iteration; returns (gain, bias, policy).

    ``bias[0] = 0``; improvement keeps the current action within a relative 1e-12 of the
    best, else takes the lowest-index best action. ``P`` must make every policy unichain.
    """
    S = P.shape[0]
    states = np.arange(S)
    Rm = np.where(mask, R, -np.inf)
    eye = np.eye(S)
    for _ in range(max_iter):
        M = eye - P[states, policy]
        M[:, 0] = 1.0
        z = np.linalg.solve(M, R[states, policy])
        gain = z[0]
        z[0] = 0.0
        Q = Rm + P @ z
        best = Q.max(axis=1)
        near = Q >= (best - 1e-12 * max(1.0, np.abs(best).max()))[:, None]
        new = np.where(near[states, policy], policy, np.argmax(near, axis=1))
        if np.array_equal(new, policy):
            break
        policy = new
    return gain, z, policy


def _draw_reward(law, mean, u):
    return (1.0 if u < mean else 0.0) if law == "bernoulli" else mean


def run_tsde_one(P, R, mask, horizon, rng, gap, *, known_rewards=False,
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
        r = Rl[x][a] if u_reward is None else _draw_reward(reward_law, Rl[x][a], u_reward[t - 1])
        counts[x, a, y] += 1.0
        sums[x, a] += r
        k = n[x][a] + 1
        n[x][a] = k
        if k > 2 * n_start[x][a]:
            doubled = True  # the next round starts a new episode
        regret += gapl[x][a]
        x = y
    return regret, episodes


def imed_index(n, rewards_sum, counts_row, v, level, *, known_reward=None):
    """IMED-RL's index ``H = n K + ln n`` of one pair (``-inf`` when ``n == 0``).

    ``K = inf{KL(p || q) : E_q[reward + v(next)] >= level}`` over the joint law of
    (reward in {0, 1}, next state) of the model ``p_hat = (N + 1/S) / (n + 1)``,
    ``r_hat = (sum r + 1/2) / (n + 1)``; with a known reward ``r``, over the next state
    only against ``level - r``.
    """
    if n == 0:
        return -math.inf
    S = counts_row.shape[0]
    p = (counts_row + 1.0 / S) / (n + 1.0)
    if known_reward is not None:
        K = kinf(p, v, level - known_reward)
    else:
        pj, w = joint_law(p, v, (rewards_sum + 0.5) / (n + 1.0))
        K = kinf(pj, w, level)
    return n * K + math.log(n) if K < math.inf else math.inf


def run_imed_one(P, R, mask, horizon, rng, gap, *, known_rewards=False,
                 reward_law="deterministic"):
    """One IMED-RL replication; returns (final pseudo-regret, 0)."""
    S, A, _ = P.shape
    cum = np.cumsum(P, axis=-1).tolist()
    Rl = R.tolist()
    gapl = gap.tolist()
    counts = np.zeros((S, A, S))
    sums = np.zeros((S, A))
    n = np.zeros((S, A))
    policy = np.argmax(mask, axis=1)
    u_next = rng.random(horizon).tolist()
    u_reward = rng.random(horizon).tolist() if reward_law == "bernoulli" else None
    actions = [np.flatnonzero(mask[s]).tolist() for s in range(S)]
    x = 0
    regret = 0.0
    for t in range(1, horizon + 1):
        p_hat = (counts + 1.0 / S) / (n + 1.0)[:, :, None]
        r_hat = R if known_rewards else (sums + 0.5) / (n + 1.0)
        top = np.where(mask, n, 0.0).max(axis=1)
        skeleton = mask & (n >= np.log(np.maximum(top, 1.0))[:, None] ** 2)
        _, v, policy = policy_iteration(p_hat, r_hat, skeleton, policy)
        q = np.where(skeleton[x], r_hat[x] + p_hat[x] @ v, -np.inf)
        level = q.max()
        best_a, best_h = -1, math.inf
        for a in actions[x]:
            h = imed_index(n[x, a], sums[x, a], counts[x, a], v, level,
                           known_reward=Rl[x][a] if known_rewards else None)
            if best_a < 0 or h < best_h:
                best_a, best_h = a, h
        a = best_a
        row = cum[x][a]
        y = min(bisect_right(row, u_next[t - 1] * row[-1]), S - 1)
        r = Rl[x][a] if u_reward is None else _draw_reward(reward_law, Rl[x][a], u_reward[t - 1])
        counts[x, a, y] += 1.0
        sums[x, a] += r
        n[x, a] += 1.0
        regret += gapl[x][a]
        x = y
    return regret, 0


def run(P, R, mask, agent, horizon, replications, seed, *, known_rewards=False,
        reward_law="deterministic"):
    """``replications`` independent runs of ``agent`` (``"tsde"`` or ``"imed_rl"``).

    Returns:
        dict with ``mean`` and ``se`` of the final pseudo-regret, ``final``
        ``[replications]``, ``episodes`` (TSDE's per replication), ``seconds`` (wall
        time of the loops, the true MDP's solve excluded) and ``us_per_step``.
    """
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    P, R, mask = np.asarray(P, float), np.asarray(R, float), np.asarray(mask, bool)
    _, gap = true_gaps(P, R, mask)
    one = run_tsde_one if agent == "tsde" else run_imed_one
    seeds = np.random.SeedSequence(seed).spawn(replications)
    start = time.perf_counter()
    out = [one(P, R, mask, horizon, np.random.default_rng(s), gap,
               known_rewards=known_rewards, reward_law=reward_law) for s in seeds]
    seconds = time.perf_counter() - start
    final = np.array([o[0] for o in out])
    se = final.std(ddof=1) / math.sqrt(len(final)) if len(final) > 1 else float("nan")
    return {"mean": float(final.mean()), "se": float(se), "final": final,
            "episodes": np.array([o[1] for o in out]), "seconds": seconds,
            "us_per_step": seconds / (horizon * replications) * 1e6}


def load_env(name):
    """``(P, R, mask)`` of a named jaxmdp environment, as float64 NumPy arrays."""
    import jaxmdp as jm

    mdp = jm.envs.make(name)
    return (np.asarray(mdp.P, np.float64), np.asarray(mdp.R, np.float64),
            np.asarray(mdp.mask, bool))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, nargs="+", default=list(AGENTS))
    parser.add_argument("--env", default="riverswim-6")
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--known-rewards", action="store_true")
    args = parser.parse_args(argv)
    P, R, mask = load_env(args.env)
    import _calibration

    print(_calibration.calibration_line(), flush=True)
    for agent in args.agent:
        out = run(P, R, mask, agent, args.horizon, args.replications, args.seed,
                  known_rewards=args.known_rewards)
        print(f"{agent:8s} {args.env} T={args.horizon} R={args.replications} seed={args.seed} "
              f"known_rewards={args.known_rewards}: mean pseudo-regret {out['mean']:.3f} "
              f"se {out['se']:.3f}  ({out['us_per_step']:.2f} us/step)", flush=True)


if __name__ == "__main__":
    main()
