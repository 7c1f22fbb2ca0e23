"""The StatisticalRL ``learners`` code, unchanged, beside jaxmdp and the NumPy loops.

Given a local copy of https://github.com/StatisticalRL/learners (this script fetches
nothing; pass ``--learners-dir PATH`` or set ``STATISTICALRL_LEARNERS``, the directory
that holds ``src/statisticalrl_learners``), it runs the published UCRL2, KL-UCRL, PSRL,
IMED-RL, UCRL3 (``UCRL3_lazy``, the class the StatisticalRL experiments run under the
name "UCRL3", and ``UCRL3``), UCRL2B and MED-RL on river-swim-6, one replication at a time with
the global ``numpy.random`` seeded per replication, as their experiment scripts do; then
jaxmdp's agents with the options that reproduce the published rules, and optionally the
hand-written loops of ``tests/reference/published.py``. It prints the mean final
realised regret ``T g* - sum r_t`` +- its standard error per algorithm and the z
statistic of each difference from the published code, and saves a JSON file with the
settings, the calibration and every final regret and timing under ``results/``.

**Speed.** It then prints, after the calibration line of ``benchmarks/_calibration.py``
(measured at start and again at the end), the microseconds per step of the published
code and of the NumPy loops (the wall time of their ``--replications`` runs over
``horizon * replications``; the published code's includes this script's environment draw
per round, a ``searchsorted`` on a cumulative row) beside jaxmdp's microseconds per
replication-step: for each of ``--jax-replications`` and ``--speed-replications``, one
call to compile, then the same call timed with ``block_until_ready`` (the timed call of
``--jax-replications`` gives the regrets), and the published code's time per step over
jaxmdp's at the largest count.

**The MDP.** StatisticalRL's ``river-swim-6`` (their ``register.py`` line 276:
``nbStates=6, rightProbaright=0.4, rightProbaLeft=0.05, rewardL=0.005, rewardR=1``,
built by ``RiverSwim.py`` lines 21-59 with Dirac rewards, start state 0) is the same MDP
as jaxmdp's ``riverswim-6`` with the two actions swapped: theirs are 0 = right,
1 = left, jaxmdp's 0 = left, 1 = right. The published learners run on the matrices built
here in their order (checked against ``jm.envs.make("riverswim-6")`` at start-up), so
their lowest-index conventions (e.g. ``np.argmax`` ties) see "right" first.

**Only shims.** The published code uses ``np.infty`` (``UCRL2B.py`` line 144,
``utils.py`` lines 115-122), removed in NumPy 2; the script sets ``np.infty = np.inf``
when it is missing. ``MED_RL.py`` line 4 imports ``utils`` as a top-level module (the
package's ``MDPs_discrete/utils.py``); the script appends that directory to
``sys.path``. Nothing in the learners is modified. One diagnostic row is not the
published code: ``--algorithms UCRL3_value_sums`` runs a second copy of ``UCRL3.py``
whose two sums over a dict add its values, not its keys (:data:`VALUE_SUMS`), beside
jaxmdp's default ``ucrl3``: the support the paper defines, in both.

**Other MDPs.** ``--speed-envs riverswim-25 grid-4-room grid-2-room`` then times the
published learners (on jaxmdp's matrices of those MDPs, which StatisticalRL registers as
``river-swim-25``, ``grid-4-room``, ``grid-2-room``; the actions in jaxmdp's order) and
jaxmdp's agents per step on each, for the same table of ratios (no regrets);
``--speed-only`` skips the river-swim-6 regret comparison and ``--no-jax`` jaxmdp's side
(the published code's microseconds per step alone, e.g. beside
``benchmarks/agents_speed.py``'s table of jaxmdp's default agents).

Example (about 10 minutes of one core)::

    python benchmarks/statisticalrl.py --learners-dir /path/to/learners \\
        --horizon 2000 --replications 10 --numpy --speed-replications 1000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # tests.reference

# published class -> (module, class, constructor kind), jaxmdp (name, options), NumPy loop
ALGORITHMS = {
    "UCRL2": ("UCRL2", "UCRL2", "delta",
              ("ucrl2", {"ties": "random_least_visited", "epsilon_rule": "t",
                         "warm_start": True, "max_evi_steps": 1001}), "ucrl2"),
    "KL-UCRL": ("KLUCRL", "KLUCRL", "delta",
                ("kl_ucrl", {"ties": "random_least_visited", "epsilon_rule": "t",
                             "warm_start": True, "max_evi_steps": 1002}), None),
    "PSRL": ("PSRL", "PSRL", "delta", ("psrl", {}), "psrl"),
    "IMED-RL": ("IMED_RL", "IMEDRL", "plain", ("imed_rl", {"index": "statisticalrl"}),
                "imed_rl_statisticalrl"),
    "UCRL3_lazy": ("UCRL3", "UCRL3_lazy", "delta",
                   ("ucrl3", {"lazy": True, "key_sums": True, "bisection_tol": 1e-4}),
                   "ucrl3_lazy"),
    "UCRL3": ("UCRL3", "UCRL3", "delta",
              ("ucrl3", {"key_sums": True, "bisection_tol": 1e-4, "max_evi_steps": 1002}),
              "ucrl3"),
    "UCRL2B": ("UCRL2B", "UCRL2B", "delta", ("ucrl2b", {}), "ucrl2b"),
    "MED-RL": ("MED_RL", "MEDRL", "plain", ("med_rl", {}), "med_rl"),
    # Not the published code: its UCRL3 with the two sums of lines 175 and 193 taken over
    # the dict's values (see VALUE_SUMS), beside jaxmdp's default support.
    "UCRL3_value_sums": ("UCRL3+value_sums", "UCRL3", "delta",
                         ("ucrl3", {"bisection_tol": 1e-4, "max_evi_steps": 1002}), "ucrl3"),
}

#: The module name under which ``load_learners`` gives a second copy of ``UCRL3.py`` whose
#: builtin ``sum`` adds a dict's values (a diagnostic, run only when named in
#: ``--algorithms``): ``aux_compute_Fplus_in`` / ``_out`` (lines 175, 193) then compute the
#: support the paper defines (jaxmdp's ``key_sums=False``), and every other ``sum`` of the
#: file, over lists, is unchanged. The file itself is not modified.
VALUE_SUMS = "UCRL3+value_sums"

#: The algorithms run by default: the published classes as published.
PUBLISHED = tuple(name for name in ALGORITHMS if name != "UCRL3_value_sums")


def load_learners(path):
    """Imports ``statisticalrl_learners.MDPs_discrete`` from ``path`` (or its ``src``)."""
    root = Path(path).expanduser().resolve()
    src = root / "src" if (root / "src" / "statisticalrl_learners").is_dir() else root
    if not (src / "statisticalrl_learners").is_dir():
        raise ValueError(f"learners_dir must hold src/statisticalrl_learners, got {path!r}")
    if not hasattr(np, "infty"):
        np.infty = np.inf  # the published code's NumPy 1 alias (see module docstring)
    sys.path.insert(0, str(src))
    sys.path.append(str(src / "statisticalrl_learners" / "MDPs_discrete"))  # MED_RL.py line 4
    import builtins
    import importlib
    import importlib.util

    copies = {}

    def value_sums_copy():
        if not copies:
            file = src / "statisticalrl_learners" / "MDPs_discrete" / "UCRL3.py"
            spec = importlib.util.spec_from_file_location("statisticalrl_ucrl3_value_sums",
                                                          file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            module.sum = lambda x, *start: builtins.sum(
                x.values() if isinstance(x, dict) else x, *start)
            copies[VALUE_SUMS] = module
        return copies[VALUE_SUMS]

    def get_module(module):
        if module == VALUE_SUMS:
            return value_sums_copy()
        return importlib.import_module(f"statisticalrl_learners.MDPs_discrete.{module}")

    return get_module


def statisticalrl_riverswim6():
    """``(P, R)`` of river-swim-6 in StatisticalRL's action order (0 = right)."""
    from tests.reference.mdp import riverswim6_statisticalrl

    return riverswim6_statisticalrl()


