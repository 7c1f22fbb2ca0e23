"""The indices of the paper's agents with known rewards, for every action of one state.

Cowan, Katehakis & Pirutinsky (2019), section 3: MDP-UCB's :func:`ucb_index` (eq. 3),
OLP's :func:`olp_index` (Tewari & Bartlett 2008) and MDP-DMED's :func:`dmed_divergence`
(section 3.2), written on the estimated laws ``p_hat[x]`` and bias of one state. The
agents' rules (:mod:`jaxmdp.agents.rules`) turn them into actions, and
:mod:`jaxmdp.analysis.sensitivity` differentiates them.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmdp.indices.rules import olp_index
    >>> olp_index(jnp.array([[0.5, 0.5]]), jnp.array([0.0, 1.0]), jnp.array([0.0]),
    ...           jnp.array([0.5])).tolist()
    [0.75]
"""

from __future__ import annotations

import jax

from jaxmdp.indices.kl import kinf, kl_ucb
from jaxmdp.indices.l1 import l1_ucb

__all__ = ["dmed_divergence", "olp_index", "ucb_index"]


def ucb_index(p_hat, bias, rewards, level):
    """MDP-UCB's index with known rewards, every action of one state:
    ``r_a + kl_ucb(p_hat[a], bias, level[a])``.

    Args:
        p_hat: ``[A, S]`` estimated laws; bias: ``[S]``; rewards: ``[A]``; level: ``[A]``,
            the KL radii ``ln t / n``.

    Returns:
        ``[A]`` indices.
    """
    return rewards + jax.vmap(kl_ucb, in_axes=(0, None, 0))(p_hat, bias, level)


def olp_index(p_hat, bias, rewards, radius):
    """OLP's index with known rewards: ``r_a + l1_ucb(p_hat[a], bias, radius[a])``
    (shapes as :func:`ucb_index`; ``radius`` the L1 radii ``sqrt(2 ln t / n)``)."""
    return rewards + jax.vmap(l1_ucb, in_axes=(0, None, 0))(p_hat, bias, radius)


def dmed_divergence(p_hat, bias, rewards, target):
    """MDP-DMED's ``K~(a) = kinf(p_hat[a], bias, target - r_a)``, every action of one
    state, with ``target = L(x, a*)`` the leader's value (shapes as :func:`ucb_index`,
    ``target`` a scalar)."""
    return jax.vmap(kinf, in_axes=(0, None, 0))(p_hat, bias, target - rewards)
