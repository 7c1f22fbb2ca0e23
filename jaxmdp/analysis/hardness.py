r"""Exact hardness measures of average-reward MDPs: :func:`hardness`.

How hard an MDP is to learn is described in the literature by a handful of numbers, each
computed here exactly (no value iteration to a tolerance, no simulation) for one MDP or a
batch of MDPs of the same ``S`` and ``A``:

* the optimal gain :math:`\phi^*` and the span of the optimal bias
  :math:`\mathrm{sp}(h^*) = \max_x h^*_x - \min_x h^*_x` (Bartlett & Tewari 2009);
* the diameter :math:`D = \max_{s \ne s'} \min_\pi \mathbb{E}^\pi_s[\tau_{s'}]`
  (Jaksch, Ortner & Auer 2010), :func:`diameter`;
* the mixing time :math:`t_{\mathrm{mix}}(1/4)` and the spectral gap of the optimal
  policy's chain, :func:`mixing_time` and :func:`spectral_gap`;
* the gaps :math:`\Delta(x, a)`, their minimum over sub-optimal pairs and
  :math:`\sum 1/\Delta`;
* the Burnetas & Katehakis (1997) regret lower-bound constant.

Gain, bias, optimal policy, gaps and the lower bound come from
:func:`jaxmdp.solve_average_reward` and :func:`jaxmdp.regret_lower_bound` (policy
iteration, exact up to its tie tolerance).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.analysis.lower_bound import gaps, regret_lower_bound
from jaxmdp.mdp import MDP
from jaxmdp.planning import solve_average_reward

__all__ = [
    "DEFAULT_MAX_MIXING_TIME",
    "Hardness",
    "diameter",
    "hardness",
    "hitting_times",
    "mixing_time",
    "spectral_gap",
]

#: Default step cap of :func:`mixing_time`: ``2**20 - 1`` steps.
DEFAULT_MAX_MIXING_TIME = 2**20 - 1

# Policy iterations allowed per stochastic shortest-path problem (each is one linear
# solve). Policy iteration from a proper policy terminates after finitely many steps
# (at most the number of deterministic policies, in practice a few dozen).
_SSP_MAX_STEPS = 1000

_HIGHEST = jax.lax.Precision.HIGHEST


class Hardness(NamedTuple):
    """Result of :func:`hardness` (each field gains the leading batch axes of the input).

    Attributes:
        gain: optimal gain :math:`\\phi^*`, shape ``[]``.
        bias_span: :math:`\\mathrm{sp}(h^*)`, the span of the optimal bias, shape ``[]``.
        diameter: :math:`D`, shape ``[]``; ``+inf`` if some state cannot be reached
            almost surely from some other (a non-communicating MDP). See
            :func:`diameter`.
        mixing_time: :math:`t_{\\mathrm{mix}}(1/4)` of the optimal policy's chain, an
            integer number of steps stored as a float, ``+inf`` beyond the step cap
            (periodic chains). See :func:`mixing_time`.
        spectral_gap: 1 minus the second-largest eigenvalue modulus of that chain,
            shape ``[]``. See :func:`spectral_gap`.
        gaps: :math:`\\Delta(x, a)`, shape ``[S, A]``, as :func:`jaxmdp.gaps` (0 on
            optimal pairs, ``+inf`` on inadmissible ones).
        min_gap: the smallest positive finite gap, shape ``[]``; ``+inf`` if every
            admissible action is optimal.
        sum_inverse_gaps: :math:`\\sum 1/\\Delta(x, a)` over admissible pairs with a
            positive gap, shape ``[]``; 0 if there are none.
        lower_bound: the Burnetas–Katehakis constant of
            :func:`jaxmdp.regret_lower_bound` (known or learned rewards), shape ``[]``.
    """

    gain: jax.Array
    bias_span: jax.Array
    diameter: jax.Array
    mixing_time: jax.Array
    spectral_gap: jax.Array
    gaps: jax.Array
    min_gap: jax.Array
    sum_inverse_gaps: jax.Array
    lower_bound: jax.Array


# --------------------------------------------------------------------------------------
# Diameter: one stochastic shortest-path problem per target state.


def _almost_sure_set(P: jax.Array, mask: jax.Array, target: jax.Array):
    """States from which some policy reaches ``target`` with probability 1.

    The greatest fixed point of "can reach ``target`` with positive probability using
    only actions whose support stays in the set" (the almost-sure reachability fixed
    point of probabilistic model checking, e.g. Baier & Katoen, *Principles of Model
    Checking*, 2008, chapter 10). Returns the set ``U`` (bool ``[S]``), the actions
    ``allowed[x, a]`` (admissible, support inside ``U``) and the graph distance to
    ``target`` along allowed actions (``S`` outside ``U``).
    """
    S = P.shape[-1]
    positive = (P > 0) & mask[..., None]
    is_target = jnp.arange(S) == target

    def distances(allowed):
        edges = jnp.any(positive & allowed[..., None], axis=1)  # [x, y]
        dist0 = jnp.where(is_target, 0, S)

        def relax(carry):
            dist, _ = carry
            best = jnp.min(jnp.where(edges, dist[None, :], S), axis=1) + 1
            new = jnp.minimum(dist, jnp.where(is_target, 0, jnp.minimum(best, S)))
            return new, jnp.any(new != dist)

        return jax.lax.while_loop(lambda c: c[1], relax, (dist0, jnp.array(True)))[0]

    def outer(carry):
        inside, _, _ = carry
        allowed = mask & ~jnp.any(positive & ~inside[None, None, :], axis=-1)
        dist = distances(allowed)
        new = dist < S
        return new, jnp.any(new != inside), dist

    inside, _, dist = jax.lax.while_loop(
        lambda c: c[1], outer, (jnp.ones(S, bool), jnp.array(True), jnp.zeros(S, int))
    )
    allowed = mask & ~jnp.any(positive & ~inside[None, None, :], axis=-1)
    return inside, allowed, dist


def _ssp_hitting_times(P: jax.Array, mask: jax.Array, target: jax.Array) -> jax.Array:
    """Minimal expected hitting times of ``target`` from every state (policy iteration)."""
    S = P.shape[-1]
    dtype = P.dtype
    inside, allowed, dist = _almost_sure_set(P, mask, target)
    free = inside & (jnp.arange(S) != target)  # states whose time is unknown
    # A proper initial policy: an allowed action that moves one step closer w.p. > 0.
    closer = dist[None, None, :] < dist[:, None, None]
    progress = jnp.where(allowed, jnp.sum(jnp.where(closer, P, 0), axis=-1), -1)
    policy0 = jnp.argmax(progress, axis=-1)
    rtol = 32.0 * math.sqrt(S) * float(jnp.finfo(dtype).eps)

    def evaluate(policy):
        P_pi = jnp.take_along_axis(P, policy[:, None, None], axis=1)[:, 0, :]
        Q = jnp.where(free[:, None] & free[None, :], P_pi, 0)
        M = jnp.eye(S, dtype=dtype) - Q
        return jnp.linalg.solve(M, free.astype(dtype))

    def step(carry):
        policy, times, _, k = carry
        cost = 1 + jnp.einsum("xay,y->xa", P, times, precision=_HIGHEST)
        cost = jnp.where(allowed, cost, jnp.inf)
        best = jnp.min(cost, axis=-1)
        tol = rtol * (1 + jnp.max(times))
        current = jnp.take_along_axis(cost, policy[:, None], axis=1)[:, 0]
        near = cost <= best[:, None] + tol
        new = jnp.where(current <= best + tol, policy, jnp.argmax(near, axis=-1))
        new = jnp.where(free, new, policy)
        changed = jnp.any(new != policy)
        times = jnp.where(changed, evaluate(new), times)
        return new, times, changed, k + 1

    init = (policy0, evaluate(policy0), jnp.array(True), jnp.array(0))
    _, times, _, _ = jax.lax.while_loop(
        lambda c: c[2] & (c[3] < _SSP_MAX_STEPS), step, init
    )
    return jnp.where(inside, times, jnp.inf)


def hitting_times(mdp: MDP) -> jax.Array:
    r"""Minimal expected hitting times :math:`T(x, y) = \min_\pi \mathbb{E}^\pi_x[\tau_y]`.

    :math:`\tau_y = \min\{t \ge 0 : x_t = y\}` (so :math:`T(y, y) = 0`). For each target
    ``y`` this is a stochastic shortest-path problem with unit costs, solved exactly:

    1. the states that reach ``y`` almost surely under some policy are the greatest
       fixed point of "reach ``y`` with positive probability through actions whose
       support stays in the set" (almost-sure reachability); every other state has
       :math:`T = +\infty`;
    2. from a proper policy (in each of those states, an action moving one step closer
       to ``y`` in the transition graph with positive probability), policy iteration
       (Bertsekas & Tsitsiklis, "An analysis of stochastic shortest path problems",
       Math. Oper. Res. 16(3), 1991) evaluates each policy by one linear solve
       :math:`(I - Q_\pi) T = 1` and switches, state by state, to the action minimising
       :math:`1 + \sum_z p^a_{x,z} T(z)` (keeping the current action within a relative
       tolerance ``32 sqrt(S) eps`` of the minimum, so it never cycles on ties). Every
       policy it meets is proper, and it stops after finitely many steps with the exact
       optimum. The loop is capped at 1000 evaluations per target; were the cap reached,
       the times returned would be those of the last (proper) policy, upper bounds.

    Pure and traceable: works under ``jit`` and ``vmap``; gradients are stopped (the
    result is not differentiated).

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, A, S]``.

    Returns:
        ``T``, shape ``[S, S]``: ``T[x, y]`` the minimal expected number of steps from
        ``x`` to ``y``, ``+inf`` where ``y`` cannot be reached almost surely from ``x``.

    Example:
        >>> import jaxmdp as jm
        >>> T = jm.analysis.hardness.hitting_times(jm.envs.make("riverswim-6"))
        >>> round(float(T[0, 5]), 4), float(T[5, 0])
        (13.8776, 5.0)
    """
    P = jax.lax.stop_gradient(jnp.asarray(mdp.P))
    mask = jnp.asarray(mdp.mask, bool)
    S = P.shape[-1]
    columns = jax.vmap(lambda y: _ssp_hitting_times(P, mask, y))(jnp.arange(S))
    return columns.T


def diameter(mdp: MDP) -> jax.Array:
    r"""The diameter :math:`D = \max_{x \ne y} \min_\pi \mathbb{E}^\pi_x[\tau_y]`.

    The largest minimal expected hitting time between two distinct states (Jaksch,
    Ortner & Auer 2010, definition 1), from :func:`hitting_times` (one exact stochastic
    shortest-path problem per target). ``+inf`` if the MDP is not communicating (some
    state cannot be reached almost surely from another), a value and not an error; 0
    for a single state.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, A, S]``.

    Returns:
        ``D``, shape ``[]``.

    Example:
        >>> import jaxmdp as jm
        >>> round(float(jm.analysis.hardness.diameter(jm.envs.make("riverswim-6"))), 4)
        13.8776
    """
    T = hitting_times(mdp)
    S = T.shape[-1]
    off = ~jnp.eye(S, dtype=bool)
    return jnp.max(jnp.where(off, T, 0))


# --------------------------------------------------------------------------------------
# Mixing of a fixed chain.


def _cesaro_limit(P_pi: jax.Array) -> jax.Array:
    """The Cesaro limit ``P*`` of ``P_pi^t``: the projector on null(I - P) along range.

    From the SVD ``I - P = U diag(sigma) V^T``: with ``U0``, ``V0`` the singular vectors
    of the numerically zero singular values (at most ``S eps sigma_max``; the smallest
    always counts, as ``(I - P) 1 = 0``), ``P* = V0 (U0^T V0)^{-1} U0^T`` (Puterman 1994,
    appendix A). Rows of ``P*`` are the limiting laws from each start (the stationary
    law for a unichain chain). Static shapes: the other directions enter ``U0^T V0`` as
    an identity block.
    """
    S = P_pi.shape[-1]
    A = jnp.eye(S, dtype=P_pi.dtype) - P_pi
    U, sigma, Vt = jnp.linalg.svd(A)
    null = (sigma <= S * jnp.finfo(P_pi.dtype).eps * sigma[0]).at[-1].set(True)
    U0 = jnp.where(null[None, :], U, 0)
    V0 = jnp.where(null[:, None], Vt, 0).T
    coupling = jnp.matmul(U0.T, V0, precision=_HIGHEST) + jnp.diag(~null).astype(P_pi.dtype)
    return jnp.matmul(V0, jnp.linalg.solve(coupling, U0.T), precision=_HIGHEST)


def _check_cap(max_steps) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, int | np.integer) or max_steps < 1:
        raise ValueError(f"max_mixing_time must be a positive Python int, got {max_steps!r}")
    return int(max_steps)


def mixing_time(P_pi: jax.Array, *, max_steps: int = DEFAULT_MAX_MIXING_TIME) -> jax.Array:
    r"""Mixing time :math:`t_{\mathrm{mix}}(1/4)` of a Markov chain, in total variation.

    .. math::

        d(t) = \max_x \mathrm{TV}\big(P^t(x, \cdot), P^*(x, \cdot)\big), \qquad
        t_{\mathrm{mix}} = \min\{t \ge 0 : d(t) \le 1/4\},

    with :math:`\mathrm{TV}(\mu, \nu) = \frac12 \sum_y |\mu_y - \nu_y|` and :math:`P^*`
    the Cesàro limit of :math:`P^t`, whose row ``x`` is the stationary law for an
    irreducible (or unichain) chain and, for a chain with several recurrent classes, the
    limiting law from ``x`` (Levin, Peres & Wilmer 2017, section 4.5, for the
    irreducible case). :math:`d` is non-increasing (``P* P = P*``, so
    :math:`P^{t+1} - P^* = (P^t - P^*) P` and multiplying by a stochastic matrix does not
    increase the TV norm of a row), so the minimum is found exactly by binary lifting
    over the powers :math:`P^{2^j}` (about :math:`2 \log_2` ``max_steps`` matrix
    products). A periodic recurrent class (period :math:`k \ge 2`) never mixes:
    :math:`P^t(x, \cdot)` stays on one cyclic subclass, at TV distance at least
    :math:`1 - 1/k \ge 1/2` from the stationary law, so its mixing time is ``+inf``
    (as for any chain with :math:`d(\text{max\_steps}) > 1/4`). The comparison with 1/4
    allows a rounding slack of ``64 S eps``.

    Traceable (``jit``, ``vmap``); not differentiated.

    Args:
        P_pi: a stochastic matrix, shape ``[S, S]`` (rows sum to 1).
        max_steps: the step cap, a positive Python int (default ``2**20 - 1``).

    Returns:
        :math:`t_{\mathrm{mix}}(1/4)`, shape ``[]``, a float holding an integer, or
        ``+inf`` when :math:`d(t) > 1/4` for every :math:`t \le` ``max_steps``.

    Raises:
        ValueError: if ``max_steps`` is not a positive int.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.analysis.hardness import mixing_time
        >>> float(mixing_time(jnp.array([[0.9, 0.1], [0.1, 0.9]])))
        4.0
        >>> float(mixing_time(jnp.array([[0.0, 1.0], [1.0, 0.0]])))
        inf
    """
    cap = _check_cap(max_steps)
    P_pi = jax.lax.stop_gradient(jnp.asarray(P_pi))
    S = P_pi.shape[-1]
    limit = _cesaro_limit(P_pi)
    threshold = 0.25 + 64 * S * jnp.finfo(P_pi.dtype).eps

    def distance(Pt):
        return 0.5 * jnp.max(jnp.sum(jnp.abs(Pt - limit), axis=-1))

    bits = cap.bit_length()

    def square(Pt, _):
        return jnp.matmul(Pt, Pt, precision=_HIGHEST), Pt

    _, powers = jax.lax.scan(square, P_pi, None, length=bits)  # powers[j] = P^(2^j)
    int_dtype = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32

    def descend(i, carry):
        # Largest t <= cap with d(t) > 1/4 (d is non-increasing), built bit by bit.
        t, current = carry
        j = bits - 1 - i
        step = jnp.left_shift(jnp.ones((), int_dtype), j)
        candidate = jnp.matmul(current, powers[j], precision=_HIGHEST)
        accept = (t + step <= cap) & (distance(candidate) > threshold)
        return jnp.where(accept, t + step, t), jnp.where(accept, candidate, current)

    t, _ = jax.lax.fori_loop(
        0, bits, descend, (jnp.zeros((), int_dtype), jnp.eye(S, dtype=P_pi.dtype))
    )
    result = jnp.where(t >= cap, jnp.inf, (t + 1).astype(P_pi.dtype))
    return jnp.where(distance(jnp.eye(S, dtype=P_pi.dtype)) <= threshold, 0, result)


def spectral_gap(P_pi: jax.Array) -> jax.Array:
    r"""Absolute spectral gap :math:`1 - |\lambda_2|` of a Markov chain.

    :math:`|\lambda_2|` is the second-largest modulus among the eigenvalues of
    :math:`P` counted with multiplicity (the largest is 1): 0 for a chain with several
    recurrent classes (eigenvalue 1 twice) or a periodic class (an eigenvalue on the
    unit circle other than 1), positive for an irreducible aperiodic chain. A single
    state has gap 1. Computed with ``jnp.linalg.eigvals`` (a general, non-symmetric
    eigensolver, available on CPU), so rounding of order ``eps`` can make an exact 0
    appear as about ``1e-15``; the result is clipped to ``[0, 1]``.

    Args:
        P_pi: a stochastic matrix, shape ``[S, S]``.

    Returns:
        The gap, shape ``[]``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.analysis.hardness import spectral_gap
        >>> round(float(spectral_gap(jnp.array([[0.9, 0.1], [0.2, 0.8]]))), 6)
        0.3
    """
    P_pi = jax.lax.stop_gradient(jnp.asarray(P_pi))
    S = P_pi.shape[-1]
    if S == 1:
        return jnp.ones((), P_pi.dtype)
    moduli = jnp.sort(jnp.abs(jnp.linalg.eigvals(P_pi)))[::-1]
    return jnp.clip(1 - moduli[1], 0, 1).astype(P_pi.dtype)


# --------------------------------------------------------------------------------------
# All measures.


def _gap_summaries(delta: jax.Array):
    suboptimal = (delta > 0) & jnp.isfinite(delta)
    min_gap = jnp.min(jnp.where(suboptimal, delta, jnp.inf))
    inverse = jnp.where(suboptimal, 1 / jnp.where(suboptimal, delta, 1), 0)
    return min_gap, jnp.sum(inverse)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _hardness_one(mdp: MDP, known_rewards: bool, cap: int, with_bound: bool) -> Hardness:
    gain, bias, policy = solve_average_reward(mdp)
    if with_bound:
        bound = regret_lower_bound(mdp, known_rewards=known_rewards)
        delta, constant = bound.gaps, bound.constant
    else:
        delta, constant = gaps(mdp), jnp.zeros((), bias.dtype)
    P = jnp.asarray(mdp.P, bias.dtype)
    P_pi = jnp.take_along_axis(P, policy[:, None, None], axis=1)[:, 0, :]
    min_gap, sum_inverse = _gap_summaries(jax.lax.stop_gradient(delta))
    return Hardness(
        gain=gain,
        bias_span=jnp.max(bias) - jnp.min(bias),
        diameter=diameter(mdp).astype(bias.dtype),
        mixing_time=mixing_time(P_pi, max_steps=cap),
        spectral_gap=spectral_gap(P_pi),
        gaps=delta,
        min_gap=min_gap,
        sum_inverse_gaps=sum_inverse,
        lower_bound=constant,
    )


def _batched(fun, mdp: MDP, batch_ndim: int):
    for _ in range(batch_ndim):
        fun = jax.vmap(fun)
    return fun(mdp)


def hardness(mdp: MDP, *, known_rewards: bool = True,
             max_mixing_time: int = DEFAULT_MAX_MIXING_TIME) -> Hardness:
    r"""Exact hardness measures of an MDP, or of a batch of MDPs of the same ``S`` and ``A``.

    For each MDP (see :class:`Hardness` and the functions named there):

    * ``gain`` :math:`\phi^*` and ``bias_span`` :math:`\mathrm{sp}(h^*)` from
      :func:`jaxmdp.solve_average_reward`; both differentiable in ``P`` and ``R`` where
      the optimal policy is unique and unichain (the span wherever its max and min are
      attained once), by the solver's implicit differentiation;
    * ``diameter`` :math:`D` (:func:`diameter`: one exact stochastic shortest-path
      problem per target state; ``+inf`` for a non-communicating MDP);
    * ``mixing_time`` :math:`t_{\mathrm{mix}}(1/4)` in total variation
      (:func:`mixing_time`, ``+inf`` beyond ``max_mixing_time`` steps, in particular
      for a periodic chain) and ``spectral_gap`` :math:`1 - |\lambda_2|`
      (:func:`spectral_gap`) of the chain :math:`P_{\pi^*}` of the optimal policy;
    * ``gaps`` :math:`\Delta(x, a)` (as :func:`jaxmdp.gaps`), ``min_gap`` over
      sub-optimal pairs (``+inf`` if none) and ``sum_inverse_gaps``
      :math:`\sum_{\Delta(x, a) > 0} 1/\Delta(x, a)`;
    * ``lower_bound``: the Burnetas–Katehakis constant of
      :func:`jaxmdp.regret_lower_bound` with the given ``known_rewards``.

    **Which optimal policy.** The policy-dependent fields (``mixing_time``,
    ``spectral_gap``, and ``bias_span``, ``gaps`` through the bias) use the policy
    returned by :func:`jaxmdp.solve_average_reward`: policy iteration started from the
    action of largest immediate reward (lowest index among ties) that keeps its current
    action whenever it is within the tie tolerance of the best, and otherwise takes the
    lowest-index near-best action.

    **Batches.** ``mdp`` may carry leading batch axes (``P`` of shape
    ``[..., S, A, S]``, e.g. from :func:`jaxmdp.envs.batch`); every field then gains
    them. The computation is ``vmap``-ed, and ``hardness`` itself can be called under
    ``jit`` and ``vmap``, except that ``known_rewards=False`` with a non-Gaussian reward
    law needs concrete values (:func:`jaxmdp.regret_lower_bound` checks eagerly that the
    rewards lie in ``[0, 1]``) and is then evaluated instance by instance.

    **Multichain MDPs.** For an MDP whose optimal gain depends on the initial state,
    this returns the values of :func:`jaxmdp.solve_average_reward` under ``jit`` (the
    gain from state 0) and ``diameter = inf`` (such an MDP is not communicating); it
    never raises for them.

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` of shape ``[..., S, A, S]`` and ``R`` of
            shape ``[..., S, A]``.
        known_rewards: the lower bound for learners told the mean rewards (default) or
            learning them (see :func:`jaxmdp.regret_lower_bound`).
        max_mixing_time: the step cap of :func:`mixing_time`, a positive Python int
            (default ``2**20 - 1``).

    Returns:
        A :class:`Hardness` with the shapes given there, prefixed by the batch axes.

    Raises:
        ValueError: if ``mdp`` is not an ``MDP``, ``known_rewards`` not a bool,
            ``max_mixing_time`` not a positive int; with ``known_rewards=False`` and a
            non-Gaussian law, under a transformation, or (eagerly) for an admissible
            reward outside ``[0, 1]`` or an instance whose optimal gain depends on the
            initial state (the errors of :func:`jaxmdp.regret_lower_bound`).

    Example:
        >>> import jaxmdp as jm
        >>> h = jm.hardness(jm.envs.make("riverswim-6"))
        >>> round(float(h.gain), 4), round(float(h.diameter), 4), float(h.mixing_time)
        (0.875, 13.8776, 16.0)
        >>> hs = jm.hardness(jm.envs.batch("garnet-10-2-3", seeds=range(4)))
        >>> hs.diameter.shape
        (4,)
    """
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    if not isinstance(known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {known_rewards!r}")
    cap = _check_cap(max_mixing_time)
    P_shape = jnp.shape(mdp.P)
    if len(P_shape) < 3 or P_shape[-1] != P_shape[-3] or jnp.shape(mdp.R) != P_shape[:-1]:
        raise ValueError(f"mdp must have P of shape [..., S, A, S] and R of shape "
                         f"[..., S, A], got {P_shape} and {jnp.shape(mdp.R)}")
    batch_ndim = len(P_shape) - 3
    traced = any(isinstance(x, jax.core.Tracer) for x in (mdp.P, mdp.R, mdp.mask))
    eager_bound = not known_rewards and mdp.reward_law != "gaussian"
    if eager_bound and traced:
        raise ValueError("hardness(known_rewards=False) needs concrete MDP values for a "
                         f"{mdp.reward_law!r} reward law (not under jit/vmap); use the "
                         "Gaussian law or call it outside the transformation")
    result = _batched(
        lambda m: _hardness_one(m, known_rewards, cap, not eager_bound), mdp, batch_ndim
    )
    if not eager_bound:
        return result
    leaves = jax.tree_util.tree_leaves(mdp)
    batch_shape = P_shape[:batch_ndim]
    constants = np.empty(batch_shape, dtype=np.dtype(jnp.asarray(result.gain).dtype))
    for index in np.ndindex(*batch_shape):
        one = jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(mdp), [leaf[index] for leaf in leaves]
        )
        constants[index] = float(regret_lower_bound(one, known_rewards=False).constant)
    return result._replace(lower_bound=jnp.asarray(constants))
