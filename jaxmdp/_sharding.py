"""Replications across devices with ``jax.sharding``: a 1-D mesh and ``shard_map``.

Replications are independent, so the simulator splits them over a one-axis
:class:`~jax.sharding.Mesh` (axis ``"replications"``) and runs the same per-replication
program on every device with :func:`jax.shard_map`, with no communication. Per-replication
PRNG keys are drawn before anything is sharded (``jax.random.split(key, replications)``),
and the replication count is padded up to a multiple of the number of devices by
repeating replications whose results are then dropped, so replication ``i`` computes the
same numbers on one device or many.

The same code serves one CPU, one GPU, several GPUs, and several hosts after
``jax.distributed.initialize()`` (``jax.devices()`` then lists every process's devices;
every process must call the simulator with the same arguments, and results are gathered
to every process with ``multihost_utils.process_allgather``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["AXIS", "gather", "pad_replications", "replication_mesh", "shard", "shard_map"]

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


def pad_replications(tree, replications: int, padded: int):
    """Extends the leading (replication) axis of every leaf from ``replications`` to
    ``padded`` rows by repeating rows ``0, 1, ...`` (their results are discarded)."""
    if padded == replications:
        return tree
    index = np.arange(padded) % replications
    return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)


def shard(tree, mesh: Mesh):
    """Places every leaf of ``tree`` on ``mesh``, split along its leading axis."""
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    return jax.device_put(tree, sharding)


def replicate(tree, mesh: Mesh):
    """Places every leaf of ``tree`` on every device of ``mesh``."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


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
    """Arrays that every process can read: unchanged on one host; on several hosts,
    sharded arrays are gathered with ``multihost_utils.process_allgather``."""

    def leaf(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            from jax.experimental import multihost_utils

            return multihost_utils.process_allgather(x, tiled=True)
        return x

    return jax.tree_util.tree_map(leaf, tree)
