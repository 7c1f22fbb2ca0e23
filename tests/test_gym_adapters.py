"""jaxmdp.envs.from_gymnasium / to_gymnasium: FrozenLake against its documented rules
built here in NumPy, the restart convention on Taxi, the rescaling rule and its error,
gymnasium's own env checker, transition frequencies through the gym interface, and (with
STATISTICALRL_LEARNERS set) a published learner driven through it."""

import math
import os

import numpy as np
import pytest

import jaxmdp as jm

gymnasium = pytest.importorskip("gymnasium")

LAKE = ["SFFF", "FHFH", "FFFH", "HFFG"]  # FrozenLake-v1's 4x4 map


def _frozen_lake_reference():
    """FrozenLake-v1 (slippery) from its documented rules, with restarts at state 0:
    actions 0-3 = left, down, right, up; the intended move or either perpendicular one,
    1/3 each, clipped at the walls; entering H or G ends the episode (G pays 1)."""
    n = 4
    P = np.zeros((16, 4, 16))
    R = np.zeros((16, 4))
    moves = [(0, -1), (1, 0), (0, 1), (-1, 0)]
    for s in range(16):
        row, col = divmod(s, n)
        for a in range(4):
            if LAKE[row][col] in "HG":  # terminal cell: its own episode ends at once
                P[s, a, 0] = 1.0
                continue
            for b in ((a - 1) % 4, a, (a + 1) % 4):
                r2 = min(max(row + moves[b][0], 0), n - 1)
                c2 = min(max(col + moves[b][1], 0), n - 1)
                cell = LAKE[r2][c2]
                P[s, a, 0 if cell in "HG" else r2 * n + c2] += 1 / 3
                R[s, a] += (cell == "G") / 3
    return P, R


def test_frozen_lake_is_its_rules_with_restarts():
    mdp = jm.envs.from_gymnasium(gymnasium.make("FrozenLake-v1"))
    P, R = _frozen_lake_reference()
    np.testing.assert_allclose(mdp.P, P, atol=1e-15)
    np.testing.assert_allclose(mdp.R, R, atol=1e-15)
    assert np.all(np.asarray(mdp.mask))
    # The holes and the goal are never entered (weakly communicating: infinite diameter).
    entered = np.asarray(mdp.P).sum(axis=(0, 1)) > 0
    assert np.flatnonzero(~entered).tolist() == [5, 7, 11, 12, 15]


def test_taxi_terminal_transitions_restart_from_the_initial_distribution():
    env = gymnasium.make("Taxi-v4" if "Taxi-v4" in gymnasium.envs.registry else "Taxi-v3")
    with pytest.raises(ValueError, match=r"got reward -1 .* with rescale=False"):
        jm.envs.from_gymnasium(env)
    mdp = jm.envs.from_gymnasium(env, rescale=True)
    mu0 = env.unwrapped.initial_state_distrib
    assert np.count_nonzero(mu0) == 300 and np.flatnonzero(mu0)[0] == 1
    order = np.arange(500)
    order[[0, 1]] = [1, 0]  # jaxmdp state i is gymnasium state order[i]
    P, R = np.asarray(mdp.P), np.asarray(mdp.R)
    table = env.unwrapped.P
    for i in range(500):
        for a in range(6):
            ((p, y, r, terminated),) = table[order[i]][a]  # Taxi is deterministic
            expected = mu0 if terminated else np.eye(500)[y]
            np.testing.assert_array_equal(P[i, a], expected[order])
            assert R[i, a] == pytest.approx((r + 10) / 30)  # [-10, 20] -> [0, 1]


def test_cliff_walking_start_becomes_state_0_and_rewards_are_rescaled():
    name = "CliffWalking-v1" if "CliffWalking-v1" in gymnasium.envs.registry else \
        "CliffWalking-v0"
    env = gymnasium.make(name)
    with pytest.raises(ValueError, match="rescale"):
        jm.envs.from_gymnasium(env, rescale=False)
    with pytest.raises(ValueError, match="rescale must be a bool"):
        jm.envs.from_gymnasium(env, rescale="yes")
    mdp = jm.envs.from_gymnasium(env, rescale=True)
    start = env.unwrapped.start_state_index  # 36, bottom left
    # gymnasium state 36 is jaxmdp state 0 and vice versa; the others keep their numbers.
    up, right = 0, 1
    assert float(mdp.P[0, up, 24]) == 1.0  # from the start, up to the cell above
    assert float(mdp.P[0, right, 0]) == 1.0  # right from the start falls off the cliff
    assert float(mdp.R[0, right]) == 0.0 and float(mdp.R[0, up]) == 1.0  # -100, -1
    assert float(mdp.P[start, up, start]) == 1.0  # gymnasium's top-left corner, now 36
    # Every step pays -1 (1 after rescaling) except into the cliff (-100, 0): the pairs
    # that stay off the cliff pay 1, so a policy that never enters it has gain 1.
    P, R = np.asarray(mdp.P), np.asarray(mdp.R)
    cliff = P[:, :, 0] == 1.0  # back to the start: the cliff (or the start's own wall)
    assert set(np.unique(R)) == {0.0, 1.0}
    assert np.all(R[~cliff] == 1.0) and np.all((R == 0.0) <= cliff)


