r"""Gradient-based sensitivity analysis: what the regret of a learning problem depends on.

Three questions the paper (Cowan, Katehakis & Pirutinsky 2019) could only answer by
re-running simulations, answered here by derivatives:

* :func:`lower_bound_sensitivity`: how the Burnetas–Katehakis (1997) regret lower-bound
  constant (section 2.2)

  .. math::

      \mathcal{C}(P, R) = \sum_x \sum_{a \notin O(x)}
      \frac{\Delta(x, a)}{\mathbf{K}_{x,a}}, \qquad
      \mathbf{K}_{x,a} = \mathrm{kinf}\big(p^a_x, v, \phi + v_x - r_{x,a}\big),

  changes with the transition law ``P`` and the rewards ``R``;
* :func:`gain_sensitivity`: the same for the optimal gain :math:`\phi` of eq. (1);
* :func:`index_sensitivity`: at one state of a learning run, how each action's index
  (MDP-UCB's :math:`u_a`, OLP's :math:`u_a`, MDP-DMED's discrepancy :math:`D_t(a)`,
  section 3) changes with the estimated transition rows, the value vector and the
  confidence level, which shows why an agent prefers an action.

Every derivative is an implicit one: gain and bias are differentiated through the
policy-evaluation equations at the optimal policy (:func:`jaxmdp.policy_iteration`'s
custom JVP), ``kinf``, ``kl_ucb`` through their envelope-theorem JVPs
(:mod:`jaxmdp.indices.kl`). No solver iteration is ever differentiated.

Transition rows live on the simplex, so only zero-sum changes of a row are meaningful.
Gradients with respect to a row are returned projected onto the row's tangent space
:math:`\{d : \sum_y d_y = 0\}` (the mean of the row's gradient is subtracted): for any
zero-sum direction ``d``, ``sum(grad * d)`` is the directional derivative, and the
projected gradient is the steepest-ascent direction within the simplex. At a zero entry
of a row only directions that increase it are feasible; the formulas still apply
one-sidedly.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmdp.agents import Agent, get_agent
from jaxmdp.analysis.lower_bound import regret_lower_bound
from jaxmdp.indices.rules import dmed_divergence, olp_index, ucb_index
from jaxmdp.mdp import MDP
from jaxmdp.planning import estimate, solve_average_reward

__all__ = ["INDEX_AGENTS", "GainSensitivity", "IndexSensitivity", "LowerBoundSensitivity",
           "gain_sensitivity", "index_sensitivity", "lower_bound_sensitivity"]

#: Agents with a deterministic index (MDP-PS samples, so it has none to differentiate).
INDEX_AGENTS = ("ucb", "olp", "dmed")


class LowerBoundSensitivity(NamedTuple):
    """Result of :func:`lower_bound_sensitivity`.

    Attributes:
        constant: the lower-bound constant :math:`\\mathcal{C}`, shape ``[]``.
        d_P: :math:`\\partial \\mathcal{C} / \\partial P`, projected onto each row's
            simplex tangent space (every row sums to 0), shape ``[S, A, S]``; zero rows
            for inadmissible pairs.
        d_R: :math:`\\partial \\mathcal{C} / \\partial R`, shape ``[S, A]``; zero for
            inadmissible pairs.
        policy: an optimal policy (the lowest-index zero-gap action of each state), int32,
            shape ``[S]``; the set of optimal actions is held fixed by the derivative.
        K: :math:`\\mathbf{K}_{x,a}`, shape ``[S, A]``, as in
            :func:`jaxmdp.regret_lower_bound` (0 on optimal pairs, ``+inf`` on
            inadmissible pairs and on unreachable levels).
        gaps: :math:`\\Delta(x, a)`, shape ``[S, A]``.
    """

    constant: jax.Array
    d_P: jax.Array
    d_R: jax.Array
    policy: jax.Array
    K: jax.Array
    gaps: jax.Array


class GainSensitivity(NamedTuple):
    """Result of :func:`gain_sensitivity`.

    Attributes:
        gain: the optimal gain :math:`\\phi`, shape ``[]``.
        d_P: :math:`\\partial \\phi / \\partial P`, projected onto each row's simplex
            tangent space, shape ``[S, A, S]``. Equal to
            :math:`\\mu_x 1[a = \\pi(x)] (v_y - \\bar v)` with :math:`\\mu` the stationary
            distribution of the optimal policy :math:`\\pi` and :math:`\\bar v` the mean
            of the bias.
        d_R: :math:`\\partial \\phi / \\partial R = \\mu_x 1[a = \\pi(x)]`, shape ``[S, A]``.
        bias: the optimal bias :math:`v` (``bias[0] == 0``), shape ``[S]``.
        policy: the optimal policy held fixed by the derivative, int32, shape ``[S]``.
    """

    gain: jax.Array
    d_P: jax.Array
    d_R: jax.Array
    bias: jax.Array
    policy: jax.Array


class IndexSensitivity(NamedTuple):
    """Result of :func:`index_sensitivity` at the current state ``x`` (``A`` actions).

    Attributes:
        index: each action's index, shape ``[A]``: MDP-UCB and OLP, the optimistic value
            :math:`u_a = r_{x,a} + C` (resp. :math:`+ B`), ``+inf`` for admissible
            actions never tried in ``x`` and ``-inf`` for inadmissible ones; MDP-DMED,
            the discrepancy :math:`D_t(a) = \\ln t / \\tilde{\\mathbf{K}}_{x,a} - n_{x,a}`,
            ``-inf`` for the estimated best action :math:`\\hat a^*` and inadmissible
            actions, ``+inf`` where :math:`\\tilde{\\mathbf{K}} = 0`.
        level: each action's confidence level, shape ``[A]``: :math:`\\delta_a = \\ln t /
            n_{x,a}` (MDP-UCB, the KL radius), :math:`d_a = \\sqrt{2 \\ln t / n_{x,a}}`
            (OLP, the L1 radius), ``+inf`` where :math:`n_{x,a} = 0`; :math:`\\ln t`
            (MDP-DMED).
        d_p_hat: ``d_p_hat[a, b]`` is the gradient of ``index[a]`` with respect to the
            estimated row :math:`\\hat p^b_x`, projected onto the simplex tangent space,
            shape ``[A, A, S]``. For MDP-UCB and OLP only ``b == a`` is non-zero; for
            MDP-DMED also ``b`` = :math:`\\hat a^*` (through the level the action must
            reach).
        d_bias: gradient of ``index[a]`` with respect to the estimated value vector
            :math:`\\hat v`, shape ``[A, S]``.
        d_level: :math:`\\partial\\, \\mathrm{index}_a / \\partial\\, \\mathrm{level}_a`,
            shape ``[A]``: :math:`dC/d\\delta = c` (MDP-UCB), :math:`dB/dd` (OLP),
            :math:`1 / \\tilde{\\mathbf{K}}` (MDP-DMED).
        d_log_t: :math:`\\partial\\, \\mathrm{index}_a / \\partial \\ln t` through the
            level, shape ``[A]``.
        p_hat: the estimated rows :math:`\\hat p^a_x`, shape ``[A, S]``.
        bias: the estimated values :math:`\\hat v` (bias of the estimated MDP), ``[S]``.
        action: the action the agent plays here, int32 scalar (the rule of its
            ``select_action``, applied to ``index``).

    Gradients are zero wherever ``index`` is infinite.
    """

    index: jax.Array
    level: jax.Array
    d_p_hat: jax.Array
    d_bias: jax.Array
    d_level: jax.Array
    d_log_t: jax.Array
    p_hat: jax.Array
    bias: jax.Array
    action: jax.Array


def _project_rows(grad: jax.Array, mask: jax.Array) -> jax.Array:
    """Projects each row ``grad[..., :]`` onto ``{sum = 0}``; zero rows where not ``mask``."""
    projected = grad - jnp.mean(grad, axis=-1, keepdims=True)
    return jnp.where(mask[..., None], projected, 0.0)


def _check_mdp(mdp) -> None:
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    if jnp.ndim(mdp.P) != 3:
        raise ValueError(
            "mdp must be a single MDP with P of shape [S, A, S] (use jax.vmap for a batch), "
            f"got P of shape {jnp.shape(mdp.P)}"
        )


def _float_mdp(mdp: MDP) -> MDP:
    dtype = jnp.result_type(mdp.P, mdp.R)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    return MDP.unchecked(jnp.asarray(mdp.P, dtype), jnp.asarray(mdp.R, dtype),
                         jnp.asarray(mdp.mask, bool))


# ---------------------------------------------------------------------------------------
# Lower bound and gain.


@jax.jit
def _lower_bound_sensitivity(mdp: MDP) -> LowerBoundSensitivity:
    mask = mdp.mask

    def constant(P, R):
        bound = regret_lower_bound(MDP.unchecked(P, R, mask))
        return bound.constant, bound

    (value, bound), (d_P, d_R) = jax.value_and_grad(constant, argnums=(0, 1), has_aux=True)(
        mdp.P, mdp.R
    )
    # The optimal actions are the zero-gap ones; report the lowest-index one per state.
    policy = jnp.argmax(mask & (bound.gaps == 0), axis=-1).astype(jnp.int32)
    return LowerBoundSensitivity(
        constant=value,
        d_P=_project_rows(d_P, mask),
        d_R=jnp.where(mask, d_R, 0.0),
        policy=policy,
        K=bound.K,
        gaps=bound.gaps,
    )


def lower_bound_sensitivity(mdp: MDP) -> LowerBoundSensitivity:
    r"""Gradient of the Burnetas–Katehakis regret lower-bound constant w.r.t. ``P`` and ``R``.

    The constant (paper, section 2.2; :func:`jaxmdp.regret_lower_bound`) is

    .. math::

        \mathcal{C} = \sum_x \sum_{a \notin O(x)} \frac{\Delta(x, a)}{\mathbf{K}_{x,a}},
        \quad \Delta(x, a) = \phi + v_x - r_{x,a} - p^a_x \cdot v, \quad
        \mathbf{K}_{x,a} = \mathrm{kinf}(p^a_x, v, \phi + v_x - r_{x,a}),

    and its differential, by the chain rule through :math:`(\phi, v)` and ``kinf``, is

    .. math::

        d\mathcal{C} = \sum_{x, a \notin O(x)} \frac{d\Delta}{\mathbf{K}}
        - \frac{\Delta}{\mathbf{K}^2}\Big(\sum_y (\ln\tfrac{p_y}{q^*_y} + 1)\, dp_y
        - \lambda q^* \cdot dv + \lambda\, d\rho\Big),

    where :math:`(d\phi, dv)` solve the differentiated policy-evaluation equations
    :math:`d\phi + dv_x = dr_{x,\pi(x)} + dp^{\pi(x)}_x \cdot v + p^{\pi(x)}_x \cdot dv`
    (``dv_0 = 0``) and :math:`(q^*, \lambda)` are ``kinf``'s optimiser and multiplier
    (envelope theorem). Reverse-mode autodiff assembles exactly this from the custom
    JVPs of :func:`jaxmdp.policy_iteration` and :func:`jaxmdp.kinf`; no solver iteration
    is differentiated.

    **What is held fixed.** The constant is piecewise smooth: this is the gradient of
    the smooth piece at ``mdp``, with the optimal policy, the set of suboptimal pairs
    :math:`\{(x, a) : \Delta(x, a) > 0\}` and the set of pairs with
    :math:`\mathbf{K} = +\infty` (levels at or above :math:`\max v`, contributing 0) all
    held fixed. Where a perturbation changes the optimal policy the constant is not
    differentiable (it tends to ``+inf`` as a gap closes, since :math:`\mathbf{K}`
    vanishes quadratically in :math:`\Delta`).

    ``d_P`` is projected onto the tangent space of each row's simplex (each row of
    ``d_P`` sums to 0): ``jnp.sum(d_P * D)`` is the derivative along any direction ``D``
    whose rows sum to zero, and ``d_P / ||d_P||`` is the steepest-ascent direction within
    the simplex. Works under ``jit`` and ``vmap`` (over a batch of MDPs).

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``;
            unichain (e.g. all entries of ``P`` positive) so that the gain and bias are
            differentiable.

    Returns:
        :class:`LowerBoundSensitivity` ``(constant, d_P, d_R, policy, K, gaps)``.

    Raises:
        ValueError: if ``mdp`` is not an :class:`~jaxmdp.MDP` of one instance.

    Example:
        >>> import jaxmdp as jm
        >>> sens = jm.lower_bound_sensitivity(jm.envs.make("paper-mdp"))
        >>> sens.d_P.shape, round(float(sens.d_P[0, 1].sum()), 6) + 0.0  # tangent: rows sum to 0
        ((3, 2, 3), 0.0)

    References:
        Burnetas & Katehakis (1997), "Optimal adaptive policies for Markov decision
        processes", Math. Oper. Res. 22(1); Cowan, Katehakis & Pirutinsky (2019),
        section 2.2.
    """
    _check_mdp(mdp)
    return _lower_bound_sensitivity(_float_mdp(mdp))


@jax.jit
def _gain_sensitivity(mdp: MDP) -> GainSensitivity:
    mask = mdp.mask

    def gain(P, R):
        gain, bias, policy = solve_average_reward(MDP.unchecked(P, R, mask))
        return gain, (bias, policy)

    (value, (bias, policy)), (d_P, d_R) = jax.value_and_grad(
        gain, argnums=(0, 1), has_aux=True
    )(mdp.P, mdp.R)
    return GainSensitivity(
        gain=value,
        d_P=_project_rows(d_P, mask),
        d_R=jnp.where(mask, d_R, 0.0),
        bias=bias,
        policy=policy,
    )


def gain_sensitivity(mdp: MDP) -> GainSensitivity:
    r"""Gradient of the optimal gain :math:`\phi` (paper, eq. (1)) w.r.t. ``P`` and ``R``.

    At the optimal policy :math:`\pi`, differentiating the evaluation equations
    :math:`\phi + v_x = r_{x,\pi(x)} + p^{\pi(x)}_x \cdot v` and multiplying by the
    stationary distribution :math:`\mu` of :math:`P_\pi` gives

    .. math::

        \frac{\partial \phi}{\partial r_{x,a}} = \mu_x 1[a = \pi(x)], \qquad
        \frac{\partial \phi}{\partial p^a_{x,y}} = \mu_x 1[a = \pi(x)]\, v_y,

    (the second projected onto each row's tangent space: :math:`v_y - \bar v`). It is
    computed by implicit differentiation of the evaluation system
    (:func:`jaxmdp.policy_iteration`), never through the iterations, with the optimal
    policy held fixed; the gain is continuous but only piecewise smooth where the
    optimal policy changes. Works under ``jit`` and ``vmap`` (over a batch of MDPs).

    Args:
        mdp: the :class:`~jaxmdp.MDP`, ``P`` shape ``[S, A, S]``, ``R`` shape ``[S, A]``
            (unichain).

    Returns:
        :class:`GainSensitivity` ``(gain, d_P, d_R, bias, policy)``.

    Raises:
        ValueError: if ``mdp`` is not an :class:`~jaxmdp.MDP` of one instance.

    Example:
        >>> import jaxmdp as jm
        >>> sens = jm.gain_sensitivity(jm.envs.make("paper-mdp"))
        >>> round(float(sens.d_R.sum()), 6)  # the stationary distribution sums to 1
        1.0
    """
    _check_mdp(mdp)
    return _gain_sensitivity(_float_mdp(mdp))


# ---------------------------------------------------------------------------------------
# Indices at one state of a learning run.


def _levels(name: str, log_t: jax.Array, visits: jax.Array):
    """Each action's confidence level and its derivative in ``ln t`` (``visits >= 1``)."""
    n = jnp.maximum(visits.astype(log_t.dtype), 1.0)
    if name == "ucb":
        return log_t / n, 1.0 / n
    if name == "olp":
        level = jnp.sqrt(2.0 * log_t / n)
        safe = jnp.where(level > 0, level, 1.0)
        return level, jnp.where(level > 0, 1.0 / (n * safe), jnp.inf)
    level = jnp.broadcast_to(log_t, n.shape)  # dmed: ln t itself
    return level, jnp.ones_like(level)


def _raw_index(name: str, p_hat, bias, level, rewards, visits, best):
    """Each action's index formula as a smooth function of ``(p_hat, bias, level)``.

    ``p_hat`` ``[A, S]``, ``bias`` ``[S]``, ``level`` ``[A]``. Returns ``(index, aux)``
    with ``aux`` MDP-DMED's ``K~`` (zeros for the other agents). Where the formula does
    not apply (untried, inadmissible, ``K~`` in ``{0, +inf}``) the value is finite and
    replaced by the caller; the double ``where`` keeps NaN out of the derivatives.
    """
    if name == "ucb":
        index = ucb_index(p_hat, bias, rewards, level)
        return index, jnp.zeros_like(index)
    if name == "olp":
        index = olp_index(p_hat, bias, rewards, level)
        return index, jnp.zeros_like(index)
    # dmed: D(a) = ln t / K~(a) - n(a), K~(a) = kinf(p_a, v, L(a*) - r(a)).
    target = rewards[best] + jnp.dot(p_hat[best], bias)
    divergence = dmed_divergence(p_hat, bias, rewards, target)
    positive = (divergence > 0) & jnp.isfinite(divergence)
    safe = jnp.where(positive, divergence, 1.0)
    index = jnp.where(positive, level / safe, 0.0) - visits.astype(level.dtype)
    return index, jax.lax.stop_gradient(divergence)


def _value_and_jacobian(fun, *primals):
    """``fun(*primals)`` (with aux) and its Jacobian in every primal, from one JVP pass.

    Forward mode over all input directions at once (``vmap`` of ``jvp``): the primal
    solve inside each index's custom JVP runs once, not once per direction.
    """
    flat, unravel = jax.flatten_util.ravel_pytree(primals)
    basis = jnp.eye(flat.size, dtype=flat.dtype)

    def flat_fun(z):
        return fun(*unravel(z))

    def push(direction):
        return jax.jvp(flat_fun, (flat,), (direction,), has_aux=True)

    value, tangents, aux = jax.vmap(push, out_axes=(None, 0, None))(basis)
    jacobians = jax.vmap(unravel, in_axes=1, out_axes=0)(tangents)  # per output, per input
    return value, aux, jacobians


def _index_sensitivity(counts, x, t, mdp: MDP, *, name: str) -> IndexSensitivity:
    # Two programs: the shared (jitted) estimator, compiled once for every agent, and the
    # per-agent index derivatives. Under an outer jit both are inlined.
    return _index_derivatives(counts, x, t, estimate(counts, mdp), name=name)


@functools.partial(jax.jit, static_argnames="name")
def _index_derivatives(counts, x, t, est, *, name: str) -> IndexSensitivity:
    p_hat = est.mdp.P[x]  # [A, S]
    bias = est.bias
    rewards = est.mdp.R[x]
    admissible = est.admissible[x]
    visits = jnp.sum(counts[x], axis=-1)
    log_t = jnp.log(jnp.asarray(t, bias.dtype))
    values = rewards + p_hat @ bias  # L(x, a, p_hat, v_hat)
    best = jnp.argmax(jnp.where(admissible, values, -jnp.inf))
    actions = jnp.arange(rewards.shape[0])
    untried = admissible & (visits == 0)

    level, dlevel_dlog_t = _levels(name, log_t, visits)
    if name == "dmed":
        safe_level = level
    else:
        safe_level = jnp.where(untried | ~admissible, 1.0, level)

    def index_of(p_hat, bias, level):
        return _raw_index(name, p_hat, bias, level, rewards, visits, best)

    raw, divergence, (d_p_hat, d_bias, d_level_full) = _value_and_jacobian(
        index_of, p_hat, bias, safe_level
    )
    d_level = jnp.diagonal(d_level_full)

    if name == "dmed":
        candidate = admissible & (actions != best)
        tie = candidate & (divergence <= 0)  # K~ = 0: infinite rate for ln t > 0
        unreachable = candidate & ~jnp.isfinite(divergence)  # K~ = +inf: D = -n
        n = visits.astype(raw.dtype)
        special = ~candidate | tie | unreachable
        special_value = jnp.where(
            tie, jnp.where(log_t > 0, jnp.inf, -n), jnp.where(unreachable, -n, -jnp.inf)
        )
    else:
        special = ~admissible | untried
        special_value = jnp.where(untried, jnp.inf, -jnp.inf)
    keep = ~special
    index = jnp.where(keep, raw, special_value)
    d_log_t = jnp.where(d_level == 0, 0.0, d_level * dlevel_dlog_t)

    # The agent's rule (jaxmdp.agents.rules): MDP-UCB and OLP play untried admissible
    # actions first (their infinite index), then the argmax of the index; MDP-DMED plays
    # the challenger if its discrepancy is positive, else a* (the paper has no untried
    # rule for it). Ties go to the lowest index.
    if name == "dmed":
        challenger = jnp.argmax(index)
        action = jnp.where(index[challenger] > 0, challenger, best)
    else:
        action = jnp.argmax(index)

    zero = jnp.zeros_like
    return IndexSensitivity(
        index=index,
        level=level if name == "dmed" else jnp.where(visits > 0, level, jnp.inf),
        d_p_hat=jnp.where(keep[:, None, None], _project_rows(d_p_hat, admissible[None, :]),
                          zero(d_p_hat)),
        d_bias=jnp.where(keep[:, None], d_bias, zero(d_bias)),
        d_level=jnp.where(keep, d_level, 0.0),
        d_log_t=jnp.where(keep, d_log_t, 0.0),
        p_hat=p_hat,
        bias=bias,
        action=action.astype(jnp.int32),
    )


def _is_concrete(value) -> bool:
    return not isinstance(value, jax.core.Tracer)


def index_sensitivity(counts: ArrayLike, x: ArrayLike, t: ArrayLike, agent: str | Agent,
                      mdp: MDP) -> IndexSensitivity:
    r"""Gradients of each action's index at state ``x`` of a learning run.

    From the counts ``N[x, a, y]`` the agent builds ``p_hat = (N + 1)/(n + S)``, the
    good actions and the bias :math:`\hat v` of the estimated MDP
    (:func:`jaxmdp.estimate`), then scores each action ``a`` at ``x`` (paper, section 3):

    * ``"ucb"`` (MDP-UCB, eq. 3): :math:`u_a = r_{x,a} + C(\hat p^a_x, \hat v, \delta_a)`,
      :math:`\delta_a = \ln t / n_{x,a}`;
    * ``"olp"``: :math:`u_a = r_{x,a} + B(\hat p^a_x, \hat v, d_a)`,
      :math:`d_a = \sqrt{2 \ln t / n_{x,a}}`;
    * ``"dmed"`` (MDP-DMED): :math:`D_t(a) = \ln t / \tilde{\mathbf{K}}_{x,a} - n_{x,a}`,
      :math:`\tilde{\mathbf{K}}_{x,a} = \mathrm{kinf}(\hat p^a_x, \hat v,
      r_{x,\hat a^*} + \hat p^{\hat a^*}_x \cdot \hat v - r_{x,a})`.

    and returns the partial derivatives of each score with respect to the estimated rows
    :math:`\hat p^b_x` (projected onto the simplex tangent space), the value vector
    :math:`\hat v` (held as an independent input: the derivative does not follow
    :math:`\hat v` through the estimated MDP) and the confidence level. For MDP-UCB these
    are the envelope-theorem formulas :math:`\partial C / \partial \delta = c`,
    :math:`\partial C / \partial v = q^*`, :math:`\partial C / \partial p_y =
    -c(\ln(p_y / q^*_y) + 1)`; for OLP the piecewise-linear derivatives of ``l1_ucb``; for
    MDP-DMED the chain rule through ``kinf``'s :math:`(\lambda, q^*)`. A positive
    ``d_bias[a, y]``, say, says that action ``a`` would look better if state ``y`` were
    worth more. ``action`` is what the agent's own ``select_action`` plays here.

    Works under ``jit`` (``agent`` static; ``counts``, ``x``, ``t`` and ``mdp`` may be
    traced).

    Args:
        counts: transition counts ``N[x, a, y]``, integer, shape ``[S, A, S]``.
        x: the current state, int scalar in ``[0, S)``.
        t: the round (the ``t`` of ``ln t``), int scalar ``>= 1``.
        agent: ``"ucb"``, ``"olp"`` or ``"dmed"`` (or the corresponding
            :class:`~jaxmdp.agents.Agent`); MDP-PS samples its scores and has no index.
        mdp: the true MDP; only its known rewards ``R`` and admissible ``mask`` are used.

    Returns:
        :class:`IndexSensitivity` with ``index``, ``level``, ``d_level``, ``d_log_t``
        ``[A]``, ``d_p_hat`` ``[A, A, S]``, ``d_bias`` ``[A, S]``, ``p_hat`` ``[A, S]``,
        ``bias`` ``[S]`` and ``action``.

    Raises:
        ValueError: for an unknown or index-free agent, counts of the wrong shape or
            negative, or (when concrete) ``x`` out of range or ``t < 1``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.make("paper-mdp")
        >>> sens = jm.index_sensitivity(jm.envs.rigged_counts(), 0, 61, "ucb", mdp)
        >>> sens.d_p_hat.shape, sens.d_bias.shape
        ((2, 2, 3), (2, 3))
    """
    _check_mdp(mdp)
    name = get_agent(agent).name
    if name not in INDEX_AGENTS:
        raise ValueError(f"agent must be one of {list(INDEX_AGENTS)} (agents with an index), "
                         f"got {agent!r}")
    counts = jnp.asarray(counts)
    if counts.shape != jnp.shape(mdp.P):
        raise ValueError(f"counts must have the shape of mdp.P, {jnp.shape(mdp.P)}, "
                         f"got shape {counts.shape}")
    if not jnp.issubdtype(counts.dtype, jnp.integer):
        raise ValueError(f"counts must be integer transition counts, got dtype {counts.dtype}")
    if _is_concrete(counts) and bool(np.any(np.asarray(counts) < 0)):
        raise ValueError(f"counts must be non-negative, got minimum {int(np.min(counts))}")
    if jnp.ndim(x) != 0 or jnp.ndim(t) != 0:
        raise ValueError(f"x and t must be scalars, got shapes {jnp.shape(x)} and {jnp.shape(t)}")
    if _is_concrete(x) and not 0 <= int(x) < counts.shape[0]:
        raise ValueError(f"x must be a state in [0, {counts.shape[0]}), got {x!r}")
    if _is_concrete(t) and int(t) < 1:
        raise ValueError(f"t must be a round >= 1, got {t!r}")
    return _index_sensitivity(counts, jnp.asarray(x, jnp.int32), jnp.asarray(t, jnp.int32),
                              _float_mdp(mdp), name=name)
