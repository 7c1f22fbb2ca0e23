"""The timing-study baselines reach their tolerance against the exact indices.

Each baseline is checked batched with ``vmap`` (one compile each, to keep the suite fast)
on fixed random problems shaped like the timing study's (p ~ Dirichlet(1), v ~ U(0, 1)),
against ``jaxmdp.kl_ucb``, ``jaxmdp.kinf`` and ``jaxmdp.l1_ucb``. The last test runs
``experiments/timing.py --quick`` end to end into temporary folders.
"""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp
from jaxmdp.indices.qform import (
    kinf_pgd,
    kinf_qform,
    kl_ucb_2d,
    kl_ucb_pgd,
    kl_ucb_qform,
    l1_ucb_lp,
)

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-4


def _problems(size=12, count=6, seed=0):
    rng = np.random.default_rng([seed, size])
    p = rng.dirichlet(np.ones(size), size=count)
    v = rng.uniform(size=(count, size))
    mean_p, v_max = np.sum(p * v, 1), v.max(1)
    delta = np.exp(rng.uniform(np.log(0.01), np.log(1.0), size=count))
    rho = mean_p + rng.uniform(0.1, 0.9, size=count) * (v_max - mean_p)
    d = rng.uniform(0.05, 1.0, size=count)
    return tuple(jnp.asarray(x) for x in (p, v, delta, rho, d))


def test_kl_ucb_qform_reaches_tol():
    p, v, delta, _, _ = _problems()
    value, info = jax.vmap(lambda *a: kl_ucb_qform(*a, tol=TOL, return_info=True))(p, v, delta)
    exact = jax.vmap(jaxmdp.kl_ucb)(p, v, delta)
    assert bool(jnp.all(info.converged))
    assert float(jnp.max(jnp.abs(value - exact))) <= TOL


def test_kinf_qform_reaches_tol():
    p, v, _, rho, _ = _problems()
    value, info = jax.vmap(lambda *a: kinf_qform(*a, tol=TOL, return_info=True))(p, v, rho)
    exact = jax.vmap(jaxmdp.kinf)(p, v, rho)
    assert bool(jnp.all(info.converged))
    assert float(jnp.max(jnp.abs(value - exact))) <= TOL


# (solver, exact index, which level from _problems, sign: +1 if the solver's value is an
# upper bound of the exact one (a feasible point's KL), -1 if a lower bound (q.v)).
_PGD = {"kl_ucb_pgd": (kl_ucb_pgd, jaxmdp.kl_ucb, 2, -1.0),
        "kinf_pgd": (kinf_pgd, jaxmdp.kinf, 3, 1.0)}


@pytest.mark.parametrize("name", list(_PGD))
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_pgd_reaches_tol_by_its_own_certificate(name, dtype):
    solver, exact_fn, level_at, sign = _PGD[name]
    args = _problems()
    p, v, level = args[0], args[1], args[level_at]
    value, info = jax.vmap(lambda *a: solver(*a, tol=TOL, return_info=True))(
        p.astype(dtype), v.astype(dtype), level.astype(dtype))
    exact = jax.vmap(exact_fn)(p, v, level)
    assert value.dtype == dtype and info.residual.dtype == dtype
    assert bool(jnp.all(info.converged)) and bool(jnp.all(info.residual <= TOL))
    error = np.asarray(value, np.float64) - np.asarray(exact)
    # float32 rounding of the certificate's terms is a few ulps of O(1) numbers.
    slack = 1e-12 if dtype == jnp.float64 else 2e-6
    assert np.max(np.abs(error)) <= TOL + slack
    # The value is that of a feasible q, on the right side of the optimum, and the
    # certificate (residual) bounds its distance from it.
    assert np.all(sign * error >= -slack)
    assert np.all(np.abs(error) <= np.asarray(info.residual, np.float64) + slack)


@pytest.mark.parametrize("name", list(_PGD))
def test_pgd_reports_when_it_stops_short(name):
    solver, _, level_at, _ = _PGD[name]
    args = _problems()
    p, v, level = args[0], args[1], args[level_at]
    run = jax.vmap(lambda *a: solver(*a, tol=1e-10, max_steps=3, check_every=2,
                                     return_info=True))
    value, info = run(p, v, level)
    assert not bool(jnp.any(info.converged))
    assert np.all(np.asarray(info.num_steps) == 3)
    assert bool(jnp.all(info.residual > 1e-10)) and bool(jnp.all(jnp.isfinite(value)))