def test_bad_environments_and_distributions_are_refused():
    with pytest.raises(ValueError, match="env must have Discrete"):
        jm.envs.from_gymnasium(gymnasium.make("CartPole-v1"))
    env = gymnasium.make("FrozenLake-v1")
    with pytest.raises(ValueError, match="initial_distribution"):
        jm.envs.from_gymnasium(env, initial_distribution=np.ones(16))
    with pytest.raises(ValueError, match="batch"):
        jm.envs.to_gymnasium(jm.envs.batch("riverswim-6", seeds=[0, 1]))


@pytest.mark.parametrize("name", ["riverswim-6", "toy3d-1"])
def test_round_trip(name):
    mdp = jm.envs.make(name)
    back = jm.envs.from_gymnasium(jm.envs.to_gymnasium(mdp))
    mask = np.asarray(mdp.mask)
    np.testing.assert_array_equal(back.mask, mask)
    np.testing.assert_array_equal(np.asarray(back.P)[mask], np.asarray(mdp.P)[mask])
    np.testing.assert_array_equal(np.asarray(back.R)[mask], np.asarray(mdp.R)[mask])


def test_gymnasium_env_checker_accepts_it():
    from gymnasium.utils.env_checker import check_env

    check_env(jm.envs.to_gymnasium(jm.envs.make("riverswim-6")), skip_render_check=True)


def test_gym_interface_loop_follows_the_mdp():
    # A loop written against the gym interface only: random actions (right w.p. 0.8) on
    # riverswim-6 with Bernoulli rewards, the transition counts of every pair against P
    # and the reward means against R within 5 binomial standard deviations.
    mdp = jm.envs.make("riverswim-6").with_reward_law("bernoulli")
    env = jm.envs.to_gymnasium(mdp)
    state, _ = env.reset(seed=7)
    choices = (np.random.default_rng(0).random(40_000) < 0.8).astype(int)
    counts = np.zeros((6, 2, 6))
    rewards = np.zeros((6, 2))
    for action in choices:
        nxt, reward, terminated, truncated, _ = env.step(int(action))
        assert not terminated and not truncated
        counts[state, action, nxt] += 1
        rewards[state, action] += reward
        state = nxt
    P, R = np.asarray(mdp.P), np.asarray(mdp.R)
    visits = counts.sum(-1)
    assert np.all(visits > 200)
    sd = np.sqrt(P * (1 - P) / visits[..., None])
    assert np.all(np.abs(counts / visits[..., None] - P) <= 5 * sd + 1e-12)
    assert np.all(np.abs(rewards / visits - R) <= 5 * np.sqrt(R * (1 - R) / visits) + 1e-12)
    # Seeded: the same seed replays the same path.
    paths = []
    for _ in range(2):
        env.reset(seed=3)
        paths.append([env.step(1)[0] for _ in range(50)])
    assert paths[0] == paths[1]
    with pytest.raises(ValueError, match="action"):
        jm.envs.to_gymnasium(jm.envs.make("toy3d-1")).step(1)  # state 0 has action 0 only


@pytest.mark.skipif(not os.environ.get("STATISTICALRL_LEARNERS"),
                    reason="set STATISTICALRL_LEARNERS to a copy of StatisticalRL/learners")
def test_published_imed_rl_runs_through_the_gym_interface():
    # The published IMED-RL (learners, MDPs_discrete/IMED_RL.py), unchanged, on
    # to_gymnasium(riverswim-6): its mean final regret against jaxmdp's reproduction
    # (index="statisticalrl"), within 4 standard errors of the difference.
    from benchmarks import statisticalrl

    get_module = statisticalrl.load_learners(os.environ["STATISTICALRL_LEARNERS"])
    IMEDRL = get_module("IMED_RL").IMEDRL
    mdp = jm.envs.make("riverswim-6")
    gain = float(jm.solve_average_reward(mdp)[0])
    horizon, replications = 1000, 12
    finals = []
    for i in range(replications):
        np.random.seed(i)  # the learner draws its ties from numpy.random
        env = jm.envs.to_gymnasium(mdp)
        state, _ = env.reset(seed=i)
        learner = IMEDRL(6, 2)
        learner.reset(state)
        total = 0.0
        for _ in range(horizon):
            action = int(learner.play(state))
            nxt, reward, _, _, _ = env.step(action)
            learner.update(state, action, reward, nxt)
            total += gain - reward
            state = nxt
        finals.append(total)
    traj = jm.simulate(mdp, jm.get_agent("imed_rl", index="statisticalrl"), horizon, 64,
                       seed=0, progress=False)
    jax_finals = np.asarray(traj.regret[:, -1])
    se = math.hypot(np.std(finals, ddof=1) / math.sqrt(replications),
                    jax_finals.std(ddof=1) / 8)
    assert abs(np.mean(finals) - jax_finals.mean()) < 4 * se
