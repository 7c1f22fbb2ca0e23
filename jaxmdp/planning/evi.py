r"""Extended value iteration over L1 (UCRL2), KL (KL-UCRL), box (UCRL2B) and UCRL3 sets.

For a confidence set that is a product over the pairs :math:`(s, a)` of a ball around the
estimate :math:`\hat p(s, a)` and an optimistic reward :math:`\tilde r(s, a)`, extended
value iteration (Jaksch, Ortner & Auer 2010, section 3.1.2) is value iteration on the
*extended* MDP whose actions at :math:`s` are the pairs :math:`(a, q)` with
:math:`q \in \mathcal{B}(s, a)`:

.. math::

    u_{i+1}(s) = \max_{a \in A(s)} \Big[ \tilde r(s, a)
                 + \max_{q \in \mathcal{B}(s, a)} q \cdot u_i \Big],

stopped at the first :math:`i` with :math:`\mathrm{sp}(u_{i+1} - u_i) < \epsilon`. The
greedy policy for :math:`u_i` is then :math:`\epsilon`-optimal in the extended MDP, and
its gain there lies in :math:`[\min(u_{i+1} - u_i), \max(u_{i+1} - u_i)]` (Jaksch et al.
2010, Theorem 7; Puterman 1994, Theorem 8.5.5).

Four kinds of sets are supported, each solved exactly:

* ``"l1"`` (UCRL2): :math:`\{q : \|q - \hat p\|_1 \le d\}`. The maximiser (Jaksch et al.
  2010, Figure 2) moves :math:`\min(d/2, 1 - \hat p(s_1))` of mass onto a state
  :math:`s_1` of largest :math:`u`, taken from the states of lowest :math:`u` in increasing
  order. The order of the states depends on :math:`u` only, so it is sorted once per
  sweep and shared by all :math:`S A` pairs: one ``[S]`` sort, then one pass over the
  states in that order that updates the removed mass and the value of every pair (a
  ``lax.scan`` over ``[S, A]`` slices on CPU; a gather and a cumulative sum over
  ``[S, A, S]`` on accelerators), :math:`O(S \log S + S^2 A)` per sweep. The same value
  as :func:`jaxmdp.l1_ucb`.
* ``"kl"`` (KL-UCRL, Filippi, Cappé & Garivier 2010):
  :math:`\{q : \mathrm{KL}(\hat p \| q) \le \delta\}`, whose maximum is
  :func:`jaxmdp.kl_ucb` and whose maximiser is :func:`jaxmdp.kl_ucb_solve`'s ``q``
  (it may put mass on a state where :math:`\hat p` is zero, section 3.2 of Filippi et
  al.). :math:`S A` one-dimensional root finds of size :math:`S` per sweep.
* ``"kl_published"``: KL-UCRL's maximiser as the StatisticalRL code computes it, with
  its ``search_up`` bug (``nu = max u + 10^7``, so ``q`` is nearly ``p_hat``), for
  reproducing that code's numbers.
* ``"box"`` (UCRL2B): :math:`\{q : l \le q \le h, \sum q = 1\}` with per-next-state
  bounds (:class:`BoxBounds` as ``radius``); :func:`box_maximise` gives every state its
  lower bound and the remaining mass to the states of highest :math:`u`, up to their
  upper bounds (the linear programme's solution), one shared sort per sweep.
* ``"ucrl3"`` (UCRL3, Bourel, Maillard & Talebi 2020): the box restricted to the
  near-optimistic support of :func:`near_optimistic_support`, recomputed at every sweep
  (:class:`UCRL3Bounds` as ``radius``); ``"ucrl3_key_sums"`` the same with the support
  the published code computes (the empirical one plus the state of highest :math:`u`).

The iterates are shifted by their minimum after each sweep (relative value iteration).
Every :math:`q` in a ball sums to one, so the inner maxima commute with the shift and the
differences :math:`u_{i+1} - u_i`, the stopping rule, the greedy policies and the gain
estimate are those of the unshifted iteration; the shift only keeps the values bounded
(in float32 the unshifted values grow like :math:`i \cdot` gain and lose the digits the
stopping rule looks at).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxmdp.indices.kl import kl_ucb_solve
from jaxmdp.indices.l1 import l1_ball_maximiser
from jaxmdp.planning._core import HIGHEST, ModelChange, Planner, Solution, Status

__all__ = ["BALLS", "INNER_MAXIMISATIONS", "BoxBounds", "ConfidenceSet", "InnerMaximisation",
           "UCRL3Bounds", "box_maximise", "evi", "evi_planner", "near_optimistic_support"]

DEFAULT_MAX_STEPS = 10_000

class ConfidenceSet(NamedTuple):
    """The model :func:`evi_planner` solves: a confidence set around an estimate.

    Attributes:
        p_hat: estimated transition laws, ``[S, A, S]``.
        rewards: optimistic rewards, ``[S, A]``.
        radius: the ball radius of every pair, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        epsilon: the span stopping threshold, positive scalar.
    """

    p_hat: jax.Array
    rewards: jax.Array
    radius: jax.Array
    mask: jax.Array
    epsilon: jax.Array


# -----------------------------------------------------------------------------------------
# Inner maxima: max over the ball of q . u for every pair, with a shared u.


def _kl_inner(p_hat: jax.Array, u: jax.Array, radius: jax.Array, with_q: bool):
    """``max {q . u : KL(p_hat[s, a] || q) <= radius[s, a]}`` for all pairs at once."""
    sol = kl_ucb_solve(p_hat, u, radius)
    return sol.value, (sol.q if with_q else None)


def box_maximise(lower: jax.Array, upper: jax.Array, u: jax.Array, with_q: bool):
    r"""``max {q . u : lower <= q <= upper, sum q = 1}`` for all pairs at once.

    The exact solution of this linear programme: every state gets its lower bound, then
    the remaining mass :math:`1 - \sum_y \text{lower}(y)` goes to the states in
    decreasing order of ``u``, each up to its upper bound. The order depends on ``u``
    only, so it is sorted once and shared by every pair. If the upper bounds cannot hold
    the remaining mass (``sum upper < 1``), the rest is dropped (``q`` sums to less than
    one); if the lower bounds exceed it, ``q = lower``.

    Args:
        lower: lower bounds, ``[..., S]``, in ``[0, 1]``.
        upper: upper bounds, ``[..., S]``, ``upper >= lower``.
        u: the values, ``[S]``.
        with_q: also return the maximisers (static).

    Returns:
        ``(values [...], q [..., S] or None)``.
    """
    order = jnp.argsort(u, stable=True)[::-1]  # decreasing u; ties: the higher index first
    lo = jnp.take(lower, order, axis=-1)
    room = jnp.maximum(jnp.take(upper, order, axis=-1) - lo, 0.0)
    rest = 1.0 - jnp.sum(lower, axis=-1, keepdims=True)
    before = jnp.cumsum(room, axis=-1) - room
    add = jnp.clip(rest - before, 0.0, room)
    q_sorted = lo + add
    values = jnp.einsum("...y,y->...", q_sorted, u[order], precision=HIGHEST)
    if not with_q:
        return values, None
    return values, jnp.take(q_sorted, jnp.argsort(order), axis=-1)


class BoxBounds(NamedTuple):
    """The ``radius`` of ``ball="box"`` (UCRL2B): per-next-state bounds.

    Attributes:
        lower: lower bounds of ``q(s, a, y)``, ``[S, A, S]``.
        upper: upper bounds of ``q(s, a, y)``, ``[S, A, S]``.
    """

    lower: jax.Array
    upper: jax.Array


def _box_inner(data, u, bounds: BoxBounds, with_q: bool):
    del data
    return box_maximise(bounds.lower, bounds.upper, u, with_q)


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
    positions = jnp.arange(S)
    outside = ~start
    m = jnp.sum(outside)  # at most S - 1: position S - 1 is in `start`
    # Rank of each outside position from the top (1 for the highest), 0 inside.
    rank = jnp.where(outside, jnp.cumsum(outside[::-1])[::-1], 0)
    # o[i] = o_{i+1}: the outside positions in decreasing order (as the loop meets them).
    o = jnp.zeros(S, positions.dtype).at[jnp.where(outside, rank - 1, S)].set(
        positions, mode="drop")
    j = positions  # the number of states added so far, 0..S-1
    has_o = j < m  # o[j] is an outside position
    w_o = jnp.where(has_o, w[o], 0.0)

    # Outside: the first fill, then the period-K law; v_out[j] after j additions.
    before = j.astype(dtype) * c  # the mass given before o_{j+1} in the first fill
    visited = has_o & (before < 1)
    K = jnp.sum(visited)
    first = jnp.where(visited, jnp.minimum(c, jnp.maximum(0.0, 1 - before)), 0.0)
    a = jnp.where(has_o, first[j % jnp.maximum(K, 1)], 0.0)
    CA = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(a * w_o)])
    v_out = CA[jnp.minimum(j + K, m)] - CA[j]

    # Inside: rooms of the starting support (added states are handled below).
    room = jnp.where(start, p_u - p_l, 0.0)
    R = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(room)])
    T0 = jnp.sum(jnp.where(start, p_u, 0.0))

    def segment(R, s, need):
        """A removal of ``need`` from position ``s`` up: (next position, last state,
        the last state's unused room)."""
        e = jnp.searchsorted(R[1:], R[s] + need, side="left")
        found = (need > 0) & (e < S)
        e = jnp.minimum(e, S - 1)
        nxt = jnp.where(need > 0, jnp.where(found, e + 1, S), s)
        unused = jnp.where(found, R[e + 1] - R[s] - need, 0.0)
        return nxt, e, unused

    # j1: the first count of added states at which the total exceeds one.
    over = T0 + before > 1
    j1 = jnp.where(jnp.any(over), jnp.argmax(over), S)
    need1 = T0 + jnp.minimum(j1, S - 1).astype(dtype) * c - 1
    ptr1, e1, unused1 = segment(R, 0, jnp.where(j1 < S, need1, 0.0))
    # The segment of c from every start s = 0..S, and its iterates by doubling.
    starts = jnp.arange(S + 1)
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
    CL = jnp.cumsum(left_w)  # the unused rooms' values of the segments up to j

    # J: the additions that land above the removal's position (a prefix o_1..o_J).
    above = jnp.concatenate([(o > ptr) & has_o, jnp.zeros(1, bool)])
    J = jnp.argmax(~above)  # o_{J+1} is the first that does not
    # v_in[j] for j < J: the added states lie above the removal and keep c.
    PL = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(jnp.where(start, p_l * w, 0.0))])
    PU = jnp.cumsum(jnp.where(start, p_u * w, 0.0)[::-1])[::-1]  # from each position up
    PU = jnp.concatenate([PU, jnp.zeros(1, dtype)])
    CW = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(w_o)[:-1]])  # o_1..o_j's values
    v_in = PL[ptr] + PU[ptr] + c * CW + CL
    # From J on the law is fixed: the last segment also sees o_1..o_J's rooms.
    present = start | (outside & (rank <= J))
    RJ = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(jnp.where(present, p_u - p_l, 0.0))])
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
    pairs; per pair, cumulative sums, one ``searchsorted`` and ``ceil(log2 S)`` gathers,
    no data-dependent loop): the masses of step 2 after any number of additions are
    prefix sums (see ``_extension``), the values for every number of additions are
    evaluated at once and the extension stops at the first that fails the test of
    step 3. The decisions are those of the loops in exact arithmetic (checked against the
    published loop in rational arithmetic). Where two values the loops compare are equal
    in exact arithmetic (``v_out = v_in`` when ``u`` takes one value on every state both
    laws charge, as it does on unvisited states), the rounding of the sums decides, here
    as in a loop in floating point; a loop in floating point can also round a total that
    is one in exact arithmetic to just below one, give one more state a mass of the order
    of ``1e-16`` and shift its later fills by one state.

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
    S = u.shape[0]
    order = jnp.argsort(u, stable=True)  # increasing u
    best = order[-1]
    start = bounds.support | (jnp.arange(S) == best)
    if key_sums:
        return start
    w_ord = (u - jnp.min(u))[order]
    kappa = bounds.kappa * (jnp.max(u) - jnp.min(u))
    p_u = jnp.where(bounds.support, bounds.upper, bounds.upper_out[..., None])[..., order]
    p_l = jnp.where(bounds.support, bounds.lower, 0.0)[..., order]
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    added = jax.vmap(_extension, in_axes=(0, 0, 0, 0, 0, None))(
        flat(p_u), flat(p_l), flat(start[..., order]), flat(bounds.upper_out), flat(kappa),
        w_ord)
    added = jnp.zeros(added.shape, bool).at[:, order].set(added)
    return start | added.reshape(bounds.support.shape)


