"""The KL and L1 indices of the reference loops, by SciPy's scalar solvers.

* :func:`kl_ucb`: ``sup{q.v : KL(p||q) <= delta}`` by its 1-D dual (``brentq``);
* :func:`kinf`: ``inf{KL(p||q) : q.v >= rho}`` by Theorem 4's equation (``brentq``);
* :func:`l1_ucb`: ``sup{q.v : ||q - p||_1 <= d}`` by moving mass to the best state;
* :func:`joint_law`: the law of (reward in {0, 1}, next state) of a bounded-reward model;
* :func:`gaussian_kl_ucb` and :func:`gaussian_kinf`: the same with a Gaussian reward of
  known standard deviation (bounded Brent over the split of the budget).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar


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

    if g(0.0) <= 0:  # rho = p.v up to rounding (p.v and p.(rho - v) round differently)
        return 0.0
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


def joint_law(p, v, r):
    """Bounded-reward model: the law of (reward in {0, 1}, next state) and its values.

    Returns (concat((1 - r) p, r p), concat(v, 1 + v)), so that the mean is r + p.v.
    """
    return np.concatenate(((1.0 - r) * p, r * p)), np.concatenate((v, 1.0 + v))


def gaussian_kl_ucb(p, v, r, sigma, delta):
    """sup{mu + q.v : KL(p||q) + (mu - r)^2 / (2 sigma^2) <= delta}.

    = r + max over 0 <= d1 <= delta of kl_ucb(p, v, d1) + sigma sqrt(2 (delta - d1)), a
    concave 1-D problem: bounded Brent (``minimize_scalar``), then both end points.
    """
    if delta <= 0:
        return float(r + p @ v)

    def neg(d1):
        return -(kl_ucb(p, v, d1) + sigma * math.sqrt(2.0 * max(delta - d1, 0.0)))

    res = minimize_scalar(neg, bounds=(0.0, delta), method="bounded",
                          options={"xatol": 1e-12 * delta, "maxiter": 500})
    return float(r - min(res.fun, neg(0.0), neg(delta)))


def gaussian_kinf(p, v, r, sigma, target):
    """min over mu of (mu - r)^2 / (2 sigma^2) + kinf(p, v, target - mu).

    Written in rho = target - mu, over [p.v, min(V, target - r)] where the convex
    objective can attain its minimum (rho < p.v only raises the quadratic; rho > V is
    infeasible); at rho = V, kinf is its limit -ln p(argmax v). Bounded Brent, then both
    end points.
    """
    mu_p = float(p @ v)
    V = float(v.max())
    if r + mu_p >= target:
        return 0.0
    p_top = float(p[v == V].sum())

    def f(rho):
        quad = (target - rho - r) ** 2 / (2.0 * sigma ** 2)
        return quad + (kinf(p, v, rho) if rho < V else -math.log(p_top))

    hi = min(V, target - r)
    if hi <= mu_p:  # v constant: only the reward can move
        return f(mu_p)
    res = minimize_scalar(f, bounds=(mu_p, hi), method="bounded",
                          options={"xatol": 1e-12 * (hi - mu_p), "maxiter": 500})
    return float(min(res.fun, f(mu_p), f(hi)))
