"""Time the index solvers: microseconds per index and cost in fused log passes.

As in the paper's timing study (section 4, "Computation Time Comparison"), 15 random
index problems are solved together (here vmapped), for S = 10 ... 10^5, in float32 and
float64. For each size the same run also times one fused pass
``jnp.sum(p * jnp.log(v_shifted))`` over the same arrays, the least work a solve can do,
and prints each solver's cost in such passes, so that the ratios survive the drift of
absolute times on a shared machine. It also prints the mean number of solver steps.

Usage::

    python benchmarks/indices.py                 # the full table
    python benchmarks/indices.py --sizes 10 1000 --dtypes float64 --min-time 0.1

The 'native' columns pass the same [15, S] arrays to the functions directly; since the
index functions carry a ``custom_vmap`` rule, the vmapped columns run the same program
(only timing noise separates them).

``--passes`` times nothing: it counts the solvers' passes over their data on the same 15
problems and on the tests' extreme problem (a value of 10^6 on a state of probability
10^-12, the levels 1e-12 ... 1e3), on the CPU path (the loop's trips: the most steps of
a vectorised batch, their sum where the problems are solved one after another from 4,096
states) and on the accelerator path forced on this CPU (``max(6, most steps)``: its fixed
steps, then the data-dependent trips)::

    python benchmarks/indices.py --passes --sizes 10000 100000

This is not part of the tests.
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxmdp  # noqa: E402
from jaxmdp.indices import kl as _kl  # noqa: E402

NUM_PROBLEMS = 15


def _problems(size, dtype, seed):
    """15 random problems: p ~ Dirichlet(1), v ~ U(0, 1), levels at typical values."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(size), size=NUM_PROBLEMS)
    v = rng.uniform(size=(NUM_PROBLEMS, size))
    delta = np.exp(rng.uniform(np.log(1e-3), np.log(1.0), size=NUM_PROBLEMS))
    mean = np.sum(p * v, axis=-1)
    rho = mean + rng.uniform(0.1, 0.9, size=NUM_PROBLEMS) * (v.max(axis=-1) - mean)
    radius = np.sqrt(2 * delta)
    v_shifted = v.max(axis=-1, keepdims=True) + 1.0 - v
    cast = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    return {
        "p": cast(p),
        "v": cast(v),
        "delta": cast(delta),
        "rho": cast(rho),
        "radius": cast(radius),
        "v_shifted": cast(v_shifted),
    }


def _median_seconds(fn, args, min_time, max_repeats):
    jax.block_until_ready(fn(*args))  # compile and warm up
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < min_time and len(times) < max_repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _mean_steps(solve, p, v, level):
    """Mean solver steps over the 15 problems, from the solver's public info function."""
    if solve is None:
        return float("nan")
    info = jax.jit(jax.vmap(solve))(p, v, level)
    steps = getattr(info, "num_steps", None)
    if steps is None and isinstance(info, dict):
        steps = info.get("num_steps")
    if steps is None and isinstance(info, tuple):
        steps = next((getattr(x, "num_steps") for x in info if hasattr(x, "num_steps")), None)
    return float(jnp.mean(jnp.asarray(steps, jnp.float64))) if steps is not None else float("nan")


