r"""Gaps and the Burnetas–Katehakis regret lower bound of an MDP.

From the optimal gain :math:`\phi` and bias :math:`v` of
:func:`~jaxmdp.solve_average_reward` (Cowan, Katehakis & Pirutinsky 2019, section 2.2):
the gaps :math:`\Delta(x, a)` and the Burnetas–Katehakis (1997) constant
:math:`\sum_{x} \sum_{a \notin O(x)} \Delta(x, a) / \mathbf{K}_{x,a}`, for learners told
the mean rewards or learning them (the joint reward x next-state law of
:func:`bernoulli_joint`, or Gaussian rewards of known variance).

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
import numpy as np

from jaxmdp.indices.gaussian import kinf_gaussian
from jaxmdp.indices.kl import kinf
from jaxmdp.mdp import MDP
from jaxmdp.planning._core import (
    DEFAULT_MAX_STEPS,
    Solution,
    default_rtol,
    q_values,
    tolerance,
)
from jaxmdp.planning.policy_iteration import (
    check_constant_gain,
    check_mdp,
    policy_iteration_with_gains,
)

__all__ = [
    "RegretLowerBound",
    "bernoulli_joint",
    "check_unit_rewards",
    "gains_and_gaps",
    "gaps",
    "regret_lower_bound",
]


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


def gaps(mdp: MDP, *, max_steps: int = DEFAULT_MAX_STEPS, rtol: float | None = None) -> jax.Array:
    r"""Gaps :math:`\Delta(x, a) = \phi + v_x - r_{x,a} - \sum_y p^a_{x,y} v_y` (section 2.2).

    The expected loss of taking ``a`` once in ``x`` (the paper's
    :math:`\Delta(x, a, A, P)`), from the optimal gain and bias of
    :func:`solve_average_reward`. Values within the tie tolerance of 0 (including
    every optimal action) are exactly 0; inadmissible pairs are ``+inf``. For MDPs with a
    constant optimal gain (unichain, communicating, weakly communicating); see
    :func:`solve_average_reward` for the multichain error.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``.
        max_steps: maximum number of policy evaluations, a positive Python int.
        rtol: relative tie tolerance; default ``32 * sqrt(S) * eps``.

    Returns:
        ``Delta``, shape ``[S, A]``; 0 on optimal actions, positive on suboptimal ones,
        ``+inf`` on inadmissible ones. Differentiable in ``P`` and ``R`` (at the fixed
        optimal policy) where positive and finite.

    Raises:
        ValueError: as :func:`solve_average_reward` (invalid arguments; eagerly, an
            optimal gain that depends on the initial state).

    Example:
        >>> import jaxmdp as jm
        >>> jm.gaps(jm.envs.make("paper-mdp")).shape
        (3, 2)
    """
    return _solve_with_gaps(mdp, max_steps, rtol)[1]


def _solve_with_gaps(mdp: MDP, max_steps: int, rtol) -> tuple[Solution, jax.Array]:
    check_mdp(mdp, None, None, max_steps, rtol)
    sol, gains = policy_iteration_with_gains(mdp.P, mdp.R, mdp.mask, None, None, max_steps, rtol)
    check_constant_gain(mdp, sol, gains, rtol, masked=False)
    rtol = default_rtol(sol.bias.dtype, mdp.num_states) if rtol is None else rtol
    return sol, _gaps_from_solution(mdp, sol, jnp.asarray(rtol, sol.bias.dtype))


def gains_and_gaps(mdps: MDP) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Optimal gain and :func:`gaps` of every MDP of a batch (leading axis ``M``), and
    each instance's policy-iteration status (:class:`~jaxmdp.planning.Status`).

    Runs the program of :func:`solve_average_reward` and :func:`gaps` (default
    ``max_steps`` and ``rtol``) ``vmap``-ed over the instances, in one compiled call.
    Nothing is checked: an instance whose status is ``MULTICHAIN`` has no constant
    optimal gain (its gain is the one from state 0); call :func:`gaps` on it for the
    error message.

    Args:
        mdps: a batch of MDPs, ``P`` ``[M, S, A, S]``, ``R`` and ``mask`` ``[M, S, A]``.

    Returns:
        ``(gain, gaps, status)`` of shapes ``[M]``, ``[M, S, A]`` and ``[M]`` (int32).
    """
    return _gains_and_gaps(mdps.P, mdps.R, mdps.mask)


