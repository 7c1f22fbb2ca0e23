"""UCRL3 (``jm.get_agent("ucrl3")``): its bounds against the published formulas, its
episodes replayed from recorded paths, its regret against the NumPy loop."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from published_runs import assert_same_mean, jax_final_regrets, nb, numpy_final_regrets

import jaxmdp as jm
from jaxmdp.agents import confidence
from jaxmdp.agents.confidence import (
    ucrl3_peeling,
    ucrl3_reward_upper,
    ucrl3_transition_bounds,
)
from jaxmdp.agents.ucrl import replay_episodes

DELTA_SA = 0.05 / (6 * 2 * (3 + 3 * 6))  # UCRL3.py line 13, S = 6, A = 2


def _published_conditions(p, n, d):
    """``UCRL3.py`` lines 74-143 written out: the conditions whose interval ends are the
    upper and lower bounds."""
    eta = 1.12
    ell = eta * math.log(math.log(n * eta) * math.log(n * eta**2) / (math.log(eta) ** 2 * d)) / n
    lap = 2 * (1 + 1 / n) * math.log(2 * math.sqrt(n + 1) / d) / n

    def bern(x):
        return math.sqrt(2 * x * (1 - x) * ell) + ell / 3

    def gbar(x):
        if x < 0.5:
            return 0.0 if x == 0 else (0.5 - x) / math.log(1 / x - 1)
        return x * (1 - x)

    def g(x):
        if not 0 < x < 1:
            return 0.0
        return 0.25 if x == 0.5 else (0.5 - x) / math.log(1 / x - 1)

    up = lambda x: x - p <= min(bern(x), math.sqrt(gbar(x) * lap))  # noqa: E731
    lo = lambda x: p - x <= min(bern(x), math.sqrt(g(x) * lap))  # noqa: E731
    return up, lo


@pytest.mark.parametrize("n, k", [(1, 0), (1, 1), (3, 1), (10, 0), (10, 3), (57, 1),
                                  (57, 29), (400, 2), (400, 400), (5000, 17)])
def test_transition_bounds_are_the_ends_of_the_published_conditions(n, k):
    p = k / n
    lo, up = map(float, ucrl3_transition_bounds(p, n, DELTA_SA))
    holds_up, holds_lo = _published_conditions(p, n, DELTA_SA)
    assert holds_up(up)
    if up < 1:
        assert not holds_up(min(1.0, up + 1e-9))
    assert p == 1 or holds_lo(lo) or lo < 1e-12
    if lo > 1e-9 and p < 1:
        assert not holds_lo(lo - 1e-9)
    if p == 1:  # UCRL3.py lines 165-169
        assert lo >= 0.5 ** (1 / n)
    # The NumPy loop's exact roots, and the published 1e-4 bisection.
    assert up == pytest.approx(nb.ucrl3_q_upper(p, n, DELTA_SA), abs=1e-12)
    lo_b, up_b = map(float, ucrl3_transition_bounds(p, n, DELTA_SA, bisection_tol=1e-4))
    assert up_b == nb.ucrl3_q_upper(p, n, DELTA_SA, bisection=True)
    ref_lo = nb.ucrl3_q_lower(p, n, DELTA_SA, bisection=True)
    assert lo_b == (max(0.5 ** (1 / n), ref_lo) if p == 1 else ref_lo)
    assert up - 1e-4 <= up_b <= up and lo <= lo_b <= lo + 1e-4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bisection_stopped_early_is_all_64_steps(dtype):
    # The bisection of the exact bounds stops once a step changes no bracket; a NumPy
    # loop of all 64 steps on a condition it evaluates exactly (x <= c) gives the same
    # brackets bit for bit, with the lower and upper ends and zero-width brackets.
    rng = np.random.default_rng(3)
    c = np.concatenate([rng.uniform(0, 1, 40), [0.0, 1.0, 1e-30, 0.5]]).astype(dtype)
    inside = (c * rng.uniform(0, 1, c.shape)).astype(dtype)
    inside[-1] = c[-1]
    outside = np.ones_like(c)
    a, b = inside.copy(), outside.copy()
    for _ in range(64):
        mid = dtype(0.5) * (a + b)
        ok = mid <= c
        a, b = np.where(ok, mid, a), np.where(ok, b, mid)
    got = confidence._bisect(lambda x: x <= c, inside, outside, 64)
    np.testing.assert_array_equal(np.asarray(got[0]), a)
    np.testing.assert_array_equal(np.asarray(got[1]), b)


def test_untried_pairs_get_the_whole_interval():
    lo, up = ucrl3_transition_bounds(0.0, 0, DELTA_SA)
    assert (float(lo), float(up)) == (0.0, 1.0)
    assert float(ucrl3_reward_upper(0.0, np.inf, 0, DELTA_SA)) == 1.0
    assert math.isinf(float(ucrl3_peeling(0, DELTA_SA)))


@pytest.mark.parametrize("n, mean, var", [(1, 0.5, 0.0), (10, 0.3, 0.21), (200, 0.9, 0.09)])
def test_reward_bound_is_the_published_formula(n, mean, var):
    eta, d = 1.12, DELTA_SA
    ell = eta * math.log(math.log(n * eta) * math.log(n * eta**2) / (math.log(eta) ** 2 * d)) / n
    bernstein = mean + math.sqrt(2 * var * ell) + 7 * ell / 3  # UCRL3.py lines 93-97
    laplace = mean + math.sqrt((1 + 1 / n) * math.log(math.sqrt(n + 1) / d) / (2 * n))
    assert float(ucrl3_peeling(n, d)) == pytest.approx(ell, rel=1e-14)
    assert float(ucrl3_reward_upper(mean, var, n, d)) == pytest.approx(
        min(1.0, bernstein, laplace), rel=1e-14)


@pytest.mark.parametrize("options", [{"ties": "lowest"}, {"ties": "lowest", "lazy": True}])
def test_episodes_follow_the_doubling_rule(options):
    traj = jm.simulate(jm.envs.make("riverswim-6"), jm.get_agent("ucrl3", **options), 600, 4,
                       seed=3, progress=False, record_path=True)
    state = jax.tree_util.tree_map(np.asarray, traj.agent_state)
    starts, stationary = replay_episodes(traj.states, traj.actions, 6, 2)
    np.testing.assert_array_equal(starts.sum(1), state.episodes)
    assert stationary.all()
    last = 600 - 1 - np.argmax(starts[:, ::-1], axis=1)
    np.testing.assert_array_equal(state.t_k, last + 1)


def test_options_are_checked():
    for bad in ({"lazy": 1}, {"key_sums": "yes"}, {"bisection_tol": 0.0},
                {"ties": "first"}, {"delta": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            jm.get_agent("ucrl3", **bad)
    assert jm.get_agent("ucrl3").config.ties == "random_least_visited"


@pytest.mark.parametrize("options, loop, loop_options", [
    ({"key_sums": True}, "ucrl3", {"key_sums": True}),
    ({}, "ucrl3", {"key_sums": False}),
    ({"lazy": True, "key_sums": True}, "ucrl3_lazy", {"key_sums": True}),
])
def test_regret_agrees_with_the_numpy_loop(options, loop, loop_options):
    """Riverswim-6, T = 2,000: jaxmdp's mean final regret within 3 standard errors of the
    NumPy loop of the same rules (which warm-starts EVI and stops on ``sp|u1 - u0|``)."""
    assert_same_mean(jax_final_regrets("ucrl3", 24, **options),
                     numpy_final_regrets(loop, 24, **loop_options))


def test_episode_bounds_are_the_bisections_on_the_seen_transitions():
    """The episode's bounds are computed on the empirical support only
    (``masked_elementwise``): there they are ``ucrl3_transition_bounds`` of the empirical
    laws (to the last bits, which the compiled program's rounding of ``p_hat`` may move),
    under ``vmap`` as the agent runs them, and they are 0 elsewhere."""
    from jaxmdp.agents import env_spec
    from jaxmdp.agents.ucrl import EpisodeStats, UCRL3Sets

    mdp = jm.envs.make("riverswim-6")
    agent = jm.get_agent("ucrl3")
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 40, (3, 6, 2, 6)) * (rng.random((3, 6, 2, 6)) < 0.4)
    zeros = np.zeros((3, 6, 2))

    def bounds(counts):
        stats = EpisodeStats(counts, zeros[0], zeros[0], jnp.asarray(100.0), jnp.int32(0),
                             jnp.zeros(2))
        _, _, b = UCRL3Sets().confidence(stats, env_spec(mdp), agent.config.delta)
        return b.lower, b.upper

    lower, upper = jax.jit(jax.vmap(bounds))(counts)
    n = counts.sum(-1, keepdims=True)
    p = counts / np.maximum(n, 1)
    want_lo, want_up = ucrl3_transition_bounds(p, np.broadcast_to(n, p.shape), DELTA_SA)
    np.testing.assert_allclose(lower, np.where(counts > 0, want_lo, 0.0), rtol=1e-13, atol=0)
    np.testing.assert_allclose(upper, np.where(counts > 0, want_up, 0.0), rtol=1e-13, atol=0)
    unseen = counts == 0
    assert (np.asarray(lower)[unseen] == 0).all() and (np.asarray(upper)[unseen] == 0).all()
