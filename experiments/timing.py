r"""Computation time of the index solvers as |S| grows (the paper's section 4 figures).

Reproduces "Computation time as |S| increases" of Cowan, Katehakis & Pirutinsky (2019),
section 4 ("Computation Time Comparison"), and adds what the paper did not have:

    [1] MDP-PS        one Dirichlet posterior sample and its mean (jax.random.dirichlet)
    [2] DMED lambda   jaxmdp.kinf, the paper's one-unknown lambda-formulation (Theorem 4)
    [3] UCB (mu, lam) kl_ucb_2d, the paper's two-unknown system, safeguarded 2-D Newton
    [4] DMED q-form   kinf_qform, |S|-dim augmented Lagrangian + preconditioned L-BFGS
    [5] UCB q-form    kl_ucb_qform, likewise
    [6] OLP LP        l1_ucb_lp, the paper's linear program by preconditioned PDHG
    [7] UCB one unk.  jaxmdp.kl_ucb, the one-unknown reduction
    [8] OLP exact     jaxmdp.l1_ucb, the exact sort/selection solution
    [9] DMED q-PGD    kinf_pgd, projected gradient on q (optax + projection_simplex),
                      multiplicative dual ascent, duality-gap certificate
    [10] UCB q-PGD    kl_ucb_pgd, likewise

Random problems (``--problems`` per size, 15 as in the paper; numpy generator seeded by
``--seed`` and |S|): p ~ Dirichlet(1, ..., 1), v_x ~ Uniform(0, 1) i.i.d.; the UCB radius
delta ~ LogUniform(0.01, 1), for which C is strictly inside (p.v, max v); the DMED level
rho = p.v + u (max v - p.v) with u ~ Uniform(0.1, 0.9), strictly inside (p.v, max v); the
OLP radius d ~ Uniform(0.05, 1); the MDP-PS posterior Dirichlet(1 + S p) (as after about
S observations). The baselines [3]-[6], [9] and [10] solve to tol = 1e-4 (the paper's "4
digits") by their own stopping rules, and report whether the rule was met ("conv": problems
converged within the solver's max_steps; "steps": the median iteration count); the
accuracy column is the largest absolute error against the exact value, computed in float64
by [2], [7] and [8] (themselves cross-checked: [7] against [3] at tol 1e-12, and the
inverse pair kinf(p, v, kl_ucb(p, v, delta)) = delta). "vs L-BFGS" is the time of the
q-formulation by augmented Lagrangian + L-BFGS ([4] or [5]; the LP [6] for OLP) over the
method's, "vs PGD" that of the projected-gradient q-formulation ([9] or [10]).

Timing: each method is a jitted single-problem function; after a warm-up call (compile
excluded) each problem is timed on its own with ``block_until_ready`` (the median of a few
repeats when a call is fast), giving a mean and a 95% t-interval over problems; the
vmapped batch of all problems is timed too with ``--batch-limit`` (reported per index).
Defaults (the size ``reproduce.py`` runs): |S| = 10 ... 1e4 (the paper's sizes), the slow
baselines [4]-[6] (``--slow-max``) and the projected-gradient ones [9], [10]
(``--pgd-max``) up to 1e3, no batch timing. ``--full`` (the committed figures): |S| up
to 1e5, [4]-[6] up to 1e4, [9] and [10] up to 1e5 (where one D problem alone takes
minutes), batches timed when a method's problems took under 20 s. The table says where
a method was not run. The iterative baselines are
timed as called with ``return_info=True`` (the status is computed anyway). Results are
saved per size as they finish (``results/timing.npz``) so an interrupted run resumes;
``--plot-only`` redraws ``figures/timing.png`` (all methods) and
``figures/timing_best.png`` (the fast ones, against projected gradient).
Runs unchanged on GPU when JAX sees one. Before timing, the script prints the machine's
calibration line (``benchmarks/_calibration.py``: a fixed NumPy workload and a fixed
compiled XLA program) and stores it with each size it measures
(``S<size>_calibration``, JSON); the persistent compilation cache stays off, so compile
times are compiles.

    python experiments/timing.py            # defaults: |S| = 10 ... 1e4, 15 problems
    python experiments/timing.py --full     # the committed figures (many minutes)
    python experiments/timing.py --quick    # a smoke run in seconds
"""

from __future__ import annotations

