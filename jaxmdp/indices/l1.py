"""The L1 ball around a probability vector: its maximiser, and the OLP index built on it."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp._order import stable_argsort
from jaxmdp.indices._common import prepare

__all__ = ["METHODS", "SORT_MAX_STATES", "l1_ball_maximiser", "l1_ucb"]

#: The algorithms of :func:`l1_ball_maximiser` (its static ``method`` argument).
METHODS = ("sort", "select", "scan")

#: Up to this many states :func:`l1_ucb` sorts ``v``; above it, it selects (XLA's CPU sort
#: is ~50x slower than a pass over ``p``).
SORT_MAX_STATES = 32

_HIGHEST = lax.Precision.HIGHEST


def _removal(room: jax.Array, p: jax.Array) -> jax.Array:
    """``clip(room, 0, p)``: what a state of mass ``p`` gives when ``room`` of the budget
    is left on reaching it. Written with ``where``, so that at ``p = 0`` the derivative in
    ``p`` is the one-sided one (``clip`` would average the two sides of the boundary of the
    simplex)."""
    return jnp.where(room >= p, p, jnp.where(room > 0, room, 0))


def _by_sorting(p: jax.Array, v: jax.Array, half: jax.Array, with_q: bool):
    """The maximiser for ``p`` ``[..., S]``, a shared ``v`` ``[S]`` and ``half = d / 2``
    ``[...]``: one sort of ``v``, the rows of ``p`` gathered into its order and one
    exclusive cumulative sum per row (on an accelerator with few states, the order by
    comparisons instead of a sort, ``jaxmdp._order.stable_argsort``)."""
    order, rank = stable_argsort(v)  # increasing v; the last state has the largest v
    v_sorted = v[order]
    p_sorted = jnp.take(p, order, axis=-1)
    v_max = jnp.max(v)
    # Mass of the states before x in the order (exclusive cumulative sum).
    mass_below = jnp.concatenate(
        [jnp.zeros_like(p_sorted[..., :1]), jnp.cumsum(p_sorted, axis=-1)[..., :-1]], axis=-1
    )
    # Removals that reach the argmax states themselves move mass at zero gain, so the cap
    # 1 - p_best of the move needs no term of its own in the value.
    removed = _removal(half[..., None] - mass_below, p_sorted)
    value = (jnp.dot(p, v, precision=_HIGHEST)
             + jnp.dot(removed, v_max - v_sorted, precision=_HIGHEST))
    if not with_q:
        return value, None
    moved = removed.at[..., -1].set(0)  # the best state keeps its own mass
    q_sorted = (p_sorted - moved).at[..., -1].add(jnp.sum(moved, axis=-1))
    return value, jnp.take(q_sorted, rank, axis=-1)


def _by_scan(p: jax.Array, v: jax.Array, half: jax.Array, with_q: bool):
    """The maximiser as one ``lax.scan`` over the states in increasing order of ``v``.

    ``p`` is moved to ``[S, ...]`` so that each step reads one contiguous slice and updates
    the mass below and the value of every row: O(rows) per step, without the gather and
    the cumulative sum of :func:`_by_sorting`.
    """
    p_next = jnp.moveaxis(p, -1, 0)
    order, rank = stable_argsort(v)
    best = order[-1]
    v_top = v[best]

    def step(carry, k):
        mass_below, value = carry
        row = lax.dynamic_index_in_dim(p_next, k, 0, keepdims=False)
        removed = jnp.where(k == best, 0, _removal(half - mass_below, row))
        v_k = v[k]
        # q . v accumulated as p . v + removed . (v_top - v).
        carry = (mass_below + row, value + row * v_k + removed * (v_top - v_k))
        return carry, (removed if with_q else None)

    zero = jnp.zeros(p_next.shape[1:], p.dtype)
    (_, value), removed = lax.scan(step, (zero, zero), order)
    if not with_q:
        return value, None
    removed = jnp.take(removed, rank, axis=0)  # back to the states' order
    q_next = (p_next - removed).at[best].add(jnp.sum(removed, axis=0))
    return value, jnp.moveaxis(q_next, 0, -1)


def _to_ordered_bits(x: jax.Array) -> jax.Array:
    """Map floats to unsigned integers with the same order (-0.0 just below +0.0)."""
    nbits = jnp.finfo(x.dtype).bits
    uint = jnp.uint64 if nbits == 64 else jnp.uint32
    u = lax.bitcast_convert_type(x, uint)
    top = uint(1 << (nbits - 1))
    return jnp.where(u & top, ~u, u | top)


def _from_ordered_bits(u: jax.Array, dtype) -> jax.Array:
    """Inverse of ``_to_ordered_bits``."""
    top = u.dtype.type(1 << (jnp.finfo(dtype).bits - 1))
    return lax.bitcast_convert_type(jnp.where(u & top, u ^ top, ~u), dtype)


def _removal_threshold(p: jax.Array, v: jax.Array, mass: jax.Array) -> jax.Array:
    """The smallest float t with sum(p[v <= t]) >= mass, for 0 < mass <= sum(p).

    Bisection over the ordered bit patterns of t between min v and max v: at most 32
    (float32) or 64 (float64) passes over p, and exact: the result is one of the v_x.
    """
    lo = _to_ordered_bits(jnp.min(v)) - 1
    hi = _to_ordered_bits(jnp.max(v))

    def cond(bounds):
        lo, hi = bounds
        return hi - lo > 1

    def body(bounds):
        lo, hi = bounds
        mid = lo + (hi - lo) // 2
        enough = jnp.sum(jnp.where(v <= _from_ordered_bits(mid, v.dtype), p, 0)) >= mass
        return jnp.where(enough, lo, mid), jnp.where(enough, mid, hi)

    _, hi = lax.while_loop(cond, body, (lo, hi))
    return _from_ordered_bits(hi, v.dtype)


def _select_one(p: jax.Array, v: jax.Array, half: jax.Array, with_q: bool):
    """The maximiser for one ``p``, ``v`` of shape ``[S]`` and a scalar ``half = d / 2``,
    without sorting: all of the mass strictly below the threshold ``t`` of
    :func:`_removal_threshold` is moved, and the rest of the budget from the states at
    ``t``, in proportion to ``p`` (which leaves the value unchanged)."""
    v_max = jnp.max(v)
    mean_p = jnp.dot(p, v, precision=_HIGHEST)
    total = jnp.sum(p)
    mass = jnp.minimum(half, total)
    moves = mass > 0
    safe_mass = jnp.where(moves, mass, total)
    t = _removal_threshold(*(lax.stop_gradient(x) for x in (p, v, safe_mass)))
    below = v < t
    at = v == t
    mass_below = jnp.sum(jnp.where(below, p, 0))
    mass_at = jnp.sum(jnp.where(at, p, 0))
    rest = jnp.clip(safe_mass - mass_below, 0, mass_at)
    has_at = mass_at > 0
    share = jnp.where(has_at, rest / jnp.where(has_at, mass_at, 1), 0)  # double where
    removed = jnp.where(below, p, 0) + jnp.where(at, p * share, 0)
    value = jnp.where(moves, mean_p + jnp.dot(removed, v_max - v, precision=_HIGHEST), mean_p)
    if not with_q:
        return value, None
    best = jnp.argmax(v)
    moved = jnp.where(moves & (jnp.arange(v.shape[0]) != best), removed, 0)
    return value, (p - moved).at[best].add(jnp.sum(moved))


def _by_selection(p: jax.Array, v: jax.Array, half: jax.Array, with_q: bool):
    """:func:`_select_one` for every row of ``p`` ``[..., S]`` (``half`` ``[...]``)."""
    one = partial(_select_one, v=v, with_q=with_q)
    for _ in range(p.ndim - 1):
        one = jax.vmap(one)
    return one(p, half=half)


_ALGORITHMS = {"sort": _by_sorting, "select": _by_selection, "scan": _by_scan}


@partial(jax.jit, static_argnames=("with_q", "method", "axis"))
def l1_ball_maximiser(
    p: jax.typing.ArrayLike,
    v: jax.typing.ArrayLike,
    d: jax.typing.ArrayLike,
    *,
    with_q: bool = False,
    method: str = "sort",
    axis: int = -1,
):
    r"""The largest mean of ``v`` over an L1 ball around ``p``, and a ``q`` that attains it.

    For every row :math:`p` of ``p`` (its states along ``axis``; all rows share one
    ``v``) computes

    .. math::

        \max_{q \in \Theta} \{ q^\top v : \|q - p\|_1 \le d \}

    over the probability simplex :math:`\Theta`, exactly: starting from :math:`q = p`,
    move :math:`M = \min(d/2, 1 - p_{x^*})` of mass onto a state
    :math:`x^* \in \arg\max_x v_x`, taking it from the states of lowest :math:`v` in
    increasing order of :math:`v` (Jaksch, Ortner & Auer 2010, Figure 2). The value is
    computed as :math:`p^\top v + \sum_x r_x (\max v - v_x)` with :math:`r_x` the mass
    removed from state :math:`x`. This is the inner maximisation of UCRL2's extended value
    iteration (:func:`jaxmdp.evi`, where the rows are the pairs :math:`(s, a)` and ``v``
    is the shared iterate) and, with one row, the OLP index :func:`jaxmdp.l1_ucb`.

    Three algorithms give the same optimum (``method``, static):

    * ``"sort"``: one sort of ``v`` shared by every row, each row gathered into that
      order and one exclusive cumulative sum per row, :math:`O(S \log S + n S)` for
      :math:`n` rows. The default; the fastest on accelerators.
    * ``"scan"``: one sort of ``v``, then one ``lax.scan`` over the states in that order
      whose step updates the mass removed so far and the value of every row, reading one
      slice of ``p`` across the rows. :math:`O(n S)` after the sort, without the gather
      and the cumulative sum; the fastest on CPU for many rows. Its slices are contiguous
      when the states are the first axis of ``p`` (``axis=0``); otherwise ``p`` is
      transposed on every call.
    * ``"select"``: no sort: per row, the state of ``v`` where the removal stops is found
      by a bisection over the bit patterns of the floats of ``v`` (32 or 64 masked sums
      over ``p``; exact); the mass at that value of ``v`` is taken in proportion to
      ``p``. For a single row with many states on CPU, where XLA's sort is slow.

    The values of the three agree up to rounding (their sums run in different orders).
    Where ``v`` has ties the maximiser is not unique and the methods may return different
    optimal ``q``: ``"sort"`` and ``"scan"`` take the mass of tied states in the order of
    a stable sort, ``"select"`` in proportion to ``p``; every ``q`` is on the simplex
    (when ``p`` is), within the ball, and puts the moved mass on one argmax state.

    The value is not clamped: it lies in :math:`[p^\top v, \max_x v_x]` up to rounding.
    :func:`jaxmdp.l1_ucb` adds the clamp and the NaN contract for invalid input. Inside
    ``jit`` the documented edge values hold: ``d <= 0`` (or NaN) moves nothing
    (``q = p``), ``d >= 2`` (or ``inf``) moves all of the mass off the other states.
    Works under ``jit``, ``vmap`` and ``grad`` with every method.

    Args:
        p: probabilities, shape ``[..., S]`` (or with the states along ``axis``):
            non-negative rows summing to one (not checked).
        v: values of the next state, shape ``[S]``, shared by every row of ``p`` (for a
            ``v`` per row, ``vmap`` over both).
        d: L1 radius, scalar or shape ``[...]``, broadcastable with the batch shape of
            ``p``.
        with_q: also return the maximisers (static).
        method: ``"sort"``, ``"scan"`` or ``"select"`` (static); see above.
        axis: the axis of ``p`` that holds the states (static); the batch shape ``[...]``
            is that of the other axes, in order.

    Returns:
        The maxima, shape: the broadcast batch shape ``[...]`` of ``p`` and ``d``, in the
        floating dtype of the inputs; with ``with_q``, the pair ``(values, q)`` with ``q``
        of shape ``[..., S]``, its states along ``axis``.

    Raises:
        ValueError: if ``p`` is a scalar, ``axis`` is not one of its axes, ``v`` is not
            of shape ``[S]`` with ``S`` the length of that axis, ``d`` does not
            broadcast, ``method`` is not one of :data:`METHODS` or ``with_q`` is not a
            bool.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp
        >>> p = jnp.array([0.5, 0.3, 0.2])
        >>> v = jnp.array([0.0, 1.0, 2.0])
        >>> value, q = jaxmdp.l1_ball_maximiser(p, v, 0.4, with_q=True)
        >>> print(f"{value:.2f}", [f"{x:.2f}" for x in q.tolist()])  # 0.2 moves to v=2
        1.10 ['0.30', '0.30', '0.40']
        >>> rows = jnp.stack([p, p[::-1]])  # two rows sharing v
        >>> values = jaxmdp.l1_ball_maximiser(rows, v, jnp.array([0.4, 3.0]), method="scan")
        >>> print([f"{x:.2f}" for x in values.tolist()])
        ['1.10', '2.00']

    References:
        Jaksch, Ortner & Auer, "Near-optimal Regret Bounds for Reinforcement Learning",
        JMLR 2010, Figure 2.
        Tewari & Bartlett, "Optimistic Linear Programming gives Logarithmic Regret for
        Irreducible MDPs", NeurIPS 2008.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(with_q, bool):
        raise ValueError(f"with_q must be a bool, got {with_q!r}")
    p = jnp.asarray(p)
    if p.ndim:  # (a scalar p is refused by prepare)
        if not isinstance(axis, int) or not -p.ndim <= axis < p.ndim:
            raise ValueError(f"axis must be an axis of p, an int in [-{p.ndim}, {p.ndim}), "
                             f"got axis={axis!r} for p.shape={p.shape}")
        p = jnp.moveaxis(p, axis, -1)
    p, v, d = prepare("l1_ball_maximiser", p, v, d=d)
    if v.ndim != 1:
        raise ValueError(f"l1_ball_maximiser: v must have shape [S], shared by every row of "
                         f"p, got p.shape={p.shape}, v.shape={v.shape}")
    batch = jnp.broadcast_shapes(p.shape[:-1], d.shape)
    p = jnp.broadcast_to(p, batch + v.shape)
    half = jnp.broadcast_to(d / 2, batch)
    value, q = _ALGORITHMS[method](p, v, half, with_q)
    return (value, jnp.moveaxis(q, -1, axis)) if with_q else value