def check_against_jaxmdp(P, R):
    """Raises if jaxmdp's riverswim-6 is not ``(P, R)`` with the actions swapped."""
    import jaxmdp as jm

    m = jm.envs.make("riverswim-6")
    Pj, Rj = np.asarray(m.P), np.asarray(m.R)
    if not (np.allclose(Pj, P[:, ::-1]) and np.allclose(Rj, R[:, ::-1])):
        raise RuntimeError("jaxmdp's riverswim-6 is not StatisticalRL's river-swim-6 with "
                           "the actions swapped")


def run_published(get_module, name, P, R, horizon, replications, seed, delta):
    """Final realised regrets of the published learner ``name``, one per replication,
    and the wall seconds of its replications (learner construction, ``play``,
    ``update`` and this driver's environment draw per round)."""
    from tests.reference.mdp import true_gaps

    module, cls, kind = ALGORITHMS[name][:3]
    Learner = getattr(get_module(module), cls)
    S, A, _ = P.shape
    gain, _ = true_gaps(P, R, np.ones((S, A), bool))
    cum = np.cumsum(P, axis=-1)
    finals = []
    start = time.perf_counter()
    for i in range(replications):
        np.random.seed(seed + i)  # the learners draw from the global numpy.random
        env_rng = np.random.default_rng([seed, i])
        learner = Learner(S, A, delta) if kind == "delta" else Learner(S, A)
        s = 0
        learner.reset(s)
        total = 0.0
        for _ in range(horizon):
            a = int(learner.play(s))
            y = min(int(np.searchsorted(cum[s, a], env_rng.random(), "right")), S - 1)
            r = float(R[s, a])
            learner.update(s, a, r, y)
            total += gain - r
            s = y
        finals.append(total)
    return np.array(finals), time.perf_counter() - start


