"""The planning package's interface (jaxmdp.planning): planners as (init, update), one
Solution and one Status for every solver."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import planning


def _best_gain_by_enumeration(P, R):
    """Largest stationary gain over all deterministic policies (NumPy, positive P)."""
    S, A = R.shape
    best = -np.inf
    for policy in itertools.product(range(A), repeat=S):
        P_pi = P[np.arange(S), policy]
        r_pi = R[np.arange(S), policy]
        # Stationary law: mu (P_pi - I) = 0, sum mu = 1.
        M = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
        mu = np.linalg.lstsq(M, np.r_[np.zeros(S), 1.0], rcond=None)[0]
        best = max(best, float(mu @ r_pi))
    return best


def _random_mdp(seed, S=4, A=3):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.uniform(size=(S, A))
    return jm.MDP(P, R)


@pytest.mark.parametrize("make", [planning.exact_planner, planning.incremental_planner])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planners_find_the_best_gain_of_all_policies(make, seed):
    mdp = _random_mdp(seed)
    planner = make()
    solution, state = planner.update(planner.init(mdp), planning.ModelChange(mdp))
    assert int(solution.status) == planning.Status.CONVERGED
    np.testing.assert_allclose(float(solution.gain),
                               _best_gain_by_enumeration(np.asarray(mdp.P), np.asarray(mdp.R)),
                               rtol=1e-10)
    # The state is the warm start: a second update from it needs one evaluation.
    again, _ = planner.update(state, planning.ModelChange(mdp, refresh=False))
    assert int(again.num_steps) == 1
    np.testing.assert_array_equal(again.policy, solution.policy)


def test_incremental_planner_follows_a_changed_row_like_a_full_solve():
    mdp = _random_mdp(5)
    planner = planning.incremental_planner()
    _, state = planner.update(planner.init(mdp), planning.ModelChange(mdp))
    P = np.asarray(mdp.P).copy()
    P[2, 1] = np.r_[0.7, 0.1, 0.1, 0.1]
    changed = jm.MDP(P, mdp.R)
    pair = (jnp.int32(2), jnp.int32(1))
    sol, _ = planner.update(state, planning.ModelChange(changed, pair, jnp.bool_(False)))
    np.testing.assert_allclose(float(sol.gain), _best_gain_by_enumeration(P, np.asarray(mdp.R)),
                               rtol=1e-10)


def test_planners_run_under_jit_and_vmap():
    mdps = [_random_mdp(seed) for seed in range(3)]
    P = jnp.stack([m.P for m in mdps])
    R = jnp.stack([m.R for m in mdps])
    planner = planning.incremental_planner()

    def solve(P, R):
        mdp = jm.MDP.unchecked(P, R, jnp.ones(R.shape, bool))
        return planner.update(planner.init(mdp), planning.ModelChange(mdp))[0].gain

    gains = jax.jit(jax.vmap(solve))(P, R)
    expected = [_best_gain_by_enumeration(np.asarray(m.P), np.asarray(m.R)) for m in mdps]
    np.testing.assert_allclose(gains, expected, rtol=1e-10)


def test_evi_planner_with_zero_radius_finds_the_optimal_gain():
    mdp = _random_mdp(3)
    model = planning.ConfidenceSet(mdp.P, mdp.R, jnp.zeros(mdp.R.shape), mdp.mask,
                                   jnp.asarray(1e-10))
    for warm_start in (False, True):
        planner = planning.evi_planner("l1", warm_start=warm_start)
        solution, u = planner.update(planner.init(model), planning.ModelChange(model))
        assert int(solution.status) == planning.Status.CONVERGED
        np.testing.assert_allclose(
            float(solution.gain),
            _best_gain_by_enumeration(np.asarray(mdp.P), np.asarray(mdp.R)), atol=1e-9)
        np.testing.assert_array_equal(u, solution.bias)
        assert solution.q_opt.shape == mdp.P.shape and float(solution.span) < 1e-10


def test_evi_planner_rejects_an_unknown_ball():
    with pytest.raises(ValueError, match=r"ball must be one of \['l1', 'kl', 'kl_published', "
                                         r"'box', 'ucrl3', 'ucrl3_key_sums'\] or an "
                                         r"InnerMaximisation, got 'ball'"):
        planning.evi_planner("ball")


def test_planner_factories_return_the_same_object_for_the_same_options():
    assert planning.incremental_planner() is planning.incremental_planner()
    assert planning.exact_planner(max_steps=7) is planning.exact_planner(max_steps=7)
    assert jm.get_agent("ucb") == jm.get_agent("ucb", planner="incremental")
    assert jm.get_agent("ucb", planner="full").config.planner is planning.exact_planner()


def test_status_values_are_shared_by_every_solver():
    assert [s.name for s in planning.Status] == ["CONVERGED", "MAX_STEPS", "SINGULAR",
                                                 "MULTICHAIN"]
    assert [int(s) for s in planning.Status] == [0, 1, 2, 3]
