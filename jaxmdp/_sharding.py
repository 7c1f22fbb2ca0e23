"""Replications across devices with ``jax.sharding``: a 1-D mesh and ``shard_map``.

Replications are independent, so the simulator splits them over a one-axis
:class:`~jax.sharding.Mesh` (axis ``"replications"``) and runs the same per-replication
program on every device with :func:`jax.shard_map`, with no communication. Per-replication
PRNG keys are drawn before anything is sharded (``jax.random.split(key, replications)``),
and the replication count is padded up to a multiple of the number of devices by
repeating replications whose results are then dropped, so replication ``i`` computes the
same numbers on one device or many.

The same code serves one CPU, one GPU, several GPUs, and several processes (hosts) after
``jax.distributed.initialize()``: ``jax.devices()`` then lists every process's devices,
and a process may place data only on its own. Each process therefore builds the rows of
the padded replication axis that its devices hold (:func:`local_rows`) and the global
arrays are made from these local parts (:func:`shard`, with
``jax.make_array_from_callback``); every process must call the simulator with the same
arguments, and the results are gathered to every process with
``multihost_utils.process_allgather`` (:func:`gather`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["AXIS", "gather", "local_mean", "local_rows", "padded_size",
           "replicate", "replication_mesh", "shard", "shard_map"]

#: Name of the mesh axis that replications are split over.
AXIS = "replications"


def replication_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh over ``devices`` (default: all of ``jax.devices()``).

    Args:
        devices: devices to place replications on, a non-empty sequence of
            ``jax.Device``; ``None`` for every visible device (of every process).

    Returns:
        A :class:`~jax.sharding.Mesh` with the single axis :data:`AXIS`.

    Raises:
        ValueError: for an empty sequence, an entry that is not a ``jax.Device``, or a
            repeated device.
    """
    if devices is None:
        devices = jax.devices()
    devices = list(devices)
    if not devices:
        raise ValueError("devices must be a non-empty sequence of jax devices, got []")
    bad = [d for d in devices if not isinstance(d, jax.Device)]
    if bad:
        raise ValueError(f"devices must be jax.Device objects, got {bad[0]!r}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"devices must be distinct, got {devices!r}")
    return Mesh(np.asarray(devices, dtype=object), (AXIS,))


def padded_size(replications: int, mesh: Mesh) -> int:
    """``replications`` rounded up to a multiple of the mesh size."""
    n = mesh.size
    return -(-replications // n) * n


def local_rows(mesh: Mesh, padded: int) -> np.ndarray:
    """The rows of the padded replication axis that this process's devices of ``mesh``
    hold, in increasing order (all of them on one process).

    Args:
        mesh: from :func:`replication_mesh`.
        padded: the length of the replication axis, a multiple of ``mesh.size``
            (:func:`padded_size`).

    Returns:
        int64 ``[padded * local devices / mesh.size]``: the rows of each of this
        process's devices, device after device in the order of their rows.
    """
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    size = padded // mesh.size
    starts = sorted({index[0].indices(padded)[0]
                     for index in sharding.addressable_devices_indices_map((padded,)).values()})
    return np.concatenate([np.arange(start, start + size) for start in starts])


def shard(tree, mesh: Mesh, rows: np.ndarray):
    """Global arrays split along their leading axis over ``mesh``, made from this process's
    rows.

    Args:
        tree: a pytree of arrays whose leading axis holds the rows ``rows`` of the global
            arrays, in that order (on one process: every row).
        mesh: from :func:`replication_mesh`.
        rows: :func:`local_rows` of ``mesh``.

    Returns:
        ``tree`` with each leaf a global ``jax.Array`` of leading axis
        ``len(rows) * mesh.size / (local devices)``, whose shards on this process's
        devices are the given rows.
    """
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    padded = len(rows) * mesh.size // len(mesh.local_devices)
    position = {int(row): i for i, row in enumerate(rows)}

    def leaf(x):
        def data(index):
            start, stop, _ = index[0].indices(padded)
            first = position[start]
            return x[first:first + stop - start]

        return jax.make_array_from_callback((padded,) + tuple(x.shape[1:]), sharding, data)

    return jax.tree_util.tree_map(leaf, tree)


def replicate(tree, mesh: Mesh):
    """Every leaf of ``tree`` on every device of ``mesh`` (each process gives its copy, the
    same in every process)."""
    sharding = NamedSharding(mesh, PartitionSpec())
    return jax.tree_util.tree_map(
        lambda x: jax.make_array_from_callback(np.shape(x), sharding, lambda _: x), tree)


def shard_map(fn: Callable, mesh: Mesh, *, batched: Sequence[bool]) -> Callable:
    """``fn`` run per device on its block of replications, with ``jax.shard_map``.

    Args:
        fn: a function of ``len(batched)`` positional pytree arguments whose outputs all
            have the replication axis first.
        mesh: from :func:`replication_mesh`.
        batched: for each argument, whether it has the replication axis first (split
            over devices) or is the same for every replication (replicated).

    Returns:
        The mapped function (to be called under ``jit``).
    """
    in_specs = tuple(PartitionSpec(AXIS) if b else PartitionSpec() for b in batched)
    # No collectives run inside, and every output is split over AXIS. The
    # varying-manual-axes check is off because loops inside (policy iteration, the
    # samplers) start from constants that become per-device values, which it rejects.
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=PartitionSpec(AXIS),
                         check_vma=False)


def gather(tree):
    """Arrays that every process can read: unchanged on one process; on several, arrays
    split over the processes' devices are gathered with
    ``multihost_utils.process_allgather`` (PRNG key arrays through their key data) and put
    on this process's default device."""

    def leaf(x):
        if not isinstance(x, jax.Array) or x.is_fully_addressable:
            return x
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(leaf(jax.random.key_data(x)),
                                            impl=jax.random.key_impl(x))
        from jax.experimental import multihost_utils

        return jnp.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree_util.tree_map(leaf, tree)


def local_mean(x: jax.Array, rows: int) -> float:
    """The mean of the first ``rows`` entries of the 1-D array ``x`` that this process
    holds (all of them on one process), without communication."""
    if x.is_fully_addressable:
        return float(jnp.mean(x[:rows]))
    values = [np.asarray(shard.data)[:max(0, rows - shard.index[0].indices(x.shape[0])[0])]
              for shard in x.addressable_shards]
    values = np.concatenate(values)
    return float(values.mean()) if values.size else float("nan")