def _ucrl3_inner(data, u, bounds: UCRL3Bounds, with_q: bool, *, key_sums: bool = False):
    del data
    support = near_optimistic_support(bounds, u, key_sums=key_sums)
    lower = jnp.where(bounds.support, bounds.lower, 0.0)
    upper = jnp.where(bounds.support, bounds.upper, bounds.upper_out[..., None])
    upper = jnp.where(support, upper, lower)
    return box_maximise(lower, upper, u, with_q)


def _kl_published_inner(p_hat, u, radius, with_q: bool):
    """KL-UCRL's maximiser as the StatisticalRL code computes it (``KLUCRL.py`` lines
    67-172, 183-186), with its ``search_up`` bug: ``nu = max_support u + 10^7``.

    ``p_hat`` ``[S, A, S]`` (zeros for an untried pair), ``radius`` ``[S, A]``. While
    every ``u`` is below ``1e-6`` the maximiser is ``p_hat`` itself. Otherwise, with the
    support ``p_hat > 1e-8``: if a maximiser of ``u`` (``max u > 0``) lies outside it and
    ``f(max u) < radius``, mass ``r = 1 - exp(f(max u) - radius)`` goes uniformly to those
    maximisers and ``nu = max u`` (``f(nu) = sum p log(nu - u) + log sum p / (nu - u)``
    over the support, ``-10^10`` when ``nu`` equals a support value or the support is
    empty); else ``r = 0`` and ``nu = max_support u + 10^7`` (line 128). The support gets
    ``(1 - r) w / sum w``, ``w = p_hat / (nu - u)`` (``p_hat 10^10`` within ``1e-5`` of
    ``nu``).
    """
    support = p_hat > 1e-8
    top_value = jnp.max(u)
    outside_top = (u == top_value) & ~support
    d = top_value - u
    on_top = jnp.any(support & (d == 0), axis=-1)
    empty = ~jnp.any(support, axis=-1)
    safe_d = jnp.where(support & (d > 0), d, 1.0)
    f_top = (jnp.sum(jnp.where(support, p_hat * jnp.log(safe_d), 0.0), axis=-1)
             + jnp.log(jnp.maximum(jnp.sum(jnp.where(support, p_hat / safe_d, 0.0), axis=-1),
                                   1e-300)))
    f_top = jnp.where(on_top | empty, -1e10, f_top)
    boundary = jnp.any(outside_top, axis=-1) & (top_value > 0) & (f_top < radius)
    r = jnp.where(boundary, 1.0 - jnp.exp(f_top - radius), 0.0)
    v_support = jnp.max(jnp.where(support, u, -jnp.inf), axis=-1)
    nu = jnp.where(boundary, top_value, v_support + 1e7)
    gap = nu[..., None] - u
    w = jnp.where(jnp.abs(gap) < 1e-5, p_hat * 1e10,
                  p_hat / jnp.where(jnp.abs(gap) < 1e-5, 1.0, gap))
    w = jnp.where(support, w, 0.0)
    total = jnp.sum(w, axis=-1, keepdims=True)
    q = (1.0 - r)[..., None] * w / jnp.where(total > 0, total, 1.0)
    count = jnp.maximum(jnp.sum(outside_top, axis=-1, keepdims=True), 1)
    q = q + jnp.where(outside_top & boundary[..., None], r[..., None] / count, 0.0)
    q = jnp.where(jnp.all(u < 1e-6), p_hat, q)
    values = jnp.einsum("...y,y->...", q, u, precision=HIGHEST)
    return values, (q if with_q else None)


