"""jaxmdp.analysis.lower_bound's shared pieces: the Bernoulli joint law of rewards and next
states, and the unit-interval reward check. (The gaps and the regret lower bound are
checked against enumeration and scipy in tests/planning/test_policy_iteration.py, beside
the references they share.)"""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmdp.mdp import bernoulli_joint, check_unit_rewards


def test_bernoulli_joint_matches_numpy():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=2)
    R = rng.uniform(size=2)
    v = rng.normal(size=3)
    joint, values = bernoulli_joint(jnp.asarray(P), jnp.asarray(R), jnp.asarray(v))
    np.testing.assert_allclose(joint, np.hstack([(1 - R)[:, None] * P, R[:, None] * P]))
    np.testing.assert_allclose(values, np.r_[v, 1 + v])
    # joint . values = r + p . v
    np.testing.assert_allclose(joint @ values, R + P @ v, rtol=1e-12)


def test_check_unit_rewards_names_the_first_pair_outside_unit_interval():
    R = np.array([[0.0, 0.5], [1.2, -0.1]])
    with pytest.raises(ValueError, match=r"^need \[0, 1\], got R\[1, 0\] = 1.2 \(hint\)$"):
        check_unit_rewards(R, np.ones((2, 2), bool), "need [0, 1]", " (hint)")
    # Inadmissible pairs are not checked.
    check_unit_rewards(R, np.array([[True, True], [False, False]]), "unused")
