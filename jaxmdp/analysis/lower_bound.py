r"""Gaps and the Burnetas–Katehakis regret lower bound of an MDP.

From the optimal gain :math:`\phi` and bias :math:`v` of
:func:`~jaxmdp.solve_average_reward` (Cowan, Katehakis & Pirutinsky 2019, section 2.2):
the gaps :math:`\Delta(x, a)` (:func:`jaxmdp.planning.suboptimality.gaps`, re-exported
here) and the Burnetas–Katehakis (1997) constant
:math:`\sum_{x} \sum_{a \notin O(x)} \Delta(x, a) / \mathbf{K}_{x,a}`, for learners told
the mean rewards or learning them (the joint reward x next-state law of
:func:`jaxmdp.mdp.bernoulli_joint`, or Gaussian rewards of known variance).

The bound follows Burnetas & Katehakis (1997), whose theorem assumes every policy
irreducible; for communicating MDPs with zero transitions it is the same formula, with
:math:`\mathbf{K}` the infimum over all laws ``q`` on the states, including states where
``P[x, a]`` is 0 (``KL(p || q)`` stays finite there). When the optimal policy is not unique
up to its recurrent class (tied optima) the bias, hence the gaps and ``K``, depend on which
solution of eq. (1) is returned.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.indices.gaussian import kinf_gaussian
from jaxmdp.indices.kl import kinf
from jaxmdp.mdp import MDP, bernoulli_joint, check_unit_rewards
from jaxmdp.planning import DEFAULT_MAX_STEPS, Solution
from jaxmdp.planning.suboptimality import gaps, solve_with_gaps

# gaps is planning's (jaxmdp.planning.suboptimality), presented here beside the bound.
__all__ = ["RegretLowerBound", "gaps", "regret_lower_bound"]


class RegretLowerBound(NamedTuple):
    """Result of :func:`regret_lower_bound`.

    Attributes:
        constant: :math:`\\sum_{x, a \\notin O(x)} \\Delta(x, a) / \\mathbf{K}_{x,a}`,
            shape ``[]``; the regret of any uniformly fast policy grows at least like
            ``constant * ln T``.
        K: :math:`\\mathbf{K}_{x,a}` for every pair, shape ``[S, A]``: ``kinf`` on
            suboptimal pairs, 0 on optimal pairs, ``+inf`` on inadmissible pairs.
        gaps: :math:`\\Delta(x, a)`, shape ``[S, A]``, as returned by :func:`gaps`.
    """

    constant: jax.Array
    K: jax.Array
    gaps: jax.Array


def regret_lower_bound(
    mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None,
    known_rewards: bool = True,
) -> RegretLowerBound:
    r"""Burnetas–Katehakis (1997) regret lower-bound constant (paper, section 2.2).

    .. math::

        \liminf_T \frac{R_\pi(T)}{\ln T} \ge
        \sum_x \sum_{a \notin O(x)} \frac{\Delta(x, a)}{\mathbf{K}_{x,a}}, \qquad
        \mathbf{K}_{x,a} = \mathrm{kinf}\big(p^a_x, v, \phi + v_x - r_{x,a}\big),

    the smallest KL divergence from :math:`p^a_x` to a law under which ``a`` would
    match the optimal value in ``x`` (with ``v`` and :math:`\phi` the optimal bias and
    gain). Pairs with :math:`\mathbf{K} = +\infty` (no such law: the level is at least
    :math:`\max v`) contribute 0; a suboptimal pair with :math:`\mathbf{K} = 0` (possible
    only through rounding for a vanishing gap) contributes ``+inf``. ``P[x, a]`` may have
    zeros (communicating MDPs such as grid worlds): the infimum runs over every law on
    the states, including those ``P[x, a]`` does not reach, where ``KL(p || q)`` stays
    finite. Requires a constant optimal gain (see :mod:`jaxmdp.analysis.lower_bound` for the classes
    supported and what Burnetas & Katehakis assume).

    With ``known_rewards=False`` the learner must also tell reward means apart, and the
    observation of a round is the pair (reward, next state): ``K`` is the infimum of the
    KL divergence over joint laws of that pair, whose KL is the sum of the two parts. For
    rewards in ``[0, 1]`` (``mdp.reward_law`` ``"bernoulli"``, or ``"deterministic"``
    learned as Bernoulli, the model of jaxmdp's learning agents) it is
    ``kinf(((1 - R) P, R P), (v, 1 + v), phi + v_x)`` on ``2S`` outcomes; for Gaussian
    rewards of known ``sigma`` it is ``kinf_gaussian(P, v, R, sigma, phi + v_x)``.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.
        known_rewards: the bound for learners told the mean rewards (default, the
            paper's setting) or learning them from ``mdp.reward_law``'s draws.

    Returns:
        :class:`RegretLowerBound` ``(constant, K, gaps)``: shapes ``[]``, ``[S, A]``,
        ``[S, A]``. ``K`` is 0 on optimal pairs and ``+inf`` on inadmissible ones;
        ``gaps`` as in :func:`gaps`.

    Raises:
        ValueError: as :func:`solve_average_reward` (invalid arguments; eagerly, an
            optimal gain that depends on the initial state).

    Example:
        >>> import jaxmdp as jm
        >>> bound = jm.regret_lower_bound(jm.envs.make("paper-mdp"))
        >>> bound.K.shape
        (3, 2)
    """
    if not isinstance(known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {known_rewards!r}")
    sol, delta = solve_with_gaps(mdp, max_steps, rtol)
    if known_rewards:
        return _lower_bound_from_solution(mdp, sol, delta)
    if mdp.reward_law != "gaussian":
        check_unit_rewards(mdp.R, mdp.mask, "known_rewards=False models rewards in [0, 1] "
                           "unless the reward law is Gaussian")
    return _learned_lower_bound(mdp, sol, delta)


def _bound(mdp: MDP, K, delta) -> RegretLowerBound:
    """``(sum of Delta / K over suboptimal pairs, K, Delta)``, with K set to 0 on optimal
    and ``+inf`` on inadmissible pairs; a suboptimal pair with ``K <= 0`` gives ``+inf``."""
    suboptimal = mdp.mask & (delta > 0)
    K = jnp.where(suboptimal, K, jnp.where(mdp.mask, 0, jnp.inf))
    finite = suboptimal & (K > 0) & jnp.isfinite(K)
    ratio = jnp.where(finite, delta, 0) / jnp.where(finite, K, 1)
    ratio = jnp.where(suboptimal & (K <= 0), jnp.inf, ratio)
    return RegretLowerBound(jnp.sum(ratio), K, delta)


@jax.jit
def _learned_lower_bound(mdp: MDP, sol: Solution, delta) -> RegretLowerBound:
    P = jnp.asarray(mdp.P, sol.bias.dtype)
    R = jnp.asarray(mdp.R, sol.bias.dtype)
    level = sol.gain + sol.bias[:, None]
    bias = jnp.broadcast_to(sol.bias, P.shape)
    if mdp.reward_law == "gaussian":
        K = kinf_gaussian(P, bias, R, jnp.asarray(mdp.reward_sigma, P.dtype), level)
    else:
        K = kinf(*bernoulli_joint(P, R, bias), level)
    return _bound(mdp, K, delta)


@jax.jit
def _lower_bound_from_solution(mdp: MDP, sol: Solution, delta) -> RegretLowerBound:
    P = jnp.asarray(mdp.P, sol.bias.dtype)
    level = sol.gain + sol.bias[:, None] - mdp.R
    K = kinf(P, jnp.broadcast_to(sol.bias, P.shape), level)
    return _bound(mdp, K, delta)
