"""Plain NumPy loops of the baselines as published: UCRL3 (and UCRL3_lazy), UCRL2B, PSRL,
optimistic Q-learning, IMED-RL with the StatisticalRL and the authors' indices (and under
jaxmdp's rules), MED-RL (StatisticalRL); UCRL2 and KL-UCRL with the StatisticalRL rules
run in the loop of :mod:`tests.reference.ucrl`, through :func:`finals` and :func:`run`.

One replication at a time, one round at a time, no jaxmdp inside the loops. Each agent
is a small class with ``reset(state)``, ``play(state) -> action`` and
``update(state, action, reward, next_state)``, the interface of the StatisticalRL
``learners`` code; :func:`run_one` drives it on an MDP given as NumPy arrays
(``P[s, a, s']``, ``R[s, a]``, rewards drawn exactly or as Bernoulli(R)) from state 0 and
returns the regret path. The rules are those written down in ``docs/guide/published.md``
(each with the file and line of the published code it follows); where a loop departs from
the published code on purpose it says so in a comment starting with ``DEPARTS``:

* UCRL3 / UCRL2B / UCRL2 / KL-UCRL: EVI sorts the states by the current values at every
  sweep (the published UCRL2 and UCRL2B use the identity order in their first sweep).
* UCRL3: the per-transition bounds are the exact roots of their scalar equations
  (``brentq``) unless ``bisection=True``, which reproduces the published 1e-4 bisection.
* KL-UCRL: ``nu`` is the exact root of ``f(nu) = C_P / n``; ``search_up_bug=True``
  reproduces the published ``search_up`` (``nu = max u + 10^7``, so ``q ~ p_hat``).
* PSRL: the sampled MDP is solved exactly (policy iteration); the published code runs
  value iteration to a span tolerance of ``1/t``.
* IMED-RL: the empirical bias is exact (policy iteration on the skeleton); the published
  code runs value iteration to a sup-norm tolerance of ``1e-3``. ``x`` is the exact
  maximiser of a concave function (``brentq`` on its derivative); the published code uses
  ``scipy.optimize.minimize_scalar(method="bounded")``.
* MED-RL: value iteration as published (sup-norm tolerance ``1e-3``, warm-started); ``x``
  as for IMED-RL.

Policy iteration is :func:`tests.reference.mdp.policy_iteration`. Regret: ``regret`` is
the realised regret ``sum_t (g* - r_t)`` (what the StatisticalRL experiment scripts
plot), ``pseudo_regret`` sums the gaps of the true MDP.

Run, for example (from the repository root),
``python -m tests.reference.published --agent ucrl3_lazy ucrl2b psrl optimistic_q
--horizon 2000 --replications 20`` (StatisticalRL's river-swim-6; ``--env NAME`` for a
``jaxmdp.envs`` environment) to print the mean final regret and pseudo-regret with their
standard errors.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from tests.reference import ucrl
from tests.reference.indices import joint_law, kinf
from tests.reference.mdp import load_env, policy_iteration, riverswim6_statisticalrl, true_gaps
from tests.reference.ucrl import kl_inner, published_evi, sample_tied, tied_policy

__all__ = ["AGENTS", "IMED_INDICES", "Episodic", "IMEDRL", "MEDRL", "OptimisticQ", "PSRL",
           "Path_", "UCRL2B", "UCRL3", "bernstein_peeling", "bisection", "elln", "finals",
           "first_crossing", "imed_index", "kl_inner", "make_agent", "run", "run_one",
           "search_down", "search_up", "subgaussian", "subgaussian_bar", "tied_policy",
           "ucrl3_q_lower", "ucrl3_q_upper", "ucrl3_r_upper"]

AGENTS = ("ucrl3", "ucrl3_lazy", "ucrl2b", "psrl", "optimistic_q", "ucrl2", "kl_ucrl",
          "imed_rl", "imed_rl_statisticalrl", "imed_rl_authors", "med_rl")
#: The agents whose published rules run in :mod:`tests.reference.ucrl`'s loop.
UCRL_LOOP = ("ucrl2", "kl_ucrl")


def bisection(f, up, down, epsilon, *, upward):
    """The published bisections (``utils.py`` lines 126-149), iteratively: halve
    ``[down, up]`` to ``epsilon``, moving the lower end up where ``f`` holds (``upward``,
    ``search_up``) or the upper end down (``search_down``); then the end moved towards
    (``up`` or ``down``) if ``f`` holds there, else the other."""
    while up - down > epsilon:
        mid = (up + down) / 2
        if bool(f(mid)) == upward:
            down = mid
        else:
            up = mid
    end, other = (up, down) if upward else (down, up)
    return end if f(end) else other


def search_up(f, up, down, epsilon=1e-4):
    """``utils.search_up`` (lines 126-136)."""
    return bisection(f, up, down, epsilon, upward=True)


def search_down(f, up, down, epsilon=1e-4):
    """``utils.search_down`` (lines 139-149)."""
    return bisection(f, up, down, epsilon, upward=False)


# ---------------------------------------------------------------- episodic base (UCRL)
class Episodic:
    """The episode machinery shared by the StatisticalRL UCRL2B, UCRL3 and PSRL classes
    (and their UCRL2 and KL-UCRL, whose loop is :mod:`tests.reference.ucrl`'s): counts
    ``Nk`` (before the episode) and ``vk`` (within it), ``t`` (1 at reset, +1 per
    update), a new episode when the sampled action has ``vk >= max(1, Nk)`` (then the
    action is re-sampled from the new policy), and a stochastic policy (a list of tied
    actions per state) re-sampled at every step."""

    least_visited_ties = True

    def __init__(self, S, A, rng, delta=0.05):
        self.S, self.A, self.rng, self.delta = S, A, rng, delta

    def reset(self, state):
        S, A = self.S, self.A
        self.t = 1
        self.Nk = np.zeros((S, A))
        self.vk = np.zeros((S, A))
        self.counts = np.zeros((S, A, S))
        self.rsum = np.zeros((S, A))
        self.rmean = np.zeros((S, A))
        self.rm2 = np.zeros((S, A))
        self.u = np.zeros(S)
        self.choices = [list(range(A)) for _ in range(S)]
        self.episodes = 0
        self.new_episode()

    def new_episode(self):
        self.Nk += self.vk
        self.vk[:] = 0
        self.episodes += 1
        self.plan()

    def play(self, state):
        a = sample_tied(self.rng, self.choices[state])
        if self.vk[state, a] >= max(1, self.Nk[state, a]):
            self.new_episode()
            a = sample_tied(self.rng, self.choices[state])
        return a

    def update(self, state, action, reward, next_state):
        self.vk[state, action] += 1
        self.counts[state, action, next_state] += 1
        self.rsum[state, action] += reward
        n = self.Nk[state, action] + self.vk[state, action]
        d = reward - self.rmean[state, action]  # Welford (UCRL3.py lines 374-378)
        self.rmean[state, action] += d / n
        self.rm2[state, action] += d * (reward - self.rmean[state, action])
        self.t += 1

    def evi(self, r_opt, inner, eps, max_iter=1000):
        """:func:`~tests.reference.ucrl.published_evi` from the last values, the policy
        its tied actions (the least or most visited, ``least_visited_ties``)."""
        self.u, self.choices = published_evi(self.u, r_opt, inner, eps, self.Nk,
                                             max_iter=max_iter,
                                             least=self.least_visited_ties)


# ----------------------------------------------------------------------------- UCRL2B
class UCRL2B(Episodic):
    """UCRL2B as in ``UCRL2B.py``: ``delta' = delta / (18 S A)`` (line 76),
    ``L = ln(max(1, N) / delta')``, transition box ``p_hat +- (2 sqrt(p_hat (1 - p_hat)
    L / n) + 6 L / n)`` clipped to [0, 1] (lines 59-67), reward ``min(1, r_hat +
    2 sqrt(var L / n) + 6 L / n)`` with the population variance (+inf when N = 0;
    lines 69-72, 140-146), inner maximisation from the lower bounds, the remaining mass
    to the highest values up to their upper bounds (lines 87-105), EVI to ``1/t`` with no
    iteration cap (lines 110-135)."""

    def __init__(self, S, A, rng, delta=0.05, c_sqrt=2.0, c_lin=6.0, delta_split=18):
        super().__init__(S, A, rng, delta)
        self.c_sqrt, self.c_lin, self.delta_split = c_sqrt, c_lin, delta_split

    def plan(self):
        S, A = self.S, self.A
        d = self.delta / (S * A * self.delta_split)
        n = np.maximum(1, self.Nk)
        L = np.log(n / d)
        p = self.counts / n[..., None]
        w = self.c_sqrt * np.sqrt(p * (1 - p) * (L / n)[..., None]) + (self.c_lin * L / n)[
            ..., None]
        self.lo = np.maximum(p - w, 0.0)
        self.hi = np.minimum(p + w, 1.0)
        var = np.where(self.Nk > 0, self.rm2 / np.maximum(self.Nk, 1), np.inf)
        with np.errstate(invalid="ignore"):
            r_opt = np.minimum(self.rmean + self.c_sqrt * np.sqrt(var * L / n)
                               + self.c_lin * L / n, 1.0)
        self.evi(r_opt, self.inner, 1.0 / max(1, self.t), max_iter=10**9)

    def inner(self, s, a, u, order):
        q = self.lo[s, a].copy()
        rest = 1.0 - q.sum()
        for idx in order[::-1]:
            if rest <= 1e-8:
                break
            add = min(rest, self.hi[s, a, idx] - q[idx])
            q[idx] += add
            rest -= add
        return q


# ------------------------------------------------------------------------------ UCRL3
def elln(n, delta, eta=1.12):
    """``UCRL3.elln`` (lines 74-80): the peeling level divided by ``n``."""
    if n <= 0:
        return np.inf
    return eta * math.log(math.log(n * eta) * math.log(n * eta * eta)
                          / (math.log(eta) ** 2 * delta)) / n


def bernstein_peeling(q, n, delta):
    """``confbound_BernoulliBernsteinPeeling`` (lines 99-103)."""
    if n == 0:
        return np.inf
    e = elln(n, delta)
    return math.sqrt(2 * q * (1 - q) * e) + e / 3


def subgaussian_bar(q, n, delta):
    """``confbound_BernoulliSubGaussianLaplace_bar`` (lines 105-116), for ``q - p_hat``."""
    if n == 0:
        return np.inf
    if q < 0.5:
        g = 0.0 if q == 0 else (0.5 - q) / math.log(1 / q - 1)
    else:
        g = q * (1 - q)
    return math.sqrt(2 * g * (1 + 1 / n) * math.log(2 * math.sqrt(n + 1) / delta) / n)


def subgaussian(q, n, delta):
    """``confbound_BernoullisubGaussianLaplace`` (lines 118-127), for ``p_hat - q``."""
    if n == 0:
        return np.inf
    g = 0.0
    if 0 < q < 1:
        g = 0.25 if q == 0.5 else (0.5 - q) / math.log(1 / q - 1)
    return math.sqrt(2 * g * (1 + 1 / n) * math.log(2 * math.sqrt(n + 1) / delta) / n)


def first_crossing(g, start, end, grid=64):
    """The end of the interval around ``start`` where ``g <= 0`` (``g(start) <= 0``),
    moving towards ``end``: the first grid cell where ``g`` turns positive, refined by
    ``brentq``; ``end`` if ``g`` stays ``<= 0``. This is the point the published
    bisection converges to when the condition holds on an interval, found to machine
    precision."""
    prev = start
    for i in range(1, grid + 1):
        x = start + (end - start) * i / grid
        if g(x) > 0:
            return brentq(g, min(prev, x), max(prev, x), xtol=1e-15, rtol=1e-13)
        prev = x
    return end


def ucrl3_q_upper(p, n, delta, bisection=False):
    """The largest ``x >= p`` with ``x - p <= min(Bernstein(x), subGaussian_bar(x))``
    (``UCRL3.q_upper``, lines 129-133)."""
    ok = lambda x: x - p <= min(bernstein_peeling(x, n, delta),  # noqa: E731
                                subgaussian_bar(x, n, delta))
    if bisection:
        return search_up(ok, 1.0, p)
    g = lambda x: (x - p) - min(bernstein_peeling(x, n, delta),  # noqa: E731
                                subgaussian_bar(x, n, delta))
    return first_crossing(g, p, 1.0)


def ucrl3_q_lower(p, n, delta, bisection=False):
    """The smallest ``x <= p`` with ``p - x <= min(Bernstein(x), subGaussian(x))``
    (``UCRL3.q_lower``, lines 139-143). The sub-Gaussian proxy
    ``(1/2 - x) / ln(1/x - 1)`` vanishes only logarithmically at 0, so for small ``p``
    the root can lie below ``1e-15``; it is then returned as 0 (to ``brentq``'s
    ``xtol``)."""
    ok = lambda x: p - x <= min(bernstein_peeling(x, n, delta),  # noqa: E731
                                subgaussian(x, n, delta))
    if bisection:
        return search_down(ok, p, 0.0)
    g = lambda x: (p - x) - min(bernstein_peeling(x, n, delta),  # noqa: E731
                                subgaussian(x, n, delta))
    return first_crossing(g, p, 0.0)


def ucrl3_r_upper(mean, var, n, delta):
    """``UCRL3.m_upper`` (lines 150-152): ``min(1, mean + empirical Bernstein, mean +
    Hoeffding-Laplace)``."""
    if n == 0:
        return 1.0
    e = elln(n, delta)
    eb = math.sqrt(2 * var * e) + 7 * e / 3
    hl = math.sqrt((1 + 1 / n) * math.log(math.sqrt(n + 1) / delta) / (2 * n))
    return min(1.0, mean + eb, mean + hl)


class UCRL3(Episodic):
    """UCRL3 (``UCRL3.py`` class ``UCRL3``) or, with ``lazy=True``, ``UCRL3_lazy``."""

    def __init__(self, S, A, rng, delta=0.05, lazy=False, bisection=False,
                 key_sums=True):
        super().__init__(S, A, rng, delta)
        self.lazy, self.bisection, self.key_sums = lazy, bisection, key_sums
        self.least_visited_ties = not lazy  # UCRL3_lazy line 425-426: most visited

    def plan(self):
        S, A = self.S, self.A
        d = self.delta / (S * A * (3 + 3 * S))  # line 13
        self.nkmax = self.Nk.max()
        self.support = [[list(np.flatnonzero(self.counts[s, a] > 0)) for a in range(A)]
                        for s in range(S)]
        self.up = np.zeros((S, A, S))
        self.low = np.zeros((S, A, S))
        self.up_out = np.zeros((S, A))
        self.r_opt = np.zeros((S, A))
        for s in range(S):
            for a in range(A):
                n = int(self.Nk[s, a])
                var = self.rm2[s, a] / n if n else np.inf
                self.r_opt[s, a] = ucrl3_r_upper(self.rmean[s, a], var, n, d)
                self.up_out[s, a] = ucrl3_q_upper(0.0, n, d, self.bisection)
                for y in self.support[s][a]:
                    p = self.counts[s, a, y] / n
                    self.up[s, a, y] = ucrl3_q_upper(p, n, d, self.bisection)
                    lo = ucrl3_q_lower(p, n, d, self.bisection)
                    if p >= 1 and n >= 1:  # lines 165-169
                        lo = max(0.5 ** (1 / n), lo)
                    self.low[s, a, y] = lo
        eps = 1.0 / max(1, self.t)
        if self.lazy:
            self.evi_lazy(eps)
        else:
            self.evi_full(eps)

    def p_u(self, s, a, y):
        return self.up[s, a, y] if y in self.support[s][a] else self.up_out[s, a]

    def p_l(self, s, a, y):
        return self.low[s, a, y] if y in self.support[s][a] else 0.0

    def near_optimistic_support(self, s, a, u, order, kappa=np.inf):
        """``UCRL3.computeSupport`` (lines 211-261) with its helpers (lines 174-207).

        The helpers start from ``sum_p = sum(p)`` with ``p`` a dict (lines 175, 193):
        the sum of the *keys* (state indices), not of the probabilities. With
        ``key_sums=True`` (the published behaviour) this is reproduced: ``p_out`` starts
        as ``{S - 1: 0}`` (line 230), whose key sum ``S - 1 >= 1`` stops
        ``aux_compute_Fplus_out`` at once, so its value is 0 and the extension loop
        (line 241) never runs: the support is the empirical support plus the state of
        highest value. ``key_sums=False`` sums the probabilities (the evident intent).
        """
        S = self.S
        support = list(self.support[s][a])
        if order[S - 1] not in support:
            support.append(order[S - 1])
        umin = u.min()
        p_in = {y: self.p_u(s, a, y) for y in support}
        p_out = {S - 1: 0.0}  # line 230: keyed by the position S - 1, value 0

        def total_of(p):
            return float(sum(p.keys())) if self.key_sums else sum(p.values())

        def fill_in(p, idx):
            total = total_of(p)
            while total > 1 and idx < S:
                y = order[idx]
                if y in support:
                    new = max(0.0, p[y] - total + 1, self.p_l(s, a, y))
                    total -= p[y] - new
                    p[y] = new
                idx += 1
            return idx

        def fill_out(p, idx):
            total = total_of(p)
            while total < 1 and idx >= 0:
                y = order[idx]
                if y not in support:
                    add = min(self.p_u(s, a, y), max(0.0, 1 - total))
                    total += add
                    p[y] = add
                idx -= 1
            return idx

        idx_in = fill_in(p_in, 0)
        idx_out = fill_out(p_out, S - 1)
        val_in = sum(p_in[y] * (u[y] - umin) for y in p_in)
        val_out = sum(p_out[y] * (u[y] - umin) for y in p_out)
        ll = 1
        while val_out > min(kappa, val_in) and ll < S - 1:
            while order[S - 1 - ll] in support and ll < S - 1:
                ll += 1
            y = order[S - 1 - ll]
            if y not in support:
                support.append(y)
            if S - 1 - ll > idx_in:
                p_in[y] = self.p_u(s, a, y)
                idx_in = fill_in(p_in, idx_in)
            p_out[y] = 0
            idx_out = fill_out(p_out, idx_out)
            val_in = sum(p_in[i] * (u[i] - umin) for i in p_in)
            val_out = sum(p_out[i] * (u[i] - umin) for i in p_out)
        return support

    def max_proba(self, s, a, u, order, support):
        """``UCRL3.max_proba`` (lines 264-290): lower bounds on the support, then the
        remaining mass from the highest value down, to the upper bounds."""
        S = self.S
        q = np.zeros(S)
        rest = 1.0
        for y in support:
            q[y] = self.p_l(s, a, y)
            rest -= q[y]
        q[order[S - 1]] = self.p_l(s, a, order[S - 1])
        ll = 0
        while rest > 1e-8 and ll <= S - 1:
            y = order[S - 1 - ll]
            if ll == 0 or y in support:
                add = min(rest, self.p_u(s, a, y) - q[y])
                q[y] += add
                rest -= add
            ll += 1
        return q

    def evi_full(self, eps, max_iter=1000):
        """``UCRL3.EVI`` (lines 293-329): the support is recomputed at every sweep with
        ``kappa = 10 span(u0) / Nkmax^(2/3) * |empirical support|``."""
        S, A = self.S, self.A
        u0 = self.u - self.u.min()
        it = 0
        while True:
            order = np.argsort(u0, kind="stable")
            with np.errstate(divide="ignore", invalid="ignore"):
                kappa0 = np.float64(10 * (u0.max() - u0.min())) / np.float64(
                    self.nkmax) ** (2 / 3)
            q = np.empty((S, A))
            for s in range(S):
                for a in range(A):
                    # at Nkmax = 0 kappa is nan (0/0) and Python's min(nan, x) is nan,
                    # so the support loop does not run, as in the published code
                    kappa = float(kappa0 * len(self.support[s][a]))
                    sup = self.near_optimistic_support(s, a, u0, order, kappa)
                    q[s, a] = self.r_opt[s, a] + self.max_proba(s, a, u0, order, sup) @ u0
            u1 = q.max(axis=1)
            diff = np.abs(u1 - u0)
            if diff.max() - diff.min() < eps or it > max_iter:
                self.u = u1 - u1.min()
                self.choices = tied_policy(q, self.Nk, least=True)
                return
            u0 = u1 - u1.min()
            it += 1

    def evi_lazy(self, eps, max_iter=1000, nup_steps=5):
        """``UCRL3_lazy.EVI`` (lines 396-442): the supports and maximising laws are
        recomputed every ``nup_steps`` sweeps (every sweep for the first five), no
        ``kappa``, ties to the most visited, and the stored values end as zeros (line 437
        reads ``u1`` after it was reset), so every episode starts from ``u0 = 0``."""
        S, A = self.S, self.A
        u0 = self.u - self.u.min()
        it = 0
        while True:
            order = np.argsort(u0, kind="stable")
            maxp = [[self.max_proba(s, a, u0, order,
                                    self.near_optimistic_support(s, a, u0, order))
                     for a in range(A)] for s in range(S)]
            for _ in range(1 if it < nup_steps else nup_steps):
                q = np.array([[self.r_opt[s, a] + maxp[s][a] @ u0 for a in range(A)]
                              for s in range(S)])
                u1 = q.max(axis=1)
                self.choices = tied_policy(q, self.Nk, least=False)
                diff = np.abs(u1 - u0)
                u0 = u1 - u1.min()
                it += 1
            if diff.max() - diff.min() < eps or it > max_iter:
                self.u = np.zeros(S)
                return


# ------------------------------------------------------------------------------- PSRL
class PSRL(Episodic):
    """PSRL as in ``PSRL.py``: prior ``Beta(1, 1)`` on each reward with fractional updates
    (``+r``, ``+(1 - r)``, lines 128-129) and ``Dirichlet(1, ..., 1)`` on each transition
    row (lines 40-42, 132), one sample per episode (lines 91-96), UCRL2's doubling episode
    rule (line 116)."""

    def plan(self):
        g = self.rng.standard_gamma(1.0 + self.counts)
        Pt = g / g.sum(axis=-1, keepdims=True)
        visits = self.counts.sum(axis=-1)
        Rt = self.rng.beta(1.0 + self.rsum, 1.0 + visits - self.rsum)
        # DEPARTS: exact planning of the sample (policy iteration) where PSRL.VI (lines
        # 52-85) runs value iteration to span(|u1 - u0|) < 1/t with random least-visited
        # ties; the sampled rows have full support, so the optimal policy is unique a.s.
        _, bias, _ = policy_iteration(Pt, Rt, max_iter=200)
        Q = Rt + Pt @ bias
        self.choices = tied_policy(Q, self.Nk, least=True)


# -------------------------------------------------------------------- optimistic Q
class OptimisticQ:
    """Optimistic discounted Q-learning as in ``agent.py`` (bahh723/model-free-rl-algos,
    class ``OptimisticDiscountedAgent``, lines 59-103): ``H = gamma / (1 - gamma)``
    (line 67) unless ``horizon_h`` is given (then ``gamma = 1 - 1 / H``, the paper's
    relation); ``Q = Q_hat = V_hat = H`` initially; greedy in ``Q_hat``, lowest index on
    ties (``np.argmax``, line 83); update lines 86-93."""

    def __init__(self, S, A, rng, gamma=0.99, c=1.0, horizon_h=None):
        self.S, self.A = S, A
        if horizon_h is None:
            self.gamma, self.H = gamma, gamma / (1 - gamma)
        else:
            self.H, self.gamma = float(horizon_h), 1 - 1 / float(horizon_h)
        self.c = c

    def reset(self, state):
        self.n = np.zeros((self.S, self.A), int)
        self.Q = np.full((self.S, self.A), self.H)
        self.Qhat = np.full((self.S, self.A), self.H)
        self.V = np.full(self.S, self.H)

    def play(self, state):
        return int(np.argmax(self.Qhat[state]))

    def update(self, s, a, r, y):
        self.n[s, a] += 1
        n = self.n[s, a]
        bonus = self.c * math.sqrt(self.H / n)
        alpha = (self.H + 1) / (self.H + n)
        self.Q[s, a] = (1 - alpha) * self.Q[s, a] + alpha * (r + self.gamma * self.V[y] + bonus)
        self.Qhat[s, a] = min(self.Qhat[s, a], self.Q[s, a])
        self.V[s] = self.Qhat[s].max()


# ---------------------------------------------------------------------------- IMED-RL
#: The index rules of :class:`IMEDRL`: jaxmdp's, then the two published codes'.
IMED_INDICES = ("paper", "statisticalrl", "authors")


def imed_index(n, rewards_sum, counts_row, v, level, *, known_reward=None):
    """IMED-RL's index ``H = n K + ln n`` of one pair under jaxmdp's rules (``-inf``
    when ``n == 0``).

    ``K = inf{KL(p || q) : E_q[reward + v(next)] >= level}`` over the joint law of
    (reward in {0, 1}, next state) of the model ``p_hat = (N + 1/S) / (n + 1)``,
    ``r_hat = (sum r + 1/2) / (n + 1)``; with a known reward ``r``, over the next state
    only against ``level - r`` (:func:`tests.reference.indices.kinf`, ``brentq`` on
    Theorem 4's equation).
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


def _log_x(n, x):
    """``ln x``, ``-inf`` at 0: the authors' tail (``np.log``, ``IRL.py`` line 179)."""
    with np.errstate(divide="ignore"):
        return float(np.log(x))


class IMEDRL:
    """IMED-RL (Pesquerel & Maillard 2022) under jaxmdp's rules (``index="paper"``) or as
    published: StatisticalRL's ``IMED_RL.py`` (``"statisticalrl"``) or the authors'
    ``IRL.py`` (fabienpesquerel/IMED-RL, ``"authors"``).

    Every rule set keeps one pseudo-observation per pair (reward 1/2, next state uniform;
    ``IMED_RL.py`` lines 128-129): ``p_hat = (N + 1/S) / (n + 1)``,
    ``r_hat = (sum r + 1/2) / (n + 1)``; the skeleton ``{a : n >= ln(max_b n)^2}`` (lines
    136-138, over the admissible actions ``mask``); and the empirical bias of the
    skeleton model by exact policy iteration, warm-started from the last policy.

    * ``"paper"`` (the rules of :mod:`jaxmdp.agents.imed`, the model computed from the
      counts): the bias at every round (``bias[0] = 0``), the level the skeleton's best
      ``r_hat + p_hat . v`` at the state, ``H`` of :func:`imed_index` for every admissible
      action (untried first), the argmin with ties to the lowest index.
      ``known_rewards`` (the true means ``R``) replaces ``r_hat`` and the joint law.
    * ``"statisticalrl"`` (``n x + ln n``, line 178) and ``"authors"`` (``n x + ln x``,
      ``IRL.py`` line 179), the model updated incrementally as published: untried
      actions first (uniform among the least played), ``x = max_{y in [0, B/(B - mu) -
      0.01]} E log(B - (value - mu) y)``, ``B = 1 + max phi`` (``min phi = 0``), ``mu``
      the best ``q`` over all actions (lines 146-149), the reward law the observed rewards
      plus an atom at 1/2 of weight 1 and an atom at 1 of weight 0 (line 96), ties
      uniform (lines 180-187); every action admissible.
    """

    def __init__(self, S, A, rng, index="statisticalrl", *, mask=None, known_rewards=None):
        if index not in IMED_INDICES:
            raise ValueError(f"index must be one of {IMED_INDICES}, got {index!r}")
        if index != "paper" and (known_rewards is not None
                                 or (mask is not None and not np.all(mask))):
            raise ValueError(f"known rewards and masked actions need index='paper', got "
                             f"{index!r}")
        self.S, self.A, self.rng, self.index_rule = S, A, rng, index
        self.mask = np.ones((S, A), bool) if mask is None else np.asarray(mask, bool)
        self.actions = [np.flatnonzero(row).tolist() for row in self.mask]
        self.known_rewards = None if known_rewards is None else np.asarray(known_rewards)

    def reset(self, state):
        S, A = self.S, self.A
        self.n = np.zeros((S, A), int)
        self.counts = np.zeros((S, A, S))
        self.sums = np.zeros((S, A))
        self.r_hat = (np.full((S, A), 0.5) if self.known_rewards is None
                      else self.known_rewards.astype(float))
        self.p_hat = np.full((S, A, S), 1.0 / S)
        self.reward_law = [[{1.0: 0, 0.5: 1} for _ in range(A)] for _ in range(S)]
        self.skeleton = self.mask.copy()
        self.policy = np.argmax(self.mask, axis=1)

    def update(self, s, a, r, y):
        na = self.n[s, a]
        self.n[s, a] = na + 1
        self.counts[s, a, y] += 1.0
        self.sums[s, a] += r
        if self.index_rule == "paper":
            if self.known_rewards is None:
                self.r_hat[s, a] = (self.sums[s, a] + 0.5) / (na + 2.0)
            self.p_hat[s, a] = (self.counts[s, a] + 1.0 / self.S) / (na + 2.0)
        else:
            self.r_hat[s, a] = ((na + 1) * self.r_hat[s, a] + r) / (na + 2)
            e = np.zeros(self.S)
            e[y] = 1.0
            self.p_hat[s, a] = ((na + 1) * self.p_hat[s, a] + e) / (na + 2)
        law = self.reward_law[s][a]
        law[float(r)] = law.get(float(r), 0) + 1
        top = self.n[s][self.mask[s]].max()
        self.skeleton[s] = self.mask[s] & (self.n[s] >= math.log(top) ** 2)

    def bias(self):
        """The bias of the skeleton model: ``bias[0] = 0`` (``"paper"``), else shifted to
        ``min 0``."""
        if self.index_rule == "paper":
            _, v, self.policy = policy_iteration(self.p_hat, self.r_hat, self.skeleton,
                                                 self.policy)
            return v
        # DEPARTS: exact bias of the skeleton model (policy iteration, min 0) where
        # IMED_RL.value_iteration (lines 100-118) stops at sup|phi - phi'| < 1e-3.
        R = np.where(self.skeleton, self.r_hat, -1e9)
        _, phi, self.policy = policy_iteration(self.p_hat, R, policy=self.policy,
                                               max_iter=200)
        return phi - phi.min()

    def x_value(self, s, a, phi, B, mu):
        """``x = max_{y in [0, B/(B - mu) - 0.01]} E log(B - (V - mu) y)`` over the joint
        law of (reward, next state) of ``(s, a)`` (``IMED_RL.py`` lines 155-177), by
        ``brentq`` on the derivative of this concave function."""
        law = self.reward_law[s][a]
        vr = np.array(list(law.keys()))
        pr = np.array(list(law.values()), float)
        pr /= pr.sum()
        p = np.outer(self.p_hat[s, a], pr).ravel()
        d = (phi[:, None] + vr[None, :]).ravel() - mu
        ymax = B / (B - mu) - 1e-2
        dh = lambda y: -float(np.sum(p * d / (B - d * y)))  # noqa: E731
        y = ymax if dh(ymax) >= 0 else brentq(dh, 0.0, ymax, xtol=1e-14)
        return float(np.sum(p * np.log(B - d * y)))

    def play(self, s):
        if self.index_rule == "paper":
            return self.play_paper(s)
        if np.any(self.n[s] == 0):
            idx = np.flatnonzero(self.n[s] == self.n[s].min())
            return int(self.rng.choice(idx))
        if self.index_rule == "statisticalrl":
            index = self.published_index(s, self.bias(), lambda n, x: math.log(n))
        else:
            index = self.published_index(s, self.bias(), _log_x)
        idx = np.flatnonzero(index == index.min())
        return int(self.rng.choice(idx))

    def published_index(self, s, phi, tail):
        """The published ``H`` of the actions of ``s`` (every action tried) given
        ``phi``: ``ln n`` at the level ``mu``, the best ``q`` over all actions, and
        ``n x + tail(n, x)`` below it (``IMED_RL.py`` lines 146-179, ``MED_RL.py`` lines
        100-127)."""
        B = 1.0 + phi.max()
        q = self.r_hat[s] + self.p_hat[s] @ phi
        mu = q.max()
        index = np.empty(self.A)
        for a in range(self.A):
            n = self.n[s, a]
            if q[a] >= mu:
                index[a] = math.log(n)
            else:
                x = self.x_value(s, a, phi, B, mu)
                index[a] = n * x + tail(n, x)
        return index

    def play_paper(self, s):
        """jaxmdp's decision: the lowest-index argmin of :func:`imed_index` over the
        admissible actions, the level from the skeleton (planned at every round)."""
        v = self.bias()
        q = np.where(self.skeleton[s], self.r_hat[s] + self.p_hat[s] @ v, -np.inf)
        level = q.max()
        known = self.known_rewards
        best_a, best_h = -1, math.inf
        for a in self.actions[s]:
            h = imed_index(self.n[s, a], self.sums[s, a], self.counts[s, a], v, level,
                           known_reward=None if known is None else known[s, a])
            if best_a < 0 or h < best_h:
                best_a, best_h = a, h
        return best_a


# ----------------------------------------------------------------------------- MED-RL
class MEDRL(IMEDRL):
    """MED-RL as in StatisticalRL's ``MED_RL.py``: IMED-RL's model, reward law, skeleton,
    forcing and ``x`` (lines 26-127, as :class:`IMEDRL`), value iteration warm-started
    from the last ``phi`` to ``max |phi - phi'| < 1e-3`` or 3000 sweeps (lines 49-67),
    ``H = ln n`` at the level and ``n x + ln x`` below (lines 100-127), and the action
    drawn with probability proportional to ``exp(-H)`` (line 136, ``utils.randexp``)."""

    def __init__(self, S, A, rng, epsilon=1e-3, max_iter=3000):
        super().__init__(S, A, rng, index="authors")
        self.epsilon, self.max_iter = epsilon, max_iter

    def reset(self, state):
        super().reset(state)
        self.phi = np.zeros(self.S)

    def bias(self):
        phi = self.phi.copy()
        for _ in range(self.max_iter):
            new = np.empty(self.S)
            for y in range(self.S):
                acts = np.flatnonzero(self.skeleton[y])
                new[y] = max(self.r_hat[y, b] + self.p_hat[y, b] @ phi for b in acts)
            new -= new.min()
            change = np.abs(phi - new).max()
            phi = new
            if change < self.epsilon:
                break
        self.phi = phi
        return phi

    def med_index(self, s, phi):
        """``H`` of the actions of ``s`` (every action tried) given ``phi``."""
        return self.published_index(s, phi, lambda n, x: math.log(x))

    def play(self, s):
        if np.any(self.n[s] == 0):
            idx = np.flatnonzero(self.n[s] == 0)
            return int(self.rng.choice(idx))
        index = self.med_index(s, self.bias())
        weights = np.exp(-(index - index.min()))
        return int(self.rng.choice(self.A, p=weights / weights.sum()))


# ----------------------------------------------------------------------------- driver
def make_agent(name, S, A, rng, **options):
    """The learner called ``name`` (one of :data:`AGENTS` but ``ucrl2`` and ``kl_ucrl``,
    whose published rules run in :mod:`tests.reference.ucrl`'s loop)."""
    if name == "ucrl3":
        return UCRL3(S, A, rng, **options)
    if name == "ucrl3_lazy":
        return UCRL3(S, A, rng, lazy=True, **options)
    if name == "ucrl2b":
        return UCRL2B(S, A, rng, **options)
    if name == "psrl":
        return PSRL(S, A, rng, **options)
    if name == "optimistic_q":
        return OptimisticQ(S, A, rng, **options)
    if name == "imed_rl":
        return IMEDRL(S, A, rng, index="paper", **options)
    if name == "imed_rl_statisticalrl":
        return IMEDRL(S, A, rng, index="statisticalrl", **options)
    if name == "imed_rl_authors":
        return IMEDRL(S, A, rng, index="authors", **options)
    if name == "med_rl":
        return MEDRL(S, A, rng, **options)
    raise ValueError(f"agent must be one of {AGENTS} but {UCRL_LOOP}, got {name!r}")


class Path_(NamedTuple):
    """Cumulative regret paths of one replication, ``[T]`` each (or their final values,
    ``[replications]`` each)."""

    regret: np.ndarray
    pseudo_regret: np.ndarray


def run_one(P, R, agent, horizon, rng, *, reward_law="deterministic", gain_gap=None):
    """One replication of ``agent`` (an object of this module) on ``(P, R)`` from state 0.

    Returns:
        :class:`Path_` with the cumulative realised regret ``sum (g* - r_t)`` and the
        cumulative pseudo-regret ``sum Delta(s_t, a_t)``.
    """
    S, A, _ = P.shape
    gain, gap = gain_gap if gain_gap is not None else true_gaps(P, R)
    cum = np.cumsum(P, axis=-1)
    s = 0
    agent.reset(s)
    regret = np.empty(horizon)
    pseudo = np.empty(horizon)
    total, ptotal = 0.0, 0.0
    for t in range(horizon):
        a = agent.play(s)
        y = min(int(np.searchsorted(cum[s, a], rng.random() * cum[s, a, -1], "right")),
                S - 1)
        r = float(R[s, a]) if reward_law == "deterministic" else float(
            rng.random() < R[s, a])
        agent.update(s, a, r, y)
        total += gain - r
        ptotal += gap[s, a]
        regret[t], pseudo[t] = total, ptotal
        s = y
    return Path_(regret, pseudo)


def finals(P, R, name, horizon, replications, seed=0, *, mask=None,
           reward_law="deterministic", **options):
    """Final regrets of ``replications`` runs (``numpy.random.SeedSequence(seed).spawn``)
    of the loop ``name``: a :class:`Path_` of ``[replications]`` arrays. ``mask`` (the
    admissible actions) is for ``imed_rl``; the published rules play every action."""
    S, A, _ = P.shape
    mask = np.ones((S, A), bool) if mask is None else np.asarray(mask, bool)
    if name in UCRL_LOOP:
        out = ucrl.run(P, R, mask, name, horizon, replications, seed, rules="statisticalrl",
                       reward_law=reward_law, **options)
        return Path_(out["regret"], out["pseudo_regret"])
    if name == "imed_rl":
        options = {"mask": mask, **options}
    elif not mask.all():
        raise ValueError(f"the {name} loop plays every action: mask must be all True, got "
                         f"{int(np.sum(~mask))} masked pairs")
    gain_gap = true_gaps(P, R, mask)
    paths = []
    for ss in np.random.SeedSequence(seed).spawn(replications):
        rng = np.random.default_rng(ss)
        agent = make_agent(name, S, A, rng, **options)
        paths.append(run_one(P, R, agent, horizon, rng, reward_law=reward_law,
                             gain_gap=gain_gap))
    return Path_(np.array([p.regret[-1] for p in paths]),
                 np.array([p.pseudo_regret[-1] for p in paths]))


def run(P, R, name, horizon, replications, seed=0, *, reward_law="deterministic",
        **options):
    """``replications`` runs of the loop ``name``; returns final realised regrets ``[m]``."""
    return finals(P, R, name, horizon, replications, seed, reward_law=reward_law,
                  **options).regret


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", nargs="+", default=["ucrl3_lazy", "ucrl2b", "psrl",
                                                   "optimistic_q"], choices=AGENTS)
    ap.add_argument("--env", default=None,
                    help="a jaxmdp.envs name (default: StatisticalRL's river-swim-6, "
                         "whose action 0 is right)")
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--replications", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rewards", default="deterministic",
                    choices=("deterministic", "bernoulli"))
    args = ap.parse_args(argv)
    if args.env is None:
        P, R = riverswim6_statisticalrl()
        mask = None
    else:
        P, R, mask, _ = load_env(args.env)
    for name in args.agent:
        t0 = time.perf_counter()
        out = finals(P, R, name, args.horizon, args.replications, args.seed,
                     mask=mask, reward_law=args.rewards)
        line = f"{name:24s} T={args.horizon} m={args.replications}"
        for what, f in zip(("regret", "pseudo-regret"), out):
            se = f.std(ddof=1) / math.sqrt(len(f)) if len(f) > 1 else float("nan")
            line += f"  {what} {f.mean():.3f} +- {se:.3f}"
        print(f"{line}  ({time.perf_counter() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
