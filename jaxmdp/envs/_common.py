"""Helpers shared by the environment families: dtypes, validated MDPs, argument checks."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmdp.mdp import MDP

__all__ = ["as_mdp", "check_int", "check_probability", "check_sizes", "float_dtype"]


def float_dtype(dtype) -> np.dtype:
    """The float dtype of an environment: ``dtype``, or the default float if ``None``."""
    return jnp.result_type(float) if dtype is None else jnp.dtype(dtype)


def as_mdp(P: np.ndarray, R: np.ndarray, dtype) -> MDP:
    """The validated :class:`~jaxmdp.MDP` of NumPy arrays ``P``, ``R`` in ``dtype``."""
    dtype = float_dtype(dtype)
    return MDP(jnp.asarray(P, dtype=dtype), jnp.asarray(R, dtype=dtype))


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int, or ``ValueError`` naming ``name`` unless an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a Python int >= {minimum}, got {value!r}")
    return int(value)


def check_probability(name: str, value) -> float:
    """``value`` as a float, or ``ValueError`` naming ``name`` unless it lies in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not (
        0.0 <= float(value) <= 1.0
    ):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def check_sizes(**sizes: int) -> None:
    """``ValueError`` naming the first size that is not a positive int."""
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive Python int, got {value!r}")
