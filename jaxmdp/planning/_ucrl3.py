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
import numpy as np
from jax import lax

from jaxmdp._order import stable_argsort
from jaxmdp.planning._evi import InnerMaximisation, box_maximise_sorted

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


def _cumsum(x: jax.Array) -> jax.Array:
    """Prefix sums along the last axis as one product with a triangular 0/1 matrix (of
    all the rows of ``x`` and, under ``vmap``, all the pairs at once): one matrix product
    where ``jnp.cumsum`` is a reduce-window per call on XLA:CPU. Each sum has the same
    terms (and products of the later entries with 0, so ``x`` must be finite); its
    rounding may differ from ``jnp.cumsum``'s in the last bit."""
    i = jnp.arange(x.shape[-1])
    tri = i[:, None] <= i[None, :]
    return jnp.matmul(x, tri.astype(x.dtype), precision=lax.Precision.HIGHEST)


def _count_below(sorted_values: jax.Array, targets: jax.Array) -> jax.Array:
    """``jnp.searchsorted(sorted_values, targets, side="left")``: the number of values
    below each target, counted by comparing with all of them (``[S]`` values)."""
    return jnp.sum(sorted_values < targets[..., None], axis=-1, dtype=jnp.int32)


def _extension(p_u: jax.Array, p_l: jax.Array, start: jax.Array, c: jax.Array,
               kap: jax.Array, w: jax.Array) -> jax.Array:
    r"""The states UCRL3's support extension adds, for one pair, in closed form.

    Every array is in increasing order of ``u`` (positions ``0..S-1``): ``p_u``, ``p_l``
    the upper and lower bounds, ``start`` the starting support (position ``S - 1``
    included), ``c`` the upper bound off the empirical support (``p_u`` of every position
    outside ``start``), ``kap`` the threshold ``kappa span(u)``, ``w = u - min u``.

    The loops of :func:`near_optimistic_support` are prefix problems:

    * *outside*: with the outside positions ``o_1 > o_2 > ... > o_m`` (from the highest
      ``u`` down), the first fill gives ``a_i = min(c, 1 - (i - 1) c)`` to ``o_1, ...,
      o_K`` (``K`` the first count whose mass reaches one, at most ``m``); adding
      ``o_{j+1}`` to the support frees ``a_{j+1}``, which the fill, resumed where it
      stopped, gives to ``o_{j+1+K}``; so ``a`` is periodic with period ``K`` and after
      ``j`` additions the outside law is ``a`` on ``o_{j+1}, ..., o_{min(j+K, m)}``: its
      value is a difference of one cumulative sum;
    * *inside*: the total ``T_0 = sum p_u`` over ``start`` grows by ``c`` at each added
      state that lies above the position the removal has reached; the removal runs in
      segments, one per addition once the total exceeds one (the first removes
      ``T_j - 1``, the next ones ``c`` each), each from the position after the previous
      segment's last state (whose unused room is left unused). The end of a segment of
      ``c`` from every starting position is one ``searchsorted`` on the cumulative rooms;
      the segments' ends for every number of additions follow by composing that map
      with itself (pointer doubling, ``ceil(log2 S)`` gathers), and the inside value by
      cumulative sums;
    * the extension stops at the first count ``j`` whose values fail
      ``v_out > min(kap, v_in)`` (all counts evaluated at once), or when the last state
      added is the lowest position, or when no outside state is left.

    Returns:
        bool ``[S]``: the positions the extension adds (outside ``start``).
    """
    S = w.shape[0]
    dtype = w.dtype
    positions = jnp.arange(S, dtype=jnp.int32)
    outside = ~start
    m = jnp.sum(outside, dtype=jnp.int32)  # at most S - 1: position S - 1 is in `start`
    # The prefix sums that need no addition, in one product: the outside positions from
    # the top, the rooms of the starting support, its lower and upper bounds' values
    # (the last from each position up).
    room = jnp.where(start, p_u - p_l, 0.0)
    sums = _cumsum(jnp.stack([outside[::-1].astype(dtype), room,
                              jnp.where(start, p_l * w, 0.0),
                              jnp.where(start, p_u * w, 0.0)[::-1]]))
    # Rank of each outside position from the top (1 for the highest), 0 inside.
    rank = jnp.where(outside, sums[0][::-1].astype(jnp.int32), 0)
    # o[i] = o_{i+1}: the outside positions in decreasing order (as the loop meets them).
    o = jnp.zeros(S, positions.dtype).at[jnp.where(outside, rank - 1, S)].set(
        positions, mode="drop")
    j = positions  # the number of states added so far, 0..S-1
    has_o = j < m  # o[j] is an outside position
    w_o = jnp.where(has_o, w[o], 0.0)

    # Outside: the first fill, then the period-K law; v_out[j] after j additions.
    before = j.astype(dtype) * c  # the mass given before o_{j+1} in the first fill
    visited = has_o & (before < 1)
    K = jnp.sum(visited, dtype=jnp.int32)
    first = jnp.where(visited, jnp.minimum(c, jnp.maximum(0.0, 1 - before)), 0.0)
    # j mod K from a table of every remainder (an integer division per entry is slow).
    residues = np.arange(S)[:, None] % np.arange(1, S + 1)[None, :]
    a = jnp.where(has_o, first[jnp.asarray(residues, jnp.int32)[:, jnp.maximum(K, 1) - 1]],
                  0.0)
    outside_sums = _cumsum(jnp.stack([a * w_o, w_o]))
    CA = jnp.concatenate([jnp.zeros(1, dtype), outside_sums[0]])
    v_out = CA[jnp.minimum(j + K, m)] - CA[j]

    # Inside: rooms of the starting support (added states are handled below).
    R = jnp.concatenate([jnp.zeros(1, dtype), sums[1]])
    T0 = jnp.sum(jnp.where(start, p_u, 0.0))

    def segment(R, s, need):
        """A removal of ``need`` from position ``s`` up: (next position, last state,
        the last state's unused room)."""
        e = _count_below(R[1:], R[s] + need)
        found = (need > 0) & (e < S)
        e = jnp.minimum(e, S - 1)
        nxt = jnp.where(need > 0, jnp.where(found, e + 1, S), s)
        unused = jnp.where(found, R[e + 1] - R[s] - need, 0.0)
        return nxt, e, unused

    # j1: the first count of added states at which the total exceeds one.
    over = T0 + before > 1
    j1 = jnp.where(jnp.any(over), jnp.argmax(over).astype(jnp.int32), S)
    need1 = T0 + jnp.minimum(j1, S - 1).astype(dtype) * c - 1
    ptr1, e1, unused1 = segment(R, 0, jnp.where(j1 < S, need1, 0.0))
    # The segment of c from every start s = 0..S, and its iterates by doubling.
    starts = jnp.arange(S + 1, dtype=jnp.int32)
    nxt, ends, unused = segment(R, starts, jnp.full(S + 1, c))
    steps = jnp.maximum(j - j1, 0)
    ptr = jnp.full(S, ptr1)
    jump = nxt
    for bit in range(max(1, (S - 1).bit_length())):
        ptr = jnp.where((steps >> bit) & 1, jump[ptr], ptr)
        jump = jump[jump]
    ptr = jnp.where(j < j1, 0, ptr)  # the removal's position after j additions
    previous = jnp.concatenate([jnp.zeros(1, ptr.dtype), ptr[:-1]])
    left_w = jnp.where(j == j1, unused1 * w[e1],
                       jnp.where(j > j1, unused[previous] * w[ends[previous]], 0.0))
    CL = _cumsum(left_w)  # the unused rooms' values of the segments up to j

    # J: the additions that land above the removal's position (a prefix o_1..o_J).
    above = jnp.concatenate([(o > ptr) & has_o, jnp.zeros(1, bool)])
    J = jnp.argmax(~above).astype(jnp.int32)  # o_{J+1} is the first that does not
    # v_in[j] for j < J: the added states lie above the removal and keep c.
    PL = jnp.concatenate([jnp.zeros(1, dtype), sums[2]])
    PU = jnp.concatenate([sums[3][::-1], jnp.zeros(1, dtype)])  # from each position up
    CW = jnp.concatenate([jnp.zeros(1, dtype), outside_sums[1][:-1]])  # o_1..o_j's values
    v_in = PL[ptr] + PU[ptr] + c * CW + CL
    # From J on the law is fixed: the last segment also sees o_1..o_J's rooms.
    present = start | (outside & (rank <= J))
    RJ = jnp.concatenate([jnp.zeros(1, dtype), _cumsum(jnp.where(present, p_u - p_l, 0.0))])
    sJ = jnp.where(J <= j1, 0, ptr[jnp.maximum(J - 1, 0)])
    needJ = jnp.where(J < j1, 0.0, jnp.where(J == j1, need1, c))
    ptrJ, eJ, unusedJ = segment(RJ, sJ, needJ)
    p_in = jnp.where(present, jnp.where(positions < ptrJ, p_l, p_u), 0.0)
    v_in_J = (jnp.sum(p_in * w) + jnp.where(J >= 1, CL[jnp.maximum(J - 1, 0)], 0.0)
              + unusedJ * w[eJ])
    v_in = jnp.where(j < J, v_in, v_in_J)

    # The extension continues while v_out > min(kap, v_in), the last added state is not
    # the lowest position, and an outside state is left.
    last = jnp.where(j == 0, S - 2, jnp.concatenate([jnp.zeros(1, o.dtype), o[:-1]]))
    grow = (v_out > jnp.minimum(kap, v_in)) & (last > 0) & has_o
    added = jnp.argmax(~grow)  # the first count at which it stops
    return outside & (rank <= added)


