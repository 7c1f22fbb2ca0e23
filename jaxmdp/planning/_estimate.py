"""Counts -> estimated MDP: the one estimator shared by every agent.

From the transition counts ``N[x, a, y]`` observed so far, every agent of the paper
(Cowan, Katehakis & Pirutinsky 2019, section 3) builds the same estimates, at every
state (not only the current one):

* transition probabilities ``p_hat[x, a, y] = (N[x, a, y] + 1) / (n[x, a] + |S|)``;
* good actions ``A_hat(x) = {a in A(x) : n[x, a] >= (ln n[x])^2}``, all of ``A(x)`` when
  that set is empty (``ln 0`` is taken as 0);
* the gain, bias and optimal policy of the estimated MDP ``(p_hat, R)`` restricted to the
  good actions.

:func:`estimate` bundles all of them into an :class:`Estimate`, the value every agent's
per-step rule receives (:mod:`jaxmdp.agents.paper`).

An agent that re-estimates at every round keeps the estimate between rounds and updates
only the row that changed (:mod:`jaxmdp.agents.rounds`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxmdp.mdp import MDP
from jaxmdp.planning._policy_iteration import solve_average_reward

__all__ = [
    "Estimate",
    "estimate",
    "estimated_mdp",
    "good_actions",
    "good_actions_from_visits",
    "reward_estimate",
    "transition_estimate",
]


class Estimate(NamedTuple):
    """What an agent knows at one step: the estimated MDP and its solution.

    Attributes:
        mdp: the estimated MDP: ``P`` is ``p_hat`` ``[S, A, S]``, ``R`` the known rewards
            ``[S, A]`` and ``mask`` the good actions ``A_hat`` ``[S, A]`` (a subset of the
            admissible actions).
        admissible: the true MDP's admissible actions ``A(x)``, bool ``[S, A]``.
        visits: ``n[x, a]``, the number of times ``a`` was used in ``x``, ``[S, A]``.
        gain: gain ``phi_hat`` of the estimated MDP on the good actions, scalar.
        bias: bias ``v_hat`` (``v_hat[0] == 0``) of the estimated MDP, ``[S]``.
        policy: an optimal policy of the estimated MDP on the good actions, int ``[S]``.
        status: the planner's :class:`~jaxmdp.planning.Status` of the solve, int32
            scalar, when the estimate comes from a :class:`~jaxmdp.planning.Planner`
            (:func:`jaxmdp.agents.rounds.solve_estimate`); ``None`` from :func:`estimate`.
    """

    mdp: MDP
    admissible: jax.Array
    visits: jax.Array
    gain: jax.Array
    bias: jax.Array
    policy: jax.Array
    status: jax.Array | None = None


@functools.partial(jax.jit, static_argnames="dtype")
def transition_estimate(counts: ArrayLike, *, dtype=None) -> jax.Array:
    """Biased maximum-likelihood transition estimate ``(N + 1) / (n + |S|)``.

    Args:
        counts: transition counts ``N[x, a, y]``, shape ``[S, A, S]`` (or ``[..., S]``).
        dtype: float dtype of the result; defaults to JAX's default float dtype.

    Returns:
        ``p_hat`` with the shape of ``counts``; every row is a strictly positive
        probability vector.
    """
    counts = jnp.asarray(counts)
    dtype = dtype if dtype is not None else jnp.result_type(float)
    n = counts.astype(dtype)
    num_states = counts.shape[-1]
    return (n + 1) / (jnp.sum(n, axis=-1, keepdims=True) + num_states)


@jax.jit
def good_actions(counts: ArrayLike, admissible: ArrayLike | None = None) -> jax.Array:
    """Good-action mask ``A_hat(x) = {a in A(x) : n[x, a] >= (ln n[x])^2}``.

    Where no admissible action of a state passes the test, all of that state's admissible
    actions are good. ``ln 0`` is taken as 0 (a state never visited keeps all actions).

    Args:
        counts: transition counts ``N[x, a, y]``, shape ``[S, A, S]``.
        admissible: admissible actions ``A(x)``, bool ``[S, A]``; all actions if None.

    Returns:
        bool mask ``[S, A]``, a non-empty subset of ``admissible`` in every state.
    """
    counts = jnp.asarray(counts)
    return good_actions_from_visits(jnp.sum(counts, axis=-1), admissible)


def good_actions_from_visits(visits: jax.Array, admissible: jax.Array | None) -> jax.Array:
    """:func:`good_actions` from the visits ``n[x, a]`` (``[S, A]``) instead of the counts."""
    if admissible is None:
        admissible = jnp.ones(visits.shape, dtype=bool)
    admissible = jnp.asarray(admissible, dtype=bool)
    visits = jnp.where(admissible, visits, 0)
    dtype = jnp.result_type(float)
    state_visits = jnp.sum(visits, axis=-1).astype(dtype)  # n[x]
    log_visits = jnp.log(jnp.maximum(state_visits, 1.0))  # ln 0 taken as 0
    good = admissible & (visits.astype(dtype) >= (log_visits ** 2)[:, None])
    return jnp.where(jnp.any(good, axis=-1, keepdims=True), good, admissible)


def reward_estimate(reward_sums: ArrayLike, visits: ArrayLike, reward_law: str) -> jax.Array:
    r"""Posterior-mean reward estimates ``r_hat[x, a]`` for agents that learn the rewards.

    The paper (section 3) assumes known rewards and leaves unknown ones to future work;
    these are jaxmdp's choices, made to mirror its uniform prior on transitions
    (``p_hat = (N + 1) / (n + S)`` is the posterior mean under a uniform Dirichlet prior):

    * bounded rewards (laws ``"bernoulli"`` and ``"deterministic"``, means in ``[0, 1]``):
      ``r_hat = (sum r + 1) / (n + 2)``, the posterior mean under a uniform Beta(1, 1)
      prior (Laplace's rule);
    * ``"gaussian"`` (known ``sigma``): ``r_hat = sum r / (n + 1)``, the posterior mean
      under a ``N(0, sigma^2)`` prior (one pseudo-observation of reward 0).

    Args:
        reward_sums: sums of observed rewards, ``[..., S, A]``.
        visits: ``n[x, a]``, ``[..., S, A]``.
        reward_law: one of ``jaxmdp.mdp.REWARD_LAWS`` (static).

    Returns:
        ``r_hat``, same shape and dtype as ``reward_sums``.
    """
    reward_sums = jnp.asarray(reward_sums)
    n = jnp.asarray(visits).astype(reward_sums.dtype)
    if reward_law == "gaussian":
        return reward_sums / (n + 1)
    return (reward_sums + 1) / (n + 2)


def _estimated_mdp(counts: jax.Array, rewards: jax.Array, mask: jax.Array) -> MDP:
    p_hat = transition_estimate(counts, dtype=rewards.dtype)
    return MDP.unchecked(p_hat, rewards, good_actions(counts, mask))


@jax.jit
def estimated_mdp(counts: ArrayLike, mdp: MDP, rewards: ArrayLike | None = None) -> MDP:
    """The estimated MDP ``(p_hat, R, A_hat)`` at every state.

    Args:
        counts: transition counts ``N[x, a, y]``, shape ``[S, A, S]``.
        mdp: the true MDP; only its (known) rewards ``R`` and admissible ``mask`` are used.
        rewards: rewards to use instead of ``mdp.R`` (e.g. estimated ones), ``[S, A]``.

    Returns:
        ``MDP.unchecked(p_hat, R, good_actions(counts, mdp.mask))``.
    """
    rewards = jnp.asarray(mdp.R if rewards is None else rewards)
    return _estimated_mdp(jnp.asarray(counts), rewards, jnp.asarray(mdp.mask))


@jax.jit
def estimate(counts: ArrayLike, mdp: MDP, *, init_policy: ArrayLike | None = None,
             rewards: ArrayLike | None = None) -> Estimate:
    """Estimated MDP and its average-reward solution, as every agent sees it.

    The estimated MDP of :func:`estimated_mdp` is solved on the good actions
    (``jaxmdp.solve_average_reward``), warm-started from ``init_policy`` when given
    (an agent passes its previous round's policy).

    Args:
        counts: transition counts ``N[x, a, y]``, shape ``[S, A, S]``.
        mdp: the true MDP (rewards and admissible actions only).
        init_policy: optional int ``[S]`` policy to start policy iteration from.
        rewards: rewards to use instead of ``mdp.R`` (an agent's estimates), ``[S, A]``.

    Returns:
        An :class:`Estimate`.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.make("paper-mdp")
        >>> est = jm.estimate(jnp.zeros((3, 2, 3), jnp.int32), mdp)
        >>> bool(jnp.allclose(est.mdp.P, 1 / 3))  # uniform before any data
        True
        >>> est.policy.tolist()  # so the best immediate reward wins
        [1, 1, 0]
    """
    counts = jnp.asarray(counts)
    est_mdp = estimated_mdp(counts, mdp, rewards)
    gain, bias, policy = solve_average_reward(est_mdp, init_policy=init_policy)
    visits = jnp.sum(counts, axis=-1)
    return Estimate(mdp=est_mdp, admissible=jnp.asarray(mdp.mask, dtype=bool),
                    visits=visits, gain=gain, bias=bias, policy=policy)
