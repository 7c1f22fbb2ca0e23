r"""SCAL and SCAL+: the UCRL family with the bias span capped at ``c`` (ScOpt).

Both are :func:`~jaxmdp.agents.ucrl.ucrl_family_agent` with a ``sets`` value
(:class:`SCALSets`, :class:`SCALPlusSets`) that brings its confidence sets *and* its
planner, the span-truncated operator :func:`scopt_planner`, passed as a value. The
reference is the authors' code, RonanFR/UCRL at commit ``ab64d14`` (branch
``refactoring_and_cleaning``, "Added visdom visualization", 30 April 2019:
``rlexplorer/scal.py``, ``rlexplorer/Ucrl.py``, ``rlexplorer/evi/scopt.pyx``,
``rlexplorer/evi/_lpproba.pyx``), the newest commit whose ``SCAL`` and ``SCALPLUS`` run
with their constructor defaults (the later branch tips ``messinguppppp`` and
``learning_rep`` crash for them; the papers' own text was not at hand, so the code is the
reference and each rule below names its line).

**ScOpt** (``scopt.pyx`` lines 184-408), from ``u`` (warm-started from the previous
episode's values, line 177): with the aperiodicity factor ``tau = 0.9`` (``Ucrl.py`` line
149) each sweep computes

.. math::

    u_3(s) = \max_a \Big[\tilde r(s, a) + \tau \max_{q \in B(s, a)} q \cdot u
    + (1 - \tau) u(s)\Big], \qquad u_2 = \min(u_3, \min u_3 + c / \tau)

(the cap ``c / tau`` on the transformed iterates, line 122), stops when
:math:`\mathrm{sp}(u_2 - u) < \epsilon` (line 268, ``check_end``) with
``epsilon = 1/sqrt(t_k)`` (``Ucrl.py`` line 458: ``r_max / sqrt(iteration + 1)``),
else continues from ``u_2 - u_2(0)`` (lines 392-400, ``relative_vi``). The policy of the
last sweep is greedy where ``u_3(s) < th = min u_3 + c / tau`` and elsewhere *mixes* the greedy
action with the pessimistic one (``argmin_a [0 + tau min_{q in B} q . u + (1 - tau)
u(s)]``, reward 0 with ``augment_reward``, lines 291-335) with the weights that make its
value ``th`` (lines 347-380): ``w_min = (u_3 - th) / (u_3 - u_min)``. Ties go to the
lowest action index (published: a fixed random noise of size ``1e-7 min(1e-6, epsilon)``
per action, lines 159-164; equal values only). Where even the pessimistic value exceeds
``th`` the published solver returns an error (line 340, ``-21``); here the pessimistic
action is played and the episode start counts as unconverged (``evi_unconverged``).

**Episodes.** The doubling rule of the family, tested as the published ``UcrlMdp.learn``
does (``Ucrl.py`` lines 261-263, 164-165): the episode ends after a round whose pair
``(s, a)`` has been played ``max(1, N_k(s, a))`` times in it (with a mixing policy the
action is only known once drawn).

**SCAL's sets** (:class:`SCALSets`; ``Ucrl.py`` lines 307-383, the Bernstein bounds,
``bound_type="bernstein"``, the default of ``SCAL``): with ``n = max(1, N_k)`` and
``L = ln(6 S A n / delta)``, the box ``max(0, p_hat - b) <= q <= p_hat + b``,
``b = sqrt(p_hat (1 - p_hat) L / n) + L / n`` (``LPPROBA_bernstein``, ``_lpproba.pyx``
lines 9-32: lower bounds first, the rest to the highest values), and the reward
``r_hat + sqrt(var L / n) + L / n`` (population variance; ``r_max = 1``), **not** clipped
at 1 (``scal.py`` line 44: ``r_max_vi = int32 max``). An untried pair has ``p_hat``
uniform, ``r_hat = 0`` and zero variance (``Ucrl.py`` lines 139-144).

**SCAL+'s sets** (:class:`SCALPlusSets`, ``scal.py`` class ``SCALPLUS``, lines 72-142,
``bound_type="hoeffding"``): no transition set (``beta_p = 0``: ScOpt on the empirical
MDP, "no EVI") with ``p_hat`` pulled towards state 0, ``(N(s, a, .) + e_0) / (N_k + 1)``
for a tried pair (lines 136-142; uniform for an untried one), and the bonus

.. math::

    r_{max} \sqrt{L / n} + c \Big(\sqrt{L / n} + \frac{1}{N_k + 1}\Big)

added to ``r_hat`` (lines 110-121). Its ``known_rewards`` would keep the ``c`` term
(line 121); jaxmdp's ``known_rewards`` replaces the whole optimistic reward, so it is not
offered.

**The confidence level.** The published learners reset ``delta`` to ``1/sqrt(t_k)`` at
every episode (``Ucrl.py`` line 207, ``self.delta = 1 / sqrt(iteration + 1)``), which is
not a confidence level of a fixed-``delta`` analysis: the default keeps ``delta`` fixed
(the agent's ``delta``), ``published_delta=True`` reproduces the code.

**The span bound** ``c`` is ``span_constraint``, default 5 (``examples/multi_runner.py``
line 64 and ``example_toy1.py`` line 107).

References:
    Fruit, Pirotta, Lazaric & Ortner, "Efficient Bias-Span-Constrained
    Exploration-Exploitation in Reinforcement Learning", ICML 2018.
    Qian, Fruit, Pirotta & Lazaric, "Exploration Bonus for Regret Minimization in
    Discrete and Continuous Average Reward MDPs", NeurIPS 2019.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.agents.protocol import Agent, EnvSpec
from jaxmdp.agents.ucrl import (
    EVISets,
    check_bool,
    ucrl_family_agent,
    uniform_centre,
    values_planner,
)
from jaxmdp.planning import ConfidenceSet, Planner, Solution, Status
from jaxmdp.planning.evi import BoxBounds, box_maximise

__all__ = ["SCALPlusSets", "SCALSets", "scal_agent", "scal_plus_agent", "scopt",
           "scopt_mixture", "scopt_planner"]

#: The aperiodicity factor of the published learners (``Ucrl.py`` line 149).
TAU = 0.9


class _Carry(NamedTuple):
    u: jax.Array
    previous: jax.Array
    policy: jax.Array
    gain: jax.Array
    span: jax.Array
    step: jax.Array
    converged: jax.Array


def _sweep(r_tilde, bounds: BoxBounds, mask, u, tau):
    """``[S, A]`` values ``r + tau max_{q in box} q . u + (1 - tau) u(s)`` (``-inf`` off
    the mask)."""
    values, _ = box_maximise(bounds.lower, bounds.upper, u, False)
    return jnp.where(mask, r_tilde + tau * values + (1.0 - tau) * u[:, None], -jnp.inf)


def _isclose(a, b):
    """``isclose_c`` of the published code (``_utils.pyx`` line 24: relative 1e-9)."""
    return jnp.abs(a - b) <= 1e-9 * jnp.maximum(jnp.abs(a), jnp.abs(b))


def _full_mask(mask):
    mask = jnp.asarray(mask, bool)
    return mask | ~jnp.any(mask, axis=-1, keepdims=True)


@functools.partial(jax.jit, static_argnames=("max_steps",))
def scopt(p_hat, r_tilde, bounds: BoxBounds, mask, u0, epsilon, span_constraint, tau, *,
          max_steps: int) -> Solution:
    """ScOpt: value iteration over the box ``bounds`` with the span capped at
    ``span_constraint`` (``scopt.pyx`` lines 184-408; :mod:`jaxmdp.agents.scal`).

    Args:
        p_hat: ``[S, A, S]`` centres (used for ``q_opt`` on inadmissible pairs).
        r_tilde: ``[S, A]`` optimistic rewards.
        bounds: the box of every pair, ``[S, A, S]`` each.
        mask: bool ``[S, A]`` admissible actions.
        u0: ``[S]`` starting values.
        epsilon: the stopping tolerance on ``sp(u_2 - u)``.
        span_constraint: ``c > 0``.
        tau: the aperiodicity factor in ``(0, 1]``.
        max_steps: the most sweeps.

    Returns:
        A :class:`~jaxmdp.planning.Solution`: ``bias`` the values the last sweep started
        from, ``policy`` its greedy actions (lowest index among ties), ``span`` its
        ``sp(u_2 - u)``.
    """
    mask = _full_mask(mask)

    def cond(carry: _Carry):
        return ~carry.converged & (carry.step < max_steps)

    def body(carry: _Carry) -> _Carry:
        q = _sweep(r_tilde, bounds, mask, carry.u, tau)
        u3 = jnp.max(q, axis=-1)
        u2 = jnp.minimum(u3, jnp.min(u3) + span_constraint / tau)
        diff = u2 - carry.u
        high, low = jnp.max(diff), jnp.min(diff)
        return _Carry(u=u2 - u2[0], previous=carry.u,
                      policy=jnp.argmax(q, axis=-1).astype(jnp.int32),
                      gain=(high + low) / 2, span=high - low, step=carry.step + 1,
                      converged=high - low < epsilon)

    dtype = p_hat.dtype
    init = _Carry(u=u0, previous=u0, policy=jnp.zeros(u0.shape, jnp.int32),
                  gain=jnp.zeros((), dtype), span=jnp.full((), jnp.inf, dtype),
                  step=jnp.zeros((), jnp.int32), converged=jnp.zeros((), bool))
    final = lax.while_loop(cond, body, init)
    _, q_opt = box_maximise(bounds.lower, bounds.upper, final.previous, True)
    q_opt = jnp.where(mask[..., None], q_opt, p_hat)
    status = jnp.where(final.converged, Status.CONVERGED, Status.MAX_STEPS)
    return Solution(final.gain, final.previous, final.policy, final.step,
                    status.astype(jnp.int32), q_opt, final.span)


def scopt_mixture(r_tilde, bounds: BoxBounds, mask, u, span_constraint, tau):
    """ScOpt's mixing policy at ``u`` (``scopt.pyx`` lines 273-380).

    Returns:
        ``(min_action [S], weight [S], feasible [])``: play ``min_action`` (the pessimistic
        action, reward 0) with probability ``weight`` and the greedy action otherwise;
        ``feasible`` is False where some pessimistic value exceeds the threshold (the
        published solver's error ``-21``; then ``weight = 1`` there).
    """
    mask = _full_mask(mask)
    u3 = jnp.max(_sweep(r_tilde, bounds, mask, u, tau), axis=-1)
    th = jnp.min(u3) + span_constraint / tau
    low_values = -box_maximise(bounds.lower, bounds.upper, -u, False)[0]
    q_min = jnp.where(mask, tau * low_values + (1.0 - tau) * u[:, None], jnp.inf)
    u_min = jnp.min(q_min, axis=-1)
    min_action = jnp.argmin(q_min, axis=-1).astype(jnp.int32)
    truncated = u3 >= th  # line 277: greedy where u_3 < th
    gap = jnp.where(u3 > u_min, u3 - u_min, 1.0)
    weight = jnp.clip((u3 - th) / gap, 0.0, 1.0)  # lines 361-362
    weight = jnp.where(_isclose(u_min, u3) | _isclose(u_min, th), 1.0, weight)
    weight = jnp.where(_isclose(u3, th) & ~_isclose(u_min, u3), 0.0, weight)
    infeasible = truncated & (u_min > th)  # line 339
    weight = jnp.where(infeasible, 1.0, jnp.where(truncated, weight, 0.0))
    return min_action, weight, ~jnp.any(infeasible)


@functools.cache
def scopt_planner(span_constraint: float, *, tau: float = TAU, max_steps: int = 10_000,
                  warm_start: bool = True) -> Planner:
    """:func:`scopt` behind :class:`~jaxmdp.planning.Planner` (the model's ``radius`` is
    a :class:`~jaxmdp.planning.evi.BoxBounds`); the state is the last values.

    Args:
        span_constraint: ``c > 0``.
        tau: the aperiodicity factor.
        max_steps: the most sweeps per update.
        warm_start: start each update from the previous values (the published code,
            ``scopt.pyx`` line 177), else from zeros.

    Returns:
        The :class:`~jaxmdp.planning.Planner`.
    """

    def solve(model: ConfidenceSet, u0):
        dtype = u0.dtype
        return scopt(jnp.asarray(model.p_hat), jnp.asarray(model.rewards, dtype), model.radius,
                     model.mask, u0, jnp.asarray(model.epsilon, dtype),
                     jnp.asarray(span_constraint, dtype), jnp.asarray(tau, dtype),
                     max_steps=max_steps)

    return values_planner(solve, warm_start=warm_start)


def _empirical(counts, reward_sums, reward_squares, dtype):
    """``(visits, n, mean, var)``: ``n = max(1, N_k)``, the mean reward (0 untried) and
    its population variance (0 untried, ``Ucrl.py`` line 144)."""
    visits = jnp.sum(counts, axis=-1)
    n = jnp.maximum(visits, 1).astype(dtype)
    mean = reward_sums.astype(dtype) / n
    var = jnp.maximum(reward_squares.astype(dtype) / n - mean * mean, 0.0)
    return visits, n, mean, jnp.where(visits > 0, var, 0.0)


@dataclasses.dataclass(frozen=True)
class SCALSets(EVISets):
    """SCAL's sets and planner (:mod:`jaxmdp.agents.scal`).

    Attributes:
        span_constraint: the span bound ``c`` (5).
        published_delta: reset ``delta`` to ``1/sqrt(t_k)`` at every episode
            (``Ucrl.py`` line 207) instead of the agent's fixed ``delta``.
        tau: the aperiodicity factor (0.9, ``Ucrl.py`` line 149).
    """

    span_constraint: float = 5.0
    published_delta: bool = False
    tau: float = TAU
    ball: ClassVar[str] = "box"
    stochastic: ClassVar[bool] = True

    def planner(self, *, max_steps: int, warm_start: bool) -> Planner:
        """:func:`scopt_planner` with this ``c`` and ``tau``."""
        return scopt_planner(self.span_constraint, tau=self.tau, max_steps=max_steps,
                             warm_start=warm_start)

    def ends_episode(self, state, x, action):
        """The doubling rule on the pair played at the previous round (``Ucrl.py`` lines
        261-263 and 164-165: tested after each round)."""
        del x, action
        s, a = state.last_pair[0], state.last_pair[1]
        return state.nu[s, a] >= jnp.maximum(1, state.episode_visits[s, a])

    def mixture(self, model: ConfidenceSet, solution):
        """The mixing policy of :func:`scopt_mixture` at the solution's values."""
        rewards = jnp.asarray(model.rewards, solution.bias.dtype)
        action, weight, _ = scopt_mixture(rewards, model.radius, model.mask, solution.bias,
                                          self.span_constraint, self.tau)
        return action, weight

    def _delta(self, t_k, config):
        return 1.0 / jnp.sqrt(t_k) if self.published_delta else config.delta

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_hat, r_tilde, BoxBounds)`` of the episode starting at ``t_k``."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat = uniform_centre(counts, S, dtype)
        _, _, mean, var = _empirical(counts, reward_sums, reward_squares, dtype)
        log_term = jnp.log(6.0 * S * A * n / self._delta(t_k, config))  # L_CONST = 6
        width = jnp.sqrt(p_hat * (1.0 - p_hat) * (log_term / n)[..., None]) + (
            log_term / n)[..., None]
        bounds = BoxBounds(jnp.maximum(p_hat - width, 0.0), p_hat + width)
        r_tilde = mean + jnp.sqrt(var * log_term / n) + log_term / n
        return p_hat, r_tilde, bounds


