r"""The gaps of an MDP: the loss of one suboptimal action.

From the optimal gain :math:`\phi` and bias :math:`v` of
:func:`~jaxmdp.solve_average_reward` (Cowan, Katehakis & Pirutinsky 2019, section 2.2):
:math:`\Delta(x, a) = \phi + v_x - r_{x,a} - \sum_y p^a_{x,y} v_y`. The simulator's
pseudo-regret and the lower bound of :mod:`jaxmdp.analysis.lower_bound` both read them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmdp.mdp import MDP
from jaxmdp.planning._core import (
    DEFAULT_MAX_STEPS,
    Solution,
    default_rtol,
    q_values,
    tolerance,
)
from jaxmdp.planning._policy_iteration import (
    check_constant_gain,
    check_mdp,
    policy_iteration_with_gains,
)

__all__ = ["gains_and_gaps", "gaps", "solve_with_gaps"]


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
    return solve_with_gaps(mdp, max_steps, rtol)[1]


def solve_with_gaps(mdp: MDP, max_steps: int = DEFAULT_MAX_STEPS,
                    rtol: float | None = None) -> tuple[Solution, jax.Array]:
    """The optimal solution of ``mdp`` and its :func:`gaps`, as :func:`gaps` computes them
    (the solution is the policy-iteration :class:`~jaxmdp.planning.Solution`)."""
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
