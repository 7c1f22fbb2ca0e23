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
from jaxmdp.indices.qform import kinf_qform, kl_ucb_2d, kl_ucb_qform, l1_ucb_lp

ROOT = Path(__file__).resolve().parents[1]
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
    sys.path.insert(0, str(ROOT / "experiments"))
    try:
        import timing
    finally:
        sys.path.remove(str(ROOT / "experiments"))
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
    assert "UCB q-formulation" in out.stdout and "speed-up" in out.stdout
    assert (tmp_path / "results" / "timing.npz").exists()
    for name in ("timing.png", "timing_best.png"):
        assert (tmp_path / "figures" / name).stat().st_size > 10_000
    with np.load(tmp_path / "results" / "timing.npz") as saved:
        for key in ("kl_ucb_qform", "kinf_qform", "l1_ucb_lp", "kl_ucb_2d"):
            assert float(saved[f"S10_{key}_error"]) <= TOL
