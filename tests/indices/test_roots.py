"""The safeguarded root finder (jaxmdp/indices/_roots.py): inactive problems of a batch."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.indices._roots import find_root


def _cube(x, a):
    return x**3 - a, 3 * x**2


def _solve(a, x0, active):
    return find_root(_cube, x0, 0.0, 4.0, a, xtol=1e-10, active=active)


def test_inactive_problems_are_not_iterated_and_leave_the_others_unchanged():
    a = jnp.array([2.0, 3.0, 27.0, 5.0])
    x0 = jnp.array([1.0, 7.0, 0.5, -1.0])  # 7.0 and -1.0 lie outside the bracket [0, 4]
    active = jnp.array([True, False, True, False])
    batch = jax.jit(jax.vmap(_solve))(a, x0, active)
    # Inactive: the start clipped into the bracket, no step, reported converged.
    np.testing.assert_array_equal(np.asarray(batch.x)[[1, 3]], [4.0, 0.0])
    np.testing.assert_array_equal(np.asarray(batch.num_steps)[[1, 3]], [0, 0])
    assert bool(jnp.all(batch.converged))
    # Active: each one's own solve, bit for bit, whatever the others are.
    for i in (0, 2):
        alone = jax.jit(_solve)(a[i], x0[i], True)
        assert float(batch.x[i]) == float(alone.x)
        assert int(batch.num_steps[i]) == int(alone.num_steps) > 0
    np.testing.assert_allclose(np.asarray(batch.x)[[0, 2]], [2.0 ** (1 / 3), 3.0],
                               rtol=1e-14)
    # The default: every problem is solved.
    every = jax.jit(jax.vmap(lambda a, x0: find_root(_cube, x0, 0.0, 4.0, a,
                                                     xtol=1e-10)))(a, x0)
    np.testing.assert_allclose(np.asarray(every.x), np.cbrt(np.asarray(a)), rtol=1e-14)