class InnerMaximisation(NamedTuple):
    """One kind of confidence ball for :func:`evi`: its inner maximisation.

    Attributes:
        solve: ``solve(data, u, radius, with_q) -> (values [S, A], q [S, A, S] or None)``:
            ``max {q . u : q in the ball of (s, a)}`` for every pair at once, with a
            shared ``u``, and the maximisers when ``with_q`` (static) is true.
        layout: ``layout(p_hat) -> data``: ``p_hat`` in the layout ``solve`` reads.
        q_in_loop: whether ``solve`` returns its maximisers at no extra cost (they are
            then carried through the loop; otherwise recomputed once at the end).
    """

    solve: Callable
    layout: Callable
    q_in_loop: bool


def _l1_inner() -> InnerMaximisation:
    """The L1 ball: :func:`jaxmdp.l1_ball_maximiser` over every pair with the shared ``u``.

    On CPU by its ``"scan"`` method, on ``p_hat`` laid out states-first ``[S', S, A]``
    once, outside the iteration (each step of the scan then reads a contiguous ``[S, A]``
    slice); on accelerators by its ``"sort"`` method on ``p_hat`` as it is.
    """
    method, axis = ("scan", 0) if jax.default_backend() == "cpu" else ("sort", -1)

    def solve(data: jax.Array, u: jax.Array, radius: jax.Array, with_q: bool):
        if not with_q:
            return l1_ball_maximiser(data, u, radius, method=method, axis=axis), None
        values, q = l1_ball_maximiser(data, u, radius, with_q=True, method=method, axis=axis)
        return values, jnp.moveaxis(q, axis, -1)

    return InnerMaximisation(solve, lambda p_hat: jnp.moveaxis(p_hat, -1, axis), False)


