"""jaxmdp.random: the exact Gamma sampler (Marsaglia–Tsang, Exp(1) at shape 1) behind
MDP-PS and TSDE, against scipy's distributions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmdp.random import gamma as _gamma

GAMMA_DRAWS = 24000  # one compiled program for the tests of _gamma_batch


@pytest.mark.parametrize("shape", [1.0, 2.5, 40.0])
def test_gamma_sampler_matches_scipy_distribution(shape):
    """The Marsaglia–Tsang sampler behind MDP-PS draws from Gamma(shape, 1)."""
    from scipy import stats

    # float64 (not weak-typed), as in the MDP-PS test: the same compiled program.
    draws = _gamma_batch(jax.random.key(3), jnp.full((GAMMA_DRAWS,), shape, jnp.float64))
    assert np.all(np.asarray(draws) > 0)
    # Fixed seed: a deterministic check that would fail for a wrong sampler.
    assert stats.kstest(np.asarray(draws), stats.gamma(shape).cdf).pvalue > 1e-3
    np.testing.assert_allclose(np.mean(draws), shape,
                               rtol=4 / np.sqrt(GAMMA_DRAWS * shape))


def test_gamma_sampler_small_odd_batches_under_vmap():
    """Seven draws per key (odd: one Box–Muller pair is cut; fewer than the redraw batch),
    vmapped over keys as in the agents, shapes mixing exactly 1 (drawn as Exp(1)) with
    others (Marsaglia–Tsang): each element's Gamma marginal, independent elements (the
    two normals of one Box–Muller pair go to elements i and i + 4)."""
    from scipy import stats

    shapes = np.array([2.5, 1.0, 1.3, 7.0, 4.0, 1.0, 2.0])
    keys = jax.random.split(jax.random.key(5), 4000)
    draws = np.asarray(jax.jit(jax.vmap(_gamma))(keys, jnp.tile(jnp.asarray(shapes), (4000, 1))))
    assert np.all(draws > 0)
    for j, shape in enumerate(shapes):
        assert stats.kstest(draws[:, j], stats.gamma(shape).cdf).pvalue > 1e-3
    for i, j in [(0, 4), (2, 6), (1, 5), (0, 1), (3, 5)]:
        assert abs(np.corrcoef(draws[:, i], draws[:, j])[0, 1]) < 4 / np.sqrt(4000)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_gamma_sampler_shape_one_is_exponential_without_rejection(dtype):
    """Shape exactly 1: Exp(1) draws (KS against scipy), finite and positive in float32 and
    float64, beside shapes just above 1, which still go through Marsaglia–Tsang."""
    from scipy import stats

    shapes = jnp.tile(jnp.asarray([1.0, 1.0 + 1e-6], dtype), GAMMA_DRAWS // 2)
    raw = _gamma_batch(jax.random.key(11), shapes)
    assert raw.dtype == dtype
    draws = np.asarray(raw, np.float64)
    assert np.all(np.isfinite(draws)) and np.all(draws > 0)
    for j, shape in enumerate([1.0, 1.0 + 1e-6]):
        assert stats.kstest(draws[j::2], stats.expon.cdf).pvalue > 1e-3, shape
    # The two streams are different draws (the Exp(1) path is not the MT path).
    assert abs(np.corrcoef(draws[0::2], draws[1::2])[0, 1]) < 4 / np.sqrt(GAMMA_DRAWS // 2)


@jax.jit
def _gamma_batch(key, shape):
    return _gamma(key, shape)
