"""Tests for :mod:`jaxmdp.planning.incremental` against :func:`jaxmdp.estimate` (a full LU
re-solve every round), along a trajectory in which the estimated MDP changes one count per
round and the policy switches: same policy at every round, same gain and bias to rounding;
the row updates, the changed-pair hint, and a start from a stale state.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.planning import estimate, estimated_mdp, incremental


@functools.partial(jax.jit, static_argnames="horizon")
def _compare_along_trajectory(mdp, refresh_every, explore, key, *, horizon):
    """Plays ``horizon`` rounds (the incremental policy, or a uniform action with
    probability ``explore``) and records both planners' results at every round; the
    incremental planner re-inverts every ``refresh_every`` rounds."""
    num_states, num_actions = mdp.R.shape
    counts0 = jnp.zeros((num_states, num_actions, num_states), jnp.int32)
    policy0 = jnp.zeros(num_states, jnp.int32)
    evaluation0 = incremental.init_evaluation(estimated_mdp(counts0, mdp).P, mdp.R, policy0)

    def step(carry, index):
        key, counts, x, policy_inc, policy_full, evaluation = carry
        key, explore_key, action_key, next_key = jax.random.split(key, 4)
        full = estimate(counts, mdp, init_policy=policy_full)
        est_mdp = estimated_mdp(counts, mdp)
        inc, evaluation = incremental.incremental_policy_iteration(
            est_mdp.P, est_mdp.R, est_mdp.mask, policy_inc, evaluation,
            index % refresh_every == refresh_every - 1)
        random_action = jax.random.randint(action_key, (), 0, num_actions)
        action = jnp.where(jax.random.uniform(explore_key) < explore, random_action,
                           inc.policy[x])
        y = jax.random.choice(next_key, num_states, p=mdp.P[x, action]).astype(jnp.int32)
        carry = (key, counts.at[x, action, y].add(1), y, inc.policy, full.policy, evaluation)
        return carry, (inc.policy, full.policy, inc.gain, full.gain, inc.bias, full.bias)

    init = (key, counts0, jnp.int32(0), policy0, policy0, evaluation0)
    return jax.lax.scan(step, init, jnp.arange(horizon))


@pytest.mark.parametrize("refresh_every", [10_000, 50])
def test_incremental_matches_full_resolve_along_trajectory(refresh_every):
    mdp = jm.envs.garnet(jax.random.key(3), 12, 3, 3)
    final, outputs = _compare_along_trajectory(mdp, refresh_every, 0.5, jax.random.key(1),
                                               horizon=600)
    pi_inc, pi_full, g_inc, g_full, b_inc, b_full = (np.asarray(o) for o in outputs)
    # The policy switches many times along the way (the rank-one switch path is used).
    switches = int(np.sum(np.any(pi_full[1:] != pi_full[:-1], axis=1)))
    assert switches >= 5, switches
    np.testing.assert_array_equal(pi_inc, pi_full)
    np.testing.assert_allclose(g_inc, g_full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b_inc, b_full, rtol=0, atol=1e-11)
    # The carried inverse is still the inverse of the last evaluation matrix.
    evaluation = final[-1]
    matrix = jnp.eye(12) - evaluation.rows
    matrix = matrix.at[:, 0].set(1)
    np.testing.assert_allclose(evaluation.inverse @ matrix, np.eye(12), atol=1e-11)


@functools.partial(jax.jit, static_argnames=("horizon", "refresh_every"))
def _planner_along_trajectory(mdp, counts0, key, *, horizon, refresh_every):
    """The paper agents' planner (row updates of p_hat, Sherman-Morrison on the changed
    rows only) against a rebuild from the counts and a full LU re-solve, every round."""
    from jaxmdp.agents.rounds import init_estimate, observe, played, solve_estimate
    from jaxmdp.planning import incremental_planner, transition_estimate

    num_states, num_actions = mdp.R.shape
    state0 = init_estimate(jnp.zeros_like(counts0), mdp.R, mdp.mask,
                                   incremental_planner())

    def step(carry, index):
        key, counts, x, state, policy_full = carry
        key, explore_key, action_key, next_key = jax.random.split(key, 4)
        state = observe(state, counts, index, refresh_every=refresh_every)
        est, state = solve_estimate(state, mdp.R, mdp.mask, index, incremental_planner(),
                                            refresh_every=refresh_every)
        full = estimate(counts, mdp, init_policy=policy_full)
        action = jnp.where(jax.random.uniform(explore_key) < 0.5,
                           jax.random.randint(action_key, (), 0, num_actions), est.policy[x])
        state = played(state, x, action)
        y = jax.random.choice(next_key, num_states, p=mdp.P[x, action]).astype(jnp.int32)
        same_model = jnp.all(state.model == transition_estimate(counts, dtype=mdp.R.dtype))
        same_visits = jnp.all(state.visits == counts.sum(-1))
        carry = (key, counts.at[x, action, y].add(1), y, state, full.policy)
        return carry, (same_model & same_visits & jnp.all(est.mdp.mask == full.mdp.mask),
                       est.policy, full.policy, est.gain, full.gain, est.bias, full.bias)

    init = (key, counts0, jnp.int32(0), state0, jnp.zeros(num_states, jnp.int32))
    return jax.lax.scan(step, init, jnp.arange(horizon))[1]


@pytest.mark.parametrize("refresh_every", [4096, 7])
def test_planner_row_updates_match_rebuild_and_full_resolve(refresh_every):
    # Initial counts that the state's zero counts do not know: round 0 rebuilds.
    mdp = jm.envs.garnet(jax.random.key(4), 10, 3, 4)
    counts0 = jax.random.randint(jax.random.key(2), (10, 3, 10), 0, 2, jnp.int32)
    same, pi, pi_full, g, g_full, b, b_full = (np.asarray(o) for o in _planner_along_trajectory(
        mdp, counts0, jax.random.key(6), horizon=500, refresh_every=refresh_every))
    assert same.all(), np.flatnonzero(~same)[:5]  # p_hat and visits bit for bit
    assert np.sum(np.any(pi_full[1:] != pi_full[:-1], axis=1)) >= 5  # switches happen
    np.testing.assert_array_equal(pi, pi_full)
    np.testing.assert_allclose(g, g_full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b, b_full, rtol=0, atol=1e-11)


def test_changed_pair_hint_gives_the_general_update():
    """Told which row changed, the solver updates the same rows as when it compares all."""
    mdp = jm.envs.garnet(jax.random.key(8), 9, 3, 4)
    counts = jax.random.randint(jax.random.key(9), (9, 3, 9), 0, 4, jnp.int32)
    before = estimated_mdp(counts, mdp)
    policy = jm.policy_iteration(before.P, before.R, before.mask).policy
    evaluation = incremental.init_evaluation(before.P, before.R, policy)
    x, a = 4, int(policy[4])
    after = estimated_mdp(counts.at[x, a, 2].add(3), mdp)
    solve = jax.jit(incremental.incremental_policy_iteration, static_argnames=())
    general, ev_general = solve(after.P, after.R, after.mask, policy, evaluation)
    hinted, ev_hinted = solve(after.P, after.R, after.mask, policy, evaluation,
                              changed_pair=(x, a))
    for u, v in zip(jax.tree_util.tree_leaves((general, ev_general)),
                    jax.tree_util.tree_leaves((hinted, ev_hinted))):
        np.testing.assert_array_equal(u, v)


def test_incremental_policy_iteration_from_scratch_state_and_refresh():
    # From a stale state for another policy and another MDP: rows are re-synchronised.
    mdp = jm.envs.garnet(jax.random.key(0), 9, 3, 9)
    other = jm.envs.random_mdp(jax.random.key(1), 9, 3)
    stale = incremental.init_evaluation(other.P, other.R, jnp.full(9, 2, jnp.int32))
    reference = jm.policy_iteration(mdp.P, mdp.R, mdp.mask)
    solve = jax.jit(incremental.incremental_policy_iteration)
    for refresh in (False, True):
        sol, state = solve(mdp.P, mdp.R, mdp.mask, jnp.full(9, -1, jnp.int32), stale,
                           refresh)
        np.testing.assert_array_equal(sol.policy, reference.policy)
        assert int(sol.status) == jm.Status.CONVERGED
        np.testing.assert_allclose(sol.gain, reference.gain, atol=1e-12)
        np.testing.assert_allclose(sol.bias, reference.bias, atol=1e-11)
        rows = jnp.take_along_axis(mdp.P, sol.policy[:, None, None], axis=1)[:, 0]
        np.testing.assert_array_equal(state.rows, rows)


def test_batched_evaluations_after_the_first_run_on_the_rows_that_switch():
    """Under ``vmap`` the evaluations after the first run only on the rows whose policy
    changed, ``CONTINUE_CHUNK`` (4) at a time: 12 garnets of ``CONTINUE_MIN_STATES`` (16)
    states, four warm-started at their optimal policy (one evaluation) and eight from the
    all-zero policy (two passes of the continuation), each against
    :func:`jaxmdp.policy_iteration` from the same warm start (same policies visited, so the
    same number of evaluations)."""
    assert incremental.CONTINUE_CHUNK == 4 and incremental.CONTINUE_MIN_STATES == 16
    S = 16
    mdps = [jm.envs.garnet(key, S, 3, 4) for key in jax.random.split(jax.random.key(5), 12)]
    P, R, mask = (jnp.stack([getattr(m, f) for m in mdps]) for f in ("P", "R", "mask"))
    optimal = [jm.policy_iteration(m.P, m.R, m.mask).policy for m in mdps]
    starts = jnp.stack([optimal[i] if i < 4 else jnp.zeros(S, jnp.int32) for i in range(12)])
    evaluation = jax.vmap(incremental.init_evaluation)(P, R, starts)
    solution, after = jax.jit(jax.vmap(incremental.incremental_policy_iteration))(
        P, R, mask, starts, evaluation)
    steps = []
    for i, m in enumerate(mdps):
        reference = jm.policy_iteration(m.P, m.R, m.mask, init_policy=starts[i])
        np.testing.assert_array_equal(solution.policy[i], reference.policy)
        assert int(solution.status[i]) == jm.Status.CONVERGED
        assert int(solution.num_steps[i]) == int(reference.num_steps)
        np.testing.assert_allclose(solution.gain[i], reference.gain, rtol=0, atol=1e-12)
        np.testing.assert_allclose(solution.bias[i], reference.bias, rtol=0, atol=1e-11)
        rows = jnp.take_along_axis(m.P, reference.policy[:, None, None], axis=1)[:, 0]
        np.testing.assert_array_equal(after.rows[i], rows)
        np.testing.assert_array_equal(after.policy[i], reference.policy)
        steps.append(int(reference.num_steps))
    assert steps[:4] == [1] * 4 and sum(s > 1 for s in steps) > 4, steps


def test_incremental_chunk_is_checked():
    assert incremental.incremental_planner(chunk=1) is incremental.incremental_planner(chunk=1)
    incremental.incremental_planner(chunk=2)
    for chunk in (0, -1, 2.0, True, "four"):  # 2.0 and True equal cached 2 and 1
        with pytest.raises(ValueError, match="chunk must be a positive int, None or 'auto'"):
            incremental.incremental_planner(chunk=chunk)
    # "auto": the backend's batching (4 per pass on a CPU; one loop on an accelerator).
    assert incremental.incremental_planner() is incremental.incremental_planner(
        chunk=incremental.CONTINUE_CHUNK)