import json
import math
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _calibration  # noqa: E402
import jax  # noqa: E402
from _common import base_parser, load_npz, positive_int, save_figure, save_npz_atomic  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import jaxmdp  # noqa: E402
from jaxmdp._progress import Progress  # noqa: E402
from jaxmdp.indices.qform import (  # noqa: E402
    kinf_pgd,
    kinf_qform,
    kl_ucb_2d,
    kl_ucb_pgd,
    kl_ucb_qform,
    l1_ucb_lp,
)

NAME = "timing"
#: It measures time: reproduce.py runs it alone, after the others.
REPRODUCE_ALONE = True
TOL = 1e-4
DEFAULT_SIZES = (10, 100, 1_000, 10_000)  # the paper's sizes
FULL_SIZES = (10, 100, 1_000, 10_000, 100_000)
QUICK_SIZES = (10, 100)

# key, label, index ("C", "D", "B" or "PS"), slow (a baseline capped at --slow-max, or
# at --pgd-max for the projected-gradient ones)
METHODS = (
    ("mdp_ps", "[1] MDP-PS (Dirichlet sample)", "PS", False),
    ("kinf", "[2] DMED $\\lambda$ (kinf)", "D", False),
    ("kl_ucb_2d", "[3] UCB $(\\mu, \\lambda)$ 2-D Newton", "C", False),
    ("kinf_qform", "[4] DMED q-formulation", "D", True),
    ("kl_ucb_qform", "[5] UCB q-formulation", "C", True),
    ("l1_ucb_lp", "[6] OLP linear program (PDHG)", "B", True),
    ("kl_ucb", "[7] UCB one unknown (kl_ucb)", "C", False),
    ("l1_ucb", "[8] OLP exact (l1_ucb)", "B", False),
    ("kinf_pgd", "[9] DMED q-form., projected gradient", "D", True),
    ("kl_ucb_pgd", "[10] UCB q-form., projected gradient", "C", True),
)
FAST = ("mdp_ps", "kinf", "kl_ucb_2d", "kl_ucb", "l1_ucb")
# Drawn dashed in both figures, as the reference the fast methods are read against.
PGD = ("kinf_pgd", "kl_ucb_pgd")
# Which baseline each method's speed-up is measured against.
BASELINE = {
    "kinf": "kinf_qform", "kl_ucb_2d": "kl_ucb_qform", "kl_ucb": "kl_ucb_qform",
    "l1_ucb": "l1_ucb_lp", "kinf_pgd": "kinf_qform", "kl_ucb_pgd": "kl_ucb_qform",
}
PGD_BASELINE = {
    "kinf": "kinf_pgd", "kinf_qform": "kinf_pgd", "kl_ucb": "kl_ucb_pgd",
    "kl_ucb_2d": "kl_ucb_pgd", "kl_ucb_qform": "kl_ucb_pgd",
}
COLORS = {
    "mdp_ps": "tab:gray", "kinf": "tab:blue", "kl_ucb_2d": "tab:orange",
    "kinf_qform": "tab:cyan", "kl_ucb_qform": "tab:red", "l1_ucb_lp": "tab:brown",
    "kl_ucb": "tab:green", "l1_ucb": "tab:purple", "kinf_pgd": "tab:olive",
    "kl_ucb_pgd": "tab:pink",
}
MARKERS = {
    "mdp_ps": "o", "kinf": "s", "kl_ucb_2d": "^", "kinf_qform": "D",
    "kl_ucb_qform": "v", "l1_ucb_lp": "P", "kl_ucb": "*", "l1_ucb": "X",
    "kinf_pgd": "d", "kl_ucb_pgd": "<",
}

# 97.5% quantiles of Student's t with k degrees of freedom (k = problems - 1).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
         16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042}


def t_quantile(dof: int) -> float:
    """The 97.5% quantile of Student's t with ``dof`` degrees of freedom."""
    if dof in _T975:
        return _T975[dof]
    below = [k for k in _T975 if k <= dof]
    return _T975[max(below)] if dof <= 30 else 1.96


