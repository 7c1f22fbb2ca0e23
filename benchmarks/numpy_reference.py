"""A plain per-step NumPy/SciPy loop for the paper's four agents, written the way a
researcher would write it by hand: one replication at a time, one round at a time.

Each round: count-based estimates (p_hat = (N+1)/(n+S), good actions), policy iteration
on the estimated MDP (warm-started from the previous policy, ``numpy.linalg.solve`` for
each evaluation), the agent's indices (``scipy.optimize.brentq`` for the KL indices, the
sort-based L1 rule for OLP, ``Generator.dirichlet`` for posterior sampling), the action,
and a transition drawn from the true MDP.

It shares no code with ``jaxmdp``: it exists to check the JAX simulator (tests compare
mean pseudo-regret) and as the baseline of ``benchmarks/simulate.py``.

Run ``python benchmarks/numpy_reference.py --agent ucb --horizon 2000 --replications 256``
to print the mean pseudo-regret at the horizon with its standard error.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.optimize import brentq

AGENTS = ("ucb", "dmed", "olp", "ps")

# The paper's 3-state example (section 5), P[x, a, y] and R[x, a].
PAPER_P = np.array([
    [[0.04, 0.69, 0.27], [0.28, 0.68, 0.04]],
    [[0.88, 0.01, 0.11], [0.26, 0.33, 0.41]],
    [[0.02, 0.46, 0.52], [0.43, 0.35, 0.22]],
])
PAPER_R = np.array([[0.13, 0.18], [0.47, 0.71], [0.89, 0.63]])
# The rigged start of section 5.1, N[x, a, y].
RIGGED_COUNTS = np.array([
    [[8, 1, 1], [1, 1, 8]],
    [[1, 1, 8], [8, 1, 1]],
    [[8, 1, 1], [1, 1, 8]],
])


# ----------------------------------------------------------------------------- planning
def policy_iteration(P, R, mask, policy=None, max_iter=100):
    """Average-reward policy iteration for a unichain MDP; returns (gain, bias, policy).

    The bias is normalised by ``bias[0] = 0``. An improvement step keeps the current
    action unless another is better by more than a relative 1e-12; ties go to the lowest
    action index.
    """
    S = P.shape[0]
    states = np.arange(S)
    if policy is None:
        policy = np.argmax(mask, axis=1)
    else:
        policy = np.where(mask[states, policy], policy, np.argmax(mask, axis=1))
    for _ in range(max_iter):
        P_pi = P[states, policy]
        r_pi = R[states, policy]
        # g + h_x - sum_y P_pi[x, y] h_y = r_x with h_0 = 0: unknowns (g, h_1, ..., h_{S-1}).
        M = np.eye(S) - P_pi
        M[:, 0] = 1.0
        z = np.linalg.solve(M, r_pi)
        gain = z[0]
        bias = z.copy()
        bias[0] = 0.0
        Q = R + P @ bias
        Q = np.where(mask, Q, -np.inf)
        best = Q.max(axis=1)
        tol = 1e-12 * max(1.0, np.abs(best).max())
        keep = Q[states, policy] >= best - tol
        new_policy = np.where(keep, policy, np.argmax(Q >= best[:, None] - tol, axis=1))
        if np.array_equal(new_policy, policy):
            return gain, bias, policy
        policy = new_policy
    return gain, bias, policy


def true_gaps(P, R, mask):
    """Gain of the true MDP and the gaps Delta(x, a) = g + h_x - r(x, a) - P[x, a].h."""
    gain, bias, _ = policy_iteration(P, R, mask)
    gap = gain + bias[:, None] - (R + P @ bias)
    gap = np.where(mask, np.maximum(gap, 0.0), 0.0)
    gap[np.abs(gap) < 1e-12] = 0.0
    return gain, gap


# ------------------------------------------------------------------------------ indices
def kl_ucb(p, v, delta):
    """sup{q.v : KL(p||q) <= delta} via the 1-D dual in eta > max v, solved by brentq."""
    mu = float(p @ v)
    V = float(v.max())
    span = V - float(v.min())
    if delta <= 0 or span == 0:
        return mu
    w = (V - v) / span  # >= 0, zero at the maximisers; the problem is affine invariant

    def h(s):  # eta = V + s * span; h decreases from +inf (s -> 0) to 0 (s -> inf)
        d = s + w
        return float(p @ np.log(d) + math.log(p @ (1.0 / d))) - delta

    lo, hi = 1e-3, 1.0
    while h(hi) > 0:
        hi *= 4.0
    while h(lo) < 0 and lo > 1e-300:
        lo *= 1e-3
    if h(lo) < 0:  # mass of the maximisers ~1: the bound is V
        return V
    s = brentq(h, lo, hi, xtol=1e-14, rtol=1e-12)
    d = s + w
    c = 1.0 / float(p @ (1.0 / d))
    return V + span * (s - c)


def kinf(p, v, rho):
    """inf{KL(p||q) : q.v >= rho} via Theorem 4's equation in lambda, solved by brentq."""
    mu = float(p @ v)
    V = float(v.max())
    if rho <= mu:
        return 0.0
    if rho >= V:
        return math.inf
    a = rho - v

    def g(lam):
        return float(p @ (a / (1.0 + lam * a)))

    hi = 1.0 / (V - rho)
    lam = brentq(g, 0.0, hi * (1.0 - 1e-12), xtol=1e-15 * hi, rtol=1e-12)
    return float(p @ np.log1p(lam * a))


