"""Computing on the True entries of a mask only, a fixed number at a time.

:func:`in_passes` runs a computation on the True entries of a mask in passes of a fixed
size; :func:`cond_chunked` is a per-replication ``lax.cond`` whose ``vmap`` rule runs the
costly branch that way, on the replications that take it. Shared by
:mod:`jaxmdp.agents.batching` (episode starts, masked elementwise functions; it exports
``cond_chunked``), :mod:`jaxmdp.planning.incremental` (the policy evaluations after the
first) and :mod:`jaxmdp.indices.kl` (the exact re-solve of flagged problems).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap

__all__ = ["broadcast_leaf", "cond_chunked", "cond_with_batch_rule", "in_passes",
           "take_rows", "vmap_axes"]


def in_passes(mask: jax.Array, size: int, compute: Callable[[jax.Array], Any],
              out: Any) -> Any:
    """``compute(rows)`` on the True entries of the 1-d ``mask``, ``size`` at a time, in a
    loop of ``ceil(m / size)`` passes, its results scattered into ``out`` (a pytree whose
    leaves have ``len(mask)`` rows). The last pass pads with copies of its first row,
    whose results are dropped: a padded row costs what a real one does (another row could
    run longer, e.g. to an iteration cap)."""
    n = mask.shape[0]
    idx = jnp.nonzero(mask, size=n, fill_value=n)[0]
    # Pad so that every pass can slice `size` indices.
    idx = jnp.concatenate([idx, jnp.full((size,), n, idx.dtype)])
    passes = (jnp.sum(mask, dtype=jnp.int32) + size - 1) // size

    def body(i, out):
        rows = lax.dynamic_slice_in_dim(idx, i * size, size)
        new = compute(jnp.where(rows < n, rows, rows[0]))
        return jax.tree_util.tree_map(lambda kept, v: kept.at[rows].set(v, mode="drop"),
                                      out, new)

    return lax.fori_loop(0, passes, body, out)


def broadcast_leaf(leaf, batched: bool, size: int):
    """``leaf`` with a leading batch axis of ``size`` rows (broadcast unless ``batched``)."""
    return leaf if batched else jnp.broadcast_to(leaf, (size,) + jnp.shape(leaf))


def vmap_axes(flags):
    """``vmap``'s ``in_axes`` for operands whose batched leaves are ``flags``."""
    return jax.tree_util.tree_map(lambda b: 0 if b else None, flags)


def take_rows(operands, flags, index):
    """Rows ``index`` of the batched leaves; unbatched leaves as they are."""
    return jax.tree_util.tree_map(lambda leaf, b: leaf[index] if b else leaf, operands, flags)


def cond_with_batch_rule(pred, true_fn, false_fn, operands, batched):
    """``lax.cond(pred, true_fn, false_fn, *operands)`` whose vmap rule is
    ``batched(axis_size, pred, operands, flags)``: ``pred`` batched, the operands as they
    come, ``flags`` (a tree of bools like ``operands``) marking their batched leaves.
    Unbatched operands (the environment's arrays, the round) are not copied to every row
    of the batch."""

    @custom_vmap
    def branch(pred, *operands):
        return lax.cond(pred, true_fn, false_fn, *operands)

    @branch.def_vmap
    def _rule(axis_size, in_batched, pred, *operands):
        pred_batched, *operands_batched = in_batched
        pred = broadcast_leaf(pred, pred_batched, axis_size)
        out = batched(axis_size, pred, tuple(operands), tuple(operands_batched))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return branch(pred, *operands)


def cond_chunked(pred: jax.Array, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
                 *operands: Any, chunk: int = 8) -> Any:
    """``lax.cond`` for one replication; under ``vmap`` the costly branch runs only on the
    replications that need it, ``chunk`` of them at a time.

    Like :func:`jaxmdp.agents.batching.cond_compact`, a round where no element of ``pred``
    is True runs ``false_fn`` only. Where ``m > 0`` are True, their indices are listed
    (``jnp.nonzero(pred, size=batch)``) and a ``lax.while_loop`` runs ``ceil(m / chunk)``
    passes, each gathering the operands of the next ``chunk`` of them, running
    ``true_fn`` vmapped on those rows and scattering the results over ``false_fn``'s (the
    last pass pads with copies of its first row, whose results are dropped). The compiled
    program holds one copy of ``true_fn`` (of batch ``chunk``), and a planning round costs
    ``ceil(m / chunk)`` passes: suited to a ``true_fn`` whose cost grows with its batch
    (e.g. one that draws random numbers for every row), where ``cond_compact``'s
    buckets would pad ``m`` up to 4x and compile one copy per bucket. ``true_fn``'s result
    for one row must not depend on the other rows of its batch.
    """

    def batched(axis_size, pred, operands, flags):
        size = min(chunk, axis_size)
        axes = vmap_axes(flags)

        def keep(pred, operands):
            return jax.vmap(lambda ops: false_fn(*ops), in_axes=(axes,),
                            axis_size=axis_size)(operands)

        def run(pred, operands):
            def plan(rows):
                return jax.vmap(lambda ops: true_fn(*ops), in_axes=(axes,),
                                axis_size=size)(take_rows(operands, flags, rows))

            return in_passes(pred, size, plan, keep(pred, operands))

        return lax.cond(jnp.any(pred), run, keep, pred, operands)

    return cond_with_batch_rule(pred, true_fn, false_fn, operands, batched)
