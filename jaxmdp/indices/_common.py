"""What every index solver of jaxmdp shares: argument checks, normalisation, the NaN contract.

The index functions take ``p`` and ``v`` of shape ``[..., S]`` and scalar arguments
(``delta``, ``rho``, ``m``, ``sigma``) broadcastable to the batch shape ``[...]``. Shapes
are checked at trace time (:func:`check_shapes` raises ``ValueError`` naming every shape);
values are never checked inside ``jit``: invalid input (a NaN, an infinite ``p`` or ``v``
entry, a negative ``p`` entry, ``sum(p) <= 0``) gives NaN, as in ``jax.numpy``
(:func:`nan_where`), and every solve works on ``p / sum(p)`` (:func:`normalise`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array
ArrayLike = jax.typing.ArrayLike


def check_shapes(name: str, p, v, /, **batch) -> None:
    """Raises ``ValueError`` unless ``p`` and ``v`` are ``[..., S]`` with the same ``S >= 1``
    and their batch shapes broadcast with those of the keyword arguments.

    Args:
        name: the calling function, for the message.
        p: array with a ``shape`` (jax or NumPy).
        v: array with a ``shape``.
        **batch: the scalar arguments by name (``delta=...``), each batch-shaped.

    Raises:
        ValueError: naming the function and every shape involved.

    Example:
        >>> import numpy as np
        >>> check_shapes("kl_ucb", np.ones(3), np.ones(2), delta=np.ones(()))
        Traceback (most recent call last):
        ...
        ValueError: kl_ucb: p and v must have the same last dimension S, got p.shape=(3,), v.shape=(2,)
    """  # noqa: E501
    if p.ndim == 0 or v.ndim == 0:
        raise ValueError(f"{name}: p and v must have shape [..., S], got p.shape={p.shape}, "
                         f"v.shape={v.shape}")
    if p.shape[-1] != v.shape[-1]:
        raise ValueError(f"{name}: p and v must have the same last dimension S, got "
                         f"p.shape={p.shape}, v.shape={v.shape}")
    if p.shape[-1] == 0:
        raise ValueError(f"{name}: S must be at least 1, got p.shape={p.shape}")
    shapes = {key: jnp.shape(x) for key, x in batch.items()}
    try:
        jnp.broadcast_shapes(p.shape[:-1], v.shape[:-1], *shapes.values())
    except ValueError:
        others = "".join(f", {key}.shape={shape}" for key, shape in shapes.items())
        raise ValueError(f"{name}: batch shapes do not broadcast, got p.shape={p.shape}, "
                         f"v.shape={v.shape}{others}") from None


def prepare(name: str, p: ArrayLike, v: ArrayLike, /, **batch: ArrayLike) -> tuple[Array, ...]:
    """Checks the shapes (:func:`check_shapes`) and casts every argument to one float dtype.

    Returns:
        ``(p, v, *batch.values())`` as arrays of ``result_type(p, v, *batch, float)``.
    """
    p, v = jnp.asarray(p), jnp.asarray(v)
    batch = {key: jnp.asarray(x) for key, x in batch.items()}
    check_shapes(name, p, v, **batch)
    dtype = jnp.result_type(p, v, *batch.values(), float)
    return tuple(x.astype(dtype) for x in (p, v, *batch.values()))


def safe_divisor(total: Array) -> Array:
    """``total`` where it is positive, else ``1`` (a divisor that is never zero)."""
    return jnp.where(total > 0, total, 1.0)


def normalise(p: Array) -> Array:
    """``p / sum(p)`` over the last axis (``p`` itself where the sum is not positive).

    The indices are defined on the normalised law: in floating point ``sum(p)`` differs
    from one by a few ulps, which would otherwise move ``C`` by about ``c (sum(p) - 1)``,
    visible when ``delta < 1e-10``.
    """
    return p / safe_divisor(jnp.sum(p, axis=-1, keepdims=True))


def all_finite(*xs: Array) -> Array:
    """Whether every entry of every argument is finite (a scalar bool)."""
    finite = jnp.all(jnp.isfinite(xs[0]))
    for x in xs[1:]:
        finite = finite & jnp.all(jnp.isfinite(x))
    return finite


def any_nan(*xs: Array) -> Array:
    """Whether some entry of some argument is NaN (a scalar bool)."""
    nan = jnp.any(jnp.isnan(xs[0]))
    for x in xs[1:]:
        nan = nan | jnp.any(jnp.isnan(x))
    return nan


def nan_where(bad: Array, x: Array) -> Array:
    """``x`` with NaN wherever ``bad`` (shape ``x.shape[:bad.ndim]``) is True.

    This is the NaN contract of the index functions: invalid input makes the value, the
    optimiser and every derivative NaN, for that batch element only.
    """
    bad = jnp.reshape(bad, jnp.shape(bad) + (1,) * (jnp.ndim(x) - jnp.ndim(bad)))
    return jnp.where(bad, jnp.asarray(jnp.nan, x.dtype), x)
