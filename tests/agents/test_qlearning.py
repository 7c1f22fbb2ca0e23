"""Optimistic Q-learning: the update rule against the published formula, regret on
riverswim-6 against the NumPy loop of tests/reference/published.py, jit/vmap."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.agents.qlearning import QState, q_update, theory_horizon
from tests.reference import published as ref

RIVERSWIM = jm.envs.make("riverswim-6")


def _published_update(Q, Qh, V, n, s, a, r, y, H, gamma, c):
    """``OptimisticDiscountedAgent.update`` (bahh723/model-free-rl-algos, agent.py lines
    86-93), transcribed with Python floats."""
    n[s][a] += 1
    bonus = c * math.sqrt(H / n[s][a])
    alpha = (H + 1) / (H + n[s][a])
    Q[s][a] = (1 - alpha) * Q[s][a] + alpha * (r + gamma * V[y] + bonus)
    Qh[s][a] = min(Qh[s][a], Q[s][a])
    V[s] = max(Qh[s])


@pytest.mark.parametrize("H, gamma, c", [(99.0, 0.99, 1.0), (4.0, 0.75, 0.3),
                                         (1.0, 0.0, 2.0)])
def test_update_matches_published_formula(H, gamma, c):
    S, A = 3, 2
    Q = [[H] * A for _ in range(S)]
    Qh = [[H] * A for _ in range(S)]
    V = [H] * S
    n = [[0] * A for _ in range(S)]
    state = QState(jnp.full((S, A), H), jnp.full((S, A), H), jnp.full((S,), H),
                   jnp.zeros((S, A), jnp.int32))
    steps = [(0, 1, 0.0, 2), (2, 0, 1.0, 2), (2, 0, 0.5, 1), (0, 1, 1.0, 0),
             (1, 1, 0.25, 0), (0, 1, 0.0, 2), (0, 0, 1.0, 0), (2, 0, 0.0, 2)]
    for s, a, r, y in steps:
        _published_update(Q, Qh, V, n, s, a, r, y, H, gamma, c)
        state = q_update(state, s, a, r, y, H, gamma, c)
        np.testing.assert_allclose(np.asarray(state.q), Q, rtol=1e-14, atol=1e-12)
        np.testing.assert_allclose(np.asarray(state.q_hat), Qh, rtol=1e-14, atol=1e-12)
        np.testing.assert_allclose(np.asarray(state.v_hat), V, rtol=1e-14, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(state.visits), n)
    # the running minimum is below the averaged Q wherever the latter went down
    assert np.all(np.asarray(state.q_hat) <= np.asarray(state.q) + 1e-12)


def test_hand_values_first_update():
    """At n = 1 the learning rate is 1: Q = r + gamma V(s') + c sqrt(H), Q_hat stays H."""
    H, gamma, c = 99.0, 0.99, 1.0
    state = QState(jnp.full((2, 2), H), jnp.full((2, 2), H), jnp.full((2,), H),
                   jnp.zeros((2, 2), jnp.int32))
    new = q_update(state, 1, 0, 0.5, 0, H, gamma, c)
    assert float(new.q[1, 0]) == pytest.approx(0.5 + 0.99 * 99 + math.sqrt(99), rel=1e-15)
    assert float(new.q_hat[1, 0]) == H and float(new.v_hat[1]) == H
    # second visit: alpha = (H + 1) / (H + 2), bonus c sqrt(H / 2)
    new2 = q_update(new, 1, 0, 0.0, 1, H, gamma, c)
    alpha = 100 / 101
    q2 = (1 - alpha) * float(new.q[1, 0]) + alpha * (0.99 * 99 + math.sqrt(99 / 2))
    assert float(new2.q[1, 0]) == pytest.approx(q2, rel=1e-14)
    assert float(new2.q_hat[1, 0]) == pytest.approx(min(99.0, q2), rel=1e-14)


def test_mean_regret_matches_numpy_loop():
    """jaxmdp's optimistic_q against the NumPy loop (same rules, jaxmdp's action order) on
    riverswim-6, T = 2,000, 50 replications each: means within 4 standard errors."""
    horizon, m = 2000, 50
    traj = jm.simulate(RIVERSWIM, "optimistic_q", horizon, m, seed=5, progress=False)
    jx = np.asarray(traj.regret)[:, -1]
    P, R = np.asarray(RIVERSWIM.P), np.asarray(RIVERSWIM.R)
    npf = ref.run(P, R, "optimistic_q", horizon, m, seed=5)
    se = math.sqrt(jx.var(ddof=1) / m + npf.var(ddof=1) / m)
    assert abs(jx.mean() - npf.mean()) <= 4 * se + 1e-9, (jx.mean(), npf.mean(), se)
    # the check has power: a different bonus scale moves the mean by far more
    other = ref.run(P, R, "optimistic_q", horizon, m, seed=5, c=0.0)
    assert abs(other.mean() - npf.mean()) > 4 * se


def test_first_actions_follow_lowest_index_ties():
    """The all-H table makes the agent play action 0 first (``np.argmax`` ties)."""
    traj = jm.simulate(RIVERSWIM, "optimistic_q", 3, 2, seed=0, progress=False,
                       record_path=True)
    actions = np.asarray(traj.actions)
    assert np.all(actions[:, 0] == 0)


def test_step_jit_and_vmap_agree_with_eager():
    agent = jm.get_agent("optimistic_q", gamma=0.9, c=0.5)
    spec = jm.agents.EnvSpec(6, 2, jnp.ones((6, 2), bool), jnp.asarray(RIVERSWIM.R),
                             "deterministic", 0.0)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    states = jax.vmap(lambda k: agent.init(k, spec))(keys)
    counts = jnp.zeros((4, 6, 2, 6), jnp.int32)
    sums = jnp.stack([jnp.full((6, 2), float(i)) for i in range(4)])
    obs = jm.agents.Observation(jnp.int32(1), jnp.int32(0), jnp.arange(4, dtype=jnp.int32),
                                counts, sums)
    obs_axes = jm.agents.Observation(None, None, 0, 0, 0, None, None, None)
    step = jax.jit(jax.vmap(lambda k, s, o: agent.step(k, s, o, spec),
                            in_axes=(0, 0, obs_axes)))
    actions, new = step(keys, states, obs)
    # The second round sees the first round's transition, with reward 0.
    second = obs._replace(state=jnp.array([1, 0, 3, 2], jnp.int32),
                          previous_state=jnp.arange(4, dtype=jnp.int32),
                          previous_action=actions, reward=jnp.zeros(4))
    second_axes = obs_axes._replace(previous_state=0, previous_action=0, reward=0)
    step2 = jax.jit(jax.vmap(lambda k, s, o: agent.step(k, s, o, spec),
                             in_axes=(0, 0, second_axes)))
    a2, new2 = step2(keys, new, second)
    for i in range(4):
        st = jax.tree.map(lambda x, i=i: x[i], states)
        o = jm.agents.Observation(jnp.int32(1), jnp.int32(0), jnp.int32(i), counts[i],
                                  sums[i])
        a, s1 = agent.step(keys[i], st, o, spec)
        assert int(a) == int(actions[i])
        o2 = o._replace(state=jnp.int32([1, 0, 3, 2][i]), previous_state=jnp.int32(i),
                        previous_action=a, reward=jnp.zeros(()))
        b, s2 = agent.step(keys[i], s1, o2, spec)
        assert int(b) == int(a2[i])
        for x, y in zip(jax.tree.leaves(s2), jax.tree.leaves(jax.tree.map(
                lambda x, i=i: x[i], new2))):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-14)
    # the second step updated the pair played in the first (reward 0 was observed)
    assert np.all(np.asarray(new2.visits).sum(axis=(1, 2)) == 1)


