"""The finite MDP pytree: transitions ``P[s, a, s']``, rewards ``R[s, a]``, ``mask[s, a]``.

An :class:`MDP` is the quadruple ``(S, A, R, P)`` of section 2 of Cowan, Katehakis &
Pirutinsky (2019) with the admissible-action sets ``A(x)`` encoded as a boolean mask.
Constructing one validates its arguments eagerly; :meth:`MDP.unchecked` skips validation
for values computed inside ``jit``/``scan`` (for example estimated MDPs).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

__all__ = ["MDP"]

# Absolute tolerance on the row sums of P (float64); see `_row_sum_tolerance`.
ROW_SUM_ATOL = 1e-6


def _row_sum_tolerance(dtype: np.dtype, num_states: int) -> float:
    """Row-sum tolerance: 1e-6, widened to ``S * eps`` for low precision dtypes.

    Summing ``S`` numbers that were normalised in float32 can be off by about ``S * eps``
    (1.2e-4 for S = 1000), so a float32 MDP built by ``x / x.sum()`` must still pass.
    """
    return max(ROW_SUM_ATOL, num_states * float(jnp.finfo(dtype).eps))


def _float_dtype(*arrays: jax.Array) -> np.dtype:
    dtype = jnp.result_type(*arrays)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"P and R must be real, got dtype {dtype}")
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)  # float64 under x64, float32 otherwise.
    return dtype


def _first_index(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _is_traced(*arrays: jax.Array) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in arrays)


def _check_shapes(P: jax.Array, R: jax.Array, mask: jax.Array) -> None:
    if P.ndim != 3:
        raise ValueError(f"P must have shape [S, A, S] (rank 3), got shape {P.shape}")
    S, A, S2 = P.shape
    if S != S2:
        raise ValueError(
            f"P must have shape [S, A, S] with equal first and last axes, got shape {P.shape}"
        )
    if S == 0 or A == 0:
        raise ValueError(f"P must have at least one state and one action, got shape {P.shape}")
    if R.ndim != 2:
        raise ValueError(f"R must have shape [S, A] (rank 2), got shape {R.shape}")
    if R.shape != (S, A):
        raise ValueError(
            f"R must have shape [S, A] = {(S, A)} to match P of shape {P.shape}, "
            f"got shape {R.shape}"
        )
    if mask.ndim != 2 or mask.shape != (S, A):
        raise ValueError(
            f"mask must have shape [S, A] = {(S, A)} to match P of shape {P.shape}, "
            f"got shape {mask.shape}"
        )


def _check_values(P: jax.Array, R: jax.Array, mask: jax.Array) -> None:
    P_np = np.asarray(P, dtype=np.float64)
    R_np = np.asarray(R, dtype=np.float64)
    mask_np = np.asarray(mask)
    bad = ~np.isfinite(P_np)
    if bad.any():
        i = _first_index(bad)
        raise ValueError(f"P must be finite, got P[{i[0]}, {i[1]}, {i[2]}] = {float(P_np[i])}")
    bad = P_np < 0
    if bad.any():
        i = _first_index(bad)
        raise ValueError(
            f"P must be non-negative, got P[{i[0]}, {i[1]}, {i[2]}] = {float(P_np[i])}"
        )
    bad = ~np.isfinite(R_np)
    if bad.any():
        i = _first_index(bad)
        raise ValueError(f"R must be finite, got R[{i[0]}, {i[1]}] = {float(R_np[i])}")
    empty = ~mask_np.any(axis=1)
    if empty.any():
        s = int(np.argwhere(empty)[0, 0])
        raise ValueError(
            f"mask must allow at least one action in every state, got state {s} with "
            f"mask[{s}] = {mask_np[s].tolist()}"
        )
    tol = _row_sum_tolerance(P.dtype, P.shape[0])
    sums = P_np.sum(axis=-1)
    bad = (np.abs(sums - 1.0) > tol) & mask_np
    if bad.any():
        s, a = _first_index(bad)
        raise ValueError(
            f"P[s, a] must sum to 1 (within {tol:.1e}) for every admissible (s, a), "
            f"got sum(P[{s}, {a}]) = {float(sums[s, a])!r}"
        )


@dataclasses.dataclass(frozen=True, eq=False, init=False)
class MDP:
    r"""A finite average-reward MDP with known rewards (paper, section 2).

    Holds the transition law ``P[x, a, y]`` = :math:`p^a_{x,y}`, the expected rewards
    ``R[x, a]`` = :math:`r_{x,a}` and the admissible-action mask ``mask[x, a]``
    (:math:`a \in A(x)`). It is a pytree with the three arrays as leaves, so it passes
    through ``jit``, ``vmap`` and ``lax.scan``; a batch of MDPs is an ``MDP`` whose
    leaves carry leading batch axes.

    Construction validates eagerly and raises ``ValueError`` naming the argument and the
    bad value for: wrong ranks or mismatched shapes; NaN/inf in ``P`` or ``R``; negative
    entries of ``P``; a row ``P[x, a]`` of an admissible pair whose sum differs from 1 by
    more than ``max(1e-6, S * eps)`` (``eps`` of the dtype, so float32 rows normalised
    by division pass); a state with no admissible action. Rewards may be negative. Rows
    of inadmissible pairs must be finite and non-negative but need not sum to 1.
    Integer ``P``/``R`` are converted to the default float dtype; ``P`` and ``R`` share
    one dtype. When called on traced values (inside ``jit``) only the static shape checks
    run; use :meth:`unchecked` to skip validation explicitly.

    Args:
        P: transition probabilities, shape ``[S, A, S]``.
        R: expected rewards, shape ``[S, A]``.
        mask: admissible actions, bool, shape ``[S, A]``; ``None`` means all admissible.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> mdp = jm.MDP(jnp.full((2, 1, 2), 0.5), jnp.array([[1.0], [0.0]]))
        >>> mdp.num_states, mdp.num_actions
        (2, 1)
    """

    P: jax.Array
    R: jax.Array
    mask: jax.Array

    def __init__(self, P: ArrayLike, R: ArrayLike, mask: ArrayLike | None = None):
        P = jnp.asarray(P)
        R = jnp.asarray(R)
        dtype = _float_dtype(P, R)
        P = P.astype(dtype)
        R = R.astype(dtype)
        if mask is None:
            mask = jnp.ones(R.shape, dtype=bool)
        else:
            mask = jnp.asarray(mask)
            if mask.dtype != jnp.bool_:
                if not _is_traced(mask):
                    values = np.unique(np.asarray(mask))
                    if not np.isin(values, (0, 1)).all():
                        raise ValueError(
                            f"mask must be boolean (or 0/1), got values {values.tolist()}"
                        )
                mask = mask.astype(bool)
        _check_shapes(P, R, mask)
        if not _is_traced(P, R, mask):
            _check_values(P, R, mask)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "mask", mask)

    @classmethod
    def unchecked(cls, P: ArrayLike, R: ArrayLike, mask: ArrayLike | None = None) -> MDP:
        """Builds an ``MDP`` without any validation (for traced values inside ``jit``).

        The caller guarantees the invariants of :class:`MDP`. Arrays are stored as given
        (no dtype conversion), except that ``mask=None`` becomes all-True.

        Args:
            P: transition probabilities, shape ``[..., S, A, S]``.
            R: expected rewards, shape ``[..., S, A]``.
            mask: admissible actions, bool, shape ``[..., S, A]``, or ``None``.

        Returns:
            The ``MDP``.
        """
        R = jnp.asarray(R)
        mask = jnp.ones(R.shape, dtype=bool) if mask is None else mask
        return cls._from_leaves(jnp.asarray(P), R, mask)

    @classmethod
    def _from_leaves(cls, P, R, mask) -> MDP:
        obj = object.__new__(cls)
        object.__setattr__(obj, "P", P)
        object.__setattr__(obj, "R", R)
        object.__setattr__(obj, "mask", mask)
        return obj

    @property
    def num_states(self) -> int:
        """Number of states ``S`` (the last axis of ``P``)."""
        return self.P.shape[-1]

    @property
    def num_actions(self) -> int:
        """Number of actions ``A`` (the last axis of ``R``)."""
        return self.R.shape[-1]


def _flatten_with_keys(mdp: MDP):
    children = (
        (jax.tree_util.GetAttrKey("P"), mdp.P),
        (jax.tree_util.GetAttrKey("R"), mdp.R),
        (jax.tree_util.GetAttrKey("mask"), mdp.mask),
    )
    return children, None


def _flatten(mdp: MDP):
    return (mdp.P, mdp.R, mdp.mask), None


def _unflatten(_, children) -> MDP:
    # Bypasses __init__: pytree transformations put tracers and placeholders here.
    return MDP._from_leaves(*children)


jax.tree_util.register_pytree_with_keys(MDP, _flatten_with_keys, _unflatten, _flatten)