@dataclasses.dataclass(frozen=True)
class SCALPlusSets(SCALSets):
    """SCAL+'s model and bonus (:mod:`jaxmdp.agents.scal`); the attributes of
    :class:`SCALSets`."""

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_smoothed, r_hat + bonus, BoxBounds(p_smoothed, p_smoothed))``."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        visits, n, mean, _ = _empirical(counts, reward_sums, reward_squares, dtype)
        tried = visits > 0
        pulled = (counts.astype(dtype) + jax.nn.one_hot(0, S, dtype=dtype)) / (
            visits.astype(dtype) + 1.0)[..., None]
        p = jnp.where(tried[..., None], pulled, jnp.asarray(1.0 / S, dtype))
        beta = jnp.sqrt(jnp.log(6.0 * S * A * n / self._delta(t_k, config)) / n)
        bonus = beta + self.span_constraint * (beta + 1.0 / (visits.astype(dtype) + 1.0))
        return p, mean + bonus, BoxBounds(p, p)


def _check_span(span_constraint, tau) -> None:
    c = span_constraint
    if isinstance(c, bool) or not isinstance(c, numbers.Real) or not (
            math.isfinite(c) and c > 0):
        raise ValueError(f"span_constraint must be a positive finite number, got {c!r}")
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not 0 < tau <= 1:
        raise ValueError(f"tau must be a number in (0, 1], got {tau!r}")


