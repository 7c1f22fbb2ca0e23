"""The OLP index: the largest mean of ``v`` within an L1 ball around ``p``."""

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["l1_ucb"]


# Up to this many states the optimum is found by sorting; above it by a bisection over
# the bit patterns of the threshold (XLA's CPU sort is ~50x slower than a pass over p).
SORT_MAX_STATES = 32


def _l1_ucb_sorted(p: jax.Array, v: jax.Array, d: jax.Array) -> jax.Array:
    """``l1_ucb`` for one ``p``, ``v`` of shape ``[S]`` and a scalar ``d``, by sorting v."""
    order = jnp.argsort(v)
    v_sorted = v[order]
    p_sorted = p[order]
    v_max = jnp.max(v)
    # Mass taken from the states below x (in increasing order of v) before x is reached.
    mass_below = jnp.concatenate([jnp.zeros((1,), p.dtype), jnp.cumsum(p_sorted)[:-1]])
    # Half the L1 budget moves from the lowest-v states to an argmax-v state. Removals
    # that reach the argmax states themselves move mass at zero gain, so the cap
    # 1 - p_best of the move needs no separate term.
    room = d / 2 - mass_below
    # clip(room, 0, p) written with where, so that at p_x = 0 the derivative in p_x is the
    # one-sided one (clip would average the two sides of the boundary of the simplex).
    removed = jnp.where(room >= p_sorted, p_sorted, jnp.where(room > 0, room, 0))
    mean_p = jnp.dot(p, v)
    value = mean_p + jnp.dot(removed, v_max - v_sorted)
    # Both branches are finite, so the gradient is finite at d = 2 as well.
    return jnp.where(d >= 2, v_max, jnp.minimum(value, v_max))


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


def _l1_ucb_selected(p: jax.Array, v: jax.Array, d: jax.Array) -> jax.Array:
    """``l1_ucb`` for one ``p``, ``v`` of shape ``[S]`` and a scalar ``d``, by selection.

    The same optimum as ``_l1_ucb_sorted``: all of the mass strictly below the threshold
    t is moved, and the rest of the budget from the states at t (split in proportion to
    p, which leaves the value unchanged).
    """
    v_max = jnp.max(v)
    mean_p = jnp.dot(p, v)
    total = jnp.sum(p)
    mass = jnp.minimum(d / 2, total)
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
    value = jnp.where(moves, mean_p + jnp.dot(removed, v_max - v), mean_p)
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
    :math:`[p^\top v, \max_x v_x]`. For more than ``SORT_MAX_STATES`` (32) states the
    state where the removal stops is found instead by a bisection over the bit patterns
    of its value (32 or 64 masked sums over ``p``; exact, and much faster than XLA's CPU
    sort); both give the same optimum.

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
    single = _l1_ucb_sorted if p.shape[-1] <= SORT_MAX_STATES else _l1_ucb_selected
    single = _with_nan_contract(single)
    return jnp.vectorize(single, signature="(s),(s),()->()")(p, v, d)
