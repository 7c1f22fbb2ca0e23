"""UCRL2 and KL-UCRL as a researcher writes them by hand: one tight per-step Python loop,
extended value iteration in NumPy only at episode starts, under jaxmdp's rules or under
those of the published StatisticalRL code.

The step loop keeps every per-step quantity in plain Python ints and floats (flat lists
indexed by ``x * A + a``: total visits, visits within the episode, ``N_k``, transition
counts, reward sums, the policy), draws the next state by ``bisect`` on a precomputed
cumulative row and does no NumPy work at all between episode starts. The episode ends
when the visits of ``(s_t, a_t)`` in the episode reach ``max(1, N_k(s_t, a_t))``; the
first starts at round 1. Rewards are learned (``sum r / max(1, n)``).

**jaxmdp's rules** (``rules="jaxmdp"``, the default; :mod:`jaxmdp.agents.ucrl`'s
defaults). At an episode start the loop builds ``p_hat``, ``r_tilde`` and the radii as
arrays and runs extended value iteration (:func:`evi`) from ``u = 0``, stopped at span
``< 1/sqrt(t_k)`` (or ``1/t_k`` with ``epsilon_rule="t"``), ties to the lowest action
index; uniforms are drawn in blocks of 2^16:

* UCRL2 (Jaksch, Ortner & Auer 2010, Figure 1 and Figure 2): reward radius
  ``sqrt(7 ln(2 S A t_k / delta) / (2 n))``, ``r_tilde = min(1, r_hat + radius)``, L1
  radius ``sqrt(14 S ln(2 A t_k / delta) / n)``, ``n = max(1, N_k)``; the inner maximum
  by Figure 2 for all pairs at once (:func:`l1_inner`, one sort of ``u`` per sweep).
* KL-UCRL (Filippi, Cappé & Garivier 2010): KL radius ``C_P / n``, reward
  ``r_hat + sqrt(C_R / n)`` with ``B = ln(2 e S^2 A ln T / delta)``,
  ``C_P = S (B + ln(B + 1/ln T)(1 + 1/(B + 1/ln T)))``,
  ``C_R = ln(4 S A ln T / delta) / 1.99``, ``T = max(2, t_k)``; the inner maximum
  ``sup {q.u : KL(p_hat || q) <= d}`` by its 1-D dual (Filippi et al. section 3.2):
  ``nu = max u + s`` with ``sum_Z p ln(nu - u) + ln sum_Z p / (nu - u) = d`` on the
  support ``Z`` of ``p_hat``, or ``nu = max u`` with mass ``r = 1 - exp(h - d)`` on the
  maximisers of ``u`` outside ``Z``; solved for all pairs at once by bisection in
  ``ln s`` (:func:`kl_inner_rows`, NumPy, 80 halvings).

An untried pair (``N_k = 0``) has the whole simplex as its ball in both agents (value
``max u``), as in ``jaxmdp.agents.ucrl``.

**The published rules** (``rules="statisticalrl"``: StatisticalRL's ``UCRL2.py`` and
``KLUCRL.py``, written down in ``docs/guide/published.md``). Extended value iteration as
published (:func:`published_evi`): warm-started from the last episode's values, stopped
when ``span(|u1 - u0|) < 1/t`` (KL-UCRL: ``span(u1 - u0)``, ``KLUCRL.py`` line 198) or
after 1000 sweeps, and a stochastic policy: every exact maximiser of a state, the least
visited of them, one drawn at random at every round (:func:`tied_policy`,
:func:`sample_tied`). ``p_hat = N / max(1, n)`` (zeros for an untried pair); UCRL2's inner
maximisation pair by pair (:func:`l1_inner_published`, ``UCRL2.py`` lines 62-74) and its
radii (lines 53-59), KL-UCRL's constants (``KLUCRL.py`` lines 57-64), unclipped reward
``r_hat + C_R / sqrt(n)`` (line 189), ``p_hat`` itself while every value is below
``1e-6`` and otherwise :func:`kl_inner` (``KLUCRL.MaxKL``, ``nu`` exact, or with
``search_up_bug=True`` as line 128 computes it). The random draws are made round by
round in the published driver's order: the tie, the next state, the reward. Where the
loop departs from the published code on purpose, a comment starting with ``DEPARTS``
says so.

It shares no code with ``jaxmdp``; only the command line loads the environment arrays
(P, R, mask) from ``jaxmdp.envs``. Run, for example (from the repository root)::

    python -m tests.reference.ucrl --agent ucrl2 kl_ucrl --env riverswim-6 \\
        --horizon 3000 --replications 64

to print the mean pseudo-regret at the horizon with its standard error and the
microseconds per step.
"""

from __future__ import annotations