def near_optimistic_support(bounds: UCRL3Bounds, u: jax.Array, *,
                            key_sums: bool = False) -> jax.Array:
    r"""UCRL3's near-optimistic support of every pair at the values ``u``.

    Bourel, Maillard & Talebi (2020), as ``UCRL3.computeSupport`` (StatisticalRL
    ``learners``, ``src/statisticalrl_learners/MDPs_discrete/UCRL3.py`` lines 211-261,
    with its helpers ``aux_compute_Fplus_in`` / ``aux_compute_Fplus_out``, lines 174-207)
    intends it. With ``p_u`` the upper bound (``upper`` on the empirical support,
    ``upper_out`` outside) and ``p_l`` the lower one:

    1. the support starts as the empirical one plus the state of highest ``u``
       (lines 212-216);
    2. *inside* (lines 174-188): starting from ``p_u`` on the support, mass is removed
       from the states of lowest ``u`` (each down to ``p_l``,
       ``temp = max((0, p[y] - sum_p + 1, p_l))``) until the total is at most one;
       *outside* (lines 192-207): the states outside the support, from the highest ``u``
       down, get up to ``p_u`` each (``temp = min((p_u, max(0, 1 - sum_p)))``) until the
       total reaches one; ``v_in``, ``v_out`` are the two laws' values of ``u - min u``
       (lines 236-237);
    3. while ``v_out > min(kappa span(u), v_in)`` (line 241), the outside state of highest
       ``u`` joins the support (lines 242-247); it gets ``p_u`` inside if it lies above
       the position where the inside removal stopped (lines 250-255), whose removal then
       resumes from that position, and its outside mass is set to 0 and given to the next
       outside states by the outside fill, resumed where it stopped (lines 256-257); then
       ``v_in``, ``v_out`` are recomputed (lines 258-259). The loop also ends once the
       state added is the one of lowest ``u`` (``ll < nS - 1``).

    The loops are evaluated in closed form (one ``[S]`` sort of ``u`` shared by all
    pairs; per pair, prefix sums, the ends of the removal's segments by counting the
    cumulative rooms below a target, and ``ceil(log2 S)`` gathers; no data-dependent
    loop; the prefix sums of all pairs are products with one triangular matrix, whose
    rounding may differ from a running sum's in the last bit): the masses of step 2
    after any number of additions are prefix sums (see ``_extension``), the values for
    every number of additions are evaluated at once and the extension stops at the first
    that fails the test of step 3. The decisions are those of the loops in exact
    arithmetic (checked against the published loop in rational arithmetic). Where two
    values the loops compare are equal in exact arithmetic (``v_out = v_in`` when ``u``
    takes one value on every state both laws charge, as it does on unvisited states),
    the rounding of the sums decides, here as in a loop in floating point; a loop in
    floating point can also round a total that is one in exact arithmetic to just below
    one, give one more state a mass of the order of ``1e-16`` and shift its later fills
    by one state.

    ``key_sums=True`` reproduces the published code, whose helpers sum the keys of a
    dict (state indices) where they mean its values (lines 175, 193): the outside value
    stays 0, step 3 never runs and the support is the empirical one plus ``argmax u``.

    Args:
        bounds: a :class:`UCRL3Bounds`, arrays ``[S, A, S]`` / ``[S, A]``, with
            ``0 <= lower <= upper``.
        u: the values, ``[S]``.
        key_sums: the published computation (static; see above).

    Returns:
        bool ``[S, A, S]``: the support of every pair.
    """
    order, _, _, _, _, support = _sorted_support(bounds, u, key_sums)
    return jnp.zeros(support.shape, bool).at[..., order].set(support)