def mean_ci(times: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval of the mean."""
    times = np.asarray(times, float)
    n = times.size
    if n < 2:
        return float(times.mean()), float("nan")
    return float(times.mean()), t_quantile(n - 1) * float(times.std(ddof=1)) / math.sqrt(n)


def make_problems(size: int, count: int, seed: int) -> dict[str, np.ndarray]:
    """Random index problems of dimension ``size`` (see the module docstring), float64."""
    rng = np.random.default_rng([seed, size])
    p = rng.dirichlet(np.ones(size), size=count)
    v = rng.uniform(0.0, 1.0, size=(count, size))
    mean_p = np.sum(p * v, axis=1)
    v_max = v.max(axis=1)
    delta = np.exp(rng.uniform(np.log(0.01), np.log(1.0), size=count))
    rho = mean_p + rng.uniform(0.1, 0.9, size=count) * (v_max - mean_p)
    d = rng.uniform(0.05, 1.0, size=count)
    alpha = 1.0 + size * p
    return dict(p=p, v=v, delta=delta, rho=rho, d=d, alpha=alpha)


def _mdp_ps(key, alpha, v):
    """One MDP-PS draw: a Dirichlet(alpha) sample and its mean of v."""
    return jnp.dot(jax.random.dirichlet(key, alpha), v)


def method_call(key: str):
    """``(function, argument names)`` of one method for a single problem."""
    table = {
        "mdp_ps": (_mdp_ps, ("key", "alpha", "v")),
        "kinf": (jaxmdp.kinf, ("p", "v", "rho")),
        "kl_ucb_2d": (partial(kl_ucb_2d, tol=TOL), ("p", "v", "delta")),
        "kinf_qform": (partial(kinf_qform, tol=TOL), ("p", "v", "rho")),
        "kl_ucb_qform": (partial(kl_ucb_qform, tol=TOL), ("p", "v", "delta")),
        "l1_ucb_lp": (partial(l1_ucb_lp, tol=TOL), ("p", "v", "d")),
        "kl_ucb": (jaxmdp.kl_ucb, ("p", "v", "delta")),
        "l1_ucb": (jaxmdp.l1_ucb, ("p", "v", "d")),
        "kinf_pgd": (partial(kinf_pgd, tol=TOL), ("p", "v", "rho")),
        "kl_ucb_pgd": (partial(kl_ucb_pgd, tol=TOL), ("p", "v", "delta")),
    }
    fn, names = table[key]
    if key in _ITERATIVE:
        fn = partial(fn, return_info=True)
    return fn, names


_NATIVELY_BATCHED = ("kinf", "kl_ucb", "l1_ucb")
# The baselines that return a SolverInfo (converged, num_steps) with return_info=True.
_ITERATIVE = ("kl_ucb_2d", "kinf_qform", "kl_ucb_qform", "l1_ucb_lp", "kinf_pgd",
              "kl_ucb_pgd")


@jax.jit
def _references(p, v, delta, rho, d):
    c = jaxmdp.kl_ucb(p, v, delta)
    c_2d = jax.vmap(partial(kl_ucb_2d, tol=1e-12))(p, v, delta)
    return (c, jaxmdp.kinf(p, v, rho), jaxmdp.l1_ucb(p, v, d),
            jnp.max(jnp.abs(c - c_2d)), jnp.max(jnp.abs(jaxmdp.kinf(p, v, c) - delta)))


def reference_values(problems: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Exact values in float64 and two independent cross-checks of them."""
    out = _references(*(jnp.asarray(problems[k]) for k in ("p", "v", "delta", "rho", "d")))
    c, dd, b, check_c_2d, check_inverse = (np.asarray(x) for x in out)
    return dict(C=c, D=dd, B=b, check_c_2d=check_c_2d, check_inverse=check_inverse)


def _timed(fn, args) -> tuple[float, object]:
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def time_method(key: str, problems: dict[str, np.ndarray], dtype, seed: int, *,
                batch_limit: float, repeat_budget: float = 0.2, max_repeats: int = 7):
    """Per-problem times, values and solver status of one method, and its batch time.

    Returns ``(times, values, converged, steps, batch_time)``: ``converged`` and
    ``steps`` are the iterative baselines' own report (all True and 0 for the others);
    ``batch_time`` is the vmapped time per index, measured only when the problems took
    at most ``batch_limit`` seconds in all (otherwise NaN).
    """
    fn, names = method_call(key)
    count = problems["p"].shape[0]
    device_args = {k: jax.device_put(jnp.asarray(problems[k], dtype))
                   for k in ("p", "v", "delta", "rho", "d", "alpha")}
    device_args["key"] = jax.random.split(jax.random.key(seed), count)

    def repeated(compiled, args):
        elapsed, out = _timed(compiled, args)
        samples = [elapsed]
        while sum(samples) < repeat_budget and len(samples) < max_repeats:
            samples.append(_timed(compiled, args)[0])
        return float(np.median(samples)), out

    single = jax.jit(fn)
    _timed(single, tuple(device_args[n][0] for n in names))  # compile and warm up
    times = np.empty(count)
    values = np.empty(count)
    converged = np.ones(count, bool)
    steps = np.zeros(count, np.int64)
    for i in range(count):
        times[i], out = repeated(single, tuple(device_args[n][i] for n in names))
        if key in _ITERATIVE:
            out, info = out
            converged[i], steps[i] = bool(info.converged), int(info.num_steps)
        values[i] = float(out)
    batch_time = float("nan")
    if batch_limit > 0 and times.sum() <= batch_limit:
        # The exact solvers take [..., S] batches natively (one batch-level branch on zero
        # entries); the baselines and the sampler are single-problem functions, vmapped.
        batched = jax.jit(fn if key in _NATIVELY_BATCHED else jax.vmap(fn))
        all_args = tuple(device_args[n] for n in names)
        _timed(batched, all_args)  # compile and warm up
        batch_time = repeated(batched, all_args)[0] / count
    return times, values, converged, steps, batch_time


def _config_of(problems: int, dtype: str, seed: int) -> np.ndarray:
    return np.array([problems, 64 if dtype == "float64" else 32, seed], np.int64)


def size_cap(key: str, slow_max: int, pgd_max: int) -> float:
    """The largest |S| a method is run at: ``pgd_max``, ``slow_max`` or unlimited."""
    slow = dict((m[0], m[3]) for m in METHODS)[key]
    return pgd_max if key in PGD else slow_max if slow else math.inf


def run(sizes, problems: int, dtype: str, seed: int, slow_max: int, results_path: Path,
        force: bool, batch_limit: float, pgd_max: int = 100_000) -> dict[str, np.ndarray]:
    """Times every method at every size, resuming from ``results_path``.

    Sizes already saved with the same problems, dtype and seed are reused unless
    ``force``; other sizes in the file are kept.
    """
    saved = load_npz(results_path) or {}
    config = _config_of(problems, dtype, seed)
    jdtype = jnp.float64 if dtype == "float64" else jnp.float32
    todo = []
    for size in sizes:
        done = f"S{size}_config" in saved and np.array_equal(saved[f"S{size}_config"], config)
        if force or not done:
            todo.append(size)
    n_units = sum(sum(1 for m in METHODS if s <= size_cap(m[0], slow_max, pgd_max))
                  for s in todo)
    calibration = json.dumps(_calibration.calibrate()) if todo else None
    if calibration is not None:
        print(_calibration.calibration_line(json.loads(calibration)), flush=True)
    with Progress(n_units, "timing") as bar:
        for size in todo:
            probs = make_problems(size, problems, seed)
            refs = reference_values(probs)
            entry = {f"S{size}_{k}": refs[k] for k in ("check_c_2d", "check_inverse")}
            for key, _, index, slow in METHODS:
                if size > size_cap(key, slow_max, pgd_max):
                    continue
                bar.update(0, info=f"|S|={size} {key}")
                times, values, converged, steps, batch_time = time_method(
                    key, probs, jdtype, seed, batch_limit=batch_limit)
                error = (np.max(np.abs(values - refs[index])) if index in refs
                         else float("nan"))
                entry[f"S{size}_{key}_times"] = times
                entry[f"S{size}_{key}_batch"] = np.asarray(batch_time)
                entry[f"S{size}_{key}_error"] = np.asarray(error)
                entry[f"S{size}_{key}_converged"] = converged
                entry[f"S{size}_{key}_steps"] = steps
                bar.update(1, info=f"|S|={size} {key} {times.mean() * 1e3:.3g} ms")
            entry[f"S{size}_config"] = config
            entry[f"S{size}_calibration"] = np.asarray(calibration)  # JSON, calibrate()
            saved = {k: x for k, x in saved.items() if not k.startswith(f"S{size}_")}
            saved.update(entry)
            saved["device"] = np.asarray(str(jax.devices()[0].platform))
            save_npz_atomic(results_path, **saved)
    return saved


def collect(saved: dict[str, np.ndarray], sizes) -> dict:
    """Per-method arrays over the sizes present in ``saved``.

    Columns: size, mean time, 95% half-width, batch time per index, max error, problems
    converged, problems, median steps (NaN where the file predates the solver status).
    """
    table = {}
    for key, *_ in METHODS:
        rows = []
        for size in sizes:
            if f"S{size}_{key}_times" in saved:
                times = saved[f"S{size}_{key}_times"]
                mean, half = mean_ci(times)
                conv = saved.get(f"S{size}_{key}_converged")
                steps = saved.get(f"S{size}_{key}_steps")
                rows.append((size, mean, half, float(saved[f"S{size}_{key}_batch"]),
                             float(saved[f"S{size}_{key}_error"]),
                             float("nan") if conv is None else float(np.sum(conv)),
                             float(times.size),
                             float("nan") if steps is None else float(np.median(steps))))
        table[key] = np.array(rows, float).reshape(-1, 8)
    return table


def _ratio(table, base: str | None, size: int, mean: float) -> str:
    if base is None:
        return ""
    rows = table[base][table[base][:, 0] == size]
    if not len(rows):
        return ""
    ratio = rows[0][1] / mean
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2g}x"