import argparse
import bisect
import math
import time

import numpy as np
from scipy.optimize import brentq

from tests.reference.mdp import load_env, true_gaps

AGENTS = ("ucrl2", "kl_ucrl")
RULES = ("jaxmdp", "statisticalrl")
BLOCK = 1 << 16


# ------------------------------------------------------------- jaxmdp's inner maxima
def l1_inner(p_hat, u, radius):
    """max {q.u : ||q - p_hat[i]||_1 <= radius[i]} for all rows (Jaksch et al. Fig. 2)."""
    order = np.argsort(u, kind="stable")
    us = u[order]
    ps = p_hat[:, order]
    below = np.concatenate([np.zeros((ps.shape[0], 1)), np.cumsum(ps[:, :-1], axis=1)], 1)
    removed = np.clip(radius[:, None] / 2 - below, 0.0, ps)
    removed[:, -1] = 0.0
    return p_hat @ u + removed @ (us[-1] - us)


def kl_inner_rows(p_hat, u, radius, iterations=80):
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
    """jaxmdp's policy of an episode starting at round t (lists in, NumPy inside, list
    out) and the sweeps of its EVI."""
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
        inner = kl_inner_rows
    epsilon = 1.0 / (math.sqrt(t) if epsilon_rule == "sqrt" else t)
    policy, sweeps, _ = evi(p_hat, r_tilde, radius, mask, epsilon, inner)
    return policy.tolist(), sweeps


# ----------------------------------------------------------------- the published rules
def choose(rng, values, counts=None, *, least=True):
    """Uniform among the exact maximisers of ``values``; among them, if ``counts`` is
    given, uniform among the least (``least=True``) or most visited."""
    values = np.asarray(values)
    idx = np.flatnonzero(values == values.max())
    if counts is not None and len(idx) > 1:
        c = np.asarray(counts)[idx]
        idx = idx[c == (c.min() if least else c.max())]
    return idx


def tied_policy(q, counts, *, least=True):
    """Per state, the list of actions the published EVI keeps: the exact maximisers of
    ``q[s]``, then the least (or most) visited of them (``UCRL2.py`` lines 92-96)."""
    return [list(choose(None, q[s], counts[s], least=least)) for s in range(q.shape[0])]


def sample_tied(rng, choices):
    """The published ``categorical_sample`` of a uniform policy over ``choices``."""
    return int(choices[0]) if len(choices) == 1 else int(rng.choice(choices))


def published_evi(u, r_opt, inner, eps, visits, *, max_iter=1000, absolute=True,
                  least=True):
    """Extended value iteration as in ``UCRL2.py`` lines 77-109: ``u0`` = the last
    values ``u`` minus their minimum, ``q[s, a] = r_opt[s, a] + inner(s, a, u0, order) .
    u0`` with ``order`` the states sorted by ``u0``, stop when ``span(|u1 - u0|) < eps``
    (``absolute=False``: ``span(u1 - u0)``) or after ``max_iter + 1`` sweeps.

    Returns:
        ``(u1 - min u1, choices)``: the values the next episode starts from and, per
        state, the exact maximisers of ``q``, the least (``least=True``) or most visited
        of them by ``visits`` (:func:`tied_policy`).
    """
    S, A = r_opt.shape
    u0 = u - u.min()
    it = 0
    while True:
        order = np.argsort(u0, kind="stable")  # DEPARTS: published first sweep = arange
        q = np.empty((S, A))
        for s in range(S):
            for a in range(A):
                q[s, a] = r_opt[s, a] + inner(s, a, u0, order) @ u0
        u1 = q.max(axis=1)
        diff = np.abs(u1 - u0) if absolute else u1 - u0
        it += 1
        if diff.max() - diff.min() < eps or it > max_iter:
            return u1 - u1.min(), tied_policy(q, visits, least=least)
        u0 = u1 - u1.min()


def l1_inner_published(p, u, radius, order):
    """The maximiser of ``q . u`` over ``||q - p||_1 <= radius`` as ``UCRL2.py`` lines
    62-74 compute it: all the mass on the best state if ``p[best] + radius / 2 >= 1``,
    else ``radius / 2`` added to it and mass removed from the lowest values."""
    best = order[-1]
    if min(1.0, p[best] + radius / 2) == 1.0:
        q = np.zeros(len(p))
        q[best] = 1.0
        return q
    q = p.copy()
    q[best] += radius / 2
    i = 0
    while q.sum() > 1:
        q[order[i]] = max(0.0, 1 - q.sum() + q[order[i]])
        i += 1
    return q


