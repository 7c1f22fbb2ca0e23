"""RonanFR/UCRL's ``rlexplorer`` learners, unchanged, beside jaxmdp's reproducing options.

Runs the published ``UcrlMdp``, ``SCAL`` and ``SCALPLUS`` of a checkout of RonanFR/UCRL at
commit ``ab64d14`` (``--checkout``, package ``rlexplorer``) and ``TUCRL`` of a checkout at
commit ``ecf4acc`` (``--tucrl-checkout``, package ``UCRL``), each with ``r_max=1``, its
constructor defaults and ``span_constraint`` = ``--span`` (SCAL, SCAL+), on four MDPs
built from the published environment classes:

* ``riverswim-6``: the published ``RiverSwim()`` with its ``P_mat`` replaced by jaxmdp's
  ``riverswim-6`` (StatisticalRL's river, 0 = left); its ``R_mat`` is already the same;
* ``riverswim-osband-6``: ``RiverSwim()`` as published;
* ``toy3d-1``: ``Toy3D_1()``;
* ``toy3d-weak``: ``Toy3D_1(delta=0.)`` (state 1 unreachable).

The script checks at start-up that the published matrices equal jaxmdp's. Replication
``i`` (from ``--first``) runs with ``numpy.random.seed(i)`` (the environment's draws use
the global stream) and ``random_state=i`` (the learner's tie noise and SCAL's action
draws); the environment is built once per run and ``reset()`` (state 0) before each
replication (building ``Toy3D_1(delta=0.)`` runs its diameter computation to a cap of
10^6 sweeps). The children run with ``OMP_NUM_THREADS=1`` (the Cython solvers' ``prange``
over at most 6 states only adds threads).

Then jaxmdp (float64: the published tie noise, ``1e-7``, is below float32's resolution)
runs, on the same MDPs, the agent with the options that reproduce each learner
(``JAX``), and the controls (``CONTROLS``: the same agent without the options of the last
published details, and the stand-in that ``scal`` with a cap that never binds was for
``UcrlMdp``), and prints each mean final realised regret ``T g* - sum r_t`` +- its
standard error and the z statistic of each difference from the published code. Where
both sides' regrets are the same in every replication (``toy3d-weak``: deterministic
transitions and rewards), z is 0/0 and the values are compared instead (``exact``:
equal to ``1e-6``; a side whose regrets all agree to ``1e-6`` counts with standard
error 0).

This script fetches and builds nothing. ``--python`` is an interpreter in which the
checkouts' packages import (Python 3.8, NumPy < 1.23: the published code calls
``np.asscalar``; their Cython modules compiled in place); ``--stub-dir`` a folder put on
the children's path after the checkout (a stand-in ``visdom`` module whose
``Visdom().check_connection()`` is False, and ``gym.utils.colorize``).

    python benchmarks/rlexplorer.py --checkout UCRL-ab64d14 --tucrl-checkout UCRL-ecf4acc \\
        --python PY38 [--stub-dir STUB] [--horizon 10000] [--replications 200]

The published runs can be split (they take about 0.8 s per replication of T = 10^4 on one
core): ``--published-only --first 0 --replications 100 --published-output A.json``, the
same with ``--first 100 ... B.json``, then ``--published A.json B.json`` runs jaxmdp and
prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path

import _timing  # noqa: F401  (puts the repository root on sys.path)
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

ENVS = ("riverswim-6", "riverswim-osband-6", "toy3d-1", "toy3d-weak")
#: Published class -> its package (the checkout it needs).
LEARNERS = {"UcrlMdp": "rlexplorer", "SCAL": "rlexplorer", "SCALPLUS": "rlexplorer",
            "TUCRL": "UCRL"}

CHILD = r'''
import contextlib, io, json, logging, sys, time
import numpy as np
args = json.loads(sys.argv[1])
package = args["package"]
if package == "UCRL":
    from UCRL.envs import toys
    from UCRL.tucrl import TUCRL
    classes = {"TUCRL": (TUCRL, {})}
else:
    from rlexplorer.envs import toys
    from rlexplorer.Ucrl import UcrlMdp
    from rlexplorer.scal import SCAL, SCALPLUS
    classes = {"UcrlMdp": (UcrlMdp, {}),
               "SCAL": (SCAL, {"span_constraint": args["span"]}),
               "SCALPLUS": (SCALPLUS, {"span_constraint": args["span"]})}
logger = logging.getLogger("rlexplorer-benchmark")
logger.addHandler(logging.NullHandler())
logger.propagate = False
horizon, first, replications = args["horizon"], args["first"], args["replications"]
out = {"envs": {}, "runs": []}
for name in args["envs"]:
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        if name == "toy3d-1":
            env = toys.Toy3D_1()
        elif name == "toy3d-weak":
            env = toys.Toy3D_1(delta=0.)
        else:
            env = toys.RiverSwim()
    if name == "riverswim-6":
        env.P_mat = np.array(args["riverswim6_P"])
    env.max_gain = args["gains"][name]  # read only by the learners' logging
    out["envs"][name] = {"P": np.where(np.isfinite(env.P_mat), env.P_mat, 0.0).tolist(),
                         "R": np.where(np.isfinite(env.R_mat), env.R_mat, 0.0).tolist(),
                         "state_actions": [list(map(int, a)) for a in env.state_actions]}
    for learner in args["learners"]:
        cls, options = classes[learner]
        for i in range(first, first + replications):
            np.random.seed(i)
            env.reset()
            agent = cls(env, r_max=1, random_state=i, logger=logger, **options)
            t0 = time.perf_counter()
            agent.learn(horizon, horizon)
            out["runs"].append({"learner": learner, "env": name, "seed": i,
                                "total_reward": float(agent.total_reward),
                                "episodes": int(agent.episode),
                                "seconds": time.perf_counter() - t0})
            print(f"{learner} {name} seed {i}: total reward {agent.total_reward:.4f}, "
                  f"{agent.episode} episodes, {time.perf_counter() - t0:.2f} s",
                  file=sys.stderr, flush=True)
print("RESULT " + json.dumps(out))
'''

#: jaxmdp agent (name, options) that reproduces each published class (span_constraint
#: added for SCAL and SCAL+).
JAX = {
    "UcrlMdp": ("ucrl_rlexplorer", {}),
    "SCAL": ("scal", {"published_delta": True, "ties": "noise",
                      "published_warm_start": True}),
    "SCALPLUS": ("scal_plus", {"published_delta": True, "ties": "noise",
                               "published_warm_start": True}),
    "TUCRL": ("tucrl", {"published_delta": True, "published_stop": True}),
}

#: Controls beside each published class: jaxmdp without the last published details (the
#: lowest-index ties, the warm start from the start of the last sweep) and, for UcrlMdp,
#: the former stand-in (SCAL's unbounded reward with a cap that never binds).
CONTROLS = {
    "UcrlMdp": [("ucrl_rlexplorer", {"ties": "lowest"}),
                ("scal", {"span_constraint": 1e9, "published_delta": True})],
    "SCAL": [("scal", {"published_delta": True})],
    "SCALPLUS": [("scal_plus", {"published_delta": True})],
    "TUCRL": [],
}


def mean_se(x):
    """``(mean, standard error)`` of the regrets ``x``."""
    x = np.asarray(x, float)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


#: Regrets within this of each other are the same (float64 sums over 10^4 rounds).
EXACT = 1e-6


def compare(published, jaxmdp):
    """``(z, exact)``: the z statistic of the difference of means (a side whose regrets
    are all the same, to :data:`EXACT`, counts with standard error 0), or, where both
    sides are, None and whether the two values are equal (to :data:`EXACT`)."""
    published, jaxmdp = np.asarray(published, float), np.asarray(jaxmdp, float)
    pm, ps = mean_se(published)
    jm_, js = mean_se(jaxmdp)
    ps, js = (0.0 if np.ptp(x) <= EXACT else se for x, se in ((published, ps), (jaxmdp, js)))
    if ps == 0.0 and js == 0.0:
        return None, bool(abs(pm - jm_) <= EXACT)
    return (jm_ - pm) / math.hypot(ps, js), None


def run_published(args, learners, envs, gains, riverswim6_P):
    """Runs the published classes in one child per checkout; returns the child outputs,
    merged."""
    merged = {"envs": {}, "runs": []}
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    for package, checkout in (("rlexplorer", args.checkout), ("UCRL", args.tucrl_checkout)):
        mine = [name for name in learners if LEARNERS[name] == package]
        if not mine:
            continue
        if checkout is None or not (Path(checkout) / package).is_dir():
            raise ValueError(f"--{'tucrl-' if package == 'UCRL' else ''}checkout must hold "
                             f"the package {package}/ for {mine}, got {checkout}")
        env["PYTHONPATH"] = os.pathsep.join(
            [str(checkout)] + ([str(args.stub_dir)] if args.stub_dir else []))
        payload = {"package": package, "learners": mine, "envs": envs,
                   "horizon": args.horizon, "first": args.first,
                   "replications": args.replications, "span": args.span, "gains": gains,
                   "riverswim6_P": riverswim6_P}
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(CHILD)
            child = f.name
        try:
            run = subprocess.run([args.python, child, json.dumps(payload)], env=env,
                                 stdout=subprocess.PIPE, text=True, check=True)
        finally:
            os.unlink(child)
        line = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")][-1]
        out = json.loads(line[len("RESULT "):])
        merged["envs"].update(out["envs"])
        merged["runs"] += out["runs"]
    return merged


def load_published(paths):
    """The published runs of several ``--published-output`` files, merged (a seed may
    appear once per learner and environment)."""
    merged = {"envs": {}, "runs": []}
    seen = set()
    for path in paths:
        out = json.loads(Path(path).read_text())["published"]
        merged["envs"].update(out["envs"])
        for run in out["runs"]:
            key = (run["learner"], run["env"], run["seed"])
            if key in seen:
                raise ValueError(f"--published: {key} appears twice")
            seen.add(key)
            merged["runs"].append(run)
    return merged


def check_envs(published, mdps):
    """The published matrices must be jaxmdp's."""
    for name, arrays in published["envs"].items():
        mdp = mdps[name]
        mask = np.asarray(mdp.mask)
        P = np.asarray(arrays["P"])
        np.testing.assert_allclose(P[mask], np.asarray(mdp.P)[mask], atol=1e-12,
                                   err_msg=f"{name}: P")
        np.testing.assert_allclose(np.asarray(arrays["R"])[mask], np.asarray(mdp.R)[mask],
                                   atol=1e-12, err_msg=f"{name}: R")
        actions = [list(np.flatnonzero(row)) for row in mask]
        if arrays["state_actions"] != actions:
            raise ValueError(f"{name}: published actions {arrays['state_actions']}, "
                             f"jaxmdp's {actions}")


