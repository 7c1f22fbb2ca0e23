r"""TUCRL: the UCRL family with the confidence sets truncated to the states observed so far.

:func:`tucrl_agent` is :func:`~jaxmdp.agents.ucrl.ucrl_family_agent` with
:class:`TUCRLSets`, which brings its sets, its planner (truncated extended value
iteration, :func:`tevi`, passed as a value) and its episode rule. The reference is the
authors' code, RonanFR/UCRL at commit ``ecf4acc`` ("Fixed error in TUCRL", 13 December
2018, package ``UCRL``: ``UCRL/tucrl.py``, ``UCRL/Ucrl.py``, ``UCRL/bounds.py``,
``UCRL/evi/tevi.pyx``, ``UCRL/evi/_max_proba.pyx``): TUCRL crashes on every later
``rlexplorer`` branch, and ``ecf4acc`` is the commit whose message fixes it. The paper's
text was not at hand; where the code's stopping test is not a span test (below) the
span test is the default.

With ``t_k`` the episode's first round, ``n = max(1, N_k)``, ``m = max(1, N_k - 1)`` and
``L = ln(2 S A t_k / delta)`` (``Ucrl.py`` lines 264-330, ``bound_type="bernstein"``):

* per-next-state widths ``b = sqrt(14 p_hat (1 - p_hat) L / n) + 49 L / (3 m)`` (``p_hat``
  uniform on untried pairs);
* the reward ``min(1, r_hat + sqrt(14 var L / n) + 49 L / (3 m))``, ``var`` the sample
  variance (sum of squared deviations over ``m``); an untried pair has ``r_hat = 100``
  (``Ucrl.py`` line 143), so reward 1.

**Truncation** (``tucrl.py``, ``solve_optimistic_model``): the states *observed* are those
left at least once before the episode, ``N_k(s) = sum_a N_k(s, a) > 0``, and the current
state. If every state is observed, the sets are Bernstein boxes ``max(0, p_hat - b) <= q
<= p_hat + b`` (lines 141-144 of ``tevi.pyx``). Otherwise every pair has the L1 ball of
radius ``sum_y b(y)`` (the UCRL2 maximiser ``max_proba_purec``: ``min(1, p_hat + radius/2)``
to the best state, the excess removed from the lowest), and the pairs of observed states
with ``max(1, N_k(s, a) - 1) > sqrt(t_k / (S A))`` are *truncated*: their ball is taken
over the observed states only (mass cannot go to an unobserved state; ``p_hat``'s own mass
on unobserved states is dropped, as ``sparse_dot_prod`` does). The other pairs (too few
visits) keep the unobserved states in their ball: optimism about them.

**TEVI** (``tevi.pyx`` lines 169-276): from the previous episode's values, sweeps
``u'(s) = max_a [r_tilde + tau (q . u - u(s))] + u(s)`` with ``tau = 0.9`` (the
aperiodicity factor, ``Ucrl.py`` line 149) and stops when the span of ``u' - u`` over the
*terminal states* is below ``epsilon = 1/sqrt(t_k)`` (``tucrl.py``: the observed states if
every pair of an observed state is truncated, else all states). The published test is
``old_span - new_span < epsilon`` (line 245: the span stops *decreasing*, not the span
itself small); ``published_stop=True`` reproduces it. The published solver caps the
sweeps at ``200 S A`` (line 165) and then raises; here ``max_evi_steps`` caps them and the
episode start counts as unconverged. Ties go to the lowest action index (published: a
fixed random noise, ``tevi.pyx`` lines 157-161).

**Episodes** (``tucrl.py``, ``_stopping_rule``): the doubling rule, and a new episode
also starts when the current state has not been observed, ``N_k(x) = 0`` (after the
episode's first round).

**Confidence level.** The published learner resets ``delta`` to ``1/sqrt(t_k)`` at every
episode (``Ucrl.py`` line 191); the default keeps the agent's ``delta``,
``published_delta=True`` reproduces the code.

References:
    Fruit, Pirotta & Lazaric, "Near Optimal Exploration-Exploitation in Non-Communicating
    Markov Decision Processes", NeurIPS 2018.
"""

from __future__ import annotations

import dataclasses
import functools
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
from jaxmdp.planning.evi import box_maximise

__all__ = ["TUCRLBounds", "TUCRLSets", "l1_truncated_maximise", "tevi", "tevi_planner",
           "tucrl_agent"]

#: The aperiodicity factor of the published learner (``Ucrl.py`` line 149).
TAU = 0.9