def kl_f(nu, p, v, support):
    """Filippi et al.'s ``f(nu) = sum p log(nu - v) + log sum p / (nu - v)`` over the
    support (``KLUCRL.py`` lines 67-77); decreasing in ``nu > max_support v``."""
    d = nu - v[support]
    if np.any(d == 0):  # line 71-72: the published guard returns -10^10
        return -1e10
    w = p[support]
    s2 = float(w @ (1.0 / d))
    return float(w @ np.log(d)) + math.log(s2)


def kl_inner(p, u, radius, *, tau=1e-8, search_up_bug=False):
    """Filippi et al.'s maximiser of ``q . u`` over ``KL(p || q) <= radius``, as
    ``KLUCRL.MaxKL`` (lines 94-172) with ``nu`` solved exactly (or, with
    ``search_up_bug``, as line 128 does: ``nu = max_{Z_} u + 10^7``)."""
    S = len(p)
    q = np.zeros(S)
    maxv = u.max()
    support = np.flatnonzero(p > tau)
    outside = p <= tau
    top = np.flatnonzero((u == maxv) & outside)
    if len(top) and maxv > 0:
        f_top = -1e10 if len(support) == 0 else kl_f(maxv, p, u, support)
        if f_top < radius:
            r = 1 - math.exp(f_top - radius)
            q[top] = r / len(top)
            nu = maxv
        else:
            r, nu = 0.0, None
    else:
        r, nu = 0.0, None
    if nu is None:
        vz = u[support].max()
        if search_up_bug:
            nu = vz + 1e7
        else:
            g = lambda x: kl_f(vz + x, p, u, support) - radius  # noqa: E731
            hi = 1.0
            while g(hi) > 0:
                hi *= 2.0
            lo = 1e-12
            nu = vz + (brentq(g, lo, hi, xtol=1e-14, rtol=1e-12) if g(lo) > 0 else lo)
    qt = np.zeros(S)
    for i in support:
        qt[i] = p[i] * 1e10 if abs(nu - u[i]) < 1e-5 else p[i] / (nu - u[i])
    q[support] = (1 - r) * qt[support] / qt.sum()
    return q


def plan_published(agent, counts, visits, reward_sums, t, S, A, delta, u, search_up_bug):
    """The published policy of an episode starting at round t: ``(u, choices)`` of
    :func:`published_evi`, warm-started from ``u``."""
    N = np.array(counts, dtype=np.float64).reshape(S, A, S)
    Nk = np.array(visits, dtype=np.float64).reshape(S, A)
    rsum = np.array(reward_sums).reshape(S, A)
    n = np.maximum(1, Nk)
    p_hat = N / n[..., None]
    if agent == "ucrl2":  # UCRL2.py lines 53-59 and 89
        d_r = np.sqrt(7 * np.log(2 * S * A * t / delta) / (2 * n))
        d_p = np.sqrt(14 * S * np.log(2 * A * t / delta) / n)
        r_opt = np.minimum(1.0, rsum / n + d_r)
        return published_evi(
            u, r_opt, lambda s, a, u0, order: l1_inner_published(p_hat[s, a], u0,
                                                                 d_p[s, a], order),
            1.0 / max(1, t), Nk)
    lt = math.log(max(2, t))  # KLUCRL.py lines 57-64 and 189
    B = math.log(2 * math.e * S**2 * A * lt / delta)
    Cp = S * (B + math.log(B + 1 / lt) * (1 + 1 / (B + 1 / lt)))
    Cr = math.sqrt(math.log(4 * S * A * lt / delta) / 1.99)
    radius = Cp / n

    def inner(s, a, u0, order):
        if not np.any(u0 >= 1e-6):
            return p_hat[s, a]
        return kl_inner(p_hat[s, a], u0, radius[s, a], search_up_bug=search_up_bug)

    return published_evi(u, rsum / n + Cr / np.sqrt(n), inner, 1.0 / max(1, t), Nk,
                         absolute=False)


