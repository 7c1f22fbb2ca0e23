"""cond_any: lax.cond for one replication; under vmap the costly branch is skipped for the
whole batch when no replication needs it."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.agents.batching import cond_any


def _counting(calls):
    def true_fn(x):
        jax.debug.callback(lambda: calls.append(1))
        return x + 1.0

    return true_fn


def test_single_instance_is_lax_cond():
    calls = []
    f = jax.jit(lambda p, x: cond_any(p, _counting(calls), lambda x: x, x))
    assert float(f(True, 1.0)) == 2.0 and float(f(False, 1.0)) == 1.0


def test_vmap_selects_per_element_and_skips_when_no_element_needs_it():
    calls = []
    f = jax.jit(jax.vmap(lambda p, x: cond_any(p, _counting(calls), lambda x: x, x)))
    x = jnp.arange(4.0)
    out = f(jnp.array([False, True, False, True]), x)
    jax.block_until_ready(out)
    np.testing.assert_array_equal(out, [0.0, 2.0, 2.0, 4.0])
    assert calls  # the costly branch ran
    calls.clear()
    out = f(jnp.zeros(4, bool), x)
    jax.block_until_ready(out)
    np.testing.assert_array_equal(out, x)
    assert not calls  # no element needed it: not run at all


def test_inside_scan_under_vmap_with_unbatched_operands():
    calls = []

    def step(carry, i):
        # Only replication 0 plans, and only at even rounds; `scale` is not batched.
        pred = (carry[1] == 0) & (i % 2 == 0)
        value = cond_any(pred, lambda v, s: _counting(calls)(v) * s, lambda v, s: v,
                         carry[0], 3.0)
        return (value, carry[1]), value

    run = jax.jit(jax.vmap(lambda rep: jax.lax.scan(step, (jnp.float64(1.0), rep),
                                                    jnp.arange(4))[1]))
    out = np.asarray(run(jnp.arange(3)))
    np.testing.assert_allclose(out[0], [6.0, 6.0, 21.0, 21.0])
    np.testing.assert_allclose(out[1:], 1.0)
    jax.effects_barrier()
    assert calls
