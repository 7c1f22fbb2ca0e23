"""The index rules of the paper's four agents (Cowan, Katehakis & Pirutinsky 2019,
section 3): MDP-UCB, OLP, MDP-DMED and MDP-PS.

Each ``*_select_action`` turns the agent's :class:`~jaxmdp.Estimate` into an action in the
current state; the smooth index formulas with known rewards live beside the indices
(:mod:`jaxmdp.indices.rules`). The conventions (untried actions, learned rewards) are
described in :mod:`jaxmdp.agents.paper`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.indices.kl import kinf, kl_ucb
from jaxmdp.indices.l1 import l1_ucb
from jaxmdp.indices.rules import dmed_divergence, olp_index, ucb_index
from jaxmdp.mdp import bernoulli_joint
from jaxmdp.planning import Estimate
from jaxmdp.random import beta_shapes, gamma, gamma_and_beta

__all__ = [
    "RULES",
    "RewardInfo",
    "argmax_admissible",
    "current",
    "dmed_select_action",
    "olp_select_action",
    "ps_select_action",
    "safe_radius_base",
    "ucb_select_action",
    "untried_first",
]


class RewardInfo(NamedTuple):
    """What an agent that learns rewards knows of them (``None`` fields: known rewards).

    Attributes:
        law: the reward family (static): ``"bernoulli"`` or ``"deterministic"`` (rewards
            in ``[0, 1]``), or ``"gaussian"``.
        sigma: the Gaussian standard deviation (static).
        sums: sums of observed rewards ``[S, A]``.
    """

    law: str
    sigma: float
    sums: jax.Array




def current(t, x, counts, estimate):
    """Shared per-step quantities at the current state: rows, rewards, visits, ln t."""
    bias = estimate.bias
    p_hat = estimate.mdp.P[x]  # [A, S]
    rewards = estimate.mdp.R[x]  # [A]: the known rewards, or r_hat
    admissible = estimate.admissible[x]  # [A]
    visits = estimate.visits[x]  # [A]
    log_t = jnp.log(jnp.asarray(t, dtype=bias.dtype))
    return p_hat, rewards, admissible, visits, log_t


def untried_first(action, admissible, visits):
    """``action``, unless an admissible action is untried: then the lowest such one."""
    untried = admissible & (visits == 0)
    return jnp.where(jnp.any(untried), jnp.argmax(untried), action).astype(jnp.int32)


def argmax_admissible(index, admissible):
    """argmax of ``index`` over admissible actions; ties to the lowest index."""
    return jnp.argmax(jnp.where(admissible, index, -jnp.inf)).astype(jnp.int32)


def safe_radius_base(log_t, visits):
    """``ln t / n`` for tried actions; 0 where ``n == 0`` (those get an infinite index)."""
    n = visits.astype(log_t.dtype)
    return jnp.where(visits > 0, log_t / jnp.maximum(n, 1.0), 0.0)


def _gaussian_module():
    from jaxmdp.indices import gaussian  # local import: only Gaussian learners need it

    return gaussian


def ucb_select_action(key, t, x, counts, estimate: Estimate, rewards: RewardInfo | None = None):
    """MDP-UCB (Burnetas & Katehakis 1997; paper section 3.1, eq. 3).

    ``u_a = r(x, a) + sup{q . v_hat : KL(p_hat[x, a] || q) <= ln t / n[x, a]}``; with
    learned rewards, the KL ball over the joint law of (reward, next state) (module
    docstring). Untried admissible actions first (convention).

    Args:
        key: unused (the rule is deterministic).
        t: round, int scalar ``>= 1``.
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the planner's :class:`~jaxmdp.Estimate` (``estimate.mdp.R`` holds the
            rewards the agent plans with: known, or ``r_hat``).
        rewards: ``None`` for known rewards, else the :class:`RewardInfo`.

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, r, admissible, visits, log_t = current(t, x, counts, estimate)
    delta = safe_radius_base(log_t, visits)
    bias = estimate.bias
    if rewards is None:
        index = ucb_index(p_hat, bias, r, delta)
    elif rewards.law == "gaussian":
        sigma = jnp.asarray(rewards.sigma, bias.dtype)
        index = jax.vmap(_gaussian_module().kl_ucb_gaussian, in_axes=(0, None, 0, None, 0))(
            p_hat, bias, r, sigma, delta)
    else:
        p_joint, w = bernoulli_joint(p_hat, r, bias)
        index = jax.vmap(kl_ucb, in_axes=(0, None, 0))(p_joint, w, delta)
    return untried_first(argmax_admissible(index, admissible), admissible, visits)