class TUCRLBounds(NamedTuple):
    """The ``radius`` of TUCRL's sets (:mod:`jaxmdp.agents.tucrl`).

    Attributes:
        lower: box lower bounds ``[S, A, S]`` (every state observed).
        upper: box upper bounds ``[S, A, S]``.
        l1: L1 radii ``[S, A]`` (some state unobserved).
        truncated: bool ``[S, A]``: the pair's ball is over the observed states only.
        observed: bool ``[S]``: the observed states.
        terminal: bool ``[S]``: the states of TEVI's stopping test.
        all_observed: bool ``[]``: every state observed (the boxes apply).
        noise: ``[A]`` added to each action's value when choosing the maximiser (zeros:
            the lowest index among exact ties).
    """

    lower: jax.Array
    upper: jax.Array
    l1: jax.Array
    truncated: jax.Array
    observed: jax.Array
    terminal: jax.Array
    all_observed: jax.Array
    noise: jax.Array | float = 0.0


def l1_truncated_maximise(p, u, radius, allowed):
    """``max_proba_purec`` (``_max_proba.pyx`` lines 14-41) over the states ``allowed``.

    ``min(1, p(top) + radius/2)`` to the allowed state of highest ``u``, ``p`` kept on the
    other allowed states, zero off them, then the excess over 1 removed from the allowed
    states in increasing order of ``u``.

    Args:
        p: ``[..., S]`` laws.
        u: ``[S]`` values.
        radius: ``[...]`` L1 radii.
        allowed: bool ``[..., S]``.

    Returns:
        ``q . u``, ``[...]``.
    """
    order = jnp.argsort(u, stable=True)  # increasing u
    ok = jnp.take(allowed, order, axis=-1)
    ps = jnp.where(ok, jnp.take(p, order, axis=-1), 0.0)
    S = u.shape[0]
    position = jnp.arange(S)
    top = jnp.max(jnp.where(ok, position, -1), axis=-1, keepdims=True)
    is_top = position == top
    top_mass = jnp.minimum(1.0, jnp.sum(jnp.where(is_top, ps, 0.0), axis=-1, keepdims=True)
                           + radius[..., None] / 2.0)
    others = jnp.where(is_top, 0.0, ps)
    excess = jnp.maximum(top_mass[..., 0] + jnp.sum(others, axis=-1) - 1.0, 0.0)
    before = jnp.cumsum(others, axis=-1) - others
    removed = jnp.clip(excess[..., None] - before, 0.0, others)
    q = jnp.where(is_top, top_mass, others - removed)
    q = jnp.where(top_mass >= 1.0, jnp.where(is_top, 1.0, 0.0), q)
    return jnp.einsum("...y,y->...", q, u[order])


class _Carry(NamedTuple):
    u: jax.Array
    previous: jax.Array
    policy: jax.Array
    gain: jax.Array
    span: jax.Array
    old_span: jax.Array
    step: jax.Array
    converged: jax.Array