def l1_ucb(p, v, d):
    """sup{q.v : ||q - p||_1 <= d}: move min(d/2, 1 - p_best) from the lowest-v states."""
    q = p.copy()
    best = int(np.argmax(v))
    move = min(d / 2.0, 1.0 - p[best])
    q[best] += move
    for y in np.argsort(v, kind="stable"):
        if move <= 0:
            break
        if y == best:
            continue
        take = min(q[y], move)
        q[y] -= take
        move -= take
    return float(q @ v)


# ------------------------------------------------------------------------------- agents
def select_action(agent, rng, t, x, counts, p_hat, R, mask, bias):
    """One decision of ``agent`` at round ``t`` in state ``x`` (conventions as jaxmdp's)."""
    n = counts[x].sum(axis=1)
    actions = [a for a in range(R.shape[1]) if mask[x, a]]
    untried = [a for a in actions if n[a] == 0]
    if untried:
        return untried[0]
    log_t = math.log(t)
    if agent == "dmed":
        values = {a: R[x, a] + p_hat[x, a] @ bias for a in actions}
        best = max(actions, key=lambda a: (values[a], -a))
        challenger, top = None, -math.inf
        for a in actions:
            if a == best:
                continue
            K = kinf(p_hat[x, a], bias, values[best] - R[x, a])
            rate = log_t / K if K > 0 else (math.inf if log_t > 0 else 0.0)
            D = rate - n[a]
            if D > top:
                challenger, top = a, D
        return challenger if top > 0 else best
    index = {}
    for a in actions:
        if agent == "ucb":
            index[a] = R[x, a] + kl_ucb(p_hat[x, a], bias, log_t / n[a])
        elif agent == "olp":
            index[a] = R[x, a] + l1_ucb(p_hat[x, a], bias, math.sqrt(2.0 * log_t / n[a]))
        elif agent == "ps":
            q = rng.dirichlet(counts[x, a] + 1.0)
            index[a] = R[x, a] + q @ bias
        else:
            raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    return max(actions, key=lambda a: (index[a], -a))


# --------------------------------------------------------------------------- simulation
def run_one(P, R, mask, agent, horizon, rng, initial_counts=None):
    """One replication; returns (cumulative pseudo-regret [T], cumulative regret [T], N)."""
    S, A, _ = P.shape
    gain, gap = true_gaps(P, R, mask)
    counts = np.zeros((S, A, S)) if initial_counts is None else initial_counts.astype(float)
    t = int(counts.sum()) + 1
    x = 0
    policy = None
    pseudo = np.empty(horizon)
    regret = np.empty(horizon)
    cum_pseudo = cum_regret = 0.0
    for k in range(horizon):
        n_xa = counts.sum(axis=2)
        p_hat = (counts + 1.0) / (n_xa[:, :, None] + S)
        n_x = np.where(mask, n_xa, 0).sum(axis=1)
        log_nx = np.log(np.maximum(n_x, 1.0))
        good = mask & (n_xa >= (log_nx ** 2)[:, None])
        good = np.where(good.any(axis=1, keepdims=True), good, mask)
        _, bias, policy = policy_iteration(p_hat, R, good, policy)
        a = select_action(agent, rng, t, x, counts, p_hat, R, mask, bias)
        y = rng.choice(S, p=P[x, a])
        counts[x, a, y] += 1
        cum_pseudo += gap[x, a]
        cum_regret += gain - R[x, a]
        pseudo[k] = cum_pseudo
        regret[k] = cum_regret
        x = y
        t += 1
    return pseudo, regret, counts


def run(P, R, mask, agent, horizon, replications, seed, initial_counts=None):
    """``replications`` independent runs (``numpy.random.SeedSequence(seed).spawn``).

    Returns:
        dict with ``pseudo_regret`` and ``regret`` ``[replications, horizon]``, ``counts``
        ``[replications, S, A, S]`` and ``seconds`` (wall time of the loop).
    """
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    seeds = np.random.SeedSequence(seed).spawn(replications)
    start = time.perf_counter()
    out = [run_one(P, R, mask, agent, horizon, np.random.default_rng(s), initial_counts)
           for s in seeds]
    seconds = time.perf_counter() - start
    return {
        "pseudo_regret": np.stack([o[0] for o in out]),
        "regret": np.stack([o[1] for o in out]),
        "counts": np.stack([o[2] for o in out]),
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, nargs="+", default=list(AGENTS))
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rigged", action="store_true", help="start from the rigged counts")
    args = parser.parse_args()
    mask = np.ones(PAPER_R.shape, dtype=bool)
    init = RIGGED_COUNTS if args.rigged else None
    for agent in args.agent:
        out = run(PAPER_P, PAPER_R, mask, agent, args.horizon, args.replications, args.seed,
                  init)
        final = out["pseudo_regret"][:, -1]
        se = final.std(ddof=1) / math.sqrt(len(final))
        us = out["seconds"] / (args.horizon * args.replications) * 1e6
        print(f"{agent:5s} T={args.horizon} R={args.replications} seed={args.seed} "
              f"mean pseudo-regret {final.mean():.4f} se {se:.4f} sd {final.std(ddof=1):.4f}"
              f"  ({us:.1f} us/replication-step)", flush=True)


if __name__ == "__main__":
    main()
