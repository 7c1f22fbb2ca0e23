"""Example MDPs: the paper's 3-state example, its rigged counts, and seeded generators.

``paper_mdp`` and ``rigged_counts`` copy the numbers printed in section 5 of Cowan,
Katehakis & Pirutinsky (2019). ``random_mdp`` and ``garnet`` draw MDPs from an explicit
``jax.random`` key for scaling studies; both are pure and work under ``jit``/``vmap``
over keys (with ``S``, ``A``, ``b`` static).
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.mdp import MDP

__all__ = ["paper_mdp", "rigged_counts", "random_mdp", "garnet"]

# Section 5, "Comparison of Performance": P[a][x, y] and R[a][x] as printed (a1, a2).
_PAPER_P_A1 = [
    [0.04, 0.69, 0.27],
    [0.88, 0.01, 0.11],
    [0.02, 0.46, 0.52],
]
_PAPER_P_A2 = [
    [0.28, 0.68, 0.04],
    [0.26, 0.33, 0.41],
    [0.43, 0.35, 0.22],
]
_PAPER_R_A1 = [0.13, 0.47, 0.89]
_PAPER_R_A2 = [0.18, 0.71, 0.63]

# Section 5.1, "Algorithm Robustness": the rigged T^a_{x,y} (rows x, columns y).
_RIGGED_T_A1 = [
    [8, 1, 1],
    [1, 1, 8],
    [8, 1, 1],
]
_RIGGED_T_A2 = [
    [1, 1, 8],
    [8, 1, 1],
    [1, 1, 8],
]


def paper_mdp(*, dtype=None) -> MDP:
    r"""The paper's 3-state, 2-action example (section 5), exactly as printed.

    States ``x1, x2, x3`` are indices 0, 1, 2 and actions ``a1, a2`` are 0, 1, so
    ``P[x, a, y]`` = :math:`p^{a}_{x,y}` and ``R[x, a]`` = :math:`r_{x,a}`. All actions
    are admissible. The paper states the optimal policy is ``(a1, a2, a1)``, i.e.
    ``[0, 1, 0]``.

    Args:
        dtype: float dtype of ``P`` and ``R``; default float (float64 under x64).

    Returns:
        The validated :class:`~jaxmdp.MDP` with ``P`` of shape ``[3, 2, 3]`` and ``R`` of
        shape ``[3, 2]``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.examples.paper_mdp()
        >>> mdp.P.shape, mdp.R.shape
        ((3, 2, 3), (3, 2))
    """
    dtype = jnp.result_type(float) if dtype is None else dtype
    P = np.stack([_PAPER_P_A1, _PAPER_P_A2], axis=1)  # [x, a, y]
    R = np.stack([_PAPER_R_A1, _PAPER_R_A2], axis=1)  # [x, a]
    return MDP(jnp.asarray(P, dtype=dtype), jnp.asarray(R, dtype=dtype))


def rigged_counts() -> jax.Array:
    r"""The robustness test's rigged initial transition counts (section 5.1).

    ``counts[x, a, y]`` = :math:`T^a_{x,y}`, the number of observed transitions from
    ``x`` to ``y`` under ``a``: 10 per state-action pair, 60 in all. Estimated as
    ``(N + 1) / (n + S)`` they make ``(a2, a1, a1)`` (``[1, 0, 0]``) the estimated
    optimal policy, as the paper reports.

    Returns:
        int32 array of shape ``[3, 2, 3]`` (integer counts; cast before dividing if you
        need a particular float dtype).

    Example:
        >>> import jaxmdp as jm
        >>> int(jm.examples.rigged_counts().sum())
        60
    """
    return jnp.asarray(np.stack([_RIGGED_T_A1, _RIGGED_T_A2], axis=1), dtype=jnp.int32)


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive Python int, got {value!r}")


def _uniforms(key: jax.Array, shapes: tuple[tuple[int, ...], ...], dtype) -> list[jax.Array]:
    """Independent Uniform[tiny, 1) arrays of the given shapes from one draw.

    One ``jax.random.uniform`` call (instead of one per array) keeps compilation short.
    """
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.random.uniform(
        key, (sum(sizes),), dtype=dtype, minval=jnp.finfo(dtype).tiny, maxval=1
    )
    parts = jnp.split(flat, list(itertools.accumulate(sizes))[:-1])
    return [part.reshape(shape) for part, shape in zip(parts, shapes, strict=True)]


def random_mdp(key: jax.Array, S: int, A: int, *, dtype=None) -> MDP:
    r"""A random dense MDP: Dirichlet(1, ..., 1) rows, Uniform(0, 1) rewards.

    Each row ``P[x, a]`` is uniform on the simplex (normalised exponentials), and every
    entry is positive and every policy is unichain (irreducible).

    Args:
        key: a ``jax.random`` key.
        S: number of states (static Python int).
        A: number of actions (static Python int).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        An :class:`~jaxmdp.MDP` built with :meth:`~jaxmdp.MDP.unchecked` (valid by
        construction, so it can be drawn inside ``jit``/``vmap``), all actions admissible.

    Example:
        >>> import jax
        >>> import jaxmdp as jm
        >>> mdps = jax.vmap(lambda k: jm.examples.random_mdp(k, 10, 4))(
        ...     jax.random.split(jax.random.key(0), 8))
        >>> mdps.P.shape
        (8, 10, 4, 10)
    """
    _check_sizes(S=S, A=A)
    dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
    P, R = _random_mdp_arrays(key, S=int(S), A=int(A), dtype=dtype)
    return MDP.unchecked(P, R)


@functools.partial(jax.jit, static_argnames=("S", "A", "dtype"))
def _random_mdp_arrays(key, *, S, A, dtype):
    u_p, u_r = _uniforms(key, ((S, A, S), (S, A)), dtype)
    weights = -jnp.log(u_p)  # Exp(1), strictly positive since u < 1
    P = weights / jnp.sum(weights, axis=-1, keepdims=True)
    return P, u_r


def garnet(key: jax.Array, S: int, A: int, b: int, *, dtype=None) -> MDP:
    r"""A GARNET MDP: each row supported on ``b`` distinct random next states.

    For every ``(x, a)`` a uniformly random subset of ``b`` next states is drawn and the
    row is Dirichlet(1, ..., 1) on it (the classic "b - 1 uniform cut points" weights);
    rewards are Uniform(0, 1). With small ``b`` some policies may be multichain; the
    planner then reports a singular evaluation (see
    :func:`~jaxmdp.policy_iteration`).

    Args:
        key: a ``jax.random`` key.
        S: number of states (static Python int).
        A: number of actions (static Python int).
        b: branching factor, ``1 <= b <= S`` (static Python int).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        An :class:`~jaxmdp.MDP` (built unchecked, valid by construction), all actions
        admissible, with exactly ``b`` positive entries in each row of ``P``.

    Example:
        >>> import jax
        >>> import jaxmdp as jm
        >>> mdp = jm.examples.garnet(jax.random.key(0), 100, 4, 5)
        >>> int((mdp.P[0, 0] > 0).sum())
        5
    """
    _check_sizes(S=S, A=A, b=b)
    if b > S:
        raise ValueError(f"b must satisfy 1 <= b <= S = {S}, got b = {b}")
    dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
    P, R = _garnet_arrays(key, b, S=int(S), A=int(A), dtype=dtype)
    return MDP.unchecked(P, R)


@functools.partial(jax.jit, static_argnames=("S", "A", "dtype"))
def _garnet_arrays(key, b, *, S, A, dtype):
    scores, u_p, u_r = _uniforms(key, ((S, A, S), (S, A, S), (S, A)), dtype)
    # A uniformly random b-subset per row: the b smallest of S i.i.d. uniforms.
    ranks = jnp.argsort(jnp.argsort(scores, axis=-1), axis=-1)
    weights = jnp.where(ranks < b, -jnp.log(u_p), 0)  # Exp(1) on the support
    P = weights / jnp.sum(weights, axis=-1, keepdims=True)
    return P, u_r