def jaxmdp_agent(name, delta, kl_ucrl_bug=False):
    """``(agent, description)`` of the jaxmdp agent reproducing ``name``, or ``(None,
    reason)``. With ``kl_ucrl_bug``, KL-UCRL runs with ``search_up_bug=True``."""
    import jaxmdp as jm

    agent_name, options = ALGORITHMS[name][3]
    options = dict(options)
    if kl_ucrl_bug and name == "KL-UCRL":
        options["search_up_bug"] = True
    try:
        probe = jm.get_agent(agent_name, **options)
        if hasattr(probe.config, "delta"):
            options["delta"] = delta
        agent = jm.get_agent(agent_name, **options)
    except (ValueError, TypeError) as err:
        return None, f"jaxmdp has no {agent_name}({options}) yet: {err}"
    return agent, f"{agent_name}({options})"


def time_jaxmdp(agent, horizon, replications, seed, env="riverswim-6"):
    """Final realised regrets ``[replications]`` of ``agent`` on ``env``, its
    microseconds per replication-step (a warm-up call (compiles), then the same call timed
    with ``block_until_ready``, divided by ``horizon * replications``) and its EVI sweeps
    per replication (the mean of the agent state's ``evi_steps``; NaN for an agent
    without EVI)."""
    import _timing

    import jaxmdp as jm

    mdp = jm.envs.make(env)

    def keep(traj):
        steps = getattr(traj.agent_state, "evi_steps", None)
        sweeps = float("nan") if steps is None else float(np.mean(np.asarray(steps)))
        return np.asarray(traj.regret)[:, -1], sweeps

    timing = _timing.time_calls(
        lambda seed: jm.simulate(mdp, agent, horizon, replications, seed, progress=False),
        1, seeds=[seed], first_seed=seed, keep=keep)
    finals, sweeps = timing.kept[0]
    return finals, timing.us_per_step(horizon * replications), sweeps


def run_jaxmdp(name, horizon, replications, seed, delta, kl_ucrl_bug=False):
    """Final realised regrets of the jaxmdp agent reproducing ``name`` and its
    microseconds per replication-step (:func:`time_jaxmdp`), or ``(None, reason, nan)``.
    With ``kl_ucrl_bug``, KL-UCRL runs with ``search_up_bug=True``."""
    agent, what = jaxmdp_agent(name, delta, kl_ucrl_bug)
    if agent is None:
        return None, what, float("nan")
    finals, us, _ = time_jaxmdp(agent, horizon, replications, seed)
    return finals, what, us


def run_numpy(name, P, R, horizon, replications, seed, delta):
    """Final realised regrets of the NumPy loop of ``name`` (their action order)."""
    from tests.reference.published import run

    loop = ALGORITHMS[name][4]
    if loop is None:
        loop = "kl_ucrl"
    opts = {} if loop.startswith(("imed", "med", "optimistic")) else {"delta": delta}
    return run(P, R, loop, horizon, replications, seed, **opts)


def summary(x):
    x = np.asarray(x, float)
    se = x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
    return float(x.mean()), float(se)


def z_stat(a, b):
    (ma, sa), (mb, sb) = a, b
    d = math.sqrt(sa**2 + sb**2)
    return (mb - ma) / d if d > 0 else float("nan")