def label(agent, options):
    return f"`{agent}`" + ("" if not options else ", " + ", ".join(
        f"`{k}={v!r}`" for k, v in options.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=None,
                        help="a built checkout at ab64d14 (holds rlexplorer/)")
    parser.add_argument("--tucrl-checkout", type=Path, default=None,
                        help="a built checkout at ecf4acc (holds UCRL/), for TUCRL")
    parser.add_argument("--python", default=None)
    parser.add_argument("--stub-dir", type=Path, default=None)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS)
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS),
                        choices=list(LEARNERS))
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--replications", type=int, default=200,
                        help="published replications (seeds --first, --first + 1, ...)")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--jax-replications", type=int, default=None,
                        help="jaxmdp's replications (default --replications)")
    parser.add_argument("--span", type=float, default=5.0)
    parser.add_argument("--no-controls", action="store_true")
    parser.add_argument("--published-only", action="store_true",
                        help="run the published code only and write --published-output")
    parser.add_argument("--published-output", type=Path, default=None)
    parser.add_argument("--published", type=Path, nargs="+", default=None,
                        help="read the published runs from these --published-output files "
                             "instead of running them")
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "rlexplorer.json")
    args = parser.parse_args(argv)
    for option in ("horizon", "replications"):
        if getattr(args, option) < 2:
            raise ValueError(f"--{option} must be at least 2, got {getattr(args, option)}")
    if args.published_only and args.published_output is None:
        parser.error("--published-only needs --published-output")
    if args.published is None and args.python is None:
        parser.error("give --python (and --checkout / --tucrl-checkout), or --published")

    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxmdp as jm

    mdps = {name: jm.envs.make(name) for name in args.envs}
    gains = {name: float(jm.solve_average_reward(mdp)[0]) for name, mdp in mdps.items()}
    if args.published is not None:
        published = load_published(args.published)
    else:
        published = run_published(args, args.learners, args.envs, gains,
                                  np.asarray(mdps["riverswim-6"].P).tolist()
                                  if "riverswim-6" in mdps else None)
    check_envs(published, mdps)
    if args.published_only:
        args.published_output.parent.mkdir(parents=True, exist_ok=True)
        args.published_output.write_text(json.dumps({"published": published}))
        print(f"published runs: {args.published_output}")
        return

    jax_replications = args.jax_replications or args.replications
    rows = []
    print(f"T = {args.horizon}, c = {args.span}; mean final realised regret T g* - sum r_t "
          f"+- s.e.; jaxmdp float64, seed 0, {jax_replications} replications")
    print("| environment | code | replications | mean regret | s.e. | z |")
    print("|---|---|---|---|---|---|")
    for env_name in args.envs:
        mdp, gain = mdps[env_name], gains[env_name]
        for learner in args.learners:
            runs = [r for r in published["runs"]
                    if r["learner"] == learner and r["env"] == env_name]
            if not runs:
                continue
            regrets = [args.horizon * gain - r["total_reward"] for r in runs]
            m, s = mean_se(regrets)
            rows.append({"env": env_name, "code": f"rlexplorer {learner}", "mean": m,
                         "se": s, "replications": len(regrets), "regrets": regrets})
            print(f"| {env_name} | rlexplorer `{learner}` | {len(regrets)} | {m:,.2f} | "
                  f"{s:.2f} | |", flush=True)
            agents = [JAX[learner]] + ([] if args.no_controls else CONTROLS[learner])
            for k, (agent, options) in enumerate(agents):
                if agent in ("scal", "scal_plus"):
                    options = {"span_constraint": args.span, **options}
                traj = jm.simulate(mdp, jm.get_agent(agent, **options),
                                   horizon=args.horizon, replications=jax_replications,
                                   seed=0, progress=False)
                ours = np.asarray(traj.regret)[:, -1]
                jm_, js = mean_se(ours)
                z, exact = compare(regrets, ours)
                cell = (f"{z:+.2f}" if z is not None else
                        "equal (exact)" if exact else "differ (exact)")
                name = ("jaxmdp " if k == 0 else "control: jaxmdp ") + label(agent, options)
                rows.append({"env": env_name, "code": name, "mean": jm_, "se": js,
                             "replications": jax_replications, "z": z, "exact": exact})
                print(f"| {env_name} | {name} | {jax_replications} | {jm_:,.2f} | {js:.2f} | "
                      f"{cell} |", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    settings["published"] = [str(p) for p in args.published or []]
    args.output.write_text(json.dumps({"settings": settings, "gains": gains, "rows": rows},
                                      indent=1))
    print(f"results: {args.output}")


if __name__ == "__main__":
    main()