def test_options_and_registry():
    assert "optimistic_q" in jm.agent_names()
    assert jm.get_agent("optimistic_q") == jm.get_agent("optimistic_q", gamma=0.99)
    cfg = jm.get_agent("optimistic_q", horizon_h=20.0).config
    assert cfg.horizon_h == 20.0
    for bad in ({"gamma": 1.0}, {"gamma": 0}, {"c": -1.0}, {"horizon_h": 0.5},
                {"horizon_h": "big"}, {"gamma": True}):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=name):
            jm.get_agent("optimistic_q", **bad)


def test_horizon_option_sets_gamma():
    """With ``horizon_h = H`` the first update uses gamma = 1 - 1/H and bonus c sqrt(H)."""
    H = 8.0
    agent = jm.get_agent("optimistic_q", horizon_h=H)
    traj = jm.simulate(RIVERSWIM, agent, 2, 1, seed=0, progress=False)
    assert np.isfinite(np.asarray(traj.regret)).all()
    state = agent.init(jax.random.PRNGKey(0), jm.agents.EnvSpec(
        6, 2, jnp.ones((6, 2), bool), jnp.asarray(RIVERSWIM.R), "deterministic", 0.0))
    assert float(state.q[0, 0]) == H
    new = q_update(state, 0, 0, 0.0, 0, H, 1 - 1 / H, 1.0)
    assert float(new.q[0, 0]) == pytest.approx((1 - 1 / H) * H + math.sqrt(H))


def test_theory_horizon_formula_and_errors():
    T, S, A, sp, d = 10**5, 6, 2, 3.0, 0.1
    expected = min(math.sqrt(sp * T / (S * A)), (T / (S * A * math.log(4 * T / d))) ** (1 / 3))
    assert theory_horizon(S, A, T, sp, d) == pytest.approx(expected, rel=1e-15)
    with pytest.raises(ValueError, match="delta"):
        theory_horizon(S, A, T, sp, 1.5)
    with pytest.raises(ValueError, match="span"):
        theory_horizon(S, A, T, 0.0, 0.1)
