"""The order of a few values without a sort (``jaxmdp._order``): the permutation of NumPy's
stable argsort, and the maximisers built on it equal, bit for bit, with the order taken by
comparisons (an accelerator's choice, forced here on the CPU) and by XLA's sort."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp._order as order_module
from jaxmdp._order import RANK_MAX_STATES, stable_argsort
from jaxmdp.indices.l1 import l1_ball_maximiser
from jaxmdp.planning import UCRL3_BALL, UCRL3Bounds, box_maximise
from jaxmdp.planning._tevi import l1_truncated_maximise


def _values(rng, shape, dtype):
    """Values with many ties, both zeros, infinities and NaNs of both signs."""
    pool = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan, 1e-300, 3.0])
    x = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), rng.normal(size=shape))
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", ["sort", "rank"])
def test_the_permutation_is_numpys_stable_argsort(method, dtype):
    rng = np.random.default_rng(0)
    for shape in [(1,), (7,), (5, 13), (3, 2, RANK_MAX_STATES)]:
        x = _values(rng, shape, dtype)
        order, rank = jax.jit(lambda x: stable_argsort(x, method=method))(jnp.asarray(x))
        want = np.argsort(x, axis=-1, kind="stable")  # NaNs last, -0.0 == 0.0
        np.testing.assert_array_equal(order, want)
        np.testing.assert_array_equal(np.take_along_axis(np.asarray(order), rank, -1),
                                      np.broadcast_to(np.arange(shape[-1]), shape))


def test_auto_ranks_on_an_accelerator_with_few_states(monkeypatch):
    x = jnp.zeros((4, RANK_MAX_STATES))

    def sorts(n):
        text = jax.jit(lambda x: stable_argsort(x)).lower(jnp.zeros((4, n))).as_text()
        return "stablehlo.sort" in text

    assert sorts(8)  # the CPU sorts
    monkeypatch.setattr(order_module, "platform", lambda: "gpu")
    assert not sorts(x.shape[-1]) and sorts(RANK_MAX_STATES + 1)
    with pytest.raises(ValueError, match="method"):
        stable_argsort(x, method="bubble")


def _forced(monkeypatch, fn, *args):
    """``fn(*args)`` traced afresh, with the order by XLA's sort and by comparisons (the
    platform read as a GPU's)."""
    by_sort = jax.jit(lambda *a: fn(*a))(*args)
    with monkeypatch.context() as patch:
        patch.setattr(order_module, "platform", lambda: "gpu")
        ranked = jax.jit(lambda *a: fn(*a))
        assert "stablehlo.sort" not in ranked.lower(*args).as_text()  # traced afresh, no sort
        by_rank = ranked(*args)
    return by_sort, by_rank


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_maximisers_are_the_same_bit_for_bit(monkeypatch, dtype):
    rng = np.random.default_rng(1)
    batch, S, A = 5, 9, 3
    # Values with ties (rounded), per replication as under vmap.
    u = np.round(rng.normal(size=(batch, S)), 1).astype(dtype)
    p = rng.dirichlet(np.ones(S), (batch, S, A)).astype(dtype)
    p[..., 2] = 0.0  # zero counts
    p /= p.sum(-1, keepdims=True)
    radius = rng.uniform(0, 1.5, (batch, S, A)).astype(dtype)
    lower = np.clip(p - radius[..., None] / 4, 0, 1).astype(dtype)
    upper = np.clip(p + radius[..., None] / 4, 0, 1).astype(dtype)
    allowed = rng.random((batch, S, A, S)) < 0.7
    bounds = UCRL3Bounds(lower, upper, np.full((batch, S, A), 0.2, dtype), p > 0,
                         np.full((batch, S, A), 0.3, dtype))
    cases = {
        # The function under its jit, traced afresh (a jitted one keeps its first trace).
        "l1": (jax.vmap(lambda p, u, d: l1_ball_maximiser.__wrapped__(p, u, d, with_q=True)),
               (p, u, radius)),
        "box": (jax.vmap(lambda lo, hi, u: box_maximise(lo, hi, u, True)), (lower, upper, u)),
        "tevi": (jax.vmap(l1_truncated_maximise), (p, u, radius, allowed)),
        "ucrl3": (jax.vmap(lambda b, u: UCRL3_BALL.solve(None, u, b, True)), (bounds, u)),
    }
    for name, (fn, args) in cases.items():
        args = jax.tree_util.tree_map(jnp.asarray, args)
        by_sort, by_rank = _forced(monkeypatch, fn, *args)
        for got, want in zip(jax.tree_util.tree_leaves(by_rank),
                             jax.tree_util.tree_leaves(by_sort)):
            np.testing.assert_array_equal(got, want, err_msg=name)
