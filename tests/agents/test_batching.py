"""cond_any and cond_compact: lax.cond for one replication; under vmap the costly branch is
skipped for the whole batch when no replication needs it, and cond_compact runs it on the
rows that need it only. masked_elementwise: an elementwise function on the entries of a
mask only, equal to the masked function bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxmdp.agents.batching import cond_any, cond_compact, masked_elementwise


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


@pytest.mark.parametrize("chunk", [2, 1])
def test_cond_chunked_plans_only_needed_rows_in_passes(chunk):
    # Through episode_cond, as the agents call it (UCRL3 plans one row at a time).
    from jaxmdp.agents.batching import episode_cond

    calls = []

    def costly(x, y):
        jax.debug.callback(lambda n: calls.append(int(n)), x.shape[0] if x.ndim else 1)
        return x * 2.0 + y

    cond = episode_cond("chunked", chunk=chunk)
    f = jax.jit(jax.vmap(lambda p, x, y: cond(p, costly, lambda x, y: x, x, y),
                         in_axes=(0, 0, None)))
    x = jnp.arange(8.0)
    for pred in ([True, False, True, True, False, True, True, False],
                 [False, False, False, False, False, False, False, True],
                 [True] * 8):
        pred = jnp.array(pred)
        out = jax.block_until_ready(f(pred, x, 1.0))
        np.testing.assert_array_equal(out, np.where(pred, 2 * x + 1, x))
        jax.effects_barrier()
        assert len(calls) == -(-int(pred.sum()) // chunk)  # ceil(m / chunk) passes
        calls.clear()
    np.testing.assert_array_equal(jax.block_until_ready(f(jnp.zeros(8, bool), x, 1.0)), x)
    jax.effects_barrier()
    assert not calls  # no element needed it: the costly branch never ran


def test_cond_compact_skips_and_matches_lax_cond():
    calls = []

    def costly(x, y):
        jax.debug.callback(lambda: calls.append(1))
        return x * 2.0 + y

    f = jax.jit(jax.vmap(lambda p, x, y: cond_compact(p, costly, lambda x, y: x, x, y,
                                                      buckets=(2,)), in_axes=(0, 0, None)))
    x = jnp.arange(8.0)
    pred = jnp.array([True, False, True, True, False, True, True, False])
    out = f(pred, x, 1.0)
    np.testing.assert_array_equal(out, np.where(pred, 2 * x + 1, x))
    jax.block_until_ready(out)
    assert calls
    calls.clear()
    np.testing.assert_array_equal(jax.block_until_ready(f(jnp.zeros(8, bool), x, 1.0)), x)
    assert not calls  # no element needed it: the costly branch never ran


def test_cond_compact_under_vmap_runs_only_needed_rows():
    calls = []

    def true_fn(x, y):
        jax.debug.callback(lambda n: calls.append(int(n)), x.shape[0] if x.ndim else 1)
        return x + y, y

    f = jax.jit(jax.vmap(lambda p, x: cond_compact(p, true_fn, lambda x, y: (x, y), x, 10.0,
                                                   buckets=(1,))))
    x = jnp.arange(5.0)
    out, _ = f(jnp.array([False, True, False, False, False]), x)
    np.testing.assert_array_equal(out, [0.0, 11.0, 2.0, 3.0, 4.0])
    out, _ = f(jnp.array([True, True, True, False, True]), x)  # more than 1: all rows
    np.testing.assert_array_equal(out, [10.0, 11.0, 12.0, 3.0, 14.0])
    jax.effects_barrier()
    calls.clear()
    out, _ = f(jnp.zeros(5, bool), x)
    jax.block_until_ready(out)
    jax.effects_barrier()
    np.testing.assert_array_equal(out, x)
    assert not calls


def _halvings(x, y):
    """Bisection of ``t^2 = x`` on ``[0, 1 + x]``, entry by entry to a fixed point: the
    number of steps differs from entry to entry (as UCRL3's bounds do)."""
    def cond(carry):
        return carry[2]

    def body(carry):
        a, b, _ = carry
        mid = 0.5 * (a + b)
        ok = mid * mid <= x
        new_a, new_b = jnp.where(ok, mid, a), jnp.where(ok, b, mid)
        return new_a, new_b, jnp.any((new_a != a) | (new_b != b))

    a, _, _ = lax.while_loop(cond, body, (jnp.zeros_like(x), 1 + x, jnp.asarray(True)))
    return a, a * y


@pytest.mark.parametrize("density", [0.0, 0.04, 0.3, 1.0])
def test_masked_elementwise_is_the_masked_function_bit_for_bit(density):
    rng = np.random.default_rng(int(density * 100))
    shape = (4, 3, 9)
    mask = rng.random((2,) + shape) < density
    x = rng.random((2,) + shape) * 10.0 ** rng.integers(-8, 3, (2,) + shape)
    y = rng.random(shape)
    reference = [np.where(mask, out, 0.0) for out in jax.jit(_halvings)(x, y)]
    # One instance in one pass, and a batch (its rows flattened with the entries) in
    # passes of 16 entries, the last one padded.
    one = jax.jit(lambda m, x: masked_elementwise(_halvings, m, x, y))(mask[0], x[0])
    batch = jax.jit(jax.vmap(lambda m, x: masked_elementwise(_halvings, m, x, y,
                                                             pass_size=16)))(mask, x)
    for got, want in zip(one, reference):
        np.testing.assert_array_equal(got, want[0])
    for got, want in zip(batch, reference):
        np.testing.assert_array_equal(got, want)


def test_masked_elementwise_checks_shapes():
    with pytest.raises(ValueError, match=r"args\[1\] must have mask's shape \(3,\)"):
        masked_elementwise(_halvings, jnp.ones(3, bool), jnp.ones(3), jnp.ones(4))
