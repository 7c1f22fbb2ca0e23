"""RonanFR/UCRL's ``rlexplorer`` learners, unchanged, beside jaxmdp on RiverSwim-6.

Runs the published ``SCAL``, ``SCALPLUS`` and ``UcrlMdp`` (a control: rlexplorer's UCRL,
Bernstein sets) of a checkout of RonanFR/UCRL at commit ``ab64d14`` (branch
``refactoring_and_cleaning``) with their constructor defaults (``r_max=1``,
``span_constraint`` = ``--span``), or with ``--classes TUCRL`` the ``TUCRL`` of a
checkout at commit ``ecf4acc`` (package ``UCRL``), then jaxmdp's ``scal``, ``scal_plus``
and ``tucrl`` with the options that reproduce them (``published_delta=True``; for
``tucrl`` also ``published_stop=True``), and prints each mean final
realised regret ``T g* - sum r_t`` +- its standard error and the z statistic of each
difference from the published code.

This script fetches and builds nothing. ``--checkout`` is the checkout's root (the folder
that holds the package ``rlexplorer``, its Cython modules already compiled) and
``--python`` an interpreter in which that package imports (its ``visdom`` import is for
plotting only; ``--stub-dir`` may name a folder put first on the child's path, e.g. one
with a stand-in ``visdom`` module). The published learners run in that interpreter, one
replication at a time, with ``numpy.random.seed(i)`` and ``random_state=i`` for
replication ``i``, on rlexplorer's own ``RiverSwim()`` (``rlexplorer/envs/toys/
riverswim.py``: Osband et al.'s numbers, deterministic rewards), which is jaxmdp's
``riverswim-osband-6`` (checked at start-up: the child prints its matrices). Its optimal
gain is set on the environment once (``env.max_gain``) so that the published
``compute_max_gain`` (which also computes the diameter) runs once.

    python benchmarks/rlexplorer.py --checkout /path/to/UCRL --python /path/to/python \\
        [--stub-dir DIR] [--horizon 10000] [--replications 50] [--jax-replications 500]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jaxmdp as jm  # noqa: E402

CHILD = r'''
import json, logging, sys
import numpy as np
if sys.argv[5:] == ["TUCRL"]:
    from UCRL.envs.toys.riverswim import RiverSwim
    from UCRL.tucrl import TUCRL
    UcrlMdp = SCAL = SCALPLUS = None
else:
    from rlexplorer.envs.toys.riverswim import RiverSwim
    from rlexplorer.Ucrl import UcrlMdp
    from rlexplorer.scal import SCAL, SCALPLUS
    TUCRL = None

horizon, replications, span, gain = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), \
    float(sys.argv[4])
logger = logging.getLogger("rlexplorer-benchmark")
logger.addHandler(logging.NullHandler())
logger.propagate = False
env = RiverSwim()
out = {"P": env.P_mat.tolist(), "R": env.R_mat.tolist(), "regrets": {}}
classes = {"UCRL": (UcrlMdp, {}), "SCAL": (SCAL, {"span_constraint": span}),
           "SCALPLUS": (SCALPLUS, {"span_constraint": span}), "TUCRL": (TUCRL, {})}
for name in sys.argv[5:]:
    cls, options = classes[name]
    regrets = []
    for i in range(replications):
        np.random.seed(i)
        env = RiverSwim()
        env.max_gain = gain
        learner = cls(env, r_max=1, random_state=i, logger=logger, **options)
        learner.learn(horizon, horizon)
        regrets.append(horizon * gain - learner.total_reward)
    out["regrets"][name] = regrets
print("RESULT " + json.dumps(out))
'''

#: jaxmdp agent (name, options) beside each published class.
JAX = {
    "SCAL": ("scal", {"published_delta": True}),
    "SCALPLUS": ("scal_plus", {"published_delta": True}),
    "TUCRL": ("tucrl", {"published_delta": True, "published_stop": True}),
}


def _mean_se(x):
    x = np.asarray(x, float)
    return x.mean(), x.std(ddof=1) / math.sqrt(x.size)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--stub-dir", type=Path, default=None)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--replications", type=int, default=50)
    parser.add_argument("--jax-replications", type=int, default=500)
    parser.add_argument("--span", type=float, default=5.0)
    parser.add_argument("--classes", nargs="+", default=["UCRL", "SCAL", "SCALPLUS"],
                        help="published classes: UCRL, SCAL, SCALPLUS; or TUCRL alone, "
                             "with --checkout at commit ecf4acc (package UCRL)")
    parser.add_argument("--output", type=Path, default=None,
                        help="default results/rlexplorer_riverswim[_tucrl].json")
    args = parser.parse_args(argv)
    for option in ("horizon", "replications", "jax_replications"):
        if getattr(args, option) < 2:
            raise ValueError(f"--{option.replace('_', '-')} must be at least 2, got "
                             f"{getattr(args, option)}")
    tucrl = args.classes == ["TUCRL"]
    if "TUCRL" in args.classes and not tucrl:
        raise ValueError(f"--classes: TUCRL runs alone (another checkout), got {args.classes}")
    needed = Path("UCRL", "tucrl.py") if tucrl else Path("rlexplorer", "scal.py")
    if not (args.checkout / needed).exists():
        raise ValueError(f"--checkout must hold {needed}, got {args.checkout}")
    if args.output is None:
        suffix = "_tucrl" if tucrl else ""
        args.output = ROOT / "results" / f"rlexplorer_riverswim{suffix}.json"
    mdp = jm.envs.make("riverswim-osband-6")
    gain = float(jm.solve_average_reward(mdp)[0])
    env = dict(os.environ)
    path = [str(args.checkout)] + ([str(args.stub_dir)] if args.stub_dir else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
        child = f.name
    try:
        run = subprocess.run([args.python, child, str(args.horizon), str(args.replications),
                              repr(args.span), repr(gain), *args.classes],
                             env=env, capture_output=True, text=True, check=True)
    finally:
        os.unlink(child)
    line = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")][-1]
    published = json.loads(line[len("RESULT "):])
    np.testing.assert_allclose(published["P"], mdp.P, atol=1e-12)
    np.testing.assert_allclose(published["R"], mdp.R, atol=1e-12)
    rows = []
    print(f"RiverSwim-6 (Osband), T = {args.horizon}, g* = {gain:.6f}; published "
          f"{args.replications} replications, jaxmdp {args.jax_replications}")
    print(f"{'algorithm':38s} {'mean regret':>12s} {'s.e.':>8s} {'z':>7s}")
    for name in args.classes:
        m, s = _mean_se(published["regrets"][name])
        print(f"{'rlexplorer ' + name:38s} {m:12.1f} {s:8.1f}")
        rows.append({"code": f"rlexplorer {name}", "mean": m, "se": s})
        if name not in JAX:
            continue
        agent, options = JAX[name]
        if agent != "tucrl":
            options = {"span_constraint": args.span, **options}
        traj = jm.simulate(mdp, jm.get_agent(agent, **options),
                           horizon=args.horizon, replications=args.jax_replications, seed=0,
                           progress=False)
        jm_, js = _mean_se(np.asarray(traj.regret)[:, -1])
        z = (jm_ - m) / math.hypot(s, js)
        label = f"jaxmdp {agent} " + ", ".join(f"{k}={v}" for k, v in options.items())
        print(f"{label:38s} {jm_:12.1f} {js:8.1f} {z:7.2f}")
        rows.append({"code": label, "mean": jm_, "se": js, "z": z})
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"settings": vars(args) | {"checkout": str(args.checkout),
                                                                 "output": str(args.output),
                                                                 "stub_dir": str(args.stub_dir)},
                                       "rows": rows, "published": published["regrets"]},
                                      indent=1, default=str))
    print(f"results: {args.output}")


if __name__ == "__main__":
    main()