def _extreme(size):
    """The tests' extreme problem (``tests/indices/test_kl.py``) at its eight levels."""
    rng = np.random.default_rng(70 + size)
    p = rng.dirichlet(np.ones(size))
    p[: size // 4] = 1e-12
    p /= p.sum()
    v = rng.uniform(size=size)
    v[size // 2:] = v[size // 2]
    v[1] = 1e6
    delta = np.array([1e-12, 1e-6, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3])
    fractions = np.array([1e-9, 1e-4, 0.01, 0.3, 0.9, 0.999, 1 - 1e-7, 1.0])
    rho = p @ v + fractions * (v.max() - p @ v)
    rho[-1] = v.max()
    return np.broadcast_to(p, (8, size)), np.broadcast_to(v, (8, size)), delta, rho


def _print_passes(sizes, dtypes, seed):
    """Passes of the two layouts (see the module docstring); no timing."""
    from functools import partial

    solves = {(name, layout): jax.jit(partial(getattr(_kl, f"_{name}_solve_on"), layout))
              for name in ("kl_ucb", "kinf") for layout in ("cpu", "accelerator")}
    print(f"{'S':>7} {'dtype':>7} {'problems':>8} | {'kl_ucb cpu':>10} {'accelerator':>11}"
          f" | {'kinf cpu':>8} {'accelerator':>11}")
    for dtype_name in dtypes:
        dtype = jnp.dtype(dtype_name)
        for size in sizes:
            x = _problems(size, dtype, seed)
            sets = {"random": (x["p"], x["v"], x["delta"], x["rho"]),
                    "extreme": tuple(jnp.asarray(a, dtype) for a in _extreme(size))}
            for label, (p, v, delta, rho) in sets.items():
                cells = []
                for name, level in (("kl_ucb", delta), ("kinf", rho)):
                    for layout in ("cpu", "accelerator"):
                        steps = np.asarray(solves[name, layout](p, v, level).num_steps)
                        if layout == "accelerator":
                            cells.append(max(_kl._ACCELERATOR_STEPS, int(steps.max())))
                        elif size >= _kl._SEQUENTIAL_MIN_STATES:
                            cells.append(int(steps.sum()))
                        else:
                            cells.append(int(steps.max()))
                print(f"{size:>7} {dtype_name:>7} {label:>8} | {cells[0]:>10} {cells[1]:>11}"
                      f" | {cells[2]:>8} {cells[3]:>11}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10_000, 100_000])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per measurement")
    parser.add_argument("--max-repeats", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--passes", action="store_true",
                        help="count the passes of the CPU and accelerator paths (no timing)")
    args = parser.parse_args()
    if args.passes:
        _print_passes(args.sizes, args.dtypes, args.seed)
        return
    import _calibration
    _calibration.no_compile_cache()  # timings: real compiles, no cache

    print(_calibration.calibration_line(), flush=True)

    kl_ucb = jax.jit(jax.vmap(jaxmdp.kl_ucb))
    kinf = jax.jit(jax.vmap(jaxmdp.kinf))
    l1_ucb = jax.jit(jax.vmap(jaxmdp.l1_ucb))
    # The same 15 problems through the functions' own [..., S] batching, for comparison.
    kl_ucb_native = jax.jit(jaxmdp.kl_ucb)
    kinf_native = jax.jit(jaxmdp.kinf)
    fused_pass = jax.jit(lambda p, v_shifted: jnp.sum(p * jnp.log(v_shifted), axis=-1))
    kl_ucb_solve = getattr(_kl, "kl_ucb_solve", None)
    kinf_solve = getattr(_kl, "kinf_solve", None)

    print(
        f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {NUM_PROBLEMS} problems vmapped;"
    )
    print("microseconds per index (median over repeats, after a warm-up call); 'passes' is a")
    print("solve's time over that of one fused pass sum(p * log(v_shifted)) on the same arrays.")
    print("'native': the same [15, S] arrays passed to the function directly, without vmap.")
    header = (
        f"{'S':>7} {'dtype':>7} | {'pass us':>8} | {'kl_ucb us':>9} {'passes':>6} {'steps':>5}"
        f" | {'kinf us':>8} {'passes':>6} {'steps':>5} | {'l1_ucb us':>9} {'passes':>6}"
        f" | {'native kl_ucb':>13} {'kinf':>7}"
    )
    print(header)
    print("-" * len(header))
    for dtype_name in args.dtypes:
        dtype = jnp.dtype(dtype_name)
        for size in args.sizes:
            x = _problems(size, dtype, args.seed)

            def per_index(fn, *fn_args):
                seconds = _median_seconds(fn, fn_args, args.min_time, args.max_repeats)
                return 1e6 * seconds / NUM_PROBLEMS

            t_pass = per_index(fused_pass, x["p"], x["v_shifted"])
            t_kl = per_index(kl_ucb, x["p"], x["v"], x["delta"])
            t_kinf = per_index(kinf, x["p"], x["v"], x["rho"])
            t_l1 = per_index(l1_ucb, x["p"], x["v"], x["radius"])
            t_kl_native = per_index(kl_ucb_native, x["p"], x["v"], x["delta"])
            t_kinf_native = per_index(kinf_native, x["p"], x["v"], x["rho"])
            steps_kl = _mean_steps(kl_ucb_solve, x["p"], x["v"], x["delta"])
            steps_kinf = _mean_steps(kinf_solve, x["p"], x["v"], x["rho"])
            print(
                f"{size:>7} {dtype_name:>7} | {t_pass:8.2f} | {t_kl:9.2f} {t_kl / t_pass:6.1f}"
                f" {steps_kl:5.1f} | {t_kinf:8.2f} {t_kinf / t_pass:6.1f} {steps_kinf:5.1f}"
                f" | {t_l1:9.2f} {t_l1 / t_pass:6.1f}"
                f" | {t_kl_native:13.2f} {t_kinf_native:7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
