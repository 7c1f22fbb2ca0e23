"""UCRL2 and KL-UCRL as a researcher writes them by hand: a tight per-step Python loop,
extended value iteration in NumPy only at episode starts.

The step loop keeps every per-step quantity in plain Python ints and floats (flat lists
indexed by ``x * A + a``: total visits, visits within the episode, ``N_k``, transition
counts, reward sums, the policy), draws the next state by ``bisect`` on a precomputed
cumulative row with uniforms drawn in blocks of 2^16, and does no NumPy work at all
between episode starts. At an episode start it builds ``p_hat``, ``r_tilde`` and the radii
as arrays and runs extended value iteration in NumPy:

* UCRL2 (Jaksch, Ortner & Auer 2010, Figure 1 and Figure 2): reward radius
  ``sqrt(7 ln(2 S A t_k / delta) / (2 n))``, ``r_tilde = min(1, r_hat + radius)``, L1
  radius ``sqrt(14 S ln(2 A t_k / delta) / n)``, ``n = max(1, N_k)``; the inner maximum
  by Figure 2 for all pairs at once (one sort of ``u`` per sweep).
* KL-UCRL (Filippi, Cappé & Garivier 2010): KL radius ``C_P / n``, reward
  ``r_hat + sqrt(C_R / n)`` with ``B = ln(2 e S^2 A ln T / delta)``,
  ``C_P = S (B + ln(B + 1/ln T)(1 + 1/(B + 1/ln T)))``,
  ``C_R = ln(4 S A ln T / delta) / 1.99``, ``T = max(2, t_k)``; the inner maximum
  ``sup {q.u : KL(p_hat || q) <= d}`` by its 1-D dual (Filippi et al. section 3.2):
  ``nu = max u + s`` with ``sum_Z p ln(nu - u) + ln sum_Z p / (nu - u) = d`` on the
  support ``Z`` of ``p_hat``, or ``nu = max u`` with mass ``r = 1 - exp(h - d)`` on the
  maximisers of ``u`` outside ``Z``; solved for all pairs at once by bisection in
  ``ln s`` (NumPy, 80 halvings).

An untried pair (``N_k = 0``) has the whole simplex as its ball in both agents (value
``max u``), as in ``jaxmdp.agents.ucrl``. EVI starts from ``u = 0``, stops at span
``< 1/sqrt(t_k)`` (or ``1/t_k`` with ``--epsilon-rule t``) and breaks ties to the lowest
action index. The episode ends when the visits of ``(s_t, pi(s_t))`` in the episode reach
``max(1, N_k(s_t, pi(s_t)))``. Rewards are learned (``sum r / max(1, n)``).

It shares no code with ``jaxmdp``; only the environment arrays (P, R, mask) are loaded
from ``jaxmdp.envs`` once at startup. Run, for example::

    python benchmarks/numpy_ucrl.py --agent ucrl2 kl_ucrl --env riverswim-6 \\
        --horizon 3000 --replications 64

to print the mean pseudo-regret at the horizon with its standard error and the
microseconds per step.
"""

from __future__ import annotations

import argparse
import bisect
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numpy_reference import true_gaps  # noqa: E402

AGENTS = ("ucrl2", "kl_ucrl")
BLOCK = 1 << 16