def scal_agent(*, span_constraint: float = 5.0, published_delta: bool = False,
               tau: float = TAU, known_rewards: bool = False, delta: float = 0.05,
               max_evi_steps: int = 10_000, cond: str = "chunked",
               warm_start: bool = True) -> Agent:
    """SCAL (Fruit, Pirotta, Lazaric & Ortner 2018) as in RonanFR/UCRL ``ab64d14``.

    The UCRL family's episodes with Bernstein boxes and ScOpt, the span of the optimistic
    bias capped at ``span_constraint`` and a policy that mixes two actions where the cap
    binds (:mod:`jaxmdp.agents.scal`). EVI's tolerance is ``1/sqrt(t_k)``.

    Args:
        span_constraint: the span bound ``c`` (default 5, the published scripts').
        published_delta: ``delta = 1/sqrt(t_k)`` at every episode (the published code)
            instead of the fixed ``delta`` (default).
        tau: the aperiodicity factor (0.9).
        known_rewards: plan with the true mean rewards (default False: learn them).
        delta: the confidence parameter in ``(0, 1)``.
        max_evi_steps: the most ScOpt sweeps per episode start.
        cond: episode-start batching (:class:`~jaxmdp.agents.ucrl.UCRLConfig`).
        warm_start: start ScOpt from the previous episode's values (default, the
            published code).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"scal"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("scal", span_constraint=2.0).config.sets.span_constraint
        2.0
    """
    _check_span(span_constraint, tau)
    check_bool("published_delta", published_delta)
    return ucrl_family_agent("scal", SCALSets(float(span_constraint), published_delta,
                                              float(tau)),
                             known_rewards=known_rewards, delta=delta, epsilon_rule="sqrt",
                             max_evi_steps=max_evi_steps, cond=cond, ties="lowest",
                             warm_start=warm_start)