#: The inner maximisation of each ball :func:`evi` knows, built for the default backend.
#: A new ball is one more entry: a function returning its :class:`InnerMaximisation`.
INNER_MAXIMISATIONS = {
    "l1": _l1_inner,
    "kl": lambda: InnerMaximisation(_kl_inner, lambda p_hat: p_hat, True),
    "kl_published": lambda: InnerMaximisation(_kl_published_inner, lambda p_hat: p_hat,
                                              True),
    "box": lambda: InnerMaximisation(_box_inner, lambda p_hat: None, False),
    "ucrl3": lambda: InnerMaximisation(_ucrl3_inner, lambda p_hat: None, False),
    "ucrl3_key_sums": lambda: InnerMaximisation(partial(_ucrl3_inner, key_sums=True),
                                                lambda p_hat: None, False),
}

#: The confidence balls :func:`evi` knows.
BALLS = tuple(INNER_MAXIMISATIONS)


# -----------------------------------------------------------------------------------------
# The iteration.


class _Carry(NamedTuple):
    u: jax.Array  # the iterate the next sweep starts from (shifted by its minimum)
    previous: jax.Array  # the iterate the last sweep started from
    policy: jax.Array  # greedy for `previous`
    q: jax.Array  # the maximisers at `previous` (carried for "kl" only, else a placeholder)
    gain_estimate: jax.Array
    span: jax.Array
    step: jax.Array
    converged: jax.Array


