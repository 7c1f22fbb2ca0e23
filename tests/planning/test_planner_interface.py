"""The planning package's interface: planners as (init, update), one Solution and Status,
the shared joint law and reward check, and the deprecated names kept for one release."""

import importlib
import itertools
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import planning
from jaxmdp.analysis.lower_bound import bernoulli_joint, check_unit_rewards


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
        # The EVI names of the same fields.
        assert solution.u is solution.bias and solution.gain_estimate is solution.gain
        assert solution.q_opt.shape == mdp.P.shape and float(solution.span) < 1e-10


def test_evi_planner_rejects_an_unknown_ball():
    with pytest.raises(ValueError, match=r"ball must be one of \['l1', 'kl'\], got 'box'"):
        planning.evi_planner("box")


def test_planner_factories_return_the_same_object_for_the_same_options():
    assert planning.incremental_planner() is planning.incremental_planner()
    assert planning.exact_planner(max_steps=7) is planning.exact_planner(max_steps=7)
    assert jm.get_agent("ucb") == jm.get_agent("ucb", planner="incremental")
    assert jm.get_agent("ucb", planner="full").config.planner is planning.exact_planner()


def test_status_values_are_shared_by_every_solver():
    assert [s.name for s in planning.Status] == ["CONVERGED", "MAX_STEPS", "SINGULAR",
                                                 "MULTICHAIN"]
    assert [int(s) for s in planning.Status] == [0, 1, 2, 3]


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


def test_simulate_planner_keyword_is_deprecated_and_forwarded():
    mdp = jm.envs.make("paper-mdp")
    with pytest.warns(DeprecationWarning, match="configure the agent instead"):
        old = jm.simulate(mdp, "ucb", 30, 2, seed=1, planner="full", refresh_every=5,
                          progress=False)
    new = jm.simulate(mdp, jm.get_agent("ucb", planner="full", refresh_every=5), 30, 2,
                      seed=1, progress=False)
    np.testing.assert_array_equal(old.pseudo_regret, new.pseudo_regret)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        jm.simulate(mdp, "ucb", 30, 2, planer="full", progress=False)


@pytest.mark.parametrize("module", ["jaxmdp.incremental", "jaxmdp.estimators",
                                    "jaxmdp.sensitivity", "jaxmdp.examples",
                                    "jaxmdp.agents.planner"])
def test_old_modules_are_deprecated_aliases(module):
    sys.modules.pop(module, None)
    with pytest.warns(DeprecationWarning, match=f"{module} is deprecated"):
        importlib.import_module(module)


def test_old_evi_module_warns_on_use_and_keeps_jm_evi_the_function():
    import jaxmdp.evi  # noqa: F401

    assert callable(jm.evi) and jm.evi is planning.evi
    with pytest.warns(DeprecationWarning, match="jaxmdp.evi is deprecated"):
        from jaxmdp.evi import evi
    assert evi is planning.evi


def test_old_public_names_still_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from jaxmdp.evi import EVIResult, EVIStatus
        from jaxmdp.planning import PlanningSolution, gaps

    assert jm.PlanningSolution is jm.EVIResult is EVIResult is PlanningSolution
    assert jm.PlanningStatus is jm.EVIStatus is EVIStatus is planning.Status
    mdp = jm.envs.make("paper-mdp")
    np.testing.assert_array_equal(gaps(mdp), jm.gaps(mdp))
    assert jm.examples.paper_mdp is jm.envs.paper_mdp


def test_env_spec_initial_round_is_the_first_played_round():
    mdp = jm.envs.make("paper-mdp")
    seen = []

    def init(key, spec, config):
        seen.append(spec.initial_round)
        return ()

    def step(key, state, obs, spec, config):
        return jnp.int32(0), state

    agent = jm.Agent("first-action", init, step)
    counts = np.zeros((3, 2, 3), int)
    counts[0, 0, 1] = 4
    jm.simulate(mdp, agent, 3, 1, initial_counts=counts, progress=False)
    jm.simulate(mdp, agent, 3, 1, progress=False)
    assert seen == [5, 1]