def print_speed(rows, args, jax_counts, calibration):
    """The speed table: microseconds per step of the published code and of the NumPy
    loops (wall time of their runs / (horizon * replications)), microseconds per
    replication-step of jaxmdp at each count of ``jax_counts``, and the published code's
    time over jaxmdp's at the largest count."""
    import _calibration

    print(f"speed, T = {args.horizon}: published and NumPy loops us per step (wall time "
          f"of {args.replications} runs / (T x {args.replications})); jaxmdp us per "
          f"replication-step (a cached call timed after a warm-up call, "
          f"block_until_ready)")
    print(_calibration.calibration_line(calibration) + " (at end)")
    head = f"{'algorithm':11s} {'published':>10s}"
    if args.numpy:
        head += f" {'numpy':>9s}"
    head += "".join(f" {f'jax m={m}':>11s}" for m in jax_counts)
    if jax_counts:
        head += f" {'published/jax':>13s}"
    print(head)
    for row in rows:
        line = f"{row['algorithm']:11s} {row['published_us_per_step']:10.2f}"
        if args.numpy:
            line += f" {row.get('numpy_us_per_step', float('nan')):9.2f}"
        jax_us = row.get("jaxmdp_us_per_rep_step", {})
        line += "".join(f" {jax_us.get(m, float('nan')):11.3f}" for m in jax_counts)
        if jax_counts:
            last = jax_us.get(jax_counts[-1], float("nan"))
            line += f" {row['published_us_per_step'] / last:12.1f}x"
        print(line, flush=True)


def jaxmdp_matrices(env):
    """``(P, R)`` of jaxmdp's ``env`` as float64 NumPy arrays (for the published learners)."""
    import jaxmdp as jm

    m = jm.envs.make(env)
    return np.asarray(m.P, np.float64), np.asarray(m.R, np.float64)