def load_env(name):
    """(P, R, mask, reward_law) of a named jaxmdp environment, as float64 NumPy arrays."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import jaxmdp as jm

    mdp = jm.envs.make(name)
    return (np.asarray(mdp.P, np.float64), np.asarray(mdp.R, np.float64),
            np.asarray(mdp.mask, bool), mdp.reward_law)


# ------------------------------------------------------------------------- inner maxima
def l1_inner(p_hat, u, radius):
    """max {q.u : ||q - p_hat[i]||_1 <= radius[i]} for all rows (Jaksch et al. Fig. 2)."""
    order = np.argsort(u, kind="stable")
    us = u[order]
    ps = p_hat[:, order]
    below = np.concatenate([np.zeros((ps.shape[0], 1)), np.cumsum(ps[:, :-1], axis=1)], 1)
    removed = np.clip(radius[:, None] / 2 - below, 0.0, ps)
    removed[:, -1] = 0.0
    return p_hat @ u + removed @ (us[-1] - us)


def kl_inner(p_hat, u, radius, iterations=80):
    """max {q.u : KL(p_hat[i] || q) <= radius[i]} for all rows (Filippi et al. 3.2)."""
    V = u.max()
    d = V - u  # >= 0, shared by every row
    support = p_hat > 0
    p = p_hat
    rows = p.shape[0]
    values = np.full(rows, V)
    # Rows whose ball is the whole simplex (untried pairs) or whose u is constant on
    # the support with the maximum inside it keep value V.
    at_max = support & (d == 0)
    flat = np.all(~support | (d == 0), axis=1)
    active = np.isfinite(radius) & ~flat
    if not active.any():
        return values
    p, d_s, rad = p[active], np.where(support[active], d, 1.0), radius[active]
    sup = support[active]

    def h(s):  # s: [rows]; sum_Z p ln(s + d) + ln sum_Z p / (s + d)
        z = s[:, None] + d_s
        return (np.where(sup, p * np.log(z), 0.0).sum(1)
                + np.log(np.where(sup, p / z, 0.0).sum(1)))

    inside = at_max[active].any(axis=1)  # h -> +inf as s -> 0
    with np.errstate(divide="ignore", invalid="ignore"):
        h0 = np.where(inside, np.inf, h(np.zeros(len(p))))
    boundary = h0 <= rad  # nu = V, mass r on the maximisers outside the support
    scale = max(float(d.max()), 1e-300)
    lo = np.full(len(p), math.log(scale * 1e-12))
    hi = np.full(len(p), math.log(scale * 1e12))
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        above = h(np.exp(mid)) > rad  # h decreases in s: the root is above mid
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    s = np.where(boundary, 0.0, np.exp(0.5 * (lo + hi)))
    with np.errstate(divide="ignore"):
        r = np.where(boundary, 1.0 - np.exp(np.minimum(h0 - rad, 0.0)), 0.0)
    z = s[:, None] + d_s
    w = np.where(sup, p / z, 0.0)
    q = (1.0 - r)[:, None] * w / w.sum(1, keepdims=True)
    out = q @ u + r * V
    values[active] = out
    return values


def evi(p_hat, r_tilde, radius, mask, epsilon, inner, max_steps=10_000):
    """Extended value iteration from u = 0; returns (policy, sweeps, converged)."""
    S, A = r_tilde.shape
    u = np.zeros(S)
    p2 = p_hat.reshape(S * A, S)
    rad = radius.reshape(S * A)
    for step in range(1, max_steps + 1):
        q = np.where(mask, r_tilde + inner(p2, u, rad).reshape(S, A), -np.inf)
        u_next = q.max(axis=1)
        diff = u_next - u
        if diff.max() - diff.min() < epsilon:
            return np.argmax(q, axis=1), step, True
        u = u_next - u_next.min()
    return np.argmax(q, axis=1), max_steps, False


def kl_constants(S, A, t, delta):
    log_t = math.log(max(t, 2.0))
    B = math.log(2 * math.e * S * S * A * log_t / delta)
    c = B + 1.0 / log_t
    return S * (B + math.log(c) * (1.0 + 1.0 / c)), math.log(4 * S * A * log_t / delta) / 1.99


def plan(agent, counts, visits, reward_sums, t, S, A, mask, delta, epsilon_rule):
    """The policy of an episode starting at round t (lists in, NumPy inside, list out)."""
    N = np.array(counts, dtype=np.float64).reshape(S, A, S)
    n_raw = np.array(visits, dtype=np.float64).reshape(S, A)
    tried = n_raw > 0
    n = np.maximum(n_raw, 1.0)
    p_hat = np.where(tried[..., None], N / n[..., None], 1.0 / S)
    r_hat = np.array(reward_sums).reshape(S, A) / n
    if agent == "ucrl2":
        radius = np.sqrt(14.0 * S * math.log(2.0 * A * t / delta) / n)
        r_tilde = np.minimum(1.0, r_hat + np.sqrt(7.0 * math.log(2.0 * S * A * t / delta)
                                                  / (2.0 * n)))
        inner = l1_inner
    else:
        C_P, C_R = kl_constants(S, A, t, delta)
        radius = np.where(tried, C_P / n, np.inf)
        r_tilde = r_hat + np.sqrt(C_R / n)
        inner = kl_inner
    epsilon = 1.0 / (math.sqrt(t) if epsilon_rule == "sqrt" else t)
    policy, sweeps, _ = evi(p_hat, r_tilde, radius, mask, epsilon, inner)
    return policy.tolist(), sweeps


def run_one(P, R, mask, agent, horizon, rng, *, delta=0.05, epsilon_rule="sqrt",
            reward_law="deterministic", gaps=None):
    """One replication from state 0; returns (pseudo-regret at the horizon, episodes,
    seconds in the loop)."""
    S, A, _ = P.shape
    if gaps is None:
        _, gaps = true_gaps(P, R, mask)
    cdf = [list(np.cumsum(P[x, a])) for x in range(S) for a in range(A)]
    for row in cdf:
        row[-1] = 2.0  # never past the last state
    mean = R.reshape(-1).tolist()
    gap = gaps.reshape(-1).tolist()
    bernoulli = reward_law == "bernoulli"
    SA = S * A
    counts = [0] * (SA * S)
    visits = [0] * SA
    episode_visits = [0] * SA
    nu = [0] * SA
    reward_sums = [0.0] * SA
    policy = [0] * S
    regret = 0.0
    episodes = 0
    x = 0
    start = time.perf_counter()
    uniforms = rng.random(BLOCK).tolist()
    rewards_u = rng.random(BLOCK).tolist() if bernoulli else None
    i = 0
    for t in range(1, horizon + 1):
        a = policy[x]
        k = x * A + a
        if t == 1 or nu[k] >= (episode_visits[k] or 1):
            policy, _ = plan(agent, counts, visits, reward_sums, t, S, A, mask, delta,
                             epsilon_rule)
            episode_visits = visits[:]
            nu = [0] * SA
            episodes += 1
            a = policy[x]
            k = x * A + a
        if i == BLOCK:
            uniforms = rng.random(BLOCK).tolist()
            if bernoulli:
                rewards_u = rng.random(BLOCK).tolist()
            i = 0
        y = bisect.bisect_right(cdf[k], uniforms[i])
        reward = (1.0 if rewards_u[i] < mean[k] else 0.0) if bernoulli else mean[k]
        i += 1
        counts[k * S + y] += 1
        visits[k] += 1
        nu[k] += 1
        reward_sums[k] += reward
        regret += gap[k]
        x = y
    return regret, episodes, time.perf_counter() - start


def run(P, R, mask, agent, horizon, replications, seed, *, delta=0.05, epsilon_rule="sqrt",
        reward_law="deterministic"):
    """``replications`` runs (``numpy.random.SeedSequence(seed).spawn``): dict of
    ``pseudo_regret`` and ``episodes`` ``[replications]`` and ``seconds`` (loop time)."""
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    if np.any((R < 0) | (R > 1)):
        raise ValueError("learned rewards need R in [0, 1]")
    _, gaps = true_gaps(P, R, mask)
    out = [run_one(P, R, mask, agent, horizon, np.random.default_rng(s), delta=delta,
                   epsilon_rule=epsilon_rule, reward_law=reward_law, gaps=gaps)
           for s in np.random.SeedSequence(seed).spawn(replications)]
    return {"pseudo_regret": np.array([o[0] for o in out]),
            "episodes": np.array([o[1] for o in out]),
            "seconds": sum(o[2] for o in out)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, nargs="+", default=list(AGENTS))
    parser.add_argument("--env", default="riverswim-6", help="a jaxmdp.envs name")
    parser.add_argument("--horizon", type=int, default=3000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--epsilon-rule", choices=("sqrt", "t"), default="sqrt")
    args = parser.parse_args(argv)
    P, R, mask, law = load_env(args.env)
    import _calibration

    print(_calibration.calibration_line(), flush=True)
    print(f"env={args.env} rewards={law} (learned) delta={args.delta} "
          f"epsilon_rule={args.epsilon_rule}", flush=True)
    for agent in args.agent:
        out = run(P, R, mask, agent, args.horizon, args.replications, args.seed,
                  delta=args.delta, epsilon_rule=args.epsilon_rule, reward_law=law)
        final = out["pseudo_regret"]
        se = final.std(ddof=1) / math.sqrt(len(final))
        us = out["seconds"] / (args.horizon * args.replications) * 1e6
        print(f"{agent:7s} T={args.horizon} R={args.replications} seed={args.seed} "
              f"mean pseudo-regret {final.mean():.4f} se {se:.4f} "
              f"episodes {out['episodes'].mean():.1f}  ({us:.2f} us/step)", flush=True)


if __name__ == "__main__":
    main()
