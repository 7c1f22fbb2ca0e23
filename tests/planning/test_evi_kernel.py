"""EVI over L1 balls as one Pallas kernel (``kernel="pallas"``, interpret mode on the CPU)
against the XLA loop of ``jaxmdp.evi``: the same policies, sweeps and statuses; values
within 1e-12 in float64 and 1e-6 in float32."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import planning


def _problem(rng, S, A, dtype):
    """A confidence set of UCRL2's shape: sparse estimates, radii of all sizes (zero
    too), an inadmissible action and a state with none (it keeps them all)."""
    counts = rng.integers(0, 5, (S, A, S)) * (rng.random((S, A, S)) < 0.6)
    counts[..., 0] += 1
    p_hat = counts / counts.sum(-1, keepdims=True)
    rewards = rng.uniform(0, 1, (S, A))
    radius = rng.choice([0.0, 0.05, 0.4, 1.5, 3.0], (S, A))
    mask = rng.random((S, A)) < 0.8
    mask[0, 0] = True
    if S > 2:
        mask[1] = False
    return (jnp.asarray(p_hat, dtype), jnp.asarray(rewards, dtype),
            jnp.asarray(radius, dtype), jnp.asarray(mask))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
@pytest.mark.parametrize("S, A", [(1, 1), (6, 3), (11, 4)])
def test_the_kernel_is_the_xla_loop(S, A, dtype):
    rng = np.random.default_rng(S * 10 + A)
    p_hat, rewards, radius, mask = _problem(rng, S, A, dtype)
    u0 = jnp.asarray(rng.uniform(0, 2, S), dtype)
    tol = 1e-12 if dtype == jnp.float64 else 1e-6
    for epsilon, max_steps, start in [(1e-6, 10_000, None), (1e-3, 3, u0)]:
        args = (p_hat, rewards, radius, mask)
        options = dict(epsilon=epsilon, max_steps=max_steps, u0=start)
        want = jm.evi(*args, **options)
        got = jm.evi(*args, kernel="pallas", **options)
        np.testing.assert_array_equal(got.policy, want.policy)
        np.testing.assert_array_equal(got.num_steps, want.num_steps)
        np.testing.assert_array_equal(got.status, want.status)
        np.testing.assert_allclose(got.bias, want.bias, rtol=0, atol=tol)
        np.testing.assert_allclose(got.gain, want.gain, rtol=0, atol=tol)
        np.testing.assert_allclose(got.q_opt, want.q_opt, rtol=0, atol=tol)


def test_under_vmap_each_problem_stops_by_its_own_rule():
    rng = np.random.default_rng(3)
    problems = [_problem(rng, 6, 2, jnp.float64) for _ in range(3)]
    stacked = [jnp.stack(x) for x in zip(*problems)]
    epsilon = jnp.array([1e-2, 1e-5, 1e-8])

    def solve(kernel):
        return jax.jit(jax.vmap(lambda p, r, d, m, e: planning.evi(
            p, r, d, m, epsilon=e, kernel=kernel)))(*stacked, epsilon)

    got, want = solve("pallas"), solve("xla")
    assert len(set(np.asarray(want.num_steps).tolist())) == 3  # three stopping points
    np.testing.assert_array_equal(got.num_steps, want.num_steps)
    np.testing.assert_array_equal(got.policy, want.policy)
    np.testing.assert_allclose(got.bias, want.bias, rtol=0, atol=1e-12)


def test_the_kernel_is_for_the_l1_ball_only():
    p_hat, rewards, radius, mask = _problem(np.random.default_rng(0), 3, 2, jnp.float64)
    with pytest.raises(ValueError, match="kernel must be one of"):
        jm.evi(p_hat, rewards, radius, mask, epsilon=1e-3, kernel="triton")
    with pytest.raises(ValueError, match="kernel='pallas' solves the 'l1' ball"):
        jm.evi(p_hat, rewards, radius, mask, epsilon=1e-3, ball="kl", kernel="pallas")
    with pytest.raises(ValueError, match="cycle_memory"):
        jm.evi(p_hat, rewards, radius, mask, epsilon=1e-3, kernel="pallas", cycle_memory=2)
    with pytest.raises(ValueError, match="evi_kernel"):
        jm.get_agent("kl_ucrl", evi_kernel="pallas")
