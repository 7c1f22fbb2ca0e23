"""jaxmdp.envs.papers: each environment's optimal gain against a brute force over its
deterministic policies (Cesaro limits by repeated squaring in NumPy), hand-computed
hardness of the toys, the weakly communicating toy's documented values, and Wei et al.'s
random draw against the source's own lines."""

import itertools
import math

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import _envs_table

NAMES = ["toy3d-1", "toy3d-2", "toy3d-weak", "threestate", "nasty", "jumpriverswim-6",
         "randommdp-wei"]


def _brute_force_gain(P, R, mask, start=0):
    """max over deterministic policies of the long-run average reward from ``start``:
    the Cesaro limit of the policy's chain, as the limit of ((I + P)/2)^(2^k)."""
    S = P.shape[0]
    best = -np.inf
    for policy in itertools.product(*[np.flatnonzero(mask[s]) for s in range(S)]):
        chain = P[np.arange(S), policy]
        lazy = 0.5 * (np.eye(S) + chain)  # same stationary laws, aperiodic
        for _ in range(64):  # renormalised: rounding must not drift the row sums
            lazy = lazy @ lazy
            lazy /= lazy.sum(axis=1, keepdims=True)
        best = max(best, float(lazy[start] @ R[np.arange(S), policy]))
    return best


@pytest.mark.parametrize("name", NAMES)
def test_gain_is_the_best_policy_gain(name):
    mdp = jm.envs.make(name)
    P, R, mask = (np.asarray(x) for x in (mdp.P, mdp.R, mdp.mask))
    assert np.all((R >= 0) & (R <= 1))
    gain = float(jm.solve_average_reward(mdp)[0])
    assert gain == pytest.approx(_brute_force_gain(P, R, mask), rel=1e-9, abs=1e-12)


def test_toys_hand_values():
    # Toy3D_1 and ThreeState: from 0 the agent reaches 2 w.p. 1 - delta per try, else
    # goes through 1 (two steps), so hitting times solve T = 1 + delta (1 + T) (or its
    # mirror); their optimal gain is 2/3 (stay in state 2).
    toy, three = jm.hardness(jm.envs.make("toy3d-1")), jm.hardness(jm.envs.make("threestate"))
    assert float(toy.gain) == pytest.approx(2 / 3) == float(three.gain)
    assert float(toy.diameter) == pytest.approx(1 + 1.99 / 0.01)  # from 1 to 2
    d = 0.005
    assert float(three.diameter) == pytest.approx((1 + (1 - d)) / (1 - (1 - d) ** 2))


def test_weakly_communicating_toy_values():
    # State 1 is never reached from 0 or 2; the optimal gain 2/3 is the same from every
    # state. Optimal bias (h(2) = 0): h(0) = -2/3, h(1) = 1/3 - 2/3 + h(0) = -1; the gap
    # of leaving 2 (action 0) is g + h(2) - r - h(0) = 2/3.
    mdp = jm.envs.make("toy3d-weak")
    h = jm.hardness(mdp)
    assert math.isinf(float(h.diameter))
    assert float(h.gain) == pytest.approx(2 / 3)
    assert float(h.bias_span) == pytest.approx(1.0)
    assert float(h.min_gap) == pytest.approx(2 / 3)
    gain, bias, policy = jm.solve_average_reward(mdp)
    assert np.all(np.isfinite(np.asarray(bias))) and int(policy[2]) == 1
    assert not np.any(np.asarray(mdp.P)[:, :, 1][np.asarray(mdp.mask)] > 0)  # nobody enters 1
    assert _envs_table.load_table()["toy3d-weak"]["diameter"] == float("inf")


def test_random_mdp_wei_is_the_source_draw():
    # environment.py lines 93-102 after main.py's np.random.seed(3), run here on the
    # global generator as the source does.
    state = np.random.get_state()
    try:
        np.random.seed(3)
        costs = np.random.randint(11, size=(6, 2)) / 10.0
        p = np.zeros((2, 6, 6))
        for a in range(2):
            mat = np.random.rand(6, 6)
            p[a, :, :] = mat / np.sum(mat, axis=1)[:, None]
    finally:
        np.random.set_state(state)
    mdp = jm.envs.make("randommdp-wei")
    np.testing.assert_allclose(mdp.P, np.transpose(p, (1, 0, 2)), rtol=1e-15)
    np.testing.assert_allclose(mdp.R, 1.0 - costs, rtol=1e-15)


def test_every_paper_name_builds_in_both_dtypes():
    assert set(NAMES) == {name for name in jm.envs.names()
                          if jm.envs.ENVIRONMENTS[name].endswith(
                              ("Toy3D_1)", "Toy3D_2)", "TUCRL runs)", "three-state)",
                               "nasty)", "JumpRiverSwimEnv)", "RandomMDPEnv)"))}
    for name in NAMES:
        mdp = jm.envs.make(name)
        S = mdp.num_states
        assert jm.envs.ENVIRONMENTS[name].startswith(f"S={S}, A=2:")
        assert mdp.P.dtype == np.float64
        assert jm.envs.make(name, dtype=np.float32).P.dtype == np.float32
        P, mask = np.asarray(mdp.P), np.asarray(mdp.mask)
        np.testing.assert_allclose(P.sum(-1)[mask], 1.0, rtol=0, atol=1e-14)


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="delta"):
        jm.envs.toy3d_1(1.5)
    with pytest.raises(ValueError, match="epsilon"):
        jm.envs.nasty(epsilon=0.995)
    with pytest.raises(ValueError, match="seed"):
        jm.envs.random_mdp_wei(-1)
    with pytest.raises(ValueError, match="takes no parameters"):
        jm.envs.make("toy3d-1", delta=0.5)
