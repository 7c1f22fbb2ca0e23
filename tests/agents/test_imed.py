"""IMED-RL (jaxmdp.agents.imed): the index against the NumPy loop of
tests/reference/published.py, regret against that loop, the options. (Sharding:
tests/test_sharding.py, on the run of tests/shared_runs.py checked here.)"""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from shared_runs import SHARED_RUNS, shared_run

import jaxmdp as jm
from jaxmdp.agents.imed import imed_index, imed_model
from tests.reference import published as ref

RIVERSWIM = jm.envs.make("riverswim-6")

# Mean final pseudo-regret of the NumPy loop on riverswim-6, learned rewards, with its
# standard error. Produced by
#   python -m tests.reference.published --agent imed_rl --env riverswim-6 --horizon 300 \
#       --replications 400
NUMPY_REFERENCE = (300, 141.637, 1.986)


@pytest.mark.parametrize("known_rewards", [False, True])
def test_imed_index_against_numpy(known_rewards):
    counts = np.zeros((6, 2, 6), np.int32)
    counts[2, 0, [1, 2]] = [3, 1]
    counts[2, 1, [1, 2, 3]] = [2, 9, 4]
    counts[3, 1, [3, 4]] = [5, 2]
    sums = np.zeros((6, 2))
    sums[2] = [0.0, 5.0]
    mask = np.ones((6, 2), bool)
    R = np.asarray(RIVERSWIM.R)
    p_hat, r_hat, skeleton, n = imed_model(jnp.asarray(counts), jnp.asarray(sums),
                                           jnp.asarray(R), jnp.asarray(mask),
                                           known_rewards=known_rewards)
    assert skeleton[2].tolist() == [False, True]  # 4 < ln(15)^2 = 7.3 <= 15
    assert skeleton[0].tolist() == [True, True]  # never visited: every action
    bias = jnp.array([0.0, 0.3, 0.5, 1.2, 2.0, 3.0])
    level = float(r_hat[2, 1] + p_hat[2, 1] @ bias)
    index = imed_index(p_hat[2], r_hat[2], n[2], bias, level, known_rewards)
    expected = [ref.imed_index(float(n[2, a]), sums[2, a], counts[2, a].astype(float),
                               np.asarray(bias), level,
                               known_reward=R[2, a] if known_rewards else None)
                for a in range(2)]
    np.testing.assert_allclose(index, expected, rtol=1e-9)
    assert float(index[1]) == pytest.approx(math.log(15))  # the leader: K = 0
    untried = imed_index(p_hat[0], r_hat[0], n[0], bias, level, known_rewards)
    assert np.all(np.isneginf(untried))


def test_mean_regret_matches_numpy_loop():
    horizon, mean, se = NUMPY_REFERENCE
    replications = 64
    # tests/shared_runs.py's run (also sharded in test_sharding.py).
    assert SHARED_RUNS["imed_rl"][:3] == ("riverswim-6", "imed_rl", {})
    assert SHARED_RUNS["imed_rl"][3] == dict(horizon=horizon, replications=replications,
                                             seed=11, record_path=True)
    final = np.asarray(shared_run("imed_rl").pseudo_regret[:, -1])
    jax_se = final.std(ddof=1) / math.sqrt(replications)
    # 4 standard errors of the difference of two independent means.
    assert abs(final.mean() - mean) < 4 * math.hypot(se, jax_se), (final.mean(), mean)


def test_options_are_validated():
    with pytest.raises(ValueError, match="known_rewards"):
        jm.get_agent("imed_rl", known_rewards="no")
    with pytest.raises(ValueError, match="gaussian"):
        jm.simulate(RIVERSWIM.with_reward_law("gaussian", 0.5), "imed_rl", 5, 2,
                    progress=False)
    with pytest.raises(ValueError, match=r"planner must be a jaxmdp.planning.Planner, "
                                         r"'incremental' or 'full', got 'lu'"):
        jm.get_agent("imed_rl", planner="lu")
    with pytest.raises(ValueError, match="refresh_every must be a positive integer, got 0"):
        jm.get_agent("imed_rl", refresh_every=0)
    from jaxmdp import planning

    assert jm.get_agent("imed_rl", planner="full").config.planner is planning.exact_planner()
    assert jm.get_agent("imed_rl").config.planner is planning.incremental_planner()


def test_the_shared_run_counts_its_solves():
    # Every round's solve converged (the estimate has full support: every policy is
    # unichain), and Trajectories reports the count per replication.
    unconverged = np.asarray(shared_run("imed_rl").unconverged)
    assert unconverged.shape == (64,) and not unconverged.any()