def olp_select_action(key, t, x, counts, estimate: Estimate, rewards: RewardInfo | None = None):
    """Optimistic linear programming (Tewari & Bartlett 2008; paper section 3.3).

    ``u_a = r(x, a) + sup{q . v_hat : ||q - p_hat[x, a]||_1 <= sqrt(2 ln t / n[x, a])}``;
    with learned rewards see the module docstring. Untried admissible actions first
    (convention).

    Args:
        key, t, x, counts, estimate, rewards: as for :func:`ucb_select_action`.

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, r, admissible, visits, log_t = current(t, x, counts, estimate)
    radius = jnp.sqrt(2.0 * safe_radius_base(log_t, visits))
    bias = estimate.bias
    if rewards is not None and rewards.law != "gaussian":
        p_joint, w = bernoulli_joint(p_hat, r, bias)
        index = jax.vmap(l1_ucb, in_axes=(0, None, 0))(p_joint, w, radius)
    else:
        index = olp_index(p_hat, bias, r, radius)
        if rewards is not None:  # Gaussian: r_hat + sigma sqrt(2 ln t / n)
            index = index + jnp.asarray(rewards.sigma, bias.dtype) * radius
    return untried_first(argmax_admissible(index, admissible), admissible, visits)


def dmed_select_action(key, t, x, counts, estimate: Estimate, rewards: RewardInfo | None = None,
                       *, force_untried: bool = False):
    """MDP-DMED (paper section 3.2), with ``K~`` computed by :func:`jaxmdp.kinf`.

    ``a* = argmax_{a in A(x)} r(x, a) + p_hat[x, a] . v_hat``; for ``a != a*``,
    ``D(a) = ln t / K~(a) - n[x, a]`` with
    ``K~(a) = inf{KL(p_hat[x, a] || q) : r(x, a) + q . v_hat >= L(x, a*)}``.
    Plays ``a*`` when ``max D <= 0``, else ``argmax D``. ``K~ = 0`` (a tie with ``a*``)
    gives ``D = +inf`` for ``t > 1`` and ``D = 0`` at ``t = 1``; ``K~ = +inf``
    (unreachable) gives ``D = -n``. An untried action has ``n = 0`` and no other rule
    (unless ``force_untried``).

    Args:
        key, t, x, counts, estimate, rewards: as for :func:`ucb_select_action`.
        force_untried: play untried admissible actions first (not the paper's rule).

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, r, admissible, visits, log_t = current(t, x, counts, estimate)
    bias = estimate.bias
    values = r + p_hat @ bias  # L(x, a, p_hat, v_hat)
    best = jnp.argmax(jnp.where(admissible, values, -jnp.inf))
    if rewards is None:
        divergence = dmed_divergence(p_hat, bias, r, values[best])
    elif rewards.law == "gaussian":
        sigma = jnp.asarray(rewards.sigma, bias.dtype)
        divergence = jax.vmap(_gaussian_module().kinf_gaussian, in_axes=(0, None, 0, None, None))(
            p_hat, bias, r, sigma, values[best])
    else:
        p_joint, w = bernoulli_joint(p_hat, r, bias)
        divergence = jax.vmap(kinf, in_axes=(0, None, None))(p_joint, w, values[best])
    positive = divergence > 0
    rate = jnp.where(positive, log_t / jnp.where(positive, divergence, 1.0),
                     jnp.where(log_t > 0, jnp.inf, 0.0))
    discrepancy = rate - visits.astype(rate.dtype)
    actions = jnp.arange(values.shape[0])
    candidates = admissible & (actions != best)
    discrepancy = jnp.where(candidates, discrepancy, -jnp.inf)
    challenger = jnp.argmax(discrepancy)
    action = jnp.where(discrepancy[challenger] > 0, challenger, best).astype(jnp.int32)
    return untried_first(action, admissible, visits) if force_untried else action


def ps_select_action(key, t, x, counts, estimate: Estimate, rewards: RewardInfo | None = None,
                     *, force_untried: bool = False):
    """MDP-PS, posterior sampling (paper section 3.4) with a uniform Dirichlet prior.

    ``Q^a ~ Dirichlet(N[x, a] + 1)`` independently for each action,
    ``W_a = r(x, a) + Q^a . v_hat``; plays ``argmax W``. (The paper writes ``Dir(N)``,
    which is undefined at zero counts; ``N + 1`` is the posterior of its uniform prior.)
    With learned rewards ``r(x, a)`` is drawn from its posterior too (module docstring).

    Args:
        key: PRNG key for the draws.
        t: round (unused).
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the planner's :class:`~jaxmdp.Estimate`.
        rewards: ``None`` for known rewards, else the :class:`RewardInfo` (its ``sums``
            restricted to the current state are used).
        force_untried: play untried admissible actions first (not the paper's rule).

    Returns:
        int32 scalar action.
    """
    p_hat, r, admissible, visits, _ = current(t, x, counts, estimate)
    alpha = counts[x].astype(p_hat.dtype) + 1.0  # [A, S]
    if rewards is not None and rewards.law != "gaussian":  # Beta posteriors
        weights, r = gamma_and_beta(key, alpha, beta_shapes(r, visits, rewards.sums[x]))
    else:
        weights = gamma(key, alpha)
        if rewards is not None:  # Gaussian posteriors
            noise = jax.random.normal(jax.random.fold_in(key, 1), r.shape, r.dtype)
            r = r + rewards.sigma * noise / jnp.sqrt(visits.astype(r.dtype) + 1)
    # Q^a = weights[a] / sum(weights[a]) ~ Dirichlet(alpha[a])
    index = r + (weights @ estimate.bias) / jnp.sum(weights, axis=-1)
    action = argmax_admissible(index, admissible)
    return untried_first(action, admissible, visits) if force_untried else action


RULES = {
    "ucb": ucb_select_action,
    "dmed": dmed_select_action,
    "olp": olp_select_action,
    "ps": ps_select_action,
}