def scal_plus_agent(*, span_constraint: float = 5.0, published_delta: bool = False,
                    tau: float = TAU, delta: float = 0.05, max_evi_steps: int = 10_000,
                    cond: str = "chunked", warm_start: bool = True) -> Agent:
    """SCAL+ (Qian, Fruit, Pirotta & Lazaric 2019) as in RonanFR/UCRL ``ab64d14``.

    ScOpt on the empirical MDP pulled towards state 0, with the exploration bonus
    ``sqrt(L/n) + c (sqrt(L/n) + 1/(N_k + 1))`` on the reward (:mod:`jaxmdp.agents.scal`).
    Rewards are learned (no ``known_rewards``: the published one keeps the ``c`` term).

    Args:
        span_constraint: the span bound ``c`` (default 5, the published scripts').
        published_delta: ``delta = 1/sqrt(t_k)`` at every episode (the published code).
        tau: the aperiodicity factor (0.9).
        delta: the confidence parameter in ``(0, 1)``.
        max_evi_steps: the most ScOpt sweeps per episode start.
        cond: episode-start batching (:class:`~jaxmdp.agents.ucrl.UCRLConfig`).
        warm_start: start ScOpt from the previous episode's values (default).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"scal_plus"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("scal_plus").config.sets.span_constraint
        5.0
    """
    _check_span(span_constraint, tau)
    check_bool("published_delta", published_delta)
    return ucrl_family_agent("scal_plus", SCALPlusSets(float(span_constraint),
                                                       published_delta, float(tau)),
                             known_rewards=False, delta=delta, epsilon_rule="sqrt",
                             max_evi_steps=max_evi_steps, cond=cond, ties="lowest",
                             warm_start=warm_start)
