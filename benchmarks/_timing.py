"""How the benchmark scripts time ``jaxmdp.simulate`` (and any other jitted call).

* :func:`setup`: before JAX's first computation, the persistent compilation cache off
  (a compile time is a compile, not a load from disk), float64 and several CPU devices
  when asked; prints the machine's calibration line (:mod:`_calibration`) and returns
  the calibration.
* :func:`timed`: one call, ended by ``jax.block_until_ready``: wall and process CPU time.
* :func:`time_calls`: a first call (it compiles), then one timed call per seed: what each
  script reports of them (the fastest, the median) is its own choice.
* :func:`marginal`: the cost of rounds ``H + 1 .. 2H``, the difference of the medians of
  ``2H``-round and ``H``-round calls, so that the per-call work (solving the true MDP,
  the first inversion, dispatch) cancels.
* :func:`median_seconds`: a warm-up call, then the median of repeated calls (the
  calibration's own timer).

A script runs as ``python benchmarks/NAME.py``, so this folder is first on ``sys.path``;
importing this module puts the repository root after it: this checkout's ``jaxmdp`` and
the NumPy loops of ``tests/reference``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import _calibration

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))


def setup(*, x64: bool | None = None, cpu_devices: int = 1, calibrate: bool = True):
    """Prepares this process for timings and prints the calibration line.

    Args:
        x64: float64 (True) or float32 (False); None leaves JAX's setting as it is.
        cpu_devices: JAX CPU devices (``jax_num_cpu_devices``; replications split over
            them). Set before JAX's first computation.
        calibrate: time the calibration workloads and print their line.

    Returns:
        The calibration dict of :func:`_calibration.calibrate` (None without
        ``calibrate``).
    """
    _calibration.no_compile_cache()
    import jax

    if x64 is not None:
        jax.config.update("jax_enable_x64", x64)
    if cpu_devices != 1:
        jax.config.update("jax_num_cpu_devices", cpu_devices)
    if not calibrate:
        return None
    calibration = _calibration.calibrate()
    print(_calibration.calibration_line(calibration), flush=True)
    return calibration


def load() -> str:
    """The 1-minute load average, as printed beside timings ("n/a" where there is none)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):
        return "n/a"


def timed(fn: Callable[[], Any]):
    """``(result, wall seconds, process CPU seconds)`` of ``fn()``, ended by
    ``jax.block_until_ready``."""
    import jax

    wall, cpu = time.perf_counter(), time.process_time()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - wall, time.process_time() - cpu


class Timing(NamedTuple):
    """The calls of :func:`time_calls`: ``first_s`` (the first, compiling call, wall
    seconds), the timed calls' ``wall_s`` and ``cpu_s``, and ``kept``, ``keep`` of each
    timed call's result."""

    first_s: float
    wall_s: list
    cpu_s: list
    kept: list

    @property
    def fastest(self) -> int:
        """The index of the fastest timed call (wall time)."""
        return min(range(len(self.wall_s)), key=self.wall_s.__getitem__)

    @property
    def median_s(self) -> float:
        return statistics.median(self.wall_s)

    def us_per_step(self, steps: int, *, how: str = "median") -> float:
        """Microseconds per step of the ``"median"`` or the ``"fastest"`` timed call."""
        seconds = self.median_s if how == "median" else self.wall_s[self.fastest]
        return seconds / steps * 1e6


def time_calls(call: Callable[[int], Any], repeats: int, *, seeds=None, first_seed: int = 0,
               keep: Callable[[Any], Any] = lambda out: None) -> Timing:
    """``call(first_seed)`` once (it compiles), then ``call(seed)`` for each of ``seeds``
    (default ``1 .. repeats``), each ended by ``jax.block_until_ready``.

    ``keep(result)`` is what the script needs of each timed call's result (its regret,
    its sweeps); the results themselves are not held.
    """
    _, first, _ = timed(lambda: call(first_seed))
    wall, cpu, kept = [], [], []
    for seed in range(1, repeats + 1) if seeds is None else seeds:
        out, w, c = timed(lambda seed=seed: call(seed))
        wall.append(w)
        cpu.append(c)
        kept.append(keep(out))
        del out
    return Timing(first, wall, cpu, kept)


class Marginal(NamedTuple):
    """:func:`marginal`'s measurement: microseconds per replication-step of rounds
    ``H + 1 .. 2H`` (wall and process CPU time), ``first_s`` (the first ``H``-round call
    minus the median ``H``-round call: compilation), the timed calls' wall seconds, the
    last ``2H``-round call's result and what ``between`` returned after each pair."""

    us: float
    cpu_us: float
    first_s: float
    short_s: list
    long_s: list
    last: Any
    between: list


def marginal(call: Callable[[int, int], Any], horizon: int, replications: int,
             repeats: int, *, between: Callable[[float], Any] | None = None) -> Marginal:
    """The marginal cost of rounds ``horizon + 1 .. 2 horizon`` of ``call(seed, rounds)``.

    Warm-up calls of ``horizon`` rounds (compiles) and ``2 horizon`` rounds (seed 0),
    then ``repeats`` pairs of timed calls (seeds ``1 + r`` and ``101 + r``); the cost is
    the difference of the median wall (and CPU) times of the long and the short calls
    over ``horizon * replications``. ``between(seconds per replication-step of the
    pair)``, if given, runs right after each pair (e.g. to time a reference pass while
    the machine is in the same state).
    """
    _, first, _ = timed(lambda: call(0, horizon))
    timed(lambda: call(0, 2 * horizon))  # also warms up the host-side ops on two chunks
    short, long, after = [], [], []
    last = None
    for r in range(repeats):
        short.append(timed(lambda r=r: call(1 + r, horizon))[1:])
        last, *times = timed(lambda r=r: call(101 + r, 2 * horizon))
        long.append(tuple(times))
        if between is not None:
            steps = horizon * replications
            after.append(between((long[-1][0] - short[-1][0]) / steps))
    steps = horizon * replications
    median = lambda rows, i: statistics.median(row[i] for row in rows)  # noqa: E731
    return Marginal(1e6 * (median(long, 0) - median(short, 0)) / steps,
                    1e6 * (median(long, 1) - median(short, 1)) / steps,
                    first - median(short, 0), [s[0] for s in short], [t[0] for t in long],
                    last, after)


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """A warm-up call of ``fn``, then the median of ``repeats`` timed calls (seconds),
    each ended by ``jax.block_until_ready``."""
    import jax

    return _calibration._median_ms(lambda: jax.block_until_ready(fn()), repeats) / 1e3