@partial(jax.jit, static_argnames=("ball",))
def _evi_core(p_hat, r_tilde, radius, mask, u0, epsilon, max_steps, *, ball):
    maximisation = INNER_MAXIMISATIONS[ball]()
    inner, q_in_loop = maximisation.solve, maximisation.q_in_loop
    data = maximisation.layout(p_hat)
    # A state without admissible actions keeps all of them (planning's convention).
    mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
    if ball not in BOUNDS_TYPES:
        radius = jnp.maximum(radius, 0)  # traced negative radii (an eager call raises)

    def cond(carry: _Carry) -> jax.Array:
        return ~carry.converged & (carry.step < max_steps)

    def body(carry: _Carry) -> _Carry:
        values, q = inner(data, carry.u, radius, q_in_loop)
        q_values = jnp.where(mask, r_tilde + values, -jnp.inf)
        policy = jnp.argmax(q_values, axis=-1).astype(jnp.int32)  # lowest index among ties
        u_next = jnp.max(q_values, axis=-1)
        diff = u_next - carry.u
        high, low = jnp.max(diff), jnp.min(diff)
        span = high - low
        return _Carry(
            u=u_next - jnp.min(u_next),
            previous=carry.u,
            policy=policy,
            q=q if q_in_loop else carry.q,
            gain_estimate=(high + low) / 2,
            span=span,
            step=carry.step + 1,
            converged=span < epsilon,
        )

    dtype = p_hat.dtype
    init = _Carry(
        u=u0,
        previous=u0,
        policy=jnp.zeros(u0.shape, jnp.int32),
        q=p_hat if q_in_loop else jnp.zeros((), dtype),
        gain_estimate=jnp.zeros((), dtype),
        span=jnp.full((), jnp.inf, dtype),
        step=jnp.zeros((), jnp.int32),
        converged=jnp.zeros((), bool),
    )
    final = lax.while_loop(cond, body, init)
    q_opt = final.q if q_in_loop else inner(data, final.previous, radius, True)[1]
    q_opt = jnp.where(mask[..., None], q_opt, p_hat)
    status = jnp.where(final.converged, Status.CONVERGED, Status.MAX_STEPS)
    return Solution(final.gain_estimate, final.previous, final.policy, final.step,
                    status.astype(jnp.int32), q_opt, final.span)


