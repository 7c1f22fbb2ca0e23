"""Argument checks shared by the index modules of :mod:`jaxmdp.indices`."""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["check_shapes"]


def check_shapes(name: str, p, v, others: dict) -> None:
    """Raises ``ValueError`` unless ``p`` and ``v`` are ``[..., S]`` with ``S >= 1`` and
    their batch shapes broadcast with the shapes in ``others``.

    Args:
        name: the public function checked, the start of every message.
        p: laws, ``[..., S]`` (an array with ``.ndim`` and ``.shape``).
        v: values, ``[..., S]``.
        others: the other arguments' names and shapes, in the order the message lists them.

    Raises:
        ValueError: naming the offending shapes.

    Example:
        >>> import numpy as np
        >>> from jaxmdp.indices._common import check_shapes
        >>> check_shapes("f", np.ones((2, 3)), np.ones(4), {"delta": ()})
        Traceback (most recent call last):
        ...
        ValueError: f: p and v must have the same last dimension S, got p.shape=(2, 3), v.shape=(4,)
    """
    if p.ndim == 0 or v.ndim == 0:
        raise ValueError(f"{name}: p and v must have shape [..., S], got p.shape={p.shape}, "
                         f"v.shape={v.shape}")
    if p.shape[-1] != v.shape[-1]:
        raise ValueError(f"{name}: p and v must have the same last dimension S, got "
                         f"p.shape={p.shape}, v.shape={v.shape}")
    if p.shape[-1] == 0:
        raise ValueError(f"{name}: S must be at least 1, got p.shape={p.shape}")
    try:
        jnp.broadcast_shapes(p.shape[:-1], v.shape[:-1], *others.values())
    except ValueError:
        listed = "".join(f", {key}.shape={shape}" for key, shape in others.items())
        raise ValueError(f"{name}: batch shapes do not broadcast, got p.shape={p.shape}, "
                         f"v.shape={v.shape}{listed}") from None