def _l1_ucb_one(p: jax.Array, v: jax.Array, d: jax.Array, *, method: str) -> jax.Array:
    """``l1_ucb`` for one ``p``, ``v`` of shape ``[S]`` and a scalar ``d``: the maximum,
    exactly ``max v`` for ``d >= 2`` and never above it."""
    value, _ = _ALGORITHMS[method](p, v, d / 2, False)
    v_max = jnp.max(v)
    # Both branches are finite, so the gradient is finite at d = 2 as well.
    return jnp.where(d >= 2, v_max, jnp.minimum(value, v_max))


def _with_nan_contract(single):
    """``single`` with NaN out (value and every derivative) for invalid input: a NaN
    anywhere, an infinite entry of ``p`` or ``v``, a negative entry of ``p``,
    ``sum(p) <= 0``, or a NaN radius."""

    def guarded(p: jax.Array, v: jax.Array, d: jax.Array) -> jax.Array:
        bad = (jnp.any(~jnp.isfinite(p) | ~jnp.isfinite(v) | (p < 0)) | ~(jnp.sum(p) > 0)
               | jnp.isnan(d))
        value = jnp.where(bad, jnp.nan, single(p, v, d))
        # NaN derivatives too, for every input (also those the value does not depend on
        # at this point): nan * (sum p + sum v + d) where bad, an exact 0 elsewhere.
        nan_if_bad = jnp.where(bad, jnp.nan, 0.0).astype(value.dtype)
        touch = jnp.where(bad, jnp.sum(p) + jnp.sum(v) + d, 0.0)
        return value + nan_if_bad * touch

    return guarded