def print_table(saved: dict[str, np.ndarray], sizes, slow_max: int | None = None,
                pgd_max: int | None = None) -> None:
    """Prints time, speed-ups over the baselines, solver status and accuracy per size."""
    table = collect(saved, sizes)
    device = str(saved.get("device", "?"))
    print(f"\nComputation time per index on {device} (mean over problems, 95% CI; batch = "
          f"vmapped time per index; error = max |value - exact|; baselines at tol {TOL:g}; "
          f"vs L-BFGS / vs PGD = that baseline's time over the method's; conv = problems "
          f"whose own stopping rule was met)")
    header = (f"{'|S|':>7} {'method':<38} {'time':>10} {'+-95%':>9} {'batch':>10} "
              f"{'vs L-BFGS':>9} {'vs PGD':>7} {'steps':>6} {'conv':>6} {'error':>9}")
    for size in sizes:
        if f"S{size}_config" not in saved:
            continue
        print("\n" + header)
        for key, label, _, slow in METHODS:
            plain = label.replace("$\\lambda$", "lambda").replace("$(\\mu, \\lambda)$",
                                                                   "(mu, lambda)")
            rows = table[key]
            row = rows[rows[:, 0] == size]
            if not len(row):
                if slow:
                    flag, cap = ("--pgd-max", pgd_max) if key in PGD else ("--slow-max", slow_max)
                    why = f"(> {flag} {cap})" if cap and size > cap else ""
                    print(f"{size:>7} {plain:<38} not run at this size {why}")
                continue
            _, mean, half, batch, error, n_conv, n_prob, steps = row[0]
            err = "" if math.isnan(error) else f"{error:9.1e}"
            conv = "" if key not in _ITERATIVE or math.isnan(n_conv) else \
                f"{int(n_conv)}/{int(n_prob)}"
            step = "" if key not in _ITERATIVE or math.isnan(steps) else f"{steps:.0f}"
            print(f"{size:>7} {plain:<38} {_fmt(mean)} {_fmt(half, 9)} {_fmt(batch)} "
                  f"{_ratio(table, BASELINE.get(key), size, mean):>9} "
                  f"{_ratio(table, PGD_BASELINE.get(key), size, mean):>7} "
                  f"{step:>6} {conv:>6} {err:>9}")
            if conv and n_conv < n_prob:
                print(f"{'':>7} ^ {key} did NOT reach tol {TOL:g} by its own rule on "
                      f"{int(n_prob - n_conv)} of {int(n_prob)} problems")
        print(f"{'':>7} cross-checks: max|kl_ucb - kl_ucb_2d(tol 1e-12)| = "
              f"{float(saved[f'S{size}_check_c_2d']):.1e}, "
              f"max|kinf(p, v, kl_ucb(p, v, delta)) - delta| = "
              f"{float(saved[f'S{size}_check_inverse']):.1e}")


