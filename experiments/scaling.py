"""Scaling of ``jaxmdp.simulate``: time per replication-step versus |S| and replications.

Three measurements, each on GARNET MDPs (``jaxmdp.envs.garnet(key, S, 4, 5)``: 4
actions, 5 next states per row; all 3 at S = 3), in the default float32, starting from
``--initial-visits`` (default 5) transitions per state-action pair drawn from the true
MDP, so that the timed rounds are past the first-visit phase, in which nearly every round
switches the estimated policy in many states (``--initial-visits 0`` starts from zero
counts):

1. **versus |S|** in {10, 30, 100, 300} (and 3 and 1000 with ``--full``): MDP-UCB (and
   MDP-PS with ``--full``) with the default incremental planner (Sherman–Morrison
   updates of the evaluation inverse), at ``--replications`` replications; and MDP-UCB
   with ``planner="full"`` (an LU re-solve every round) up to ``--full-up-to`` states, to
   show what the incremental planner saves.
   The exponent of a least-squares fit ``time ~ S^k`` over S = 100, 300 (and 1000) is
   printed.
2. **versus replications** in {1, 10, 100} (and 1000 with ``--full``; 10^4 with
   ``--rep-counts``): MDP-UCB on the 100-state MDP.
3. Compile time of each configuration (first call minus a timed call).

Timing: warm-up calls of ``horizon`` rounds (compiles the chunk function) and of
``2 * horizon`` rounds, then ``--repeats`` timed calls of each length, alternating, with
the same chunk size (the same compiled program), each ``block_until_ready``; the cost
per replication-step is the difference of their median wall times divided by
``horizon * replications``. The difference removes the
per-call work (solving the true MDP, the round-0 inversion, dispatch), so it is the
marginal cost of rounds ``horizon + 1 .. 2 horizon``. Process CPU time is recorded too
(the machine may be shared). Horizons per size are in ``HORIZONS`` (shorter for larger
S so that every size takes seconds, not minutes; 400 at S = 1000, where 100 rounds
were too short for the difference of medians to rise above the machine's noise).

Writes ``results/scaling.npz`` after every measurement (re-running reuses saved
measurements with the same settings unless ``--force``; each measurement is stored with
the calibration line of the run that made it, ``calibration_<key>``, JSON, printed when
the run starts) and ``figures/scaling.png``
(log-log), and, when S = 1000 is measured, times a read pass over the [S, A, S] float32
model at S = 1000 (one model, and per replication of the ``--replications`` models) to
report the step / pass ratio. Defaults: MDP-UCB, S up to 300, 2 repeats, the full planner
up to 100 states (the size ``reproduce.py`` runs); ``--full`` adds S = 1000 with the
read passes, 1000 replications, MDP-PS, 3 repeats and the full planner at 300 states
(the committed figure is ``--full --full-up-to 100 --repeats 7``). Timings on a shared
machine are noisy: delete a key from the results file to re-measure only that point.

    python experiments/scaling.py [--full] [--quick] [--replications 10] [--repeats 2]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _calibration  # noqa: E402
import _timing  # noqa: E402
import jax  # noqa: E402
from _common import (  # noqa: E402
    base_parser,
    load_npz,
    positive_int,
    save_figure,
    save_npz_atomic,
    saved_results,
)

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting  # noqa: E402
from jaxmdp._progress import Progress  # noqa: E402

NAME = "scaling"
#: It measures time: reproduce.py runs it alone, after the others.
REPRODUCE_ALONE = True
ACTIONS, BRANCHING = 4, 5
SIZES = (10, 30, 100, 300)
FULL_SIZES = (3,) + SIZES + (1000,)
# 10_000 replications (``--rep-counts 1 10 100 1000 10000``) took about 3 minutes and
# 11.3 GB of memory on the 2-core CPU for that point alone; --full stops at 1000, and the
# CPU-size default that reproduce.py runs at 100.
REPLICATION_COUNTS = (1, 10, 100)
FULL_REPLICATION_COUNTS = REPLICATION_COUNTS + (1000,)
#: Replication-steps per timed call of the replication sweep (caps its horizon).
REP_SWEEP_STEPS = 50_000
#: ... and at least this many rounds, for replications * rounds >= REP_MIN_STEPS (one
#: replication at S = 100 for 200 rounds is a few ms per call, within timing noise).
REP_MIN_STEPS = 2_000
#: Rounds per timed call (and twice that), per number of states.
HORIZONS = {3: 1000, 10: 1000, 30: 500, 100: 200, 300: 200, 1000: 400}
QUICK_HORIZONS = {3: 300, 10: 300, 30: 200, 100: 60}
FIT_SIZES = (100, 300, 1000)


def garnet(num_states: int, seed: int):
    """GARNET MDP with 4 actions and branching 5 (all S next states when S < 5)."""
    return jm.envs.garnet(jax.random.key(seed), num_states, ACTIONS,
                              min(BRANCHING, num_states))


def initial_counts(mdp, visits: int, seed: int) -> np.ndarray:
    """``visits`` transitions per state-action pair, drawn from the true MDP."""
    P = np.asarray(mdp.P, dtype=np.float64)
    P = P / P.sum(-1, keepdims=True)
    rng = np.random.default_rng(seed)
    return np.stack([[rng.multinomial(visits, row) for row in rows] for rows in P]
                    ).astype(np.int32)


def measure(mdp, agent: str, *, horizon: int, replications: int, planner: str,
            repeats: int, counts=None) -> np.ndarray:
    """``[us per rep-step (wall), us per rep-step (cpu), compile s, mean final regret]``
    (``_timing.marginal``: the marginal cost of rounds ``horizon + 1 .. 2 horizon``)."""

    def call(seed, rounds):
        return jm.simulate(mdp, jm.get_agent(agent, planner=planner), rounds, replications,
                           seed, counts, progress=False, chunk_size=horizon)

    cost = _timing.marginal(call, horizon, replications, repeats)
    regret = float(np.mean(np.asarray(cost.last.pseudo_regret[:, -1])))
    return np.array([cost.us, cost.cpu_us, cost.first_s, regret])


def read_pass(shape, dtype=np.float32, repeats: int = 5):
    """A function timing one read pass over a random array of ``shape`` (a jitted
    ``jnp.sum`` in ``dtype``): the median of ``repeats`` calls after a warm-up, seconds."""
    import jax.numpy as jnp

    x = jnp.asarray(np.random.default_rng(0).random(shape), dtype)
    total = jax.jit(jnp.sum)
    return lambda: _timing.median_seconds(lambda: total(x), repeats)


def read_passes(num_states: int, replications: int, repeats: int = 21,
                dtype=np.float32) -> np.ndarray:
    """``[µs of one read pass over one [S, A, S] model, µs per replication of a pass over
    the [R, S, A, S] models of R replications]`` (:func:`read_pass`)."""
    one = read_pass((num_states, ACTIONS, num_states), dtype, repeats)()
    batched = read_pass((replications, num_states, ACTIONS, num_states), dtype, repeats)()
    return np.asarray([one * 1e6, batched * 1e6 / replications])


def plan(args):
    """The list of measurements: ``(key, agent, S, replications, planner, horizon)``."""
    horizons = QUICK_HORIZONS if args.quick else HORIZONS
    sizes = [s for s in args.sizes if s in horizons]
    jobs = []
    for agent in args.agents:
        for s in sizes:
            jobs.append((f"size_{agent}_incremental_{s}", agent, s, args.replications,
                         "incremental", horizons[s]))
    for s in sizes:
        if s <= args.full_up_to:
            jobs.append((f"size_ucb_full_{s}", "ucb", s, args.replications, "full",
                         horizons[s]))
    rep_states = args.rep_states
    counts = [r for r in args.rep_counts if not args.quick or r <= 100]
    for r in counts:
        horizon = max(10, REP_MIN_STEPS // r,
                      min(horizons.get(rep_states, 100), REP_SWEEP_STEPS // r))
        jobs.append((f"reps_ucb_incremental_{r}", "ucb", rep_states, r, "incremental",
                     horizon))
    return jobs


def run(args, path: Path) -> dict[str, np.ndarray]:
    jobs = plan(args)
    config = json.dumps({"jobs": jobs, "repeats": args.repeats, "seed": args.seed,
                         "initial_visits": args.initial_visits})
    saved = None if args.force else load_npz(path)
    data = dict(saved) if saved is not None else {}
    if str(data.get("config", "")) != config:
        data = {}
    data["config"] = np.asarray(config)
    data["replications"] = np.asarray(args.replications)
    data["rep_states"] = np.asarray(args.rep_states)
    data["device"] = np.asarray(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, "
                                f"{len(jax.devices())} device(s), {os.cpu_count()} CPUs")
    mdps = {}
    done = {}  # the same measurement under two names (e.g. 10 replications at S = 100)
    # The machine's calibration line (benchmarks/_calibration.py), measured once before a
    # run that measures anything and stored beside each of its measurements.
    calibration = None
    if any(job[0] not in data for job in jobs):
        calibration = _calibration.calibrate()
        print(_calibration.calibration_line(calibration), flush=True)
    with Progress(len(jobs) + 1, "scaling", enabled=not args.no_progress) as bar:
        if "read_pass" not in data and max(args.sizes) >= 1000:
            data["read_pass"] = read_passes(1000, args.replications)
            save_npz_atomic(path, **data)
        bar.update(1, info="read passes")
        for key, agent, s, reps, planner, horizon in jobs:
            config = (agent, s, reps, planner, horizon)
            if key not in data and config in done:
                data[key] = data[done[config]]
                data[f"horizon_{key}"] = np.asarray(horizon)
                if f"calibration_{done[config]}" in data:
                    data[f"calibration_{key}"] = data[f"calibration_{done[config]}"]
            done.setdefault(config, key)
            if key not in data:
                if s not in mdps:
                    mdp = garnet(s, args.seed)
                    counts = (initial_counts(mdp, args.initial_visits, args.seed)
                              if args.initial_visits else None)
                    mdps[s] = (mdp, counts)
                mdp, counts = mdps[s]
                data[key] = measure(mdp, agent, horizon=horizon, replications=reps,
                                    planner=planner, repeats=args.repeats, counts=counts)
                data[f"horizon_{key}"] = np.asarray(horizon)
                data[f"calibration_{key}"] = np.asarray(json.dumps(calibration))
                save_npz_atomic(path, **data)
            bar.update(1, info=f"{key}: {data[key][0]:.1f} us/rep-step")
    return data


def series(data, prefix: str):
    """``(x, rows)`` of the saved measurements whose key starts with ``prefix``."""
    items = sorted((int(k.rsplit("_", 1)[1]), v) for k, v in data.items()
                   if k.startswith(prefix) and not k.startswith("horizon_"))
    if not items:
        return np.zeros(0), np.zeros((0, 4))
    x, rows = zip(*items)
    return np.asarray(x), np.stack(rows)


def fit_label(sizes, fit_sizes=FIT_SIZES) -> str:
    """``"100..1000"``: the range of the sizes the exponent is fitted over."""
    used = [int(s) for s in sizes if s in fit_sizes]
    return f"{min(used)}..{max(used)}" if used else "-"


def fitted_exponent(sizes, times, fit_sizes=FIT_SIZES):
    """Least-squares slope of ``log time`` against ``log S`` over ``fit_sizes``."""
    keep = np.isin(sizes, fit_sizes) & (times > 0)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(sizes[keep]), np.log(times[keep]), 1)[0])


def report(data) -> str:
    lines = [f"device: {data['device']}",
             f"{'measurement':34s} {'horizon':>7s} {'us/rep-step':>12s} {'cpu us':>10s} "
             f"{'compile s':>9s} {'mean regret':>11s}"]
    for key in sorted(k for k in data if k.startswith(("size_", "reps_"))):
        wall, cpu, compile_s, regret = data[key]
        lines.append(f"{key:34s} {int(data[f'horizon_{key}']):7d} {wall:12.1f} {cpu:10.1f} "
                     f"{compile_s:9.1f} {regret:11.2f}")
    for agent in ("ucb", "ps"):
        sizes, rows = series(data, f"size_{agent}_incremental_")
        if len(sizes):
            k = fitted_exponent(sizes, rows[:, 0])
            kc = fitted_exponent(sizes, rows[:, 1])
            lines.append(f"fitted exponent, {agent}, S = {fit_label(sizes)}: time ~ S^{k:.2f} "
                         f"(wall), S^{kc:.2f} (cpu)")
    sizes_full, full = series(data, "size_ucb_full_")
    sizes_inc, inc = series(data, "size_ucb_incremental_")
    if "read_pass" in data and 1000 in sizes_inc:
        one, per_rep = data["read_pass"]
        step = inc[list(sizes_inc).index(1000), 0]
        lines.append(f"S = 1000: read pass over one [S, A, S] float32 model {one:.0f} us, "
                     f"per replication of {int(data['replications'])} {per_rep:.0f} us; "
                     f"MDP-UCB step {step:.0f} us = {step / one:.2f}x one pass "
                     f"({step / per_rep:.2f}x the per-replication pass)")
    for s, row in zip(sizes_full, full):
        if s in sizes_inc:
            ratio = row[0] / inc[list(sizes_inc).index(s), 0]
            lines.append(f"full re-solve / incremental, ucb, S = {s}: {ratio:.2f}x")
    return "\n".join(lines)


def figure(data):
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_r) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    for agent in ("ucb", "ps"):
        sizes, rows = series(data, f"size_{agent}_incremental_")
        if len(sizes):
            k = fitted_exponent(sizes, rows[:, 0])
            kc = fitted_exponent(sizes, rows[:, 1])
            ax_s.plot(sizes, rows[:, 0], "o-", color=plotting.agent_color(agent),
                      label=f"{plotting.agent_label(agent)}, incremental, wall "
                            f"(fit S={fit_label(sizes)}: S^{k:.2f})")
            ax_s.plot(sizes, rows[:, 1], "o:", color=plotting.agent_color(agent),
                      alpha=0.5, label=f"{plotting.agent_label(agent)}, incremental, "
                                       f"process CPU (S^{kc:.2f})")
    sizes, rows = series(data, "size_ucb_full_")
    if len(sizes):
        ax_s.plot(sizes, rows[:, 0], "s--", color=plotting.agent_color("ucb"), alpha=0.6,
                  label="MDP-UCB, full LU re-solve each round")
    sizes, rows = series(data, "size_ucb_incremental_")
    if len(sizes) and 100 in sizes:
        base = rows[list(sizes).index(100), 0]
        grid = np.array([max(30.0, float(min(sizes))), float(max(sizes))])  # measured S
        for power, style in ((2, ":"), (3, "-.")):
            ax_s.plot(grid, base * (grid / 100) ** power, style, color="gray",
                      label=f"slope S^{power} (through S = 100)")
    if "read_pass" in data:
        one = float(data["read_pass"][0])
        ax_s.plot([1000], [one], "k_", markersize=18, mew=2,
                  label=f"one read pass over a [S, A, S] float32 model ({one:.0f} us)")
        ax_s.plot([1000], [4 * one], "_", color="gray", markersize=18, mew=2,
                  label="4 read passes")
    ax_s.set_xscale("log")
    ax_s.set_yscale("log")
    ax_s.set_xlabel("number of states |S| (GARNET, A = 4, b = 5)")
    ax_s.set_ylabel("microseconds per replication-step")
    ax_s.set_title(f"versus |S| ({int(data['replications'])} replications)")
    ax_s.legend(fontsize=8)
    ax_s.grid(True, which="both", alpha=0.3)
    reps, rows = series(data, "reps_ucb_incremental_")
    if len(reps):
        states = int(data["rep_states"])
        ax_r.plot(reps, rows[:, 0], "o-", color=plotting.agent_color("ucb"),
                  label=f"MDP-UCB, |S| = {states}, wall")
        ax_r.plot(reps, rows[:, 1], "o:", color=plotting.agent_color("ucb"), alpha=0.5,
                  label="process CPU time")
        ax_r.set_title(f"versus replications (|S| = {states})")
    ax_r.set_xscale("log")
    ax_r.set_yscale("log")
    ax_r.set_xlabel("replications")
    ax_r.set_ylabel("microseconds per replication-step")
    ax_r.legend(fontsize=8)
    ax_r.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"jaxmdp.simulate cost per replication-step ({data['device']})",
                 fontsize=10)
    return fig


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], compile_cache=False)
    parser.add_argument("--quick", action="store_true",
                        help="S <= 100, replications <= 100, shorter horizons")
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help=f"|S| values (default {list(SIZES)}; {list(FULL_SIZES)} with "
                             f"--full)")
    parser.add_argument("--agents", nargs="+", default=None,
                        help="default ucb; ucb and ps with --full")
    parser.add_argument("--replications", type=int, default=10,
                        help="replications for the sweep over |S|")
    parser.add_argument("--full-up-to", type=int, default=None,
                        help="largest |S| timed with planner='full' (default 100; 300 with "
                             "--full)")
    parser.add_argument("--rep-counts", nargs="+", type=int, default=None,
                        help="replication counts of the second sweep (default 1 10 100; "
                             "1 10 100 1000 with --full)")
    parser.add_argument("--rep-states", type=int, default=100,
                        help="|S| for the sweep over replications")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per horizon (default 2; 3 with --full)")
    parser.add_argument("--initial-visits", type=int, default=5,
                        help="transitions per state-action pair to start from (0: none)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = list(FULL_SIZES if args.full else SIZES)
    if args.rep_counts is None:
        args.rep_counts = list(FULL_REPLICATION_COUNTS if args.full else REPLICATION_COUNTS)
    if args.full_up_to is None:
        args.full_up_to = 300 if args.full else 100
    if args.agents is None:
        args.agents = ["ucb", "ps"] if args.full else ["ucb"]
    if args.repeats is None:
        args.repeats = 3 if args.full else 2
    positive_int("--replications", args.replications)
    positive_int("--repeats", args.repeats)
    positive_int("--rep-states", args.rep_states)
    if args.initial_visits < 0:
        raise ValueError(f"--initial-visits must be >= 0, got {args.initial_visits}")
    for s in args.sizes:
        if s not in HORIZONS:
            raise ValueError(f"--sizes must be among {sorted(HORIZONS)}, got {s}")
    for r in args.rep_counts:
        positive_int("--rep-counts", r)
    for name in args.agents:
        jm.get_agent(name)
    path = args.results_dir / f"{NAME}.npz"
    if args.plot_only:
        data = saved_results(path)
    else:
        data = run(args, path)
    path_figure = save_figure(figure(data), NAME, figures_dir=args.figures_dir)
    print(report(data))
    print(f"results: {path}")
    print(f"figure: {path_figure}")


if __name__ == "__main__":
    main()
