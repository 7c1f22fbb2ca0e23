"""Computing on the True entries of a mask only, a fixed number at a time.

Shared by :mod:`jaxmdp.agents.batching` (episode starts, masked elementwise functions) and
:mod:`jaxmdp.indices.kl` (the exact re-solve of flagged problems).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["in_passes"]


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
