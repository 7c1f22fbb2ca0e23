"""A one-line calibration of the machine, printed beside timings so runs can be compared.

Machines of the same kind differ by 2-3x in speed from run to run (shared cores, CPU
frequency, other processes), so a time means little without what the machine gave at
the time. :func:`calibrate` times two fixed workloads, each the median of a few repeats
after a warm-up:

* ``numpy_ms``: NumPy sorting 2^20 float64 numbers (fixed seed), single-threaded;
* ``xla_ms``: a fixed, already compiled XLA program: a ``lax.fori_loop`` of 100,000 steps
  of ``v = tanh(M @ v)`` with a 32 x 32 float32 ``M``, the kind of long loop of small
  operations jaxmdp's simulator runs (timed with ``block_until_ready``).

:func:`calibration_line` formats the result as one line; the benchmark and experiment
scripts print it, and those that save results store the dict with them.
"""

from __future__ import annotations

import os
import platform
import statistics
import time

#: Repeats timed after one warm-up run (the median is reported).
REPEATS = 5

#: The NumPy workload's size and the XLA program's loop length and matrix size.
SORT_SIZE = 2**20
LOOP_STEPS = 100_000
MATRIX_SIZE = 32


def _median_ms(run, repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _xla_program():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    rng = np.random.default_rng(0)
    matrix = jnp.asarray(rng.standard_normal((MATRIX_SIZE, MATRIX_SIZE)) / MATRIX_SIZE,
                         dtype=jnp.float32)
    vector = jnp.ones((MATRIX_SIZE,), dtype=jnp.float32)

    def loop(m, v):
        return lax.fori_loop(0, LOOP_STEPS, lambda _, v: jnp.tanh(m @ v), v)

    compiled = jax.jit(loop).lower(matrix, vector).compile()
    return lambda: compiled(matrix, vector).block_until_ready()


def no_compile_cache() -> None:
    """Keeps JAX's persistent compilation cache off in this process and its children, so
    that the compile times a benchmark reports are compiles, not loads from disk.

    Sets ``JAXMDP_NO_COMPILE_CACHE=1`` (jaxmdp then never turns the cache on) and
    ``jax_enable_compilation_cache`` to False (no cache directory the user configured is
    used either). Call it before the first compilation.
    """
    import jax

    os.environ["JAXMDP_NO_COMPILE_CACHE"] = "1"
    jax.config.update("jax_enable_compilation_cache", False)


def calibrate(repeats: int = REPEATS) -> dict:
    """Times the two fixed workloads and describes the machine.

    Args:
        repeats: timed runs of each workload after a warm-up (positive int).

    Returns:
        A dict: ``numpy_ms`` and ``xla_ms`` (medians, milliseconds), ``repeats``,
        ``load_1min`` (the 1-minute load average, None where the system has none),
        ``cpu_count``, ``machine`` (``platform.processor()`` or ``platform.machine()``),
        ``jax`` (version) and ``device`` (JAX's default device kind).

    Raises:
        ValueError: for ``repeats`` that is not a positive integer.

    Example:
        >>> import _calibration
        >>> result = _calibration.calibrate(repeats=1)
        >>> result["numpy_ms"] > 0 and result["xla_ms"] > 0
        True
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats <= 0:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    import jax
    import numpy as np

    data = np.random.default_rng(0).standard_normal(SORT_SIZE)
    numpy_ms = _median_ms(lambda: np.sort(data, kind="quicksort"), repeats)
    xla_ms = _median_ms(_xla_program(), repeats)
    try:
        load = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        load = None
    return {"numpy_ms": round(numpy_ms, 3), "xla_ms": round(xla_ms, 3), "repeats": repeats,
            "load_1min": load, "cpu_count": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "jax": jax.__version__, "device": jax.devices()[0].device_kind}


def calibration_line(result: dict | None = None) -> str:
    """One line describing ``result`` (default: a fresh :func:`calibrate`).

    The line names the two workloads' medians (see the module docstring for what they
    are), the load average, the cores and JAX's version and device.

    Example:
        >>> import _calibration
        >>> print(_calibration.calibration_line({
        ...     "numpy_ms": 61.2, "xla_ms": 25.3, "repeats": 5, "load_1min": 1.5,
        ...     "cpu_count": 2, "machine": "x86_64", "jax": "0.10.2", "device": "cpu"}))
        calibration: numpy 61.2 ms, xla 25.3 ms (median of 5; load 1.5; 2 cpus; jax 0.10.2 cpu)
    """
    result = calibrate() if result is None else result
    load = "n/a" if result["load_1min"] is None else f"{result['load_1min']:g}"
    return (f"calibration: numpy {result['numpy_ms']:.1f} ms, xla {result['xla_ms']:.1f} ms "
            f"(median of {result['repeats']}; load {load}; {result['cpu_count']} cpus; "
            f"jax {result['jax']} {result['device']})")


def save_record(out, stem: str, record: dict):
    """Writes ``record`` as JSON to ``out/{stem}-{time stamp}.json`` atomically (through
    a temporary file renamed into place), prints the path and returns it.

    The benchmark scripts save their settings, the calibration dict and their rows this
    way, so a results page can cite the file a number came from.
    """
    import json
    from pathlib import Path

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)
    print(f"saved {path}", flush=True)
    return path
