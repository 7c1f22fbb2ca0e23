"""One experiment over many processes: ``jax.distributed`` for the runner and the command line.

JAX's multi-controller runtime runs the same program in every process of a cluster and
puts every process's devices in one mesh; :func:`jaxmdp.simulate` splits the replications
over that mesh (:mod:`jaxmdp._sharding`). This module holds what the command line
(``jaxmdp run``, ``jaxmdp bench``) and the runner need around it:

* :func:`initialize` joins the cluster, with the coordination service's timeouts set
  here (:data:`INITIALIZATION_TIMEOUT`, :data:`HEARTBEAT_TIMEOUT`,
  :data:`SHUTDOWN_TIMEOUT`);
* :func:`is_writer`: only process 0 writes files;
* :func:`check_same`: every process fails with a ``ValueError`` before any work when the
  processes were started with different arguments;
* :func:`broadcast`: process 0's reading of the saved results, sent to every process, so
  that all of them skip the same finished agents.

The values go through the coordination service's key-value store (the service runs in
process 0 and every process talks to it over gRPC), not through XLA collectives.

**Faults.** Every process sends the coordination service a heartbeat; a process that
sends none for :data:`HEARTBEAT_TIMEOUT` seconds (killed, frozen, its machine gone) is
declared dead, and the service stops every other process, wherever it is (computing, or
waiting in the gathering of results), with JAX's message "Terminating process because
the JAX distributed service detected fatal errors. This most likely indicates that
another task died ..." (``SIGABRT``, a non-zero exit). When process 0 (the service) dies,
the others stop as soon as its socket closes. A process that stops on a Python error
waits at JAX's shutdown barrier, and every process stops after :data:`SHUTDOWN_TIMEOUT`
seconds. ``SIGTERM`` is caught by JAX's preemption service and stops nothing. A process
that is alive but stuck in its own code has no bound: the others wait for it. The
measured times are on the documentation page "Many devices and GPUs" (section "Several
hosts").
"""

from __future__ import annotations

import hashlib
import json
import re

__all__ = [
    "HEARTBEAT_TIMEOUT",
    "INITIALIZATION_TIMEOUT",
    "KEY_VALUE_TIMEOUT",
    "SHUTDOWN_TIMEOUT",
    "barrier",
    "broadcast",
    "check_same",
    "initialize",
    "is_writer",
    "process_count",
]

#: Seconds each process waits for all of them to connect to the coordination service
#: (``jax.distributed.initialize(initialization_timeout=...)``; JAX's default is 300).
INITIALIZATION_TIMEOUT = 300

#: Seconds without a heartbeat after which the coordination service declares a process
#: dead and stops the others (``heartbeat_timeout_seconds``; JAX's default is 100).
HEARTBEAT_TIMEOUT = 60

#: Seconds a process that has finished waits at exit for the others to finish
#: (``shutdown_timeout_seconds``; JAX's default is 300).
SHUTDOWN_TIMEOUT = 60

#: Seconds a process waits in the key-value store for the values of the others
#: (:func:`check_same`, :func:`broadcast`).
KEY_VALUE_TIMEOUT = 600

_ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")

#: Calls of :func:`check_same` and :func:`broadcast` so far in this process: every
#: process makes the same calls in the same order, so the n-th call's keys match.
_calls = [0]