@jax.jit
def _gains_and_gaps(P, R, mask):
    def one(P, R, mask):
        sol, _ = policy_iteration_with_gains(P, R, mask, None, None, DEFAULT_MAX_STEPS, None)
        rtol = jnp.asarray(default_rtol(sol.bias.dtype, P.shape[-1]), sol.bias.dtype)
        return sol.gain, _gaps_from_solution(MDP.unchecked(P, R, mask), sol, rtol), sol.status

    return jax.vmap(one)(P, R, mask)


@jax.jit
def _gaps_from_solution(mdp: MDP, sol: Solution, rtol: jax.Array) -> jax.Array:
    P = jnp.asarray(mdp.P, sol.bias.dtype)
    R = jnp.asarray(mdp.R, sol.bias.dtype)
    q = q_values(P, R, sol.bias)
    delta = sol.gain + sol.bias[:, None] - q
    delta = jnp.where(delta <= tolerance(R, mdp.mask, sol.bias, rtol), 0, delta)
    return jnp.where(mdp.mask, delta, jnp.inf)


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
    sol, delta = _solve_with_gaps(mdp, max_steps, rtol)
    if known_rewards:
        return _lower_bound_from_solution(mdp, sol, delta)
    if mdp.reward_law != "gaussian":
        check_unit_rewards(mdp.R, mdp.mask, "known_rewards=False models rewards in [0, 1] "
                           "unless the reward law is Gaussian")
    return _learned_lower_bound(mdp, sol, delta)


def bernoulli_joint(P, R, values):
    r"""The joint law of (reward, next state) for Bernoulli rewards, and its values.

    A pair with next-state law ``p`` and reward mean ``r`` in ``[0, 1]`` observes
    ``(0, y)`` with probability ``(1 - r) p_y`` and ``(1, y)`` with ``r p_y``; a value
    ``v_y`` of the next state becomes ``v_y`` and ``1 + v_y`` on those ``2S`` outcomes,
    so that ``joint . joint_values = r + p . v``.

    Args:
        P: next-state laws, ``[..., S]``.
        R: reward means, ``[...]`` (broadcast against ``P[..., 0]``).
        values: next-state values, ``[..., S]``.

    Returns:
        ``(joint, joint_values)``, both ``[..., 2S]``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.analysis.lower_bound import bernoulli_joint
        >>> joint, values = bernoulli_joint(jnp.array([0.5, 0.5]), jnp.array(0.25),
        ...                                 jnp.array([0.0, 2.0]))
        >>> joint.tolist(), values.tolist()
        ([0.375, 0.375, 0.125, 0.125], [0.0, 2.0, 1.0, 3.0])
    """
    R = jnp.asarray(R)
    joint = jnp.concatenate([(1 - R)[..., None] * P, R[..., None] * P], axis=-1)
    return joint, jnp.concatenate([values, 1 + values], axis=-1)


def check_unit_rewards(R, mask, message: str, hint: str = "") -> None:
    """Raises ``ValueError`` (``message``, then the first pair) if an admissible mean
    reward lies outside ``[0, 1]``.

    Args:
        R: mean rewards, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        message: what needs rewards in ``[0, 1]``, the start of the error message.
        hint: appended to the error message (e.g. what to use instead).

    Raises:
        ValueError: ``"{message}, got R[s, a] = value{hint}"`` for the first such pair.

    Example:
        >>> import numpy as np
        >>> from jaxmdp.analysis.lower_bound import check_unit_rewards
        >>> check_unit_rewards(np.array([[0.0, 1.5]]), np.array([[True, True]]), "here")
        Traceback (most recent call last):
        ...
        ValueError: here, got R[0, 1] = 1.5
    """
    R = np.asarray(R, np.float64)
    bad = ((R < 0) | (R > 1)) & np.asarray(mask, bool)
    if bad.any():
        s, a = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{message}, got R[{s}, {a}] = {float(R[s, a])}{hint}")


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
