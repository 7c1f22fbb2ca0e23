r"""TEVI: TUCRL's truncated extended value iteration (Fruit, Pirotta & Lazaric 2018).

The planner of :mod:`jaxmdp.agents.ucrl.tucrl`, following RonanFR/UCRL ``ecf4acc``
(``UCRL/evi/tevi.pyx``, ``UCRL/evi/_max_proba.pyx``): from the previous episode's values,
sweeps ``u'(s) = max_a [r_tilde + tau (q . u - u(s))] + u(s)`` with the aperiodicity factor
``tau``, the inner maximum over a Bernstein box where every state is observed and otherwise
over an L1 ball truncated to the observed states for the pairs :class:`TUCRLBounds` marks,
and stops when the span of ``u' - u`` over the terminal states is below ``epsilon`` (or,
with ``published_stop``, when it stops decreasing by ``epsilon``, ``tevi.pyx`` line 245).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp._order import stable_argsort
from jaxmdp.planning._core import Planner, Solution, Status, noisy_argmax, values_planner
from jaxmdp.planning._evi import ConfidenceSet, box_maximise

__all__ = ["TAU", "TUCRLBounds", "l1_truncated_maximise", "tevi", "tevi_planner"]

#: The aperiodicity factor of the published learner (``Ucrl.py`` line 149).
TAU = 0.9


class TUCRLBounds(NamedTuple):
    """The ``radius`` of TUCRL's sets (:mod:`jaxmdp.agents.ucrl.tucrl`).

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
    order, _ = stable_argsort(u)  # increasing u
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
        choice = noisy_argmax(q, bounds.noise)
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
