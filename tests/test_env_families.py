"""Tests for the parameterised environment families of ``jaxmdp.envs`` and ``batch``."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.analysis.hardness import diameter, mixing_time, spectral_gap

CLASSIC_LAKE = ["SFFF", "FHFH", "FFFH", "HFFG"]


def _rows_sum_to_one(mdp):
    P = np.asarray(mdp.P)
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=0, atol=1e-14)
    assert (P >= 0).all()
    jm.MDP(P, np.asarray(mdp.R))  # passes validation


def test_patterns_are_listed_and_described():
    for name in ("riverswim-N", "grid-R-C", "deepsea-N", "frozenlake-N", "garnet-S-A-b",
                 "random-S-A"):
        assert name in jm.envs.PATTERNS and name in jm.envs.names()
        assert jm.envs.ENVIRONMENTS[name]


@pytest.mark.parametrize("n", [2, 3, 7, 40])
def test_riverswim_any_length(n):
    mdp = jm.envs.make(f"riverswim-{n}")
    assert mdp.P.shape == (n, 2, n)
    _rows_sum_to_one(mdp)
    np.testing.assert_array_equal(mdp.P, jm.envs.riverswim(n).P)
    P = np.asarray(mdp.P)
    assert P[0, 1, 1] == 0.4 and P[0, 1, 0] == 0.6 and P[n - 1, 1, n - 1] == 0.95
    assert float(mdp.R[n - 1, 1]) == 1.0 and float(mdp.R[0, 0]) == 0.005
    _, _, policy = jm.solve_average_reward(mdp)
    if n <= 7:  # "always right" is optimal for short rivers
        assert policy.tolist() == [1] * n


def test_fixed_riverswim_names_keep_their_numbers():
    np.testing.assert_array_equal(jm.envs.make("riverswim-6").P, jm.envs.make("riverswim-6").P)
    assert float(jm.envs.make("riverswim-25").R[24, 1]) == 0.99


@pytest.mark.parametrize("rows, cols", [(1, 2), (2, 2), (3, 5), (6, 4)])
def test_open_grid_deterministic_gain(rows, cols):
    # slip = 0: the shortest path takes (rows - 1) + (cols - 1) moves, then the goal
    # pays 0.99 and returns to the start: gain 0.99 / (moves + 1).
    mdp = jm.envs.make(f"grid-{rows}-{cols}", slip=0.0)
    assert mdp.P.shape == (rows * cols, 4, rows * cols)
    _rows_sum_to_one(mdp)
    gain, _, _ = jm.solve_average_reward(mdp)
    assert float(gain) == pytest.approx(0.99 / (rows + cols - 1), rel=1e-12)


def test_open_grid_slip_numbers():
    slip = 0.2
    mdp = jm.envs.make("grid-3-3", slip=slip)
    _rows_sum_to_one(mdp)
    P = np.asarray(mdp.P)
    # Centre cell 4, action 3 = right: right 1 - 3 slip, up and down slip each, stay slip.
    assert P[4, 3, 5] == pytest.approx(1 - 3 * slip)
    assert P[4, 3, 1] == pytest.approx(slip) and P[4, 3, 7] == pytest.approx(slip)
    assert P[4, 3, 4] == pytest.approx(slip) and P[4, 3, 3] == 0
    # The goal (cell 8) returns to the start under every action and pays 0.99.
    np.testing.assert_array_equal(P[8, :, 0], 1.0)
    np.testing.assert_allclose(mdp.R[8], 0.99)
    default = np.asarray(jm.envs.make("grid-3-3").P)
    assert default[4, 3, 5] == pytest.approx(0.7)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_deepsea_optimal_path(n):
    mdp = jm.envs.make(f"deepsea-{n}")
    S = n * (n + 1) // 2
    assert mdp.P.shape == (S, 2, S)
    _rows_sum_to_one(mdp)
    gain, _, policy = jm.solve_average_reward(mdp)
    assert float(gain) == pytest.approx(1 / n, rel=1e-12)
    diagonal = [k * (k + 1) // 2 + k for k in range(n)]
    assert np.asarray(policy)[diagonal].tolist() == [1] * n
    # Always-left earns 1 / n^2 per step.
    P, R = np.asarray(mdp.P), np.asarray(mdp.R)
    assert (R[:, 0] == 1 / n**2).all() and R[:, 1].sum() == 1.0
    # Every chain is periodic with period n: the optimal one never mixes.
    P_pi = np.take_along_axis(P, np.asarray(policy)[:, None, None], axis=1)[:, 0, :]
    assert float(mixing_time(jnp.asarray(P_pi))) == math.inf
    assert float(spectral_gap(jnp.asarray(P_pi))) == pytest.approx(0, abs=1e-9)
    # Following the optimal path from the start reaches (n - 1, n - 1) in n - 1 steps.
    s = 0
    for _ in range(n - 1):
        s = int(np.argmax(P[s, 1]))
    assert s == diagonal[-1]


def test_frozen_lake_classic_map():
    lake = jm.envs.frozen_lake(layout=CLASSIC_LAKE)
    _rows_sum_to_one(lake)
    assert lake.P.shape == (12, 4, 12)  # 16 cells, 4 holes
    P, R = np.asarray(lake.P), np.asarray(lake.R)
    # Start (0, 0), action 2 = down: down 0.5 to (1, 0) = state 4, sideways 0.25 each:
    # right to (0, 1) = state 1, left off the lake (stays).
    assert P[0, 2, 4] == 0.5 and P[0, 2, 1] == 0.25 and P[0, 2, 0] == 0.25
    # (1, 2) = state 5, action 3 = left into the hole (1, 1): back to the start w.p. 0.5.
    assert P[5, 3, 0] == 0.5
    # The goal returns to the start and pays nothing itself.
    np.testing.assert_array_equal(P[11, :, 0], 1.0)
    assert (R[11] == 0).all() and R[10, 1] == 0.5
    deterministic = jm.envs.frozen_lake(layout=CLASSIC_LAKE, slip=0.0)
    gain, _, _ = jm.solve_average_reward(deterministic)
    assert float(gain) == pytest.approx(1 / 7, rel=1e-12)  # 6 moves + 1 back to start


def test_frozen_lake_random_maps_are_seeded_and_solvable():
    a = jm.envs.make("frozenlake-6", seed=3)
    b = jm.envs.make("frozenlake-6", seed=3)
    np.testing.assert_array_equal(a.P, b.P)
    for seed in range(5):
        mdp = jm.envs.make("frozenlake-6", seed=seed, p_frozen=0.7)
        _rows_sum_to_one(mdp)
        assert mdp.P.shape[0] <= 36
        # Communicating (every state reaches every other under some actions: a breadth-first
        # search in NumPy) with a rewarding state, so the optimal gain is positive.
        assert _strongly_connected(mdp) and float(np.max(mdp.R)) > 0
    # The solvers agree on one of them (each map size is a program of its own).
    gain, _, _ = jm.solve_average_reward(mdp)
    assert float(gain) > 0  # a frozen path joins start and goal
    assert math.isfinite(float(diameter(mdp)))  # communicating


def _strongly_connected(mdp) -> bool:
    """Whether every state reaches every other with admissible actions (NumPy BFS)."""
    P, mask = np.asarray(mdp.P), np.asarray(mdp.mask)
    edges = np.any((P > 0) & mask[:, :, None], axis=1)  # [S, S]: x -> y by some action

    def reached(graph):
        seen = np.zeros(len(graph), bool)
        seen[0], frontier = True, [0]
        while frontier:
            new = np.any(graph[frontier], axis=0) & ~seen
            seen |= new
            frontier = list(np.flatnonzero(new))
        return seen.all()

    return bool(reached(edges) and reached(edges.T))


def test_garnet_by_name_and_batch_equal_make_per_seed():
    seeds = [0, 3, 11, 12]
    batch = jm.envs.batch("garnet-20-4-3", seeds=seeds)
    assert batch.P.shape == (4, 20, 4, 20) and batch.num_states == 20
    for i, seed in enumerate(seeds):
        one = jm.envs.make("garnet-20-4-3", seed=seed)
        np.testing.assert_array_equal(batch.P[i], one.P)
        np.testing.assert_array_equal(batch.R[i], one.R)
        assert ((np.asarray(one.P) > 0).sum(-1) == 3).all()
    rand = jm.envs.batch("random-5-2", seeds=range(3))
    np.testing.assert_array_equal(rand.P[2], jm.envs.make("random-5-2", seed=2).P)
    keys = jax.random.split(jax.random.key(1), 2)
    np.testing.assert_array_equal(jm.envs.batch("garnet-6-2-2", seeds=keys).P[1],
                                  jm.envs.make("garnet-6-2-2", seed=keys[1]).P)


def test_batch_of_other_families():
    lakes = jm.envs.batch("frozenlake-4", seeds=[0, 0])
    np.testing.assert_array_equal(lakes.P[0], lakes.P[1])
    seas = jm.envs.batch("deepsea-4", seeds=range(3))
    assert seas.P.shape == (3, 10, 2, 10)
    grids = jm.envs.batch("grid-2-3", seeds=range(2), slip=0.05)
    np.testing.assert_array_equal(grids.P[1], jm.envs.make("grid-2-3", slip=0.05).P)
    # Lakes of one size may differ in their number of reachable cells.
    sizes = {seed: jm.envs.make("frozenlake-5", seed=seed, p_frozen=0.6).P.shape[0]
             for seed in range(30)}
    first = next(s for s in sizes if sizes[s] != sizes[0])
    with pytest.raises(ValueError, match="different sizes"):
        jm.envs.batch("frozenlake-5", seeds=[0, first], p_frozen=0.6)


@pytest.mark.parametrize("name, params, message", [
    ("riverswim-1", {}, "n must be a Python int >= 2"),
    ("deepsea-1", {}, "n must be a Python int >= 2"),
    ("grid-1-1", {}, r"rows \* cols must be >= 2"),
    ("grid-0-3", {}, "rows must be a Python int >= 1"),
    ("grid-3-3", {"slip": 0.5}, "slip must be in"),
    ("frozenlake-1", {}, "size must be a Python int >= 2"),
    ("frozenlake-4", {"p_frozen": 0.0}, "p_frozen must be in"),
    ("frozenlake-4", {"slip": 0.6}, "slip must be in"),
    ("frozenlake-4", {"seed": -1}, "seed must be a Python int >= 0"),
    ("garnet-5-2-0", {}, "b must be a positive Python int"),
    ("riverswim-6", {"slip": 0.1}, "takes no parameters"),
    ("grid-3-3", {"bogus": 1}, "unknown parameter"),
])
def test_family_parameters_out_of_range(name, params, message):
    with pytest.raises(ValueError, match=message):
        jm.envs.make(name, **params)


def test_batch_errors():
    for seeds in ([], 5, "abc"):
        with pytest.raises(ValueError, match="seeds must be a non-empty sequence"):
            jm.envs.batch("garnet-5-2-2", seeds=seeds)
    with pytest.raises(ValueError, match="unknown environment name"):
        jm.envs.batch("garnet-5-2", seeds=[0])
    with pytest.raises(ValueError, match="b must satisfy"):
        jm.envs.batch("garnet-5-2-6", seeds=[0])


def test_every_pattern_has_a_representative_instance():
    assert len(jm.envs.PATTERNS) == 6 and set(jm.envs.PATTERNS) <= set(jm.envs.names())
    for pattern, instance in jm.envs.PATTERNS.items():
        assert pattern in jm.envs.ENVIRONMENTS
        jm.envs.make(instance)