def initialize(*, auto: bool = False, coordinator: str | None = None,
               num_processes: int | None = None, process_id: int | None = None,
               heartbeat_timeout: int = HEARTBEAT_TIMEOUT) -> None:
    """Joins the cluster: ``jax.distributed.initialize`` with this module's timeouts.

    Call it before anything else runs JAX. On CPUs the cross-process collectives are
    gloo's (``jax_cpu_collectives_implementation``, unless already set otherwise).

    Args:
        auto: ``True``: ``jax.distributed.initialize()`` finds the cluster itself (SLURM,
            Open MPI, mpi4py, Kubernetes, or the environment variable
            ``JAX_COORDINATOR_ADDRESS`` with the process count and id of the job).
        coordinator: ``"HOST:PORT"`` of process 0's coordination service, with
            ``num_processes`` and ``process_id`` (explicit set-up); not with ``auto``.
        num_processes: the number of processes (positive int).
        process_id: this process's id, ``0 <= process_id < num_processes``.
        heartbeat_timeout: seconds without a heartbeat after which a process is declared
            dead (positive int).

    Raises:
        ValueError: for ``auto`` together with ``coordinator``, a ``coordinator`` without
            the two counts (or the counts without it), a malformed address, counts out
            of range or a non-positive ``heartbeat_timeout``, each naming the command
            line's flag; with ``auto``, when JAX finds no cluster.
    """
    import jax

    if isinstance(heartbeat_timeout, bool) or not isinstance(heartbeat_timeout, int) \
            or heartbeat_timeout <= 0:
        raise ValueError(f"--heartbeat-timeout must be a positive integer, got "
                         f"{heartbeat_timeout!r}")
    explicit = {"--coordinator": coordinator, "--num-processes": num_processes,
                "--process-id": process_id}
    given = [flag for flag, value in explicit.items() if value is not None]
    if auto and given:
        raise ValueError(f"--distributed finds the cluster itself; leave out "
                         f"{', '.join(given)}, got --distributed with {', '.join(given)}")
    if not auto and given and len(given) < 3:
        missing = [flag for flag in explicit if flag not in given]
        raise ValueError(f"--coordinator, --num-processes and --process-id go together, "
                         f"got {', '.join(given)} without {', '.join(missing)}")
    if not auto and not given:
        raise ValueError("initialize needs auto=True or coordinator, num_processes and "
                         "process_id")
    kwargs = {}
    if given:
        if not _ADDRESS.fullmatch(coordinator) or not 0 < int(coordinator.rsplit(":", 1)[1]) \
                < 65536:
            raise ValueError(f"--coordinator must be HOST:PORT with a port in 1..65535, "
                             f"got {coordinator!r}")
        if isinstance(num_processes, bool) or not isinstance(num_processes, int) \
                or num_processes < 1:
            raise ValueError(f"--num-processes must be a positive integer, got "
                             f"{num_processes!r}")
        if isinstance(process_id, bool) or not isinstance(process_id, int) \
                or not 0 <= process_id < num_processes:
            raise ValueError(f"--process-id must be an integer in 0..{num_processes - 1} "
                             f"(--num-processes {num_processes}), got {process_id!r}")
        kwargs = dict(coordinator_address=coordinator, num_processes=num_processes,
                      process_id=process_id)
    if jax.config.jax_cpu_collectives_implementation is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(**kwargs, initialization_timeout=INITIALIZATION_TIMEOUT,
                                   heartbeat_timeout_seconds=heartbeat_timeout,
                                   shutdown_timeout_seconds=SHUTDOWN_TIMEOUT)
    except ValueError as error:
        if not auto:
            raise
        raise ValueError(f"--distributed: jax.distributed.initialize() found no cluster "
                         f"(SLURM, Open MPI, mpi4py, Kubernetes, or JAX_COORDINATOR_ADDRESS "
                         f"with the process count and id): {error}") from None


def _client():
    """The coordination service's client of this process, or ``None`` (one process)."""
    from jax._src import distributed

    return distributed.global_state.client


def process_count() -> int:
    """The number of processes of the cluster (1 without ``jax.distributed``)."""
    import jax

    return jax.process_count()


def is_writer() -> bool:
    """Whether this process writes files: process 0 (the only process, without
    ``jax.distributed``)."""
    import jax

    return jax.process_index() == 0


def _next_key(name: str) -> str:
    _calls[0] += 1
    return f"jaxmdp/{_calls[0]}/{name}"


def check_same(name: str, value) -> None:
    """Raises ``ValueError`` in every process unless all processes hold the same ``value``.

    Every process publishes the SHA-256 of ``value``'s JSON text and reads the others';
    nothing is compared with one process.

    Args:
        name: what ``value`` is, for the message (e.g. ``"the command line arguments"``).
        value: JSON data.

    Raises:
        ValueError: naming the processes whose ``value`` differs from process 0's.
    """
    client = _client()
    if client is None or process_count() == 1:
        return
    import jax

    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
    key = _next_key("check")
    client.key_value_set(f"{key}/{jax.process_index()}", digest)
    digests = [client.blocking_key_value_get(f"{key}/{i}", KEY_VALUE_TIMEOUT * 1000)
               for i in range(process_count())]
    differ = [i for i, d in enumerate(digests) if d != digests[0]]
    if differ:
        raise ValueError(f"every process must be started with the same {name}, got "
                         f"different ones in process(es) {differ} and process 0; this "
                         f"process (process {jax.process_index()}) has "
                         f"{json.dumps(value, sort_keys=True)}")


def broadcast(value):
    """Process 0's ``value`` (JSON data) in every process.

    Args:
        value: JSON data; only process 0's is used (the others may pass ``None``).

    Returns:
        Process 0's ``value`` as it reads back from JSON.
    """
    client = _client()
    if client is None or process_count() == 1:
        return value
    import jax

    key = _next_key("broadcast")
    if jax.process_index() == 0:
        client.key_value_set(key, json.dumps(value))
    return json.loads(client.blocking_key_value_get(key, KEY_VALUE_TIMEOUT * 1000))


def barrier(name: str) -> None:
    """Waits until every process has come here (at most :data:`KEY_VALUE_TIMEOUT`
    seconds); nothing to wait for on one process.

    The command line ends with it, so that the other processes wait for process 0 to
    write its files before they exit: a process that has exited waits for the others at
    most :data:`SHUTDOWN_TIMEOUT` seconds.
    """
    client = _client()
    if client is None or process_count() == 1:
        return
    client.wait_at_barrier(_next_key(name), KEY_VALUE_TIMEOUT * 1000)