def _sorted_support(bounds: UCRL3Bounds, u: jax.Array, key_sums: bool):
    """:func:`near_optimistic_support` with the states in increasing order of ``u``
    (``order``, stable; ``rank`` its inverse): ``(order, rank, u[order], lower, p_u,
    support)``, the last three ``[S, A, S]`` in that order (``lower`` 0 and ``p_u``
    ``upper_out`` off the empirical support)."""
    S = u.shape[0]
    order, rank = stable_argsort(u)  # increasing u
    u_ord = u[order]
    empirical = bounds.support[..., order]
    start = empirical | (jnp.arange(S) == S - 1)  # and the state of highest u
    lower = jnp.where(empirical, bounds.lower[..., order], 0.0)
    p_u = jnp.where(empirical, bounds.upper[..., order], bounds.upper_out[..., None])
    if key_sums:
        return order, rank, u_ord, lower, p_u, start
    w = u_ord - u_ord[0]  # u - min u
    kappa = bounds.kappa * (u_ord[-1] - u_ord[0])
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    added = jax.vmap(_extension, in_axes=(0, 0, 0, 0, 0, None))(
        flat(p_u), flat(lower), flat(start), flat(bounds.upper_out), flat(kappa), w)
    return order, rank, u_ord, lower, p_u, start | added.reshape(start.shape)


def _ucrl3_inner(data, u, bounds: UCRL3Bounds, with_q: bool, *, key_sums: bool = False):
    """:func:`jaxmdp.planning.box_maximise` of the bounds on the near-optimistic
    support (lower bounds on the empirical support, 0 elsewhere; upper bounds on the
    support, the lower ones off it), in the support's order of the states: the box's
    order (decreasing ``u``, ties to the higher index) is its reverse."""
    del data
    _, rank, u_ord, lower, p_u, support = _sorted_support(bounds, u, key_sums)
    upper = jnp.where(support, p_u, lower)
    rest = 1.0 - jnp.sum(jnp.where(bounds.support, bounds.lower, 0.0), axis=-1, keepdims=True)
    values, q = box_maximise_sorted(lower[..., ::-1], upper[..., ::-1], u_ord[::-1], rest)
    if not with_q:
        return values, None
    return values, jnp.take(q, u.shape[-1] - 1 - rank, axis=-1)


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