@functools.partial(jax.jit, static_argnames=("max_steps", "published_stop"))
def tevi(p_hat, r_tilde, bounds: TUCRLBounds, mask, u0, epsilon, tau, *, max_steps: int,
         published_stop: bool = False) -> Solution:
    """Truncated extended value iteration (``tevi.pyx`` lines 169-276).

    Args:
        p_hat: ``[S, A, S]`` empirical laws.
        r_tilde: ``[S, A]`` optimistic rewards.
        bounds: :class:`TUCRLBounds`.
        mask: bool ``[S, A]`` admissible actions.
        u0: ``[S]`` starting values.
        epsilon: the stopping tolerance.
        tau: the aperiodicity factor.
        max_steps: the most sweeps.
        published_stop: stop on ``old_span - new_span < epsilon`` (line 245) instead of
            ``new_span < epsilon``.

    Returns:
        A :class:`~jaxmdp.planning.Solution` (``bias``: the values the last sweep started
        from; ``policy``: its greedy actions, the lowest index among ties).
    """
    mask = jnp.asarray(mask, bool)
    mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
    S = p_hat.shape[0]
    everywhere = jnp.ones(p_hat.shape, bool)
    allowed = jnp.where(bounds.truncated[..., None], bounds.observed, everywhere)

    def body(carry: _Carry) -> _Carry:
        u = carry.u
        boxed, _ = box_maximise(bounds.lower, bounds.upper, u, False)
        l1 = l1_truncated_maximise(p_hat, u, bounds.l1, allowed)
        values = jnp.where(bounds.all_observed, boxed, l1)
        q = jnp.where(mask, r_tilde + tau * (values - u[:, None]) + u[:, None], -jnp.inf)
        # Line 230: the highest value plus noise; where that ties (also where the noise is
        # below the dtype's resolution), the highest noise among those actions.
        noisy = q + bounds.noise
        top = noisy == jnp.max(noisy, axis=-1, keepdims=True)
        noise = jnp.broadcast_to(jnp.asarray(bounds.noise, q.dtype), q.shape)
        choice = jnp.argmax(jnp.where(top, noise, -jnp.inf), axis=-1).astype(jnp.int32)
        u_next = jnp.take_along_axis(q, choice[:, None], axis=-1)[:, 0]
        diff = u_next - u
        high = jnp.max(jnp.where(bounds.terminal, diff, -jnp.inf))
        low = jnp.min(jnp.where(bounds.terminal, diff, jnp.inf))
        span = high - low
        stop = (carry.old_span - span < epsilon) if published_stop else (span < epsilon)
        return _Carry(u=u_next, previous=u, policy=choice,
                      gain=(high + low) / 2, span=span, old_span=span,
                      step=carry.step + 1, converged=stop)

    dtype = p_hat.dtype
    init = _Carry(u=u0, previous=u0, policy=jnp.zeros(S, jnp.int32),
                  gain=jnp.zeros((), dtype), span=jnp.full((), jnp.inf, dtype),
                  old_span=jnp.asarray(jnp.finfo(jnp.float32).max, dtype),
                  step=jnp.zeros((), jnp.int32), converged=jnp.zeros((), bool))
    final = lax.while_loop(lambda c: ~c.converged & (c.step < max_steps), body, init)
    status = jnp.where(final.converged, Status.CONVERGED, Status.MAX_STEPS)
    return Solution(final.gain, final.previous, final.policy, final.step,
                    status.astype(jnp.int32), p_hat, final.span)


@functools.cache
def tevi_planner(*, tau: float = TAU, max_steps: int = 10_000, warm_start: bool = True,
                 published_stop: bool = False) -> Planner:
    """:func:`tevi` behind :class:`~jaxmdp.planning.Planner` (the model's ``radius`` is a
    :class:`TUCRLBounds`); the state is the last values (recentred at state 0 when
    reused, ``tevi.pyx`` lines 170-173).

    Args:
        tau: the aperiodicity factor.
        max_steps: the most sweeps per update.
        warm_start: start from the previous values (the published code), else zeros.
        published_stop: TEVI's published stopping test (:func:`tevi`).

    Returns:
        The :class:`~jaxmdp.planning.Planner`.
    """

    def solve(model: ConfidenceSet, u0):
        dtype = u0.dtype
        return tevi(jnp.asarray(model.p_hat), jnp.asarray(model.rewards, dtype), model.radius,
                    model.mask, u0, jnp.asarray(model.epsilon, dtype), jnp.asarray(tau, dtype),
                    max_steps=max_steps, published_stop=published_stop)

    return values_planner(solve, warm_start=warm_start, recentre=True)


