r"""UCRL3's confidence sets: per-transition bounds restricted to a near-optimistic support.

Bourel, Maillard & Talebi (2020): the box of per-next-state bounds around ``p_hat``
restricted, at every sweep of extended value iteration, to the near-optimistic support of
:func:`near_optimistic_support` (:class:`UCRL3Bounds` is the ``radius`` of
:func:`jaxmdp.evi`). :data:`UCRL3_BALL` is its inner maximisation, the ``ball`` of
:func:`jaxmdp.evi` / :func:`jaxmdp.planning.evi_planner` (by value, or by the name
``"ucrl3"``); :data:`UCRL3_KEY_SUMS_BALL` (``"ucrl3_key_sums"``) the same with the support
the published code computes (the empirical one plus the state of highest :math:`u`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.planning import InnerMaximisation
from jaxmdp.planning.evi import box_maximise, register_ball

__all__ = ["UCRL3_BALL", "UCRL3_KEY_SUMS_BALL", "UCRL3Bounds", "near_optimistic_support"]


class UCRL3Bounds(NamedTuple):
    """The ``radius`` of ``ball="ucrl3"``: UCRL3's bounds and near-optimistic support.

    Attributes:
        lower: lower bounds of ``q(s, a, y)`` on the empirical support (0 elsewhere),
            ``[S, A, S]``.
        upper: upper bounds of ``q(s, a, y)`` on the empirical support, ``[S, A, S]``.
        upper_out: the upper bound of a next state outside the empirical support (that
            of ``p_hat = 0``), ``[S, A]``.
        support: the empirical support ``N(s, a, y) > 0``, bool ``[S, A, S]``.
        kappa: the threshold ``kappa(s, a)`` of the support extension divided by
            ``span(u)`` (``+inf``: compare with the inside value only; NaN: never
            extend), ``[S, A]``.
    """

    lower: jax.Array
    upper: jax.Array
    upper_out: jax.Array
    support: jax.Array
    kappa: jax.Array


def near_optimistic_support(bounds: UCRL3Bounds, u: jax.Array, *,
                            key_sums: bool = False) -> jax.Array:
    r"""UCRL3's near-optimistic support of every pair at the values ``u``.

    Bourel, Maillard & Talebi (2020), as ``UCRL3.computeSupport`` (StatisticalRL
    ``learners``, ``UCRL3.py`` lines 174-261) intends it. With ``p_u`` the upper bound
    (``upper`` on the empirical support, ``upper_out`` outside) and ``p_l`` the lower one:

    1. the support starts as the empirical one plus the state of highest ``u``;
    2. *inside*: starting from ``p_u`` on the support, mass is removed from the states of
       lowest ``u`` (each down to ``p_l``) until the total is at most one; *outside*: the
       states outside the support, from the highest ``u`` down, get up to ``p_u`` each
       until the total reaches one; ``v_in``, ``v_out`` are the two laws' values of
       ``u - min u``;
    3. while ``v_out > min(kappa span(u), v_in)``, the outside state of highest ``u`` joins
       the support (it gets ``p_u`` inside if it lies above the point where the inside
       removal stopped, and its outside mass is given to the next outside states), and
       ``v_in``, ``v_out`` are recomputed.

    ``key_sums=True`` reproduces the published code, whose helpers sum the keys of a
    dict (state indices) where they mean its values (lines 175, 193): the outside value
    stays 0, step 3 never runs and the support is the empirical one plus ``argmax u``.

    Args:
        bounds: a :class:`UCRL3Bounds`, arrays ``[S, A, S]`` / ``[S, A]``.
        u: the values, ``[S]``.
        key_sums: the published computation (static; see above).

    Returns:
        bool ``[S, A, S]``: the support of every pair.
    """
    S = u.shape[0]
    order = jnp.argsort(u, stable=True)  # increasing u
    best = order[-1]
    start = bounds.support | (jnp.arange(S) == best)
    if key_sums:
        return start
    w = u - jnp.min(u)
    w_ord = w[order]
    kappa = bounds.kappa * (jnp.max(u) - jnp.min(u))

    def one(lower, upper, upper_out, emp, sup0, kap):
        p_u = jnp.where(emp, upper, upper_out)[order]  # in increasing order of u
        p_l = jnp.where(emp, lower, 0.0)[order]
        sup0 = sup0[order]

        def fill_in(p_in, present, sup, idx):
            # Remove mass from the lowest present states until the total is at most one.
            def cond(c):
                p_in, idx = c
                return (jnp.sum(jnp.where(present, p_in, 0.0)) > 1) & (idx < S)

            def body(c):
                p_in, idx = c
                total = jnp.sum(jnp.where(present, p_in, 0.0))
                new = jnp.maximum(jnp.maximum(0.0, p_in[idx] - total + 1), p_l[idx])
                p_in = jnp.where(sup[idx] & present[idx], p_in.at[idx].set(new), p_in)
                return p_in, idx + 1

            return lax.while_loop(cond, body, (p_in, idx))

        def fill_out(p_out, sup, idx):
            # Give mass to the outside states from the highest u down, up to p_u each.
            def cond(c):
                p_out, idx = c
                return (jnp.sum(p_out) < 1) & (idx >= 0)

            def body(c):
                p_out, idx = c
                add = jnp.minimum(p_u[idx], jnp.maximum(0.0, 1 - jnp.sum(p_out)))
                p_out = jnp.where(sup[idx], p_out, p_out.at[idx].set(add))
                return p_out, idx - 1

            return lax.while_loop(cond, body, (p_out, idx))

        p_in0 = jnp.where(sup0, p_u, 0.0)
        p_in, idx_in = fill_in(p_in0, sup0, sup0, 0)
        p_out, idx_out = fill_out(jnp.zeros(S, u.dtype), sup0, S - 1)

        def cond(c):
            sup, present, p_in, idx_in, p_out, idx_out, ll = c
            v_in = jnp.sum(jnp.where(present, p_in, 0.0) * w_ord)
            v_out = jnp.sum(p_out * w_ord)
            return (v_out > jnp.minimum(kap, v_in)) & (ll < S - 1)

        def body(c):
            sup, present, p_in, idx_in, p_out, idx_out, ll = c
            # The highest state outside the support, at position S - 1 - ll or below.
            positions = jnp.arange(S)
            candidates = (~sup) & (positions <= S - 1 - ll)
            pos = jnp.max(jnp.where(candidates, positions, -1))
            found = pos >= 0
            ll = jnp.where(found, S - 1 - pos, S - 1)
            pos = jnp.maximum(pos, 0)
            sup = sup.at[pos].set(sup[pos] | found)
            inside = found & (pos > idx_in)
            p_in = jnp.where(inside, p_in.at[pos].set(p_u[pos]), p_in)
            present = present.at[pos].set(present[pos] | inside)
            p_in, idx_in = fill_in(p_in, present, sup, idx_in)
            p_out = jnp.where(found, p_out.at[pos].set(0.0), p_out)
            p_out, idx_out = fill_out(p_out, sup, idx_out)
            return sup, present, p_in, idx_in, p_out, idx_out, ll

        init = (sup0, sup0, p_in, idx_in, p_out, idx_out, jnp.asarray(1))
        sup = lax.while_loop(cond, body, init)[0]
        return jnp.zeros(S, bool).at[order].set(sup)

    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    out = jax.vmap(one)(flat(bounds.lower), flat(bounds.upper), flat(bounds.upper_out),
                        flat(bounds.support), flat(start), flat(kappa))
    return out.reshape(bounds.support.shape)


def _ucrl3_inner(data, u, bounds: UCRL3Bounds, with_q: bool, *, key_sums: bool = False):
    del data
    support = near_optimistic_support(bounds, u, key_sums=key_sums)
    lower = jnp.where(bounds.support, bounds.lower, 0.0)
    upper = jnp.where(bounds.support, bounds.upper, bounds.upper_out[..., None])
    upper = jnp.where(support, upper, lower)
    return box_maximise(lower, upper, u, with_q)


def _ucrl3_key_sums_inner(data, u, bounds: UCRL3Bounds, with_q: bool):
    """:func:`_ucrl3_inner` with the published support (``key_sums=True``)."""
    return _ucrl3_inner(data, u, bounds, with_q, key_sums=True)


def _no_layout(p_hat):
    """The box maximisers read the bounds only: no layout of ``p_hat``."""
    del p_hat


#: UCRL3's inner maximisation (the intended near-optimistic support), a ``ball`` of
#: :func:`jaxmdp.evi`.
UCRL3_BALL = InnerMaximisation(_ucrl3_inner, _no_layout, False, UCRL3Bounds)

#: UCRL3's inner maximisation with the published support (``key_sums=True``).
UCRL3_KEY_SUMS_BALL = InnerMaximisation(_ucrl3_key_sums_inner, _no_layout, False, UCRL3Bounds)

# The names under which jaxmdp.evi and evi_planner know them.
register_ball("ucrl3", lambda: UCRL3_BALL)
register_ball("ucrl3_key_sums", lambda: UCRL3_KEY_SUMS_BALL)