# ------------------------------------------------------------------------------ the loop
def run_one(P, R, mask, agent, horizon, rng, *, rules="jaxmdp", delta=0.05,
            epsilon_rule="sqrt", search_up_bug=False, reward_law="deterministic",
            gain_gap=None):
    """One replication from state 0; returns (pseudo-regret at the horizon, realised
    regret at the horizon, episodes, seconds in the loop).

    ``rules``: ``"jaxmdp"`` or ``"statisticalrl"`` (module docstring); ``epsilon_rule``
    (``"sqrt"`` or ``"t"``) is jaxmdp's option, ``search_up_bug`` the published
    KL-UCRL's. ``gain_gap``: the true MDP's ``(gain, gaps)`` (default: computed).
    """
    S, A, _ = P.shape
    published = rules == "statisticalrl"
    gain, gaps = true_gaps(P, R, mask) if gain_gap is None else gain_gap
    cdf = [list(np.cumsum(P[x, a])) for x in range(S) for a in range(A)]
    for row in cdf:
        row[-1] = 2.0  # never past the last state
    mean = R.reshape(-1).tolist()
    gap = gaps.reshape(-1).tolist()
    bernoulli = reward_law == "bernoulli"
    block = 1 if published else BLOCK  # the published driver draws round by round
    SA = S * A
    counts = [0] * (SA * S)
    visits = [0] * SA
    nu = [0] * SA
    reward_sums = [0.0] * SA
    u = np.zeros(S)

    def new_policy(t, u):
        """``(policy, choices, u)``: jaxmdp's deterministic policy, or the published
        tied actions per state and the values EVI starts from next time."""
        if published:
            u, choices = plan_published(agent, counts, visits, reward_sums, t, S, A,
                                        delta, u, search_up_bug)
            return None, choices, u
        return plan(agent, counts, visits, reward_sums, t, S, A, mask, delta,
                    epsilon_rule)[0], None, u

    regret = 0.0
    x = 0
    start = time.perf_counter()
    policy, choices, u = new_policy(1, u)
    episode_visits = visits[:]
    episodes = 1
    i = block  # uniforms are drawn after the round's action
    for t in range(1, horizon + 1):
        a = policy[x] if choices is None else sample_tied(rng, choices[x])
        k = x * A + a
        if nu[k] >= (episode_visits[k] or 1):
            policy, choices, u = new_policy(t, u)
            episode_visits = visits[:]
            nu = [0] * SA
            episodes += 1
            a = policy[x] if choices is None else sample_tied(rng, choices[x])
            k = x * A + a
        if i == block:
            uniforms = rng.random(block).tolist()
            if bernoulli:
                rewards_u = rng.random(block).tolist()
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
    seconds = time.perf_counter() - start
    return regret, horizon * gain - sum(reward_sums), episodes, seconds


def run(P, R, mask, agent, horizon, replications, seed, *, rules="jaxmdp", delta=0.05,
        epsilon_rule="sqrt", search_up_bug=False, reward_law="deterministic"):
    """``replications`` runs (``numpy.random.SeedSequence(seed).spawn``): dict of
    ``pseudo_regret``, ``regret`` (realised) and ``episodes`` ``[replications]`` and
    ``seconds`` (loop time). The published rules need every action admissible."""
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, got {rules!r}")
    if rules == "statisticalrl" and not np.all(mask):
        raise ValueError(f"the published rules play every action: mask must be all True, "
                         f"got {int(np.sum(~np.asarray(mask)))} masked pairs")
    if np.any((R < 0) | (R > 1)):
        raise ValueError("learned rewards need R in [0, 1]")
    gain_gap = true_gaps(P, R, mask)
    out = [run_one(P, R, mask, agent, horizon, np.random.default_rng(s), rules=rules,
                   delta=delta, epsilon_rule=epsilon_rule, search_up_bug=search_up_bug,
                   reward_law=reward_law, gain_gap=gain_gap)
           for s in np.random.SeedSequence(seed).spawn(replications)]
    return {"pseudo_regret": np.array([o[0] for o in out]),
            "regret": np.array([o[1] for o in out]),
            "episodes": np.array([o[2] for o in out]),
            "seconds": sum(o[3] for o in out)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, nargs="+", default=list(AGENTS))
    parser.add_argument("--env", default="riverswim-6", help="a jaxmdp.envs name")
    parser.add_argument("--rules", choices=RULES, default="jaxmdp")
    parser.add_argument("--horizon", type=int, default=3000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--epsilon-rule", choices=("sqrt", "t"), default="sqrt")
    args = parser.parse_args(argv)
    P, R, mask, law = load_env(args.env)
    from benchmarks import _calibration

    print(_calibration.calibration_line(), flush=True)
    print(f"env={args.env} rewards={law} (learned) rules={args.rules} delta={args.delta} "
          f"epsilon_rule={args.epsilon_rule}", flush=True)
    for agent in args.agent:
        out = run(P, R, mask, agent, args.horizon, args.replications, args.seed,
                  rules=args.rules, delta=args.delta, epsilon_rule=args.epsilon_rule,
                  reward_law=law)
        final = out["pseudo_regret"]
        se = final.std(ddof=1) / math.sqrt(len(final))
        us = out["seconds"] / (args.horizon * args.replications) * 1e6
        print(f"{agent:7s} T={args.horizon} R={args.replications} seed={args.seed} "
              f"mean pseudo-regret {final.mean():.4f} se {se:.4f} "
              f"episodes {out['episodes'].mean():.1f}  ({us:.2f} us/step)", flush=True)


if __name__ == "__main__":
    main()