@dataclasses.dataclass(frozen=True)
class TUCRLSets(EVISets):
    """TUCRL's sets, planner and episode rule (:mod:`jaxmdp.agents.tucrl`).

    Attributes:
        published_delta: ``delta = 1/sqrt(t_k)`` at every episode (``Ucrl.py`` line 191).
        published_stop: TEVI's published stopping test (``tevi.pyx`` line 245).
        tau: the aperiodicity factor (0.9).
        noisy_ties: break ties by a noise ``1e-7 U_a`` per action drawn once per
            replication (``tevi.pyx`` lines 157-161, 230), else by the lowest index.
    """

    published_delta: bool = False
    published_stop: bool = False
    tau: float = TAU
    noisy_ties: bool = True
    ball: ClassVar[str] = "tucrl"

    def planner(self, *, max_steps: int, warm_start: bool) -> Planner:
        """:func:`tevi_planner` with these options."""
        return tevi_planner(tau=self.tau, max_steps=max_steps, warm_start=warm_start,
                            published_stop=self.published_stop)

    def ends_episode(self, state, x, action):
        """The doubling rule, or an unobserved current state (``tucrl.py``,
        ``_stopping_rule``: ``nb_state_observations[s] > 0``)."""
        doubling = state.nu[x, action] >= jnp.maximum(1, state.episode_visits[x, action])
        return doubling | (jnp.sum(state.episode_visits[x]) == 0)

    def confidence_at(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config,
                      current=None, agent_state=None):
        """``(p_hat, r_tilde, TUCRLBounds)`` of the episode starting at ``t_k`` in state
        ``current`` (the state itself counts as observed)."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat = uniform_centre(counts, S, dtype)
        visits = jnp.sum(counts, axis=-1)
        m = jnp.maximum(visits - 1, 1).astype(dtype)
        delta = 1.0 / jnp.sqrt(t_k) if self.published_delta else config.delta
        log_term = jnp.log(2.0 * S * A * t_k / delta)
        width = jnp.sqrt(14.0 * p_hat * (1.0 - p_hat) * (log_term / n)[..., None]) + (
            49.0 * log_term / (3.0 * m))[..., None]
        sums = reward_sums.astype(dtype)
        mean = jnp.where(visits > 0, sums / n, 100.0)  # r_max + 99, Ucrl.py line 143
        var = jnp.maximum(reward_squares.astype(dtype) - sums * sums / n, 0.0) / m
        bonus = jnp.sqrt(14.0 * var * log_term / n) + 49.0 * log_term / (3.0 * m)
        r_tilde = jnp.minimum(1.0, mean + bonus)
        observed = jnp.sum(visits, axis=-1) > 0
        if current is not None:
            observed = observed.at[current].set(True)
        all_observed = jnp.all(observed)
        explored = (jnp.maximum(1, visits - 1).astype(dtype)
                    > jnp.sqrt(t_k / (S * A))) & observed[:, None]
        truncated = explored & ~all_observed
        under = jnp.sum(observed[:, None] & ~explored)  # not_sufficiently_explored
        terminal = jnp.where(all_observed | (under > 0), True, observed)
        noise = jnp.zeros(A, dtype)
        if self.noisy_ties and agent_state is not None:
            noise = 1e-7 * agent_state.action_noise.astype(dtype)
        bounds = TUCRLBounds(jnp.maximum(p_hat - width, 0.0), p_hat + width,
                             jnp.sum(width, axis=-1), truncated, observed, terminal,
                             all_observed, noise)
        return p_hat, r_tilde, bounds


def tucrl_agent(*, published_delta: bool = False, published_stop: bool = False,
                noisy_ties: bool = True, tau: float = TAU, known_rewards: bool = False,
                delta: float = 0.05,
                max_evi_steps: int = 10_000, cond: str = "chunked",
                warm_start: bool = True) -> Agent:
    """TUCRL (Fruit, Pirotta & Lazaric 2018) as in RonanFR/UCRL ``ecf4acc``.

    UCRL2's episodes and Bernstein sets, the sets of sufficiently visited pairs truncated
    to the observed states, truncated EVI and a new episode at every unobserved state
    (:mod:`jaxmdp.agents.tucrl`). EVI's tolerance is ``1/sqrt(t_k)``.

    Args:
        published_delta: ``delta = 1/sqrt(t_k)`` at every episode (the published code)
            instead of the fixed ``delta`` (default).
        published_stop: TEVI's published stopping test (``old_span - new_span <
            epsilon``) instead of ``new_span < epsilon`` (default).
        noisy_ties: break ties by a fixed random noise per action (default, the published
            rule) or by the lowest index.
        tau: the aperiodicity factor (0.9).
        known_rewards: plan with the true mean rewards (default False: learn them).
        delta: the confidence parameter in ``(0, 1)``.
        max_evi_steps: the most TEVI sweeps per episode start.
        cond: episode-start batching (:class:`~jaxmdp.agents.ucrl.UCRLConfig`).
        warm_start: start TEVI from the previous episode's values (default, as published).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"tucrl"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it: among others a
            ``tau`` outside ``(0, 1]`` or a ``noisy_ties`` that is not a bool.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("tucrl").config.sets.published_stop
        False
    """
    check_bool("published_delta", published_delta)
    check_bool("published_stop", published_stop)
    check_bool("noisy_ties", noisy_ties)
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= 1:
        raise ValueError(f"tau must be a number in (0, 1], got {tau!r}")
    return ucrl_family_agent("tucrl", TUCRLSets(published_delta, published_stop, float(tau),
                                                      noisy_ties),
                             known_rewards=known_rewards, delta=delta, epsilon_rule="sqrt",
                             max_evi_steps=max_evi_steps, cond=cond, ties="lowest",
                             warm_start=warm_start)