# -----------------------------------------------------------------------------------------
# Public API.


#: The ``radius`` type of the balls whose parameters are per-next-state bounds.
BOUNDS_TYPES = {"box": BoxBounds, "ucrl3": UCRL3Bounds, "ucrl3_key_sums": UCRL3Bounds}


def _as_radius(radius, dtype):
    if isinstance(radius, UCRL3Bounds):
        return radius._replace(
            lower=jnp.asarray(radius.lower, dtype), upper=jnp.asarray(radius.upper, dtype),
            upper_out=jnp.asarray(radius.upper_out, dtype),
            support=jnp.asarray(radius.support, bool), kappa=jnp.asarray(radius.kappa, dtype))
    if isinstance(radius, BoxBounds):
        return BoxBounds(jnp.asarray(radius.lower, dtype), jnp.asarray(radius.upper, dtype))
    return jnp.asarray(radius, dtype)


def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_arguments(p_hat, r_tilde, radius, mask, u0, ball, epsilon, max_steps) -> None:
    if ball not in BALLS:
        raise ValueError(f"ball must be one of {BALLS}, got {ball!r}")
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive Python int, got {max_steps!r}")
    P_shape, R_shape = jnp.shape(p_hat), jnp.shape(r_tilde)
    if len(P_shape) != 3 or P_shape[0] != P_shape[2] or P_shape[0] == 0 or P_shape[1] == 0:
        raise ValueError(f"p_hat must have shape [S, A, S] with S, A >= 1, got shape {P_shape}")
    if R_shape != P_shape[:2]:
        raise ValueError(f"r_tilde must have shape [S, A] = {P_shape[:2]}, got shape {R_shape}")
    if ball in BOUNDS_TYPES:
        if not isinstance(radius, BOUNDS_TYPES[ball]):
            raise ValueError(f"radius must be a {BOUNDS_TYPES[ball].__name__} for "
                             f"ball={ball!r}, got {type(radius).__name__}")
        for field in ("lower", "upper"):
            shape = jnp.shape(getattr(radius, field))
            if shape != P_shape:
                raise ValueError(f"radius.{field} must have shape [S, A, S] = {P_shape}, "
                                 f"got shape {shape}")
    elif jnp.shape(radius) != P_shape[:2]:
        raise ValueError(
            f"radius must have shape [S, A] = {P_shape[:2]}, got shape {jnp.shape(radius)}"
        )
    if mask is not None and jnp.shape(mask) != P_shape[:2]:
        raise ValueError(
            f"mask must have shape [S, A] = {P_shape[:2]}, got shape {jnp.shape(mask)}"
        )
    if u0 is not None and jnp.shape(u0) != P_shape[:1]:
        raise ValueError(f"u0 must have shape [S] = {P_shape[:1]}, got shape {jnp.shape(u0)}")
    if jnp.ndim(epsilon) != 0:
        raise ValueError(f"epsilon must be a scalar, got shape {jnp.shape(epsilon)}")
    if not _is_traced(epsilon) and not float(epsilon) > 0:
        raise ValueError(f"epsilon must be positive, got {float(epsilon)!r}")
    if ball not in BOUNDS_TYPES and not _is_traced(radius):
        bad = np.asarray(radius) < 0
        if np.any(bad):
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"radius must be non-negative, got radius{list(where)} = "
                f"{float(np.asarray(radius)[where])!r}"
            )


