r"""Primitives shared by the solvers of :mod:`jaxmdp.planning`.

The status enum and the solution type every solver returns, and the pieces of policy
iteration that the exact, incremental and posterior-sampling planners share: tolerances,
the initial policy, the rows of a policy, evaluation by one LU solve, and the greedy
improvement that keeps the current action within the tie tolerance.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

__all__ = [
    "DEFAULT_MAX_STEPS", "HIGHEST", "RUNNING", "ModelChange", "Planner", "Solution", "Status",
    "default_rtol", "effective_mask", "evaluate", "greedy_reward_policy", "improve",
    "initial_policy", "keep_or_lowest", "noisy_argmax", "policy_rows", "q_values", "tolerance",
    "values_planner",
]

DEFAULT_MAX_STEPS = 1000
"""Default most policy evaluations of a policy-iteration solve (``max_steps``)."""

HIGHEST = jax.lax.Precision.HIGHEST


class Status(enum.IntEnum):
    """Outcome of every solver of :mod:`jaxmdp.planning` (an int32 array in ``status``).

    Attributes:
        CONVERGED: the stopping rule was met. Policy iteration: the policy is greedy with
            respect to its own bias (within the tolerance), so ``(gain, bias)`` solve the
            optimality equations and the policy is average-reward optimal from every
            initial state. Extended value iteration: ``span < epsilon``.
        MAX_STEPS: ``max_steps`` iterations ran without meeting it; the solution
            describes the last iterate (policy iteration: the last evaluated policy and its
            exact values; extended value iteration: the policy greedy for the last ``u``).
        SINGULAR: an evaluation produced non-finite values (e.g. ``P`` or ``R`` not
            finite), or, for the unichain-only incremental planner, a policy with several
            recurrent classes; iteration stopped there and ``gain`` and ``bias`` are 0.
        MULTICHAIN: the optimal gain depends on the initial state (the MDP is multichain
            and not weakly communicating). ``policy`` is optimal from every initial state;
            ``gain`` is the optimal gain from state 0 and ``bias`` the bias of ``policy``
            shifted so that ``bias[0] == 0``. The eager
            :func:`~jaxmdp.solve_average_reward`, :func:`~jaxmdp.gaps` and
            :func:`~jaxmdp.regret_lower_bound` raise ``ValueError`` instead.

    Example:
        >>> from jaxmdp.planning import Status
        >>> int(Status.MAX_STEPS), Status(3).name
        (1, 'MULTICHAIN')
    """

    CONVERGED = 0
    MAX_STEPS = 1
    SINGULAR = 2
    MULTICHAIN = 3


#: Status of an iteration still running (never returned).
RUNNING = -1


class Solution(NamedTuple):
    """What every solver of :mod:`jaxmdp.planning` returns.

    Attributes:
        gain: the (optimal or optimistic) average reward :math:`\\phi`, shape ``[]``.
            Policy iteration: exact, from state 0 when ``status`` is ``MULTICHAIN``.
            Extended value iteration: ``(max + min) / 2`` of :math:`u_{i+1} - u_i`,
            within ``span / 2`` of the optimistic gain.
        bias: relative values, shape ``[S]``. Policy iteration: :math:`v` with
            ``bias[0] == 0``. Extended value iteration: the iterate :math:`u_i` of the
            last sweep, shifted so that ``min(u) == 0`` (except for a warm start returned
            after one sweep, which is ``u0`` itself).
        policy: a deterministic policy, int32, shape ``[S]``: optimal (policy
            iteration) or greedy for ``bias`` in the extended MDP (the lowest index among
            exact ties).
        num_steps: iterations performed (policy evaluations, or sweeps of the extended
            Bellman operator), int32, shape ``[]``; 1 for a warm start already optimal.
        status: a :class:`Status` value, int32, shape ``[]``.
        q_opt: extended value iteration only (else ``None``): the optimistic transition
            laws, shape ``[S, A, S]``, the maximiser of ``q . u`` over each admissible
            pair's ball (``p_hat`` on inadmissible pairs).
        span: extended value iteration only (else ``None``):
            :math:`\\mathrm{sp}(u_{i+1} - u_i)`, shape ``[]``; below ``epsilon`` iff
            ``status`` is ``CONVERGED``.

    Example:
        >>> import jaxmdp as jm
        >>> sol = jm.policy_iteration(jm.envs.make("paper-mdp").P,
        ...                           jm.envs.make("paper-mdp").R)
        >>> sol.policy.tolist(), jm.planning.Status(int(sol.status)).name
        ([0, 1, 0], 'CONVERGED')
    """

    gain: jax.Array
    bias: jax.Array
    policy: jax.Array
    num_steps: jax.Array
    status: jax.Array
    # Extended value iteration only:
    q_opt: None | jax.Array = None
    span: None | jax.Array = None


class ModelChange(NamedTuple):
    """What a planner's ``update`` is told: the model to solve and how it changed.

    Attributes:
        model: the MDP to solve (for an estimate, ``MDP.unchecked(p_hat, R, A_hat)``);
            extended value iteration reads a :class:`~jaxmdp.planning.ConfidenceSet`.
        changed_pair: ``(x, a)`` int32 scalars, the only row of ``model.P`` that may
            differ from the model of the previous update, or ``None`` (unknown: any row
            may have changed). Planners that do not reuse work ignore it.
        refresh: bool scalar: discard reused work (e.g. re-invert from scratch) first.
    """

    model: Any
    changed_pair: tuple[jax.Array, jax.Array] | None = None
    refresh: jax.Array | bool = True


class Planner(NamedTuple):
    """A planner: two pure functions over its own state, as optax's
    ``GradientTransformation``.

    Attributes:
        init: ``init(model) -> state``, the state before the first update (e.g. a warm
            start, an inverse to update).
        update: ``update(state, change) -> (solution, state)``: solves the model of the
            :class:`ModelChange` ``change``, returning a :class:`Solution` and the state
            for the next update.

    Both are written for one model and batch with ``vmap``. Build one with
    :func:`~jaxmdp.planning.exact_planner`, :func:`~jaxmdp.planning.incremental_planner`
    or :func:`~jaxmdp.planning.evi_planner`.

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import planning
        >>> mdp = jm.envs.make("riverswim-6")
        >>> def solve(planner: planning.Planner):
        ...     return planner.update(planner.init(mdp), planning.ModelChange(mdp))[0]
        >>> solve(planning.exact_planner()).policy.tolist()
        [1, 1, 1, 1, 1, 1]
    """

    init: Callable[[Any], Any]
    update: Callable[[Any, ModelChange], tuple[Solution, Any]]


def default_rtol(dtype, num_states: int) -> float:
    """Default relative tie tolerance of policy iteration: ``32 sqrt(S) eps``."""
    return 32.0 * math.sqrt(num_states) * float(jnp.finfo(dtype).eps)


def effective_mask(mdp_mask: jax.Array, mask: jax.Array | None) -> jax.Array:
    """``mdp_mask & mask``, falling back to ``mdp_mask`` in states it would empty."""
    if mask is None:
        return mdp_mask
    mask = jnp.asarray(mask)
    restricted = jnp.logical_and(mdp_mask, mask.astype(bool))
    empty = ~jnp.any(restricted, axis=-1, keepdims=True)
    return jnp.where(empty, mdp_mask, restricted)


def greedy_reward_policy(R: jax.Array, mask: jax.Array) -> jax.Array:
    """The admissible action of largest reward in every state (lowest index on ties)."""
    return jnp.argmax(jnp.where(mask, R, -jnp.inf), axis=-1).astype(jnp.int32)


def initial_policy(R: jax.Array, mask: jax.Array, init_policy) -> jax.Array:
    """``init_policy`` where it is admissible, else :func:`greedy_reward_policy`."""
    greedy = greedy_reward_policy(R, mask)
    if init_policy is None:
        return greedy
    init_policy = jnp.asarray(init_policy)
    num_actions = R.shape[-1]
    clipped = jnp.clip(init_policy, 0, num_actions - 1).astype(jnp.int32)
    admissible = jnp.take_along_axis(mask, clipped[:, None], axis=1)[:, 0]
    valid = (init_policy >= 0) & (init_policy < num_actions) & admissible
    return jnp.where(valid, clipped, greedy)


def policy_rows(P: jax.Array, R: jax.Array, policy: jax.Array):
    """``(P_pi [S, S], r_pi [S])``: the transition rows and rewards of ``policy``."""
    P_pi = jnp.take_along_axis(P, policy[:, None, None], axis=1)[:, 0, :]
    r_pi = jnp.take_along_axis(R, policy[:, None], axis=1)[:, 0]
    return P_pi, r_pi


def evaluate(P: jax.Array, R: jax.Array, policy: jax.Array):
    """Gain and bias of a fixed policy from one LU solve of the evaluation system.

    The unichain evaluation equations ``gain + bias = r_pi + P_pi bias`` with
    ``bias[0] = 0`` are the S x S system ``M x = r_pi`` where ``M = I - P_pi`` with its
    column 0 (the coefficient of ``bias[0] = 0``) replaced by ones (the coefficient of
    ``gain``), and ``x = (gain, bias[1], ..., bias[S-1])``.
    """
    num_states = P.shape[-1]
    P_pi, r_pi = policy_rows(P, R, policy)
    M = jnp.eye(num_states, dtype=P.dtype) - P_pi
    M = M.at[:, 0].set(1)
    lu, piv = jsl.lu_factor(M)
    pivots = jnp.abs(jnp.diagonal(lu))
    threshold = num_states * jnp.finfo(P.dtype).eps * jnp.max(pivots)
    x = jsl.lu_solve((lu, piv), r_pi)
    # `not (min > threshold)` is also True when the pivots are NaN.
    ok = (jnp.min(pivots) > threshold) & jnp.all(jnp.isfinite(x))
    x = jnp.where(ok, x, 0)
    gain = x[0]
    bias = x.at[0].set(0)
    return gain, bias, lu, piv, ok


def q_values(P: jax.Array, R: jax.Array, bias: jax.Array) -> jax.Array:
    """``R + P bias``, shape ``[S, A]``."""
    return R + jnp.einsum("xay,y->xa", P, bias, precision=HIGHEST)


def tolerance(R: jax.Array, mask: jax.Array, bias: jax.Array, rtol: float) -> jax.Array:
    """Absolute tie tolerance: ``rtol (1 + max |R| + span(bias))``."""
    reward_scale = jnp.max(jnp.where(mask, jnp.abs(R), 0))
    return rtol * (1 + reward_scale + jnp.max(bias) - jnp.min(bias))


def keep_or_lowest(values: jax.Array, tol: jax.Array, policy: jax.Array):
    """Per state: the current action if within ``tol`` of the best, else the lowest such.

    ``values`` is ``[S, A]`` with ``-inf`` on excluded actions. Returns the new policy
    and the ``[S, A]`` set of actions within ``tol`` of the best.
    """
    best = jnp.max(values, axis=-1, keepdims=True)
    near_best = values >= best - tol
    keep = jnp.take_along_axis(near_best, policy[:, None], axis=1)[:, 0]
    lowest = jnp.argmax(near_best, axis=-1).astype(jnp.int32)
    return jnp.where(keep, policy, lowest), near_best


def improve(P, R, mask, bias, policy, rtol):
    """Greedy step that keeps the current action when it is within `tol` of the best."""
    q = jnp.where(mask, q_values(P, R, bias), -jnp.inf)
    return keep_or_lowest(q, tolerance(R, mask, bias, rtol), policy)[0]


def noisy_argmax(values: jax.Array, noise) -> jax.Array:
    """Per row, the action of highest ``values + noise``; among actions whose sums tie
    exactly, the one of highest noise.

    The tie rule of RonanFR/UCRL's solvers (``rlexplorer/evi/evi.pyx`` line 180,
    ``scopt.pyx`` line 232 at ``ab64d14``; ``UCRL/evi/tevi.pyx`` line 230 at ``ecf4acc``):
    an action replaces the best so far iff ``c_a + noise_a > c_best + noise_best``, i.e.
    the first index among the maxima of ``c + noise``. The two rules agree unless the
    noisy sums tie exactly while the noises differ, which happens where the noise is
    below the dtype's resolution at ``c`` (float32: ``1e-7`` is lost above 1); there the
    highest noise is what the sums would have chosen exactly. With ``noise`` zero it is
    the lowest index among the maxima.

    Args:
        values: ``[..., A]`` action values (``-inf`` for excluded actions).
        noise: ``[A]`` (or broadcastable) noise per action.

    Returns:
        int32 ``[...]``.
    """
    noisy = values + noise
    top = noisy == jnp.max(noisy, axis=-1, keepdims=True)
    noise = jnp.broadcast_to(jnp.asarray(noise, values.dtype), values.shape)
    return jnp.argmax(jnp.where(top, noise, -jnp.inf), axis=-1).astype(jnp.int32)


def values_planner(solve, *, warm_start: bool, recentre: bool = False,
                   returns_values: bool = False) -> Planner:
    """A :class:`Planner` whose state is the last solution's values.

    ``update`` calls ``solve(model, u0)`` (``model`` the change's
    :class:`~jaxmdp.planning.ConfidenceSet`, ``u0`` in its dtype) with ``u0`` the previous
    values (minus their entry at state 0 when ``recentre``) if ``warm_start``, else zeros,
    and keeps the solution's ``bias``, or, with ``returns_values``, the values that
    ``solve`` returns beside the solution (``solve(model, u0) -> (solution, values)``).
    ScOpt's and TEVI's planners are this with their own ``solve``.
    """

    def init(model):
        return jnp.zeros(jnp.shape(model.p_hat)[0], jnp.asarray(model.p_hat).dtype)

    def update(state, change: ModelChange):
        model = change.model
        if not warm_start:
            u0 = jnp.zeros_like(state)
        else:
            u0 = state - state[0] if recentre else state
        out = solve(model, u0.astype(jnp.asarray(model.p_hat).dtype))
        solution, values = out if returns_values else (out, out.bias)
        return solution, values

    return Planner(init, update)
