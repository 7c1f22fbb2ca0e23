r"""Random MDP families drawn from a ``jax.random`` key: GARNET and dense random MDPs.

Both are pure and work under ``jit``/``vmap`` over keys (with ``S``, ``A``, ``b``
static), which is how :func:`jaxmdp.envs.batch` draws an ensemble in one call.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp

from jaxmdp.envs._common import check_sizes, float_dtype
from jaxmdp.mdp import MDP

__all__ = ["garnet", "random_mdp"]


# --------------------------------------------------------------------------------------
# Random MDPs.


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
    entry is positive and every policy is unichain (irreducible). Name: ``random-S-A``
    (for example ``random-10-4``), seeded by :func:`make`'s ``seed``.

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
        >>> mdps = jax.vmap(lambda k: jm.envs.random_mdp(k, 10, 4))(
        ...     jax.random.split(jax.random.key(0), 8))
        >>> mdps.P.shape
        (8, 10, 4, 10)
    """
    check_sizes(S=S, A=A)
    P, R = _random_mdp_arrays(key, S=int(S), A=int(A), dtype=float_dtype(dtype))
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
    rewards are Uniform(0, 1). With small ``b`` some policies may be multichain
    (:func:`~jaxmdp.policy_iteration` handles them) and some instances are not
    communicating (:func:`jaxmdp.hardness` reports ``diameter = inf``). Name:
    ``garnet-S-A-b`` (for example ``garnet-100-4-10``), seeded by :func:`make`'s
    ``seed``; :func:`jaxmdp.envs.batch` stacks one per seed.

    Source: the random MDP classes of Archibald, McKinnon & Thomas, "On the generation
    of Markov decision processes", J. Oper. Res. Soc. 46(3):354-361, 1995, named GARNET
    and parameterised by ``(S, A, b)`` in Bhatnagar, Sutton, Ghavamzadeh & Lee,
    "Natural actor-critic algorithms", Automatica 45(11), 2009 (``b`` next states per
    pair chosen uniformly, weights from ``b - 1`` uniform cut points of [0, 1]). The
    reward law, Uniform(0, 1) per pair ``(x, a)``, is this module's choice.

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
        >>> mdp = jm.envs.garnet(jax.random.key(0), 100, 4, 5)
        >>> int((mdp.P[0, 0] > 0).sum())
        5
    """
    check_sizes(S=S, A=A, b=b)
    if b > S:
        raise ValueError(f"b must satisfy 1 <= b <= S = {S}, got b = {b}")
    P, R = _garnet_arrays(key, b, S=int(S), A=int(A), dtype=float_dtype(dtype))
    return MDP.unchecked(P, R)


@functools.partial(jax.jit, static_argnames=("S", "A", "dtype"))
def _garnet_arrays(key, b, *, S, A, dtype):
    scores, u_p, u_r = _uniforms(key, ((S, A, S), (S, A, S), (S, A)), dtype)
    # A uniformly random b-subset per row: the b smallest of S i.i.d. uniforms.
    ranks = jnp.argsort(jnp.argsort(scores, axis=-1), axis=-1)
    weights = jnp.where(ranks < b, -jnp.log(u_p), 0)  # Exp(1) on the support
    P = weights / jnp.sum(weights, axis=-1, keepdims=True)
    return P, u_r