def evi(
    p_hat: ArrayLike,
    r_tilde: ArrayLike,
    radius: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    ball: str = "l1",
    epsilon: ArrayLike,
    max_steps: int = DEFAULT_MAX_STEPS,
    u0: ArrayLike | None = None,
) -> Solution:
    r"""Extended value iteration over a product of L1 or KL balls (UCRL2, KL-UCRL).

    Iterates, from :math:`u_0` (default 0, as in UCRL2),

    .. math::

        u_{i+1}(s) = \max_{a \in A(s)} \Big[ \tilde r(s, a)
                     + \max_{q \in \mathcal{B}(s, a)} q \cdot u_i \Big]

    until :math:`\mathrm{sp}(u_{i+1} - u_i) < \epsilon` (Jaksch, Ortner & Auer 2010,
    section 3.1.2), where :math:`\mathcal{B}(s, a)` is
    :math:`\{q : \|q - \hat p(s, a)\|_1 \le d(s, a)\}` for ``ball="l1"`` or
    :math:`\{q : \mathrm{KL}(\hat p(s, a) \| q) \le \delta(s, a)\}` for ``ball="kl"``
    (Filippi, Cappé & Garivier 2010), with :math:`q` on the simplex. Both inner maxima
    are exact (see the module docstring): the L1 one by Jaksch et al.'s Figure 2 with one
    sort of :math:`u_i` per sweep shared by all pairs (:math:`O(S^2 A)` per sweep), the KL
    one by :func:`jaxmdp.kl_ucb_solve` (:math:`S A` solves of size :math:`S` per sweep).

    On return, ``policy`` is greedy for ``u`` (:math:`u_i`, the start of the last sweep)
    and ``q_opt`` holds the maximisers at ``u``; by Jaksch et al.'s Theorem 7 (Puterman
    1994, Theorem 8.5.5) the gain of ``policy`` in the optimistic MDP with rows
    ``q_opt[s, policy[s]]``, and the optimal gain of the extended MDP, both lie in
    :math:`[\min, \max]` of :math:`u_{i+1} - u_i`, so within ``span / 2`` of
    ``gain_estimate``. Convergence of the span needs the usual conditions (e.g. an
    aperiodic optimistic MDP; the ball's support on every state gives it for ``"kl"``
    and for ``"l1"`` with positive radii, UCRL2's Theorem 7 argument); otherwise the
    iteration stops at ``max_steps`` with status ``MAX_STEPS``.

    Written for one MDP and a ``lax.while_loop`` with a step counter; it works under
    ``jit`` and ``vmap`` (a batch runs until all of its members stop; the stopped ones
    keep their result). Not differentiable (the loop is not differentiated and no custom
    derivative is defined). The iterates are shifted by their minimum after every sweep,
    which changes none of the above.

    Args:
        p_hat: the centres :math:`\hat p(s, a)` of the balls, shape ``[S, A, S]``, rows of
            admissible pairs on the simplex (not checked). Zeros are allowed.
        r_tilde: optimistic rewards :math:`\tilde r(s, a)`, shape ``[S, A]``.
        radius: the radii, shape ``[S, A]``: L1 radius :math:`d` (UCRL2:
            :math:`\sqrt{14 S \ln(2 A t_k / \delta) / \max(1, N_k(s, a))}`) or KL radius.
            Non-negative; an eager call raises on negative entries, a traced one treats
            them as 0. For ``"box"`` a :class:`BoxBounds`, for ``"ucrl3"`` and
            ``"ucrl3_key_sums"`` a :class:`UCRL3Bounds` (``p_hat`` then only fills the
            ``q_opt`` rows of inadmissible pairs).
        mask: admissible actions, bool, shape ``[S, A]``; ``None`` means all. A state
            whose row is all False keeps every action (as in :func:`jaxmdp.policy_iteration`).
        ball: one of :data:`BALLS`: ``"l1"``, ``"kl"``, ``"kl_published"``, ``"box"``,
            ``"ucrl3"``, ``"ucrl3_key_sums"`` (static).
        epsilon: the span tolerance, a positive scalar; may be traced (UCRL2 uses
            :math:`1/\sqrt{t_k}`). A traced ``epsilon <= 0`` runs to ``max_steps``.
        max_steps: the largest number of sweeps, a positive Python int.
        u0: the starting values :math:`u_0`, shape ``[S]`` (a warm start); default zeros.

    Returns:
        A :class:`~jaxmdp.planning.Solution` ``(gain, bias, policy, num_steps, status,
        q_opt, span)``: ``bias`` is ``u`` (also readable as ``.u``) and ``gain`` the
        gain estimate (also ``.gain_estimate``).

    Raises:
        ValueError: for an unknown ``ball``, a non-positive ``epsilon`` or ``max_steps``,
            arrays of the wrong shapes, or (eagerly) a negative ``radius``; the message
            names the argument.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.make("paper-mdp")
        >>> res = jm.evi(mdp.P, mdp.R, jnp.zeros(mdp.R.shape), mdp.mask, epsilon=1e-6)
        >>> int(res.status) == jm.planning.Status.CONVERGED, res.policy.tolist()
        (True, [0, 1, 0])

    References:
        Jaksch, Ortner & Auer, "Near-optimal Regret Bounds for Reinforcement Learning",
        JMLR 2010, section 3.1.2, Figure 2 and Theorem 7.
        Filippi, Cappé & Garivier, "Optimism in Reinforcement Learning and
        Kullback-Leibler Divergence", Allerton 2010, section 3.
        Puterman, "Markov Decision Processes", 1994, Theorem 8.5.5.
    """
    _check_arguments(p_hat, r_tilde, radius, mask, u0, ball, epsilon, max_steps)
    dtype = jnp.result_type(p_hat, r_tilde, *([] if u0 is None else [u0]),
                            *([] if ball in BOUNDS_TYPES else [radius]))
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    num_states = jnp.shape(p_hat)[0]
    if mask is None:
        mask = np.ones(jnp.shape(r_tilde), bool)
    if u0 is None:
        u0 = np.zeros(num_states, dtype)
    return _evi_core(
        jnp.asarray(p_hat, dtype),
        jnp.asarray(r_tilde, dtype),
        _as_radius(radius, dtype),
        jnp.asarray(mask, bool),
        jnp.asarray(u0, dtype),
        jnp.asarray(epsilon, dtype),
        jnp.asarray(max_steps, jnp.int32),
        ball=ball,
    )