def _fmt(seconds: float, width: int = 10) -> str:
    if math.isnan(seconds):
        return f"{'-':>{width}}"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale or unit == "us":
            return f"{seconds / scale:>{width - 3}.3g} {unit:<2}"
    return ""


def plot(saved: dict[str, np.ndarray], sizes, figures_dir: Path) -> list[Path]:
    """Draws the two log-log figures from saved results.

    The projected-gradient baselines are dashed in both; a size where an iterative
    baseline missed its tolerance on some problem is circled in black.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = collect(saved, sizes)
    device = str(saved.get("device", "?"))
    paths = []
    for name, keys, title in (
        ("timing", [m[0] for m in METHODS], "Computation time as |S| increases"),
        ("timing_best", list(FAST) + list(PGD),
         "The fast methods, against projected gradient (dashed)"),
    ):
        fig, ax = plt.subplots(figsize=(8.0, 5.4))
        missed = False
        for key, label, _, _ in METHODS:
            if key not in keys or not len(table[key]):
                continue
            rows = table[key]
            # On a log axis a CI reaching below zero is drawn down to 10% of the mean.
            half = np.nan_to_num(rows[:, 2])
            yerr = np.stack([np.minimum(half, 0.9 * rows[:, 1]), half])
            ax.errorbar(rows[:, 0], rows[:, 1], yerr=yerr,
                        label=label, color=COLORS[key], marker=MARKERS[key], capsize=3,
                        linewidth=1.5, markersize=6,
                        linestyle="--" if key in PGD else "-")
            bad = rows[:, 5] < rows[:, 6]
            if np.any(bad):
                missed = True
                ax.plot(rows[bad, 0], rows[bad, 1], linestyle="none", marker="o",
                        markersize=14, markerfacecolor="none", markeredgecolor="black")
        if missed:
            ax.plot([], [], linestyle="none", marker="o", markersize=10,
                    markerfacecolor="none", markeredgecolor="black",
                    label="missed tol on some problem")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of states |S|")
        ax.set_ylabel("time per index (seconds, mean and 95% CI)")
        ax.set_title(f"{title} ({device})")
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.1)
        ax.legend(fontsize=8, loc="upper left")
        paths.append(save_figure(fig, name, figures_dir=figures_dir))
        plt.close(fig)
    return paths


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], compile_cache=False)
    parser.add_argument("--sizes", type=str, default=None,
                        help="comma-separated |S| values (default 10,100,1000,10000; "
                             "up to 100000 with --full)")
    parser.add_argument("--problems", type=int, default=15,
                        help="random problems per size (default 15, as in the paper)")
    parser.add_argument("--dtype", type=str, default="float64",
                        help="float64 (default) or float32")
    parser.add_argument("--slow-max", type=int, default=None,
                        help="largest |S| for the baselines [4]-[6] (default 1000; "
                             "10000 with --full)")
    parser.add_argument("--pgd-max", type=int, default=None,
                        help="largest |S| for the projected-gradient baselines [9], [10] "
                             "(default 1000; 100000 with --full, which takes many minutes)")
    parser.add_argument("--batch-limit", type=float, default=None,
                        help="skip the vmapped batch of a method when its problems took "
                             "longer than this many seconds in all; 0: never time batches "
                             "(default 0; 20 with --full)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: |S| = 10, 100, 3 problems, no batch timing")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = QUICK_SIZES if args.quick else FULL_SIZES if args.full else DEFAULT_SIZES
    else:
        try:
            args.sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
        except ValueError:
            raise ValueError(f"--sizes must be comma-separated integers, got {args.sizes!r}")
        if not args.sizes or min(args.sizes) < 2:
            raise ValueError(f"--sizes must be integers >= 2, got {args.sizes!r}")
    if args.slow_max is None:
        args.slow_max = 10_000 if args.full else 1000
    if args.pgd_max is None:
        args.pgd_max = 100_000 if args.full else 1000
    if args.quick and args.problems == 15:
        args.problems = 3
    if args.batch_limit is None:
        args.batch_limit = 20.0 if args.full and not args.quick else 0.0
    positive_int("--problems", args.problems)
    if args.problems < 2:
        raise ValueError(f"--problems must be at least 2 (for a CI), got {args.problems!r}")
    if args.dtype not in ("float32", "float64"):
        raise ValueError(f"--dtype must be float32 or float64, got {args.dtype!r}")
    positive_int("--slow-max", args.slow_max)
    positive_int("--pgd-max", args.pgd_max)
    if not args.batch_limit >= 0:
        raise ValueError(f"--batch-limit must be non-negative, got {args.batch_limit!r}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    sizes = tuple(sorted(set(args.sizes)))
    results_path = Path(args.results_dir) / f"{NAME}.npz"
    if args.plot_only:
        saved = load_npz(results_path)
        if saved is None:
            raise SystemExit(f"no saved results at {results_path}; run without --plot-only")
    else:
        print(f"devices: {jax.devices()}; sizes {sizes}; {args.problems} problems; "
              f"{args.dtype}; seed {args.seed}", flush=True)
        saved = run(sizes, args.problems, args.dtype, args.seed, args.slow_max, results_path,
                    args.force, args.batch_limit, args.pgd_max)
    # Show every size in the results file, also those of earlier runs.
    shown = sorted({int(k[1:-len("_config")]) for k in saved if k.endswith("_config")})
    print_table(saved, shown, args.slow_max, args.pgd_max)
    for path in plot(saved, shown, Path(args.figures_dir)):
        print(f"figure: {path}")


if __name__ == "__main__":
    main()
