"""The order of a few values without a sort, where a sort costs a host wait.

The maximisers over L1 balls, boxes and their truncations (UCRL2, UCRL2B, UCRL3, TUCRL,
OLP) order the states by their values once per sweep. Under ``vmap`` over replications
that is one sort of ``[batch, S]``; on a GPU, XLA runs a sort of 16,385 elements or more
as a CUB radix sort whose segment offsets are built on the host at every call, a host
wait inside every sweep of every planning loop. For a few states the same permutation
comes from ``S^2`` comparisons: the rank of a value is the number of values ordered
before it. :func:`stable_argsort` takes that way on an accelerator up to
:data:`RANK_MAX_STATES` states and sorts everywhere else; both give the permutation of
``jnp.argsort(x, stable=True)`` exactly (ties in index order, ``-0.0`` equal to
``0.0``, NaNs last in index order), so every result built on it is the same bit for bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["RANK_MAX_STATES", "platform", "stable_argsort"]

#: Up to this many values, :func:`stable_argsort` ranks by comparisons on an accelerator
#: (``S^2`` work per row, no sort).
RANK_MAX_STATES = 64


def platform() -> str:
    """The platform of the computation being traced: the default device's if one is set
    (as by ``jax.default_device``), else ``jax.default_backend()``. Read at trace time."""
    device = jax.config.jax_default_device
    if device is None:
        return jax.default_backend()
    return device if isinstance(device, str) else device.platform


def _ranks(x: jax.Array) -> jax.Array:
    """The position of every entry of ``x`` ``[..., S]`` in its stable increasing order,
    by ``S^2`` comparisons: ``rank[y]`` counts the ``z`` ordered before ``y`` (smaller, or
    equal with ``z < y``; NaN above every number, equal to NaN)."""
    n = x.shape[-1]
    xy, xz = x[..., :, None], x[..., None, :]
    nan_y, nan_z = jnp.isnan(xy), jnp.isnan(xz)
    below = (xz < xy) | (~nan_z & nan_y)
    equal = (xz == xy) | (nan_z & nan_y)
    index = jnp.arange(n)
    before = below | (equal & (index[None, :] < index[:, None]))
    return jnp.sum(before, axis=-1, dtype=jnp.int32)


def stable_argsort(x: jax.Array, *, method: str = "auto") -> tuple[jax.Array, jax.Array]:
    """``jnp.argsort(x, axis=-1, stable=True)`` and its inverse permutation.

    Args:
        x: values, ``[..., S]``.
        method: ``"sort"`` (XLA's sort, and a second one for the inverse), ``"rank"``
            (``S^2`` comparisons, no sort) or ``"auto"`` (``"rank"`` on an accelerator up
            to :data:`RANK_MAX_STATES` values, else ``"sort"``); static.

    Returns:
        ``(order, rank)``, int32 ``[..., S]``: ``x[..., order]`` is sorted, and
        ``rank[y]`` is the position of ``y`` in it (``order[rank[y]] == y``). The same
        integers for every method.

    Raises:
        ValueError: for an unknown ``method``.
    """
    if method not in ("auto", "sort", "rank"):
        raise ValueError(f"method must be one of ['auto', 'sort', 'rank'], got {method!r}")
    n = x.shape[-1]
    if method == "auto":
        method = "rank" if platform() != "cpu" and n <= RANK_MAX_STATES else "sort"
    if method == "sort":
        order = jnp.argsort(x, axis=-1, stable=True).astype(jnp.int32)
        return order, jnp.argsort(order, axis=-1, stable=True).astype(jnp.int32)
    rank = _ranks(x)
    index = jnp.arange(n, dtype=jnp.int32)
    # order[k] is the one y with rank[y] == k.
    order = jnp.sum(jnp.where(rank[..., :, None] == index, index[:, None], 0), axis=-2,
                    dtype=jnp.int32)
    return order, rank