@functools.cache
def evi_planner(ball: str = "l1", *, max_steps: int = DEFAULT_MAX_STEPS,
                warm_start: bool = False) -> Planner:
    """Extended value iteration behind :class:`~jaxmdp.planning.Planner`.

    ``update(state, change)`` runs :func:`evi` on the :class:`ConfidenceSet`
    ``change.model``. The state is the last solution's ``u`` (zeros at first): with
    ``warm_start`` the next update starts from it, otherwise from zeros (UCRL2's rule).

    Args:
        ball: one of :data:`BALLS` (static).
        max_steps: maximum number of sweeps per update, a positive int.
        warm_start: start each update from the previous ``u``.

    Returns:
        A :class:`~jaxmdp.planning.Planner`; calls with equal arguments return the same
        object.

    Raises:
        ValueError: for an unknown ``ball``.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> from jaxmdp import planning
        >>> mdp = jm.envs.make("paper-mdp")
        >>> planner = planning.evi_planner("l1")
        >>> model = planning.ConfidenceSet(mdp.P, mdp.R, jnp.zeros(mdp.R.shape), mdp.mask,
        ...                                jnp.asarray(1e-8))
        >>> sol, _ = planner.update(planner.init(model), planning.ModelChange(model))
        >>> sol.policy.tolist()
        [0, 1, 0]
    """
    if ball not in INNER_MAXIMISATIONS:
        raise ValueError(f"ball must be one of {list(BALLS)}, got {ball!r}")

    def init(model: ConfidenceSet):
        return jnp.zeros(jnp.shape(model.p_hat)[0], jnp.asarray(model.p_hat).dtype)

    def update(state, change: ModelChange):
        model = change.model
        solution = evi(model.p_hat, model.rewards, model.radius, model.mask, ball=ball,
                       epsilon=model.epsilon, max_steps=max_steps,
                       u0=state if warm_start else None)
        return solution, solution.bias

    return Planner(init, update)
