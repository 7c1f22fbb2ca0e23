"""Shared helpers of the tests that compare jaxmdp's reproductions of published baselines
with the hand-written NumPy loops of ``tests/reference/published.py``."""

import math

import numpy as np

import jaxmdp as jm
from tests.reference import published as nb

HORIZON = 2_000


def summary(x):
    x = np.asarray(x, float)
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


def jax_final_regrets(name, replications, seed=0, horizon=HORIZON, **options):
    """Final realised regrets of ``jm.get_agent(name, **options)`` on riverswim-6."""
    traj = jm.simulate(jm.envs.make("riverswim-6"), jm.get_agent(name, **options), horizon,
                       replications, seed, progress=False)
    return np.asarray(traj.regret)[:, -1]


def numpy_final_regrets(loop, replications, seed=0, horizon=HORIZON, **options):
    """Final realised regrets of the NumPy loop ``loop`` on jaxmdp's riverswim-6 (same
    action order as the jaxmdp run)."""
    m = jm.envs.make("riverswim-6")
    return nb.run(np.asarray(m.P, float), np.asarray(m.R, float), loop, horizon,
                  replications, seed, **options)


def assert_same_mean(a, b, sigmas=3.0):
    """The two samples' means agree within ``sigmas`` standard errors of the difference."""
    (ma, sa), (mb, sb) = summary(a), summary(b)
    z = (ma - mb) / math.sqrt(sa**2 + sb**2)
    assert abs(z) < sigmas, f"means {ma:.1f} +- {sa:.1f} and {mb:.1f} +- {sb:.1f}, z = {z:.2f}"