def test_pgd_degenerate_cases_and_bad_config():
    p, v, _, _, _ = _problems()
    p0, v0 = p[0], v[0]
    mean = float(p0 @ v0)
    # The paper's Theorems 1 and 3.
    assert float(kl_ucb_pgd(p0, v0, 0.0)) == pytest.approx(mean)
    assert float(kl_ucb_pgd(p0, v0, -1.0)) == -np.inf
    assert float(kl_ucb_pgd(p0, jnp.full_like(v0, 0.3), 0.5)) == pytest.approx(0.3)
    assert float(kinf_pgd(p0, v0, mean - 0.1)) == 0.0
    assert float(kinf_pgd(p0, v0, float(v0.max()) + 0.1)) == np.inf
    with pytest.raises(ValueError, match="floor must be in"):
        kl_ucb_pgd(p0, v0, 0.1, floor=0.1)
    with pytest.raises(ValueError, match="check_every must be a positive integer, got"):
        kinf_pgd(p0, v0, 0.5, check_every=0)
    with pytest.raises(ValueError, match="got p.shape"):
        kinf_pgd(p, v, 0.5)


def test_kl_ucb_2d_high_accuracy_and_degenerate_cases():
    p, v, delta, _, _ = _problems()
    value, info = jax.vmap(lambda *a: kl_ucb_2d(*a, tol=1e-12, return_info=True))(p, v, delta)
    exact = jax.vmap(jaxmdp.kl_ucb)(p, v, delta)
    assert bool(jnp.all(info.converged))
    np.testing.assert_allclose(value, exact, rtol=0, atol=1e-10)
    # Theorem 1 of the paper: delta = 0 and constant v give p.v; delta < 0 gives -inf.
    assert float(kl_ucb_2d(p[0], v[0], 0.0)) == pytest.approx(float(p[0] @ v[0]))
    assert float(kl_ucb_2d(p[0], jnp.full_like(v[0], 0.3), 0.5)) == pytest.approx(0.3)
    assert float(kl_ucb_2d(p[0], v[0], -1.0)) == -np.inf


def test_l1_ucb_lp_reaches_tol():
    p, v, _, _, d = _problems()
    value, info = jax.vmap(lambda *a: l1_ucb_lp(*a, tol=TOL, return_info=True))(p, v, d)
    exact = jax.vmap(jaxmdp.l1_ucb)(p, v, d)
    assert bool(jnp.all(info.converged))
    assert float(jnp.max(jnp.abs(value - exact))) <= TOL


def test_bad_input_raises_value_error():
    p, v, delta, _, _ = _problems()
    with pytest.raises(ValueError, match="got p.shape"):
        kl_ucb_qform(p, v, delta)  # batched input: use vmap
    with pytest.raises(ValueError, match="tol must be positive, got"):
        kl_ucb_2d(p[0], v[0], 0.1, tol=0.0)
    from experiments import timing

    with pytest.raises(ValueError, match="--dtype must be float32 or float64, got"):
        timing.parse_args(["--dtype", "float16"])
    with pytest.raises(ValueError, match="--sizes must be"):
        timing.parse_args(["--sizes", "10,x"])


def test_timing_quick_runs(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    # --sizes 10: one size keeps the compile time (most of a quick run) within the budget.
    cmd = [sys.executable, str(ROOT / "experiments" / "timing.py"), "--quick", "--sizes", "10",
           "--results-dir", str(tmp_path / "results"), "--figures-dir", str(tmp_path / "figures")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "UCB q-formulation" in out.stdout and "vs L-BFGS" in out.stdout
    assert "projected gradient" in out.stdout
    assert (tmp_path / "results" / "timing.npz").exists()
    for name in ("timing.png", "timing_best.png"):
        assert (tmp_path / "figures" / name).stat().st_size > 10_000
    with np.load(tmp_path / "results" / "timing.npz") as saved:
        for key in ("kl_ucb_qform", "kinf_qform", "l1_ucb_lp", "kl_ucb_2d", "kl_ucb_pgd",
                    "kinf_pgd"):
            assert float(saved[f"S10_{key}_error"]) <= TOL
            assert bool(np.all(saved[f"S10_{key}_converged"]))