def speed_on_envs(get_module, args, envs):
    """Microseconds per step of the published learners and per replication-step of
    jaxmdp's agents on each of ``envs`` (``--speed-envs``), as in the river-swim-6 speed
    table: the published code on jaxmdp's matrices of the MDP StatisticalRL registers
    under that name (the actions in jaxmdp's order), ``--speed-env-replications`` runs of
    ``--speed-env-horizon`` rounds; jaxmdp at ``--jax-replications`` (with its EVI sweeps
    per replication)."""
    horizon = args.speed_env_horizon or args.horizon
    reps = args.speed_env_replications
    rows = []
    print(f"speed on {', '.join(envs)}: published us per step (wall time of {reps} runs of "
          f"T = {horizon}), jaxmdp us per replication-step (m = {args.jax_replications})")
    print(f"{'env':14s} {'algorithm':11s} {'published':>10s} {'jaxmdp':>10s} "
          f"{'published/jax':>13s} {'jaxmdp sweeps':>13s}", flush=True)
    for env in envs:
        P, R = jaxmdp_matrices(env)
        for name in args.algorithms:
            _, wall = run_published(get_module, name, P, R, horizon, reps, args.seed,
                                    args.delta)
            row = {"env": env, "algorithm": name,
                   "published_us_per_step": wall / (horizon * reps) * 1e6}
            agent, what = jaxmdp_agent(name, args.delta, args.kl_ucrl_bug)
            us = sweeps = float("nan")
            if agent is not None and not args.no_jax:
                _, us, sweeps = time_jaxmdp(agent, horizon, args.jax_replications, args.seed,
                                            env)
            row["jaxmdp_agent"], row["jaxmdp_us_per_rep_step"] = what, us
            row["jaxmdp_evi_sweeps"] = sweeps
            rows.append(row)
            print(f"{env:14s} {name:11s} {row['published_us_per_step']:10.2f} {us:10.3f} "
                  f"{row['published_us_per_step'] / us:12.1f}x {sweeps:13.0f}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learners-dir", default=os.environ.get("STATISTICALRL_LEARNERS"))
    ap.add_argument("--algorithms", nargs="+", default=list(PUBLISHED),
                    choices=list(ALGORITHMS),
                    help="default: every published class; UCRL3_value_sums runs the "
                         "published UCRL3 with its support's sums over the values (VALUE_SUMS)")
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--replications", type=int, default=10)
    ap.add_argument("--jax-replications", type=int, default=100,
                    help="replications of jaxmdp's regret call (also timed)")
    ap.add_argument("--speed-replications", type=int, nargs="*", default=[],
                    help="further replication counts at which jaxmdp's agents are timed "
                         "only (e.g. 100 1000)")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--numpy", action="store_true",
                    help="also run tests/reference/published.py's loops")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--kl-ucrl-bug", action="store_true",
                    help="the NumPy KL-UCRL loop and jaxmdp's kl_ucrl reproduce the "
                         "published search_up")
    ap.add_argument("--speed-envs", nargs="*", default=[],
                    help="further jaxmdp environments on which only speed is measured "
                         "(e.g. riverswim-25 grid-4-room grid-2-room)")
    ap.add_argument("--speed-env-horizon", type=int, default=None,
                    help="rounds per run on --speed-envs (default --horizon)")
    ap.add_argument("--speed-only", action="store_true",
                    help="skip the river-swim-6 regret comparison: only the --speed-envs "
                         "table")
    ap.add_argument("--speed-env-replications", type=int, default=1,
                    help="runs of the published code per --speed-envs environment")
    ap.add_argument("--out", default=str(HERE.parent / "results"))
    args = ap.parse_args(argv)
    if not args.learners_dir:
        ap.error("give --learners-dir PATH or set STATISTICALRL_LEARNERS")
    get_module = load_learners(args.learners_dir)
    P, R = statisticalrl_riverswim6()
    if not args.no_jax:
        check_against_jaxmdp(P, R)
    import _calibration

    calibration = _calibration.calibrate()
    print(_calibration.calibration_line(calibration), flush=True)
    steps = args.horizon * args.replications
    jax_counts = [] if args.no_jax else sorted({args.jax_replications,
                                                *args.speed_replications})
    rows = []
    if args.speed_only and not args.speed_envs:
        ap.error("--speed-only needs --speed-envs")
    if not args.speed_only:
        print(f"river-swim-6, T = {args.horizon}, delta = {args.delta}; mean final regret "
              f"+- se")
    for name in [] if args.speed_only else args.algorithms:
        row = {"algorithm": name}
        t0 = time.process_time()
        pub, wall = run_published(get_module, name, P, R, args.horizon, args.replications,
                                  args.seed, args.delta)
        row["published"] = pub.tolist()
        row["published_cpu_s"] = time.process_time() - t0
        row["published_wall_s"] = wall
        row["published_us_per_step"] = wall / steps * 1e6
        ps = summary(pub)
        line = f"{name:11s} published {ps[0]:9.1f} +- {ps[1]:6.1f} (m={len(pub)})"
        if args.numpy:
            t0 = time.perf_counter()
            if name == "KL-UCRL":
                from tests.reference.published import run

                npf = run(P, R, "kl_ucrl", args.horizon, args.replications, args.seed,
                          delta=args.delta, search_up_bug=args.kl_ucrl_bug)
            else:
                npf = run_numpy(name, P, R, args.horizon, args.replications, args.seed,
                                args.delta)
            row["numpy_us_per_step"] = (time.perf_counter() - t0) / steps * 1e6
            row["numpy"] = npf.tolist()
            ns = summary(npf)
            line += f" | numpy {ns[0]:9.1f} +- {ns[1]:6.1f} z={z_stat(ps, ns):+5.2f}"
        if not args.no_jax:
            jf, what, us = run_jaxmdp(name, args.horizon, args.jax_replications, args.seed,
                                      args.delta, args.kl_ucrl_bug)
            row["jaxmdp_agent"] = what
            if jf is None:
                line += f" | jaxmdp: skipped ({what})"
            else:
                row["jaxmdp_us_per_rep_step"] = {args.jax_replications: us}
                agent, _ = jaxmdp_agent(name, args.delta, args.kl_ucrl_bug)
                for m in jax_counts:
                    if m != args.jax_replications:
                        row["jaxmdp_us_per_rep_step"][m] = time_jaxmdp(
                            agent, args.horizon, m, args.seed)[1]
                row["jaxmdp"] = jf.tolist()
                js = summary(jf)
                line += f" | jaxmdp {js[0]:9.1f} +- {js[1]:6.1f} z={z_stat(ps, js):+5.2f}"
        print(line, flush=True)
        rows.append(row)
    env_rows = speed_on_envs(get_module, args, args.speed_envs) if args.speed_envs else []
    end_calibration = _calibration.calibrate()
    if rows:
        print_speed(rows, args, jax_counts, end_calibration)
    else:
        print(_calibration.calibration_line(end_calibration) + " (at end)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    what = "speed" if args.speed_only else "riverswim6"
    path = out / f"statisticalrl-{what}-T{args.horizon}-{stamp}.json"
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    path.write_text(json.dumps({"settings": settings, "calibration": calibration,
                                "end_calibration": end_calibration, "rows": rows,
                                "speed_envs": env_rows},
                               indent=1))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
