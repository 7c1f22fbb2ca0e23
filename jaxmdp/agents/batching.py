"""``cond_any``, ``cond_compact``, ``cond_chunked``: a per-replication ``lax.cond`` whose
costly branch runs, under ``vmap``, only where (or when) some replication needs it.

Agents are written for one replication and batched with ``vmap``. Under ``vmap`` a
``lax.cond`` whose predicate is batched becomes a ``select``: *both* branches run for
every replication at every round. An episodic agent (the UCRL family, PSRL/TSDE) plans
only when an episode starts, which is a rare, replication-dependent event; written as a
plain ``lax.cond`` it would pay for planning at every round.

:func:`cond_any` has ``lax.cond``'s meaning for one replication. Its batching rule
(``jax.custom_batching.custom_vmap``) runs, for the whole batch,

    lax.cond(any(pred), vmap(cond(pred_i, true_fn, false_fn)), vmap(false_fn))

so a round where no replication starts an episode costs no planning at all, and a round
where some do costs one batched planning pass (the others' results are discarded by the
per-replication select). Under ``shard_map`` each device's block decides for itself.

With many replications some replication starts an episode in most early rounds, and
planning the whole batch then is the cost again. :func:`cond_compact` goes further: it
gathers only the replications that need ``true_fn`` into a small batch (4, 16, 64 or 256
rows, or the whole batch) and scatters their results back, so a planning round costs in
proportion to the number of replications that plan. :func:`cond_chunked` runs those
replications a fixed number at a time in a loop instead: one compiled copy of
``true_fn``, and no padding beyond the last pass.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxmdp.agents.batching import cond_any
    >>> f = lambda p, x: cond_any(p, lambda x: x + 1.0, lambda x: x, x)
    >>> jax.vmap(f)(jnp.array([True, False]), jnp.zeros(2)).tolist()
    [1.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap

from jaxmdp._passes import (
    broadcast_leaf,
    cond_chunked,
    cond_with_batch_rule,
    in_passes,
    take_rows,
    vmap_axes,
)

__all__ = ["COMPACT_BUCKETS", "CONDS", "ENTRY_PASS", "EPISODE_CHUNKS", "check_cond",
           "cond_any", "cond_chunked", "cond_compact", "episode_chunk_for", "episode_cond",
           "masked_elementwise", "resolve_cond", "resolve_episode_chunk"]

#: Batch sizes of the planning pass of :func:`cond_compact` (plus the whole batch).
COMPACT_BUCKETS = (4, 16, 64, 256)


#: The entries of one pass of :func:`masked_elementwise`.
ENTRY_PASS = 256


def cond_any(pred: jax.Array, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
             *operands: Any) -> Any:
    """``true_fn(*operands) if pred else false_fn(*operands)``, batch-skipping under vmap.

    Args:
        pred: bool scalar.
        true_fn: the costly branch (e.g. plan a new episode); same output structure,
            shapes and dtypes as ``false_fn``.
        false_fn: the cheap branch (e.g. keep the current plan).
        *operands: pytrees passed to both branches.

    Returns:
        The selected branch's output. Under ``vmap`` with a batched ``pred``,
        ``true_fn`` runs (batched) only when some element of ``pred`` is True.
    """

    def batched(axis_size, pred, operands, flags):
        axes = vmap_axes(flags)

        def some(pred, operands):
            return jax.vmap(lambda p, ops: lax.cond(p, true_fn, false_fn, *ops),
                            in_axes=(0, axes))(pred, operands)

        def none(pred, operands):
            return jax.vmap(lambda ops: false_fn(*ops), in_axes=(axes,),
                            axis_size=axis_size)(operands)

        return lax.cond(jnp.any(pred), some, none, pred, operands)

    return cond_with_batch_rule(pred, true_fn, false_fn, operands, batched)


def cond_compact(pred: jax.Array, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
                 *operands: Any, buckets: tuple[int, ...] = COMPACT_BUCKETS) -> Any:
    """``lax.cond`` for one replication; under ``vmap`` the costly branch runs only on the
    replications that need it, gathered into a batch of the smallest size in ``buckets``
    (or the whole batch) that holds them.

    Like :func:`cond_any`, a round where no element of ``pred`` is True runs
    ``false_fn`` only. Where ``m > 0`` are True, their operands are gathered
    (``jnp.nonzero(pred, size=k)``, ``k`` the first bucket ``>= m``; buckets above half
    the batch are dropped), ``true_fn`` runs
    vmapped on those ``k`` rows and its results are scattered back over ``false_fn``'s;
    ``lax.switch`` picks the bucket, so the cost of a planning round grows with the
    number of replications that plan, not with the batch. Each bucket is one more copy of
    ``true_fn`` in the compiled program. ``true_fn``'s result for one row must not depend
    on the other rows of its batch (true of ``vmap`` of a per-replication function).
    """

    def batched(axis_size, pred, operands, flags):
        # A bucket pays (one more compiled copy of true_fn) only well below the batch.
        sizes = [k for k in buckets if 2 * k <= axis_size] + [axis_size]
        axes = vmap_axes(flags)

        def keep(pred, operands):
            return jax.vmap(lambda ops: false_fn(*ops), in_axes=(axes,),
                            axis_size=axis_size)(operands)

        def gathered(size):
            def run(pred, operands):
                if size == axis_size:
                    return jax.vmap(lambda p, ops: lax.cond(p, true_fn, false_fn, *ops),
                                    in_axes=(0, axes))(pred, operands)
                rows = jnp.nonzero(pred, size=size, fill_value=axis_size)[0]
                safe = jnp.minimum(rows, axis_size - 1)
                planned = jax.vmap(lambda ops: true_fn(*ops), in_axes=(axes,),
                                   axis_size=size)(take_rows(operands, flags, safe))
                return jax.tree_util.tree_map(
                    lambda kept, new: kept.at[rows].set(new, mode="drop"),
                    keep(pred, operands), planned)

            return run

        count = jnp.sum(pred, dtype=jnp.int32)
        bucket = jnp.searchsorted(jnp.asarray(sizes, jnp.int32), count)
        which = jnp.where(count == 0, 0, 1 + bucket)
        return lax.switch(which, [keep] + [gathered(k) for k in sizes], pred, operands)

    return cond_with_batch_rule(pred, true_fn, false_fn, operands, batched)


#: The values of the ``cond`` option of the episodic agents (the UCRL family, TSDE, PSRL):
#: how their per-replication episode starts run under ``vmap``. ``"auto"`` (their
#: default): chosen by the backend when the agent is built (:func:`resolve_cond`);
#: ``"chunked"``: :func:`cond_chunked`; ``"compact"``: :func:`cond_compact`;
#: ``"cond_any"``: :func:`cond_any`; ``"lax"``: a plain ``lax.cond`` (the whole batch plans
#: every round).
CONDS = ("auto", "chunked", "compact", "cond_any", "lax")


def check_cond(cond) -> None:
    """Raises ``ValueError`` naming ``cond`` unless it is one of :data:`CONDS`."""
    if cond not in CONDS:
        raise ValueError(f"cond must be one of {list(CONDS)}, got {cond!r}")


def resolve_cond(cond: str, backend: str | None = None) -> str:
    """``cond`` with ``"auto"`` replaced by the backend's batching: ``"chunked"`` on a CPU
    (plan only the replications that start an episode, a few at a time: a pass costs in
    proportion to its rows), ``"cond_any"`` on an accelerator (in a round where some start
    one, plan the whole batch in one masked pass, each row stopping by its own rule: a
    pass over the batch costs what one row does, and every trip of a loop costs a launch
    and a host wait). ``backend`` defaults to ``jax.default_backend()``. An agent resolves
    it when it is built, so its configuration (and its compiled program) names the
    batching it runs."""
    if cond != "auto":
        return cond
    return "chunked" if (backend or jax.default_backend()) == "cpu" else "cond_any"


#: ``episode_chunk="auto"``: the pass width of :func:`cond_chunked` for runs of at least
#: this many replications (and 1 below the first): a pass costs in proportion to its rows,
#: padded ones included, so where a round holds one episode start or fewer (100
#: replications) one row per pass is fastest, and where it holds tens (1,000 replications
#: of a short run) wider passes plan each start for less (measurements:
#: ``docs/measurements/baselines.md``, "Planning passes").
EPISODE_CHUNKS = ((1000, 8),)


def episode_chunk_for(replications: int) -> int:
    """``episode_chunk="auto"`` for a run of ``replications`` replications
    (:data:`EPISODE_CHUNKS`)."""
    chunk = 1
    for least, width in EPISODE_CHUNKS:
        if replications >= least:
            chunk = width
    return chunk


def resolve_episode_chunk(config, replications: int):
    """``config`` (a frozen dataclass with the option ``episode_chunk``) with
    ``episode_chunk="auto"`` fixed for a run of ``replications`` replications
    (:func:`episode_chunk_for`); the episodic agents' ``batch_options``
    (:meth:`jaxmdp.Agent.for_replications`)."""
    if config.episode_chunk != "auto":
        return config
    return dataclasses.replace(config, episode_chunk=episode_chunk_for(replications))


def episode_cond(cond: str, *, chunk: int | str = 1) -> Callable[..., Any]:
    """The conditional ``f(pred, true_fn, false_fn, *operands)`` named ``cond``
    (:data:`CONDS`); ``chunk`` is :func:`cond_chunked`'s (``"chunked"`` only; the
    episodic agents' option ``episode_chunk``: a pass costs in proportion to its rows,
    padded ones included). ``"auto"`` left unresolved (an agent traced outside
    :func:`jaxmdp.simulate`, which fixes it by the number of replications) is 1."""
    cond = resolve_cond(cond)
    if cond == "chunked":
        return functools.partial(cond_chunked, chunk=1 if chunk == "auto" else chunk)
    return {"compact": cond_compact, "cond_any": cond_any, "lax": lax.cond}[cond]


def _masked_flat(fn, mask, args, pass_size):
    """:func:`masked_elementwise` on 1-d arrays: passes of ``pass_size`` True entries."""
    n = mask.shape[0]
    shapes = jax.eval_shape(fn, *(jax.ShapeDtypeStruct((1,), a.dtype) for a in args))
    zeros = jax.tree_util.tree_map(lambda s: jnp.zeros((n,), s.dtype), shapes)
    return in_passes(mask, min(n, pass_size), lambda rows: fn(*(a[rows] for a in args)),
                      zeros)


def masked_elementwise(fn: Callable[..., Any], mask: jax.Array, *args: jax.Array,
                       pass_size: int = ENTRY_PASS) -> Any:
    """``fn(*args)`` where ``mask`` is True and 0 elsewhere, computed on the True entries.

    ``fn`` is elementwise: its result at an entry depends on the arguments at that entry
    only (a bisection run to a fixed point entry by entry, say), so it can run on any
    subset of the entries. The True entries are listed (``jnp.nonzero``) and ``fn`` runs
    on ``pass_size`` of them at a time (all ``n`` entries if fewer) in a loop of
    ``ceil(m / pass_size)`` passes, ``m`` the number of True entries, whose results are
    scattered back (the last pass pads with copies of its first entry, whose results are
    dropped): the cost follows ``m``, for a costly ``fn`` needed on a sparse set (the
    transitions seen so far), and the compiled program holds one copy of ``fn``. Under
    ``vmap`` the batch is flattened with the entries (its rule calls this function on the
    batched arrays), so the loop is not batched. The results equal ``jnp.where(mask,
    fn(*args), 0)`` bit for bit.

    Args:
        fn: an elementwise function of ``len(args)`` arrays, returning an array or a
            pytree of arrays of their shape.
        mask: bool, any shape.
        *args: arrays of ``mask``'s shape.
        pass_size: the entries of one pass.

    Returns:
        ``fn``'s output structure, each leaf of ``mask``'s shape, 0 where ``mask`` is
        False.
    """

    @custom_vmap
    def run(mask, *args):
        shape = mask.shape
        flat = [a.reshape(-1) for a in args]
        out = _masked_flat(fn, mask.reshape(-1), flat, pass_size)
        return jax.tree_util.tree_map(lambda o: o.reshape(shape), out)

    @run.def_vmap
    def _rule(axis_size, in_batched, mask, *args):
        mask = broadcast_leaf(mask, in_batched[0], axis_size)
        args = [broadcast_leaf(a, b, axis_size) for a, b in zip(args, in_batched[1:])]
        out = run(mask, *args)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    for name, a in (("mask", mask),) + tuple((f"args[{i}]", a) for i, a in enumerate(args)):
        if jnp.shape(a) != jnp.shape(mask):
            raise ValueError(f"{name} must have mask's shape {jnp.shape(mask)}, got "
                             f"{jnp.shape(a)}")
    return run(mask, *args)