@jax.jit
def l1_ucb(p: jax.typing.ArrayLike, v: jax.typing.ArrayLike, d: jax.typing.ArrayLike) -> jax.Array:
    r"""The OLP index: the largest mean of ``v`` over an L1 ball around ``p``.

    Computes the function :math:`B` of the paper's OLP section (Cowan, Katehakis &
    Pirutinsky 2019, section 4, "OLP"), the optimistic value of the index of optimistic
    linear programming (Tewari & Bartlett 2008),

    .. math::

        B(p, v, d) = \sup_{q \in \Theta} \{ q^\top v : \|q - p\|_1 \le d \},

    where :math:`\Theta` is the probability simplex. The paper solves it as a linear
    program; it has an exact solution in :math:`O(S \log S)` by sorting: starting from
    :math:`q = p`, move :math:`M = \min(d/2, 1 - p_{x^*})` of mass onto a state
    :math:`x^* \in \arg\max_x v_x`, taking it from the states of lowest :math:`v` in
    increasing order of :math:`v`. So :math:`B = p^\top v` for :math:`d \le 0`,
    :math:`B = \max_x v_x` for :math:`d \ge 2`, and :math:`B` is non-decreasing,
    concave and piecewise linear in :math:`d`, with values in
    :math:`[p^\top v, \max_x v_x]`. The maximisation is :func:`l1_ball_maximiser`'s,
    with ``method="sort"`` up to ``SORT_MAX_STATES`` (32) states and ``"select"`` above
    (a bisection over the bit patterns of the value where the removal stops: 32 or 64
    masked sums over ``p``; exact, and much faster than XLA's CPU sort); both give the
    same optimum. The result is then clamped: exactly :math:`\max_x v_x` for
    :math:`d \ge 2`, and never above it.

    Invalid input gives NaN, as in ``jax.numpy``, never a plausible number: a NaN in
    ``p``, ``v`` or ``d``, an infinite entry of ``p`` or ``v``, a negative entry of
    ``p`` or ``sum(p) <= 0`` make the value and all its derivatives NaN (for that batch
    element only). :func:`jaxmdp.check_indices_inputs` raises ``ValueError`` instead, on
    concrete inputs.

    It works under ``jit``, ``vmap`` and ``grad``. ``B`` is piecewise linear in
    ``(p, v, d)``; away from the kinks the gradients are exact (for example
    :math:`\partial B / \partial v = q^*`, the optimal ``q``), and at a kink they are
    a finite one-sided or averaged value, never NaN.

    Args:
        p: probabilities, shape ``[S]`` or ``[..., S]``, non-negative and summing to one
            along the last axis (the sum is not checked; see above for NaN output).
        v: values of the next state, shape ``[S]`` or ``[..., S]``, broadcastable with
            ``p``.
        d: L1 radius, scalar or shape ``[...]``, broadcastable with the batch shape of
            ``p`` and ``v``.

    Returns:
        :math:`B(p, v, d)`, shape: the broadcast batch shape of ``p``, ``v`` and ``d``,
        in the floating dtype of the inputs.

    Raises:
        ValueError: if ``p`` or ``v`` is a scalar or their last axes differ.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp
        >>> p = jnp.array([0.5, 0.3, 0.2])
        >>> v = jnp.array([0.0, 1.0, 2.0])
        >>> print(jaxmdp.l1_ucb(p, v, 0.4))  # 0.2 of mass moves from v=0 to v=2
        1.1

    References:
        Cowan, Katehakis & Pirutinsky, "Accelerating the Computation of UCB and Related
        Indices for Reinforcement Learning", 2019, section 4 (OLP).
        Tewari & Bartlett, "Optimistic Linear Programming gives Logarithmic Regret for
        Irreducible MDPs", NeurIPS 2008.
    """
    dtype = jnp.result_type(p, v, d)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    p = jnp.asarray(p, dtype)
    v = jnp.asarray(v, dtype)
    d = jnp.asarray(d, dtype)
    if p.ndim == 0 or v.ndim == 0:
        raise ValueError(
            f"p and v must have a last axis of states, got shapes {p.shape} and {v.shape}"
        )
    if p.shape[-1] != v.shape[-1]:
        raise ValueError(
            f"p and v must have the same number of states, got shapes {p.shape} and {v.shape}"
        )
    method = "sort" if p.shape[-1] <= SORT_MAX_STATES else "select"
    single = _with_nan_contract(partial(_l1_ucb_one, method=method))
    return jnp.vectorize(single, signature="(s),(s),()->()")(p, v, d)
