"""Tests for the named environments of ``jaxmdp.envs`` and ``make``, and its generators
(``paper_mdp``, ``rigged_counts``, ``random_mdp``, ``garnet``).

Each environment's rows and rewards are checked against the numbers of the issue that
specifies it (and of the sources its docstring cites), and its optimal gain against an
independent NumPy relative value iteration.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm

# The environments of jaxmdp.envs.papers (admissible-action masks, a weakly communicating
# toy) are checked in tests/test_env_papers.py.
PAPERS = {"toy3d-1", "toy3d-2", "toy3d-weak", "threestate", "nasty", "jumpriverswim-6",
          "randommdp-wei"}
FIXED = [name for name in jm.envs.names() if name not in {*jm.envs.PATTERNS, *PAPERS}]
SIZES = {
    "paper-mdp": (3, 2),
    "riverswim-6": (6, 2),
    "riverswim-25": (25, 2),
    "riverswim-osband-6": (6, 2),
    "riverswim-ergodic-6": (6, 2),
    "riverswim-ergodic-25": (25, 2),
    "grid-2-room": (55, 4),
    "grid-4-room": (20, 4),
    "sixarms": (7, 6),
}


def _np(mdp):
    return np.asarray(mdp.P), np.asarray(mdp.R)


def relative_value_iteration(P, R, *, tau=0.5, tol=1e-13, max_steps=10**6):
    """Optimal gain by relative value iteration on the aperiodic transform.

    ``tau P + (1 - tau) I`` has the same gain as ``P`` and makes every policy aperiodic,
    so the span of ``T h - h`` converges to 0 for a communicating MDP; the gain lies
    between its min and max.
    """
    S = P.shape[0]
    P = tau * P + (1 - tau) * np.eye(S)[:, None, :]
    h = np.zeros(S)
    for _ in range(max_steps):
        Th = np.max(R + P @ h, axis=1)
        diff = Th - h
        if np.ptp(diff) < tol:
            return 0.5 * (diff.max() + diff.min())
        h = Th - Th[0]
    raise AssertionError("relative value iteration did not converge")


def stationary_distribution(P_pi):
    """The stationary law of an irreducible chain: solves pi (P - I) = 0, sum pi = 1."""
    S = P_pi.shape[0]
    A = np.vstack([P_pi.T - np.eye(S), np.ones(S)])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    return np.linalg.lstsq(A, b, rcond=None)[0]


def kinf_dual(p, v, rho):
    """K_inf over the closed simplex by its dual, maximised by bounded Brent (scipy).

    K = max over 0 <= lam <= 1 / (V - rho) of sum_x p_x ln(1 - lam (v_x - rho)), with
    V = max v over *all* states (q may put mass where p is 0): Honda & Takemura (2010).
    """
    from scipy.optimize import minimize_scalar

    if rho <= p @ v:
        return 0.0
    if rho >= v.max():
        return np.inf
    upper = 1.0 / (v.max() - rho)
    on = p > 0

    def neg_dual(lam):
        with np.errstate(divide="ignore"):  # log 0 = -inf at the bound: not the maximum
            return -np.sum(p[on] * np.log(1.0 - lam * (v[on] - rho)))

    best = minimize_scalar(neg_dual, bounds=(0.0, upper), method="bounded",
                           options={"xatol": 1e-15 * upper})
    return max(-best.fun, -neg_dual(upper))


# --------------------------------------------------------------------------------------
# The registry.


def test_names_and_descriptions():
    assert jm.envs.names() == list(jm.envs.ENVIRONMENTS)
    assert set(FIXED) == set(SIZES)
    for name in ("paper-mdp", "riverswim-6", "riverswim-25", "riverswim-osband-6",
                 "riverswim-ergodic-6", "grid-2-room", "grid-4-room", "sixarms",
                 "garnet-S-A-b", "random-S-A"):
        assert name in jm.envs.names()
    for name, (S, A) in SIZES.items():
        assert jm.envs.ENVIRONMENTS[name].startswith(f"S={S}, A={A}:")


def test_register_env_adds_a_name_or_a_family_and_rejects_a_second_registration():
    def chain(n, *, dtype=None, reward_right=1.0):
        return jm.envs.riverswim(n, reward_right=reward_right, dtype=dtype)

    jm.envs.register_env("my-chain-N", chain, description="S=N, A=2: a chain",
                         example="my-chain-7")
    assert jm.envs.names()[-1] == "my-chain-N" and jm.envs.PATTERNS["my-chain-N"] == "my-chain-7"
    assert jm.envs.ENVIRONMENTS["my-chain-N"] == "S=N, A=2: a chain"
    built = jm.envs.make("my-chain-9", reward_right=0.5)
    np.testing.assert_array_equal(built.P, jm.envs.riverswim(9).P)
    assert float(built.R.max()) == 0.5
    assert jm.envs.batch("my-chain-4", seeds=[0, 1]).P.shape == (2, 4, 2, 4)
    with pytest.raises(ValueError, match="'my-chain-N' is already registered"):
        jm.envs.register_env("my-chain-N", chain, description="again", example="my-chain-2")
    jm.envs.register_env("my-chain-N", chain, description="replaced", example="my-chain-2",
                         replace=True)
    assert jm.envs.ENVIRONMENTS["my-chain-N"] == "replaced"
    # An earlier registration keeps its precedence: riverswim-6 is the fixed one.
    jm.envs.register_env("riverswim-ish", lambda *, dtype=None: jm.envs.riverswim(3),
                         description="S=3, A=2")
    assert jm.envs.make("riverswim-ish").num_states == 3
    for kwargs, message in [
        (dict(description="x", example=None), "example must be an instance of the family"),
        (dict(description="x", example="other-3"), "example must be an instance"),
        (dict(description="", example="z-3"), "description must be a non-empty string"),
        (dict(description="x", example="z-3", seed="time"), "seed must be one of"),
    ]:
        with pytest.raises(ValueError, match=message):
            jm.envs.register_env("z-N", chain, **kwargs)
    with pytest.raises(ValueError, match="example names an instance of a family"):
        jm.envs.register_env("plain", chain, description="x", example="plain-3")


@pytest.mark.parametrize("name", FIXED)
def test_every_fixed_name_builds_a_valid_mdp(name):
    mdp = jm.envs.make(name)
    S, A = SIZES[name]
    assert mdp.P.shape == (S, A, S) and mdp.R.shape == (S, A)
    assert mdp.P.dtype == jnp.float64 and bool(mdp.mask.all())
    P, R = _np(mdp)
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=0, atol=1e-14)
    assert (P >= 0).all() and (R >= 0).all() and (R <= 1).all()
    jm.MDP(P, R)  # passes validation
    assert jm.envs.make(name, dtype=jnp.float32).P.dtype == jnp.float32


def test_patterns_are_parsed_and_seeded():
    mdp = jm.envs.make("garnet-20-3-4")
    assert mdp.P.shape == (20, 3, 20)
    assert ((np.asarray(mdp.P) > 0).sum(-1) == 4).all()
    expected = jm.envs.garnet(jax.random.key(0), 20, 3, 4)
    np.testing.assert_array_equal(mdp.P, expected.P)
    np.testing.assert_array_equal(jm.envs.make("garnet-20-3-4", seed=5).P,
                                  jm.envs.garnet(jax.random.key(5), 20, 3, 4).P)
    np.testing.assert_array_equal(jm.envs.make("garnet-20-3-4", seed=jax.random.key(5)).P,
                                  jm.envs.garnet(jax.random.key(5), 20, 3, 4).P)
    assert not np.array_equal(jm.envs.make("garnet-20-3-4", seed=1).P, mdp.P)
    rand = jm.envs.make("random-10-4", seed=3)
    np.testing.assert_array_equal(rand.P, jm.envs.random_mdp(jax.random.key(3), 10, 4).P)


@pytest.mark.parametrize("name", ["riverswim-x", "grid-3-room", "garnet-S-A-b",
                                  "garnet-10-2", "random-10-4-1", "", "RiverSwim-7x", 6])
def test_unknown_name_lists_the_names(name):
    with pytest.raises(ValueError, match="unknown environment name") as info:
        jm.envs.make(name)
    for known in jm.envs.names():
        assert known in str(info.value)


def test_names_are_case_insensitive_as_in_every_registry():
    np.testing.assert_array_equal(jm.envs.make("RiverSwim-6").P, jm.envs.make("riverswim-6").P)
    np.testing.assert_array_equal(jm.envs.make("GARNET-6-2-3", seed=1).P,
                                  jm.envs.make("garnet-6-2-3", seed=1).P)
    assert "RIVERSWIM-6" in jm.envs.ENVIRONMENTS and "riverswim-6" in jm.envs.names()
    assert jm.get_agent("UCRL2") == jm.get_agent("ucrl2")
    assert "L1" in jm.planning.BALLS and "ucrl3" in jm.planning.BALLS


def test_pattern_sizes_are_validated():
    with pytest.raises(ValueError, match="b must satisfy 1 <= b <= S = 5, got b = 6"):
        jm.envs.make("garnet-5-2-6")
    with pytest.raises(ValueError, match="S must be a positive Python int, got 0"):
        jm.envs.make("random-0-2")
    with pytest.raises(ValueError, match="seed must be an int or a jax.random key"):
        jm.envs.make("random-3-2", seed="zero")


def test_envs_is_public_and_make_builds_the_functions_mdp():
    assert "envs" in jm.__all__
    np.testing.assert_array_equal(jm.envs.make("paper-mdp").P, jm.envs.paper_mdp().P)


# --------------------------------------------------------------------------------------
# Rows and rewards against the numbers.


def test_riverswim_6_rows_and_rewards():
    P, R = _np(jm.envs.make("riverswim-6"))
    left, right = 0, 1
    for s in range(6):  # left: to max(s - 1, 0) surely
        np.testing.assert_array_equal(P[s, left], np.eye(6)[max(s - 1, 0)])
    np.testing.assert_allclose(P[0, right], [0.6, 0.4, 0, 0, 0, 0], atol=1e-15)
    for s in range(1, 5):
        expected = np.zeros(6)
        expected[[s - 1, s, s + 1]] = [0.05, 0.55, 0.4]
        np.testing.assert_allclose(P[s, right], expected, atol=1e-15)
    np.testing.assert_allclose(P[5, right], [0, 0, 0, 0, 0.05, 0.95], atol=1e-15)
    expected_R = np.zeros((6, 2))
    expected_R[0, left] = 0.005
    expected_R[5, right] = 1.0
    np.testing.assert_array_equal(R, expected_R)


def test_riverswim_25_rows_and_rewards():
    P, R = _np(jm.envs.make("riverswim-25"))
    np.testing.assert_array_equal(P, _np(jm.envs.riverswim(25))[0])
    assert R[24, 1] == 0.99 and R[0, 0] == 0.005
    assert np.count_nonzero(R) == 2
    np.testing.assert_allclose(P[12, 1, 11:14], [0.05, 0.55, 0.4], atol=1e-15)
    np.testing.assert_allclose(P[24, 1, 23:], [0.05, 0.95], atol=1e-15)


def test_riverswim_osband_rows_and_rewards():
    """Osband, Russo & Van Roy (2013), iosband/TabulaRL src/environment.py."""
    P, R = _np(jm.envs.make("riverswim-osband-6"))
    for s in range(6):
        np.testing.assert_array_equal(P[s, 0], np.eye(6)[max(s - 1, 0)])
    np.testing.assert_allclose(P[0, 1], [0.4, 0.6, 0, 0, 0, 0], atol=1e-15)
    for s in range(1, 5):
        np.testing.assert_allclose(P[s, 1, s - 1:s + 2], [0.05, 0.6, 0.35], atol=1e-15)
    np.testing.assert_allclose(P[5, 1], [0, 0, 0, 0, 0.4, 0.6], atol=1e-15)
    expected_R = np.zeros((6, 2))
    expected_R[0, 0], expected_R[5, 1] = 5 / 1000, 1.0
    np.testing.assert_array_equal(R, expected_R)


def test_riverswim_ergodic_rows_and_rewards():
    """StatisticalRL ErgodicRiverSwim, ergodic = 0.001, rewardR = 0.99."""
    eps = 0.001
    P, R = _np(jm.envs.make("riverswim-ergodic-6"))
    np.testing.assert_allclose(P[0, 0], [1 - eps / 2, eps / 2, 0, 0, 0, 0], atol=1e-15)
    for s in range(1, 5):
        np.testing.assert_allclose(P[s, 0, s - 1:s + 2], [1 - eps, eps / 2, eps / 2],
                                   atol=1e-15)
    np.testing.assert_allclose(P[5, 0], [0, 0, 0, 0, 1 - eps, eps], atol=1e-15)
    np.testing.assert_array_equal(P[:, 1], _np(jm.envs.riverswim(6))[0][:, 1])
    expected_R = np.zeros((6, 2))
    expected_R[0, 0], expected_R[5, 1] = 0.005, 0.99
    np.testing.assert_array_equal(R, expected_R)
    # Every stationary policy is irreducible: for all 2^6 of them every state reaches every
    # other one (boolean transitive closure of the transition graph).
    for bits in range(2 ** 6):
        policy = [(bits >> s) & 1 for s in range(6)]
        reach = (P[np.arange(6), policy] > 0) | np.eye(6, dtype=bool)
        for _ in range(3):  # paths of length up to 2^3 >= 5
            reach = (reach.astype(int) @ reach.astype(int)) > 0
        assert reach.all()


def _source_maze(X, Y, rooms):
    """The StatisticalRL twoRoomMap / fourRoomMap rules, as a boolean free-cell array."""
    free = np.ones((X, Y), bool)
    free[[0, -1], :] = free[:, [0, -1]] = False
    X2, Y2 = X // 2, Y // 2
    free[X2, :] = False
    if rooms == 2:
        free[X2, Y // 2] = True
    else:
        free[:, Y2] = False
        free[X2, Y2 // 2] = free[X2, 3 * Y2 // 2] = True
        free[X2 // 2, Y2] = free[3 * X2 // 2, Y2] = True
    return free


def _source_grid(X, Y, rooms, start, goal, slip=0.1):
    """P and R of the StatisticalRL GridWorld (source numbering: free cells row-major)."""
    free = _source_maze(X, Y, rooms)
    cells = [tuple(c) for c in np.argwhere(free)]
    index = {c: k for k, c in enumerate(cells)}
    S = len(cells)
    # massmap rows (up, down, left, right) over (left, up, right, down, stay).
    mass = [[slip, 1 - 3 * slip, slip, 0, slip], [slip, 0, slip, 1 - 3 * slip, slip],
            [1 - 3 * slip, slip, 0, slip, slip], [0, slip, 1 - 3 * slip, slip, slip]]
    P = np.zeros((S, 4, S))
    R = np.zeros((S, 4))
    for (x, y), s in index.items():
        if (x, y) == goal:
            P[s, :, index[start]] = 1.0
            R[s, :] = 0.99
            continue
        targets = [(x, y - 1), (x - 1, y), (x, y + 1), (x + 1, y), (x, y)]
        targets = [index[t] if free[t] else s for t in targets]
        for a in range(4):
            for t, m in zip(targets, mass[a], strict=True):
                P[s, a, t] += m
    return P, R, index


@pytest.mark.parametrize("name, X, Y, rooms, goal", [
    ("grid-2-room", 9, 11, 2, (7, 9)),
    ("grid-4-room", 7, 7, 4, (5, 5)),
])
def test_grid_matches_the_source_construction(name, X, Y, rooms, goal):
    P, R = _np(jm.envs.make(name))
    P_src, R_src, index = _source_grid(X, Y, rooms, (1, 1), goal)
    assert index[(1, 1)] == 0  # the source's start is already state 0
    np.testing.assert_allclose(P, P_src, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(R, R_src)
    goal_state = index[goal]
    assert goal_state == P.shape[0] - 1
    np.testing.assert_array_equal(P[goal_state], np.eye(P.shape[0])[[0, 0, 0, 0]])
    np.testing.assert_array_equal(R[goal_state], 0.99)
    assert np.count_nonzero(R) == 4


def test_grid_4_room_rows_by_hand():
    """Slip 0.1: intended 0.7, each perpendicular 0.1, stay 0.1, walls block."""
    P, _ = _np(jm.envs.make("grid-4-room"))
    # Free cells row-major: row 1 has states 0-4 at columns 1-5, row 2 states 5-8 at
    # columns 1, 2, 4, 5, row 3 the doors 9 (column 1) and 10 (column 4).
    up, down, left, right = range(4)
    row = np.zeros(20)
    row[0], row[1] = 0.9, 0.1  # corner (1, 1) up: up and left blocked, right to (1, 2)
    np.testing.assert_allclose(P[0, up], row, atol=1e-15)
    row = np.zeros(20)
    row[[0, 1, 5]] = [0.2, 0.1, 0.7]  # down: left blocked, right 0.1, down 0.7 to (2, 1)
    np.testing.assert_allclose(P[0, down], row, atol=1e-15)
    row = np.zeros(20)
    row[[2, 3]] = [0.3, 0.7]  # door (1, 3) right: 0.7 on, up and down walls, never back
    np.testing.assert_allclose(P[2, right], row, atol=1e-15)
    row = np.zeros(20)
    row[[0, 5, 9]] = [0.1, 0.8, 0.1]  # (2, 1) left: blocked; up (1, 1), down door (3, 1)
    np.testing.assert_allclose(P[5, left], row, atol=1e-15)


def test_grid_4_room_has_a_multichain_policy():
    """Zero probabilities make some policies multichain (the planner must cope)."""
    P, _ = _np(jm.envs.make("grid-4-room"))
    _, _, index = _source_grid(7, 7, 4, (1, 1), (5, 5))
    # Up in rows 1-3 keeps row 1 closed; down in rows 4-5 keeps {(5, 1), (5, 2)} closed.
    policy = np.array([0 if x <= 3 else 1 for (x, _y) in sorted(index, key=index.get)])
    P_pi = P[np.arange(20), policy]
    recurrent_classes = 20 - np.linalg.matrix_rank(np.eye(20) - P_pi)
    assert recurrent_classes == 2


def test_sixarms_rows_and_rewards():
    P, R = _np(jm.envs.make("sixarms"))
    reach = [1.0, 0.15, 0.10, 0.05, 0.03, 0.01]
    for i in range(6):
        expected = np.zeros(7)
        expected[0] += 1 - reach[i]
        expected[i + 1] += reach[i]
        np.testing.assert_allclose(P[0, i], expected, atol=1e-15)
    for a in range(6):
        np.testing.assert_array_equal(P[1, a], np.eye(7)[0 if a == 4 else 1])
    for j in range(2, 7):
        for a in range(6):
            np.testing.assert_array_equal(P[j, a], np.eye(7)[j if a == j - 1 else 0])
    expected_R = np.zeros((7, 6))
    expected_R[1, [0, 1, 2, 3, 5]] = 50 / 6000
    for j, r in zip(range(2, 7), [133, 300, 800, 1660, 6000], strict=True):
        expected_R[j, j - 1] = r / 6000
    np.testing.assert_allclose(R, expected_R, rtol=1e-15)
    assert R.max() == 1.0


# --------------------------------------------------------------------------------------
# Optimal gains, the lower bound and the agents on MDPs with zero probabilities.

# Optimal gains from the NumPy relative value iteration above (tol 1e-13), for the record
# (the README table); the test recomputes them.
GAINS = {
    "paper-mdp": 0.716029272001516,
    "riverswim-6": 0.875003337872793,
    "riverswim-25": 0.866249999999955,
    "riverswim-osband-6": 0.428622433799419,
    "riverswim-ergodic-6": 0.866253304494065,
    "riverswim-ergodic-25": 0.866249999999952,
    "grid-2-room": 0.046833194969146,
    "grid-4-room": 0.074869363906957,
    "sixarms": 1.0,
}


@pytest.mark.parametrize("name", FIXED)
def test_optimal_gain_matches_value_iteration(name):
    P, R = _np(jm.envs.make(name))
    expected = relative_value_iteration(P, R)
    assert expected == pytest.approx(GAINS[name], rel=1e-10, abs=1e-12)
    gain, bias, policy = jm.solve_average_reward(jm.envs.make(name))
    assert float(gain) == pytest.approx(expected, rel=1e-10, abs=1e-12)
    # The returned policy attains it: its (unichain) evaluation has the same gain.
    pi = stationary_distribution(P[np.arange(len(P)), np.asarray(policy)])
    assert float(pi @ R[np.arange(len(P)), np.asarray(policy)]) == pytest.approx(
        expected, rel=1e-9)
    assert float(bias[0]) == 0.0


def test_riverswim_6_always_right_is_optimal():
    P, R = _np(jm.envs.make("riverswim-6"))
    right = np.ones(6, int)
    pi = stationary_distribution(P[np.arange(6), right])
    gain_right = pi @ R[np.arange(6), right]  # = pi[5] * 1
    gain, _, policy = jm.solve_average_reward(jm.envs.make("riverswim-6"))
    assert float(gain) == pytest.approx(gain_right, rel=1e-12)
    assert np.asarray(policy).tolist() == [1] * 6
    # Birth-death chain, up 0.4 and down 0.05: detailed balance gives pi_s ~ 8^s, so the
    # gain is pi_5 = 8^5 / (1 + 8 + ... + 8^5) = 32768 / 37449.
    np.testing.assert_allclose(pi, 8.0 ** np.arange(6) / 37449, rtol=1e-10, atol=1e-15)
    assert float(gain) == pytest.approx(32768 / 37449, rel=1e-12)


def test_lower_bound_lets_q_put_mass_where_p_is_zero():
    mdp = jm.envs.make("riverswim-6")
    P, R = _np(mdp)
    bound = jm.regret_lower_bound(mdp)
    gain, bias, _ = jm.solve_average_reward(mdp)
    v, gain = np.asarray(bias), float(gain)
    K, gaps = np.asarray(bound.K), np.asarray(bound.gaps)
    suboptimal = gaps > 0
    assert suboptimal.any()
    off_support = 0
    for x, a in zip(*np.nonzero(suboptimal), strict=True):
        rho = gain + v[x] - R[x, a]
        expected = kinf_dual(P[x, a], v, rho)
        if np.isinf(expected):
            assert np.isinf(K[x, a])
            continue
        assert K[x, a] == pytest.approx(expected, rel=1e-8)
        q = np.asarray(jm.kinf_solve(P[x, a], v, rho).q)
        off_support += bool((q[P[x, a] == 0] > 1e-12).any())
    assert off_support > 0  # the alternatives use states that P never reaches
    ratio = np.where(suboptimal & np.isfinite(K), gaps / np.where(suboptimal, K, 1), 0)
    assert float(bound.constant) == pytest.approx(ratio.sum(), rel=1e-10)
    assert np.isfinite(float(bound.constant)) and float(bound.constant) > 0


def test_agents_estimates_stay_in_theta_on_zero_probability_data():
    """Counts with the true zero pattern still give positive estimates (the paper's Θ)."""
    mdp = jm.envs.make("riverswim-6")
    counts = np.round(1000 * np.asarray(mdp.P)).astype(np.int32)  # zeros where P is 0
    est = jm.estimate(counts, mdp)
    assert (np.asarray(est.mdp.P) > 0).all()
    np.testing.assert_allclose(np.asarray(est.mdp.P), (counts + 1) / (1000 + 6), rtol=1e-12)
    assert np.asarray(est.policy).tolist() == [1] * 6


def test_an_agent_runs_on_riverswim():
    """One agent end to end (each compiles for seconds; all four were run by hand). The
    setting of test_cli's and test_simulate's RiverSwim-6 runs (64 replications, 2,000
    rounds recorded every 2): one program for the three modules, which tests/conftest.py
    sends to one worker."""
    traj = jm.simulate(jm.envs.make("riverswim-6"), "ucb", horizon=2000, replications=64,
                       seed=0, progress=False, record_every=2)
    regret = np.asarray(traj.pseudo_regret)
    assert regret.shape == (64, 1000)
    assert np.isfinite(regret).all() and (np.diff(regret, axis=-1) >= -1e-12).all()
    assert int(np.asarray(traj.counts).sum()) == 64 * 2000


def test_paper_mdp_matches_section_5():
    mdp = jm.envs.paper_mdp()
    np.testing.assert_array_equal(
        mdp.P[:, 0], [[0.04, 0.69, 0.27], [0.88, 0.01, 0.11], [0.02, 0.46, 0.52]]
    )
    np.testing.assert_array_equal(
        mdp.P[:, 1], [[0.28, 0.68, 0.04], [0.26, 0.33, 0.41], [0.43, 0.35, 0.22]]
    )
    np.testing.assert_array_equal(mdp.R[:, 0], [0.13, 0.47, 0.89])
    np.testing.assert_array_equal(mdp.R[:, 1], [0.18, 0.71, 0.63])
    assert jm.envs.paper_mdp(dtype=jnp.float32).P.dtype == jnp.float32


def test_rigged_counts_match_section_5_1():
    counts = jm.envs.rigged_counts()
    assert counts.dtype == jnp.int32 and counts.shape == (3, 2, 3)
    np.testing.assert_array_equal(counts[:, 0], [[8, 1, 1], [1, 1, 8], [8, 1, 1]])
    np.testing.assert_array_equal(counts[:, 1], [[1, 1, 8], [8, 1, 1], [1, 1, 8]])
    assert int(counts.sum()) == 60


@pytest.mark.parametrize("S,A", [(1, 1), (40, 2)])
def test_random_mdp_is_valid_and_seeded(S, A):
    mdp = jm.envs.random_mdp(jax.random.key(3), S, A)
    jm.MDP(mdp.P, mdp.R, mdp.mask)  # passes validation
    assert mdp.P.shape == (S, A, S) and mdp.R.shape == (S, A)
    assert bool((mdp.P > 0).all())
    assert bool(((mdp.R >= 0) & (mdp.R < 1)).all())
    again = jm.envs.random_mdp(jax.random.key(3), S, A)
    np.testing.assert_array_equal(mdp.P, again.P)
    other = jm.envs.random_mdp(jax.random.key(4), S, A)
    assert S * A == 1 or not np.array_equal(mdp.P, other.P)


def test_random_mdp_rows_look_dirichlet_uniform():
    # Under Dirichlet(1, ..., 1) on S = 40 states every marginal is Beta(1, 39).
    mdp = jm.envs.random_mdp(jax.random.key(0), 40, 2)
    x = 40 * np.asarray(mdp.P).ravel()  # Beta(1, 39) scaled by S: mean 1, variance 39/41
    assert abs(x.mean() - 1) < 1e-12  # rows sum to one
    assert abs(x.var() - 39 / 41) < 0.1


@pytest.mark.parametrize("S,A,b", [(10, 3, 1), (10, 3, 4), (10, 3, 10)])
def test_garnet_support_size(S, A, b):
    mdp = jm.envs.garnet(jax.random.key(1), S, A, b)
    jm.MDP(mdp.P, mdp.R, mdp.mask)
    np.testing.assert_array_equal((mdp.P > 0).sum(-1), np.full((S, A), b))


def test_generators_vmap_over_keys():
    keys = jax.random.split(jax.random.key(0), 4)
    mdps = jax.vmap(lambda k: jm.envs.garnet(k, 10, 3, 4))(keys)
    assert isinstance(mdps, jm.MDP) and mdps.P.shape == (4, 10, 3, 10)
    np.testing.assert_array_equal(mdps.P[2], jm.envs.garnet(keys[2], 10, 3, 4).P)


@pytest.mark.parametrize(
    "kwargs,name", [({"S": 0, "A": 2, "b": 1}, "S"), ({"S": 3, "A": 2, "b": 4}, "b")]
)
def test_garnet_bad_sizes(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        jm.envs.garnet(jax.random.key(0), **kwargs)
