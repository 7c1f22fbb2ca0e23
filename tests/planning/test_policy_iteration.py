"""Tests for average-reward planning: policy iteration, gradients, gaps, lower bound.

References are independent of the solver: enumeration of deterministic policies with a
stationary-distribution / deviation-matrix evaluation, relative value iteration with
its gain bounds, scipy's ``linprog`` on the average-reward LP, central finite
differences, and scipy's 1-D maximisation of the dual of ``kinf``.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import jaxmdp as jm

# ---------------------------------------------------------------------------------------
# Independent references (numpy / scipy).


def _evaluate_reference(P, R, policy):
    """Gain from the stationary distribution, bias from the deviation matrix."""
    S = P.shape[0]
    P_pi = P[np.arange(S), policy]
    r_pi = R[np.arange(S), policy]
    # Stationary distribution: mu (I - P_pi) = 0, sum(mu) = 1 (least squares, exact here).
    system = np.vstack([(np.eye(S) - P_pi).T, np.ones(S)])
    mu = np.linalg.lstsq(system, np.r_[np.zeros(S), 1.0], rcond=None)[0]
    gain = mu @ r_pi
    # Bias: (I - P_pi + 1 mu) h = r_pi - gain, then shifted so that h[0] = 0.
    h = np.linalg.solve(np.eye(S) - P_pi + np.outer(np.ones(S), mu), r_pi - gain)
    return gain, h - h[0]


def _enumerate_reference(P, R, mask=None):
    """Best deterministic policy by enumeration (unichain MDPs)."""
    S, A = R.shape
    mask = np.ones((S, A), bool) if mask is None else mask
    best = None
    for policy in itertools.product(*[np.flatnonzero(mask[s]) for s in range(S)]):
        gain, bias = _evaluate_reference(P, R, np.array(policy))
        if best is None or gain > best[0] + 1e-13:
            best = (gain, bias, np.array(policy))
    return best


def _rvi_reference(P, R, mask, tol=1e-13, max_iter=100_000):
    """Relative value iteration with the gain bracket min(Tw - w) <= gain <= max(Tw - w)."""
    w = np.zeros(P.shape[0])
    for _ in range(max_iter):
        tw = np.where(mask, R + P @ w, -np.inf).max(axis=1)
        diff = tw - w
        lo, hi = diff.min(), diff.max()
        w = tw - tw[0]
        if hi - lo < tol:
            return 0.5 * (lo + hi), hi - lo
    raise AssertionError(f"relative value iteration did not converge: bracket {hi - lo}")


def _lp_reference_gain(P, R, mask):
    """Average-reward dual LP over occupation measures x[s, a] >= 0 (HiGHS)."""
    S, A = R.shape
    pairs = [(s, a) for s in range(S) for a in range(A) if mask[s, a]]
    c = -np.array([R[s, a] for s, a in pairs])
    A_eq = np.zeros((S + 1, len(pairs)))
    for k, (s, a) in enumerate(pairs):
        A_eq[s, k] += 1.0
        A_eq[:S, k] -= P[s, a]
        A_eq[S, k] = 1.0
    b_eq = np.r_[np.zeros(S), 1.0]
    res = scipy.optimize.linprog(
        c,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return -res.fun


def _multichain_lp_reference_gains(P, R, mask):
    """Optimal gain vector of any MDP: Puterman's (1994, section 9.3) multichain primal LP.

    minimise sum_s g_s / S subject to g_s >= sum_y p(y|s,a) g_y and
    g_s + h_s >= r(s,a) + sum_y p(y|s,a) h_y for every admissible (s, a); g, h free.
    """
    S, _ = R.shape
    rows, rhs = [], []
    for s, a in zip(*np.nonzero(mask), strict=True):
        first = np.zeros(2 * S)
        first[:S] = P[s, a]
        first[s] -= 1.0
        second = np.zeros(2 * S)
        second[S:] = P[s, a]
        second[S + s] -= 1.0
        second[s] -= 1.0
        rows += [first, second]
        rhs += [0.0, -R[s, a]]
    res = scipy.optimize.linprog(
        np.r_[np.full(S, 1.0 / S), np.zeros(S)],
        A_ub=np.array(rows),
        b_ub=np.array(rhs),
        bounds=(None, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return res.x[:S]


def _policy_gains_reference(P, R, policy):
    """Gain vector of any policy: P* r with P* = lim (I/2 + P_pi/2)^n by squaring."""
    S = P.shape[0]
    P_pi = P[np.arange(S), policy]
    limit = 0.5 * (np.eye(S) + P_pi)
    for _ in range(60):  # (I/2 + P_pi/2)^(2^60), rows renormalised against drift
        limit = limit @ limit
        limit /= limit.sum(axis=1, keepdims=True)
    return limit @ R[np.arange(S), policy]


def _rvi_aperiodic_reference(P, R, mask):
    """Relative value iteration on the aperiodicity transform I/2 + P/2 (same gain)."""
    S = P.shape[0]
    return _rvi_reference(0.5 * (P + np.eye(S)[:, None, :]), R, mask)


def _optimality_residual(P, R, mask, gain, bias):
    """max_x |max_a (r + P v) - gain - v_x|: zero iff (gain, bias) solve eq. (1)."""
    best = np.where(mask, R + P @ bias, -np.inf).max(axis=1)
    return np.max(np.abs(best - gain - bias))


def _kinf_primal_reference(p, v, rho):
    """kinf by SLSQP on the primal: min KL(p||q) over the simplex with q.v >= rho.

    q may put mass where p is 0 (KL(p||q) stays finite), as the lower bound requires.
    """
    if rho <= p @ v:
        return 0.0
    if rho >= v.max():
        return np.inf
    support = p > 0

    def kl(q):
        return np.sum(p[support] * np.log(p[support] / q[support]))

    start = 0.01 * p
    start[np.argmax(v)] += 0.99  # feasible whenever rho < 0.01 p.v + 0.99 max v
    res = scipy.optimize.minimize(
        kl,
        start,
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * p.size,
        constraints=[
            {"type": "eq", "fun": lambda q: np.sum(q) - 1.0},
            {"type": "ineq", "fun": lambda q: q @ v - rho},
        ],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    q = res.x
    assert abs(q.sum() - 1) < 1e-9 and q @ v >= rho - 1e-9, res.message  # feasible
    return res.fun


def _kinf_reference(p, v, rho):
    """kinf by its 1-D dual: max over 0 <= lam <= 1/(V - rho) of sum p ln(1 - lam (v - rho))."""
    V = v.max()
    if rho <= p @ v:
        return 0.0
    if rho >= V:
        return np.inf
    upper = 1.0 / (V - rho)
    support = p > 0

    def negative_dual(lam):
        return -np.sum(p[support] * np.log1p(-lam * (v[support] - rho)))

    res = scipy.optimize.minimize_scalar(
        negative_dual, bounds=(0.0, upper), method="bounded", options={"xatol": 1e-14}
    )
    return -res.fun


def _dirichlet_mdp(rng, S, A):
    P = rng.exponential(size=(S, A, S))
    return P / P.sum(-1, keepdims=True), rng.uniform(size=(S, A))


def _garnet_mdp(rng, S, A, b):
    P = np.zeros((S, A, S))
    for s, a in itertools.product(range(S), range(A)):
        support = rng.choice(S, size=b, replace=False)
        P[s, a, support] = rng.dirichlet(np.ones(b))
    return P, rng.uniform(size=(S, A))


def _pad(P, R, S_max, A_max):
    """Embeds an MDP in a larger one: extra actions inadmissible, extra states transient.

    Padded states have one admissible action that moves to state 0 with reward 0; no
    real state can reach them, so gain, optimal actions and bias of the real states are
    unchanged.
    """
    S, A = R.shape
    P_pad = np.zeros((S_max, A_max, S_max))
    R_pad = np.zeros((S_max, A_max))
    mask = np.zeros((S_max, A_max), bool)
    P_pad[:S, :A, :S] = P
    R_pad[:S, :A] = R
    mask[:S, :A] = True
    P_pad[S:, 0, 0] = 1.0
    mask[S:, 0] = True
    return P_pad, R_pad, mask


def _paper():
    mdp = jm.envs.paper_mdp()
    return np.array(mdp.P), np.array(mdp.R)


# ---------------------------------------------------------------------------------------
# The paper's example and the rigged counts.


def test_paper_example_matches_enumeration_and_paper():
    P, R = _paper()
    gain, bias, policy = jm.solve_average_reward(jm.envs.paper_mdp())
    ref_gain, ref_bias, ref_policy = _enumerate_reference(P, R)
    np.testing.assert_array_equal(policy, [0, 1, 0])  # (a1, a2, a1) as the paper states
    np.testing.assert_array_equal(ref_policy, [0, 1, 0])
    assert float(bias[0]) == 0.0
    np.testing.assert_allclose(gain, ref_gain, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bias, ref_bias, rtol=0, atol=1e-12)


def test_paper_example_gaps_match_enumeration():
    P, R = _paper()
    ref_gain, ref_bias, ref_policy = _enumerate_reference(P, R)
    ref_gaps = ref_gain + ref_bias[:, None] - R - P @ ref_bias
    delta = jm.gaps(jm.envs.paper_mdp())
    np.testing.assert_allclose(delta, ref_gaps, rtol=0, atol=1e-12)
    assert np.all(np.asarray(delta)[np.arange(3), ref_policy] == 0.0)
    assert np.all(np.asarray(delta)[np.arange(3), 1 - ref_policy] > 0.1)


def test_paper_example_gain_matches_linear_program():
    P, R = _paper()
    gain, _, _ = jm.solve_average_reward(jm.envs.paper_mdp())
    np.testing.assert_allclose(gain, _lp_reference_gain(P, R, np.ones((3, 2), bool)), atol=1e-9)


def test_rigged_counts_give_the_papers_estimated_policy():
    counts = jm.envs.rigged_counts().astype(jnp.float64)
    S = counts.shape[-1]
    P_hat = (counts + 1) / (counts.sum(-1, keepdims=True) + S)
    mdp_hat = jm.MDP(P_hat, jm.envs.paper_mdp().R)
    _, _, policy = jm.solve_average_reward(mdp_hat)
    np.testing.assert_array_equal(policy, [1, 0, 0])  # (a2, a1, a1) as the paper reports
    ref = _enumerate_reference(np.asarray(P_hat), np.asarray(mdp_hat.R))
    np.testing.assert_array_equal(ref[2], [1, 0, 0])


# ---------------------------------------------------------------------------------------
# 200 random MDPs, one vmapped call (padded to a common shape), against RVI and the LP.

_S_MAX, _A_MAX = 50, 5
_NUM_DIRICHLET, _NUM_GARNET = 170, 30


def _random_batch():
    rng = np.random.default_rng(20191105)
    instances = []
    for i in range(_NUM_DIRICHLET + _NUM_GARNET):
        S = 2 + (7 * i) % (_S_MAX - 1)  # 2 ... 50
        A = 1 + i % _A_MAX  # 1 ... 5
        if i < _NUM_DIRICHLET:
            P, R = _dirichlet_mdp(rng, S, A)
        else:
            P, R = _garnet_mdp(rng, S, A, b=min(S, 2 + i % 3))
        instances.append((P, R))
    padded = [_pad(P, R, _S_MAX, _A_MAX) for P, R in instances]
    return instances, tuple(np.stack(x) for x in zip(*padded, strict=True))


def test_two_hundred_random_mdps_match_references():
    instances, (P, R, mask) = _random_batch()
    solve = jax.jit(jax.vmap(lambda P, R, m: jm.policy_iteration(P, R, m)))
    sol = solve(P, R, mask)
    sol = jax.tree.map(np.asarray, sol)
    status, gains, biases, policies = sol.status, sol.gain, sol.bias, sol.policy
    assert np.all(biases[:, 0] == 0)
    assert np.all(np.isfinite(biases))
    # Dense MDPs are unichain: exact, compared with relative value iteration.
    for i in range(_NUM_DIRICHLET):
        P_i, R_i = instances[i]
        assert status[i] == jm.Status.CONVERGED
        ref_gain, bracket = _rvi_reference(P_i, R_i, np.ones(R_i.shape, bool))
        assert abs(gains[i] - ref_gain) < 1e-9, (i, gains[i], ref_gain, bracket)
        S, A = R_i.shape
        # The padding leaves the bias of the real states unchanged.
        policy = policies[i, :S]
        assert np.all(policy < A)
        _, ref_bias = _evaluate_reference(P_i, R_i, policy)
        np.testing.assert_allclose(biases[i, :S], ref_bias, atol=1e-9)
    # Sparse (GARNET) MDPs: every one is solved, whatever its chain structure; the gain
    # matches the multichain LP's optimal gain from state 0 (the padded states are
    # transient to state 0), CONVERGED exactly when that optimal gain vector is constant.
    converged = 0
    for i in range(_NUM_DIRICHLET, _NUM_DIRICHLET + _NUM_GARNET):
        P_i, R_i = instances[i]
        mask_i = np.ones(R_i.shape, bool)
        ref_gains = _multichain_lp_reference_gains(P_i, R_i, mask_i)
        assert abs(gains[i] - ref_gains[0]) < 1e-8, (i, gains[i], ref_gains)
        if np.ptp(ref_gains) < 1e-8:
            assert status[i] == jm.Status.CONVERGED, i
            converged += 1
            ref_gain = _lp_reference_gain(P_i, R_i, mask_i)
            assert abs(gains[i] - ref_gain) < 1e-8, (i, gains[i], ref_gain)
            S = R_i.shape[0]
            residual = _optimality_residual(P_i, R_i, mask_i, gains[i], biases[i, :S])
            assert residual < 1e-9, (i, residual)
        else:
            assert status[i] == jm.Status.MULTICHAIN, i
    assert converged >= _NUM_GARNET // 2


# ---------------------------------------------------------------------------------------
# Warm starts, ties, step limits, singular systems, masks.


def test_warm_start_at_optimum_takes_one_evaluation():
    mdp = jm.envs.paper_mdp()
    cold = jm.policy_iteration(mdp.P, mdp.R, mdp.mask)
    warm = jm.policy_iteration(mdp.P, mdp.R, mdp.mask, init_policy=cold.policy)
    assert int(cold.num_steps) >= 2
    assert int(warm.num_steps) == 1
    assert int(warm.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(warm.policy, cold.policy)
    np.testing.assert_allclose(warm.gain, cold.gain, atol=1e-15)


@pytest.mark.parametrize("offset", [0.0, 1e-15, -1e-15])
def test_ties_keep_current_action_else_lowest_index(offset):
    # Action 1 duplicates action 0 (up to a rounding-level reward offset).
    P, R = _paper()
    P[:, 1] = P[:, 0]
    R[:, 1] = R[:, 0] + offset
    cold = jm.policy_iteration(P, R)
    expected = [1, 1, 1] if offset > 0 else [0, 0, 0]
    np.testing.assert_array_equal(cold.policy, expected)
    for init in ([1, 1, 1], [0, 1, 0], [1, 0, 0]):
        warm = jm.policy_iteration(P, R, init_policy=np.array(init))
        np.testing.assert_array_equal(warm.policy, init)
        assert int(warm.num_steps) == 1
        assert int(warm.status) == jm.Status.CONVERGED


def test_max_steps_returns_last_evaluated_policy():
    P, R = _paper()
    init = np.array([1, 0, 1])
    sol = jm.policy_iteration(P, R, init_policy=init, max_steps=1)
    assert int(sol.status) == jm.Status.MAX_STEPS
    assert int(sol.num_steps) == 1
    np.testing.assert_array_equal(sol.policy, init)
    ref_gain, ref_bias = _evaluate_reference(P, R, init)
    np.testing.assert_allclose(sol.gain, ref_gain, atol=1e-12)
    np.testing.assert_allclose(sol.bias, ref_bias, atol=1e-12)
    full = jm.policy_iteration(P, R, init_policy=init, max_steps=100)
    assert int(full.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(full.policy, [0, 1, 0])


def _two_absorbing_states():
    # States 0 and 1 absorb under both actions; state 2 moves to either. Every policy
    # has two recurrent classes.
    P = np.zeros((3, 2, 3))
    P[0, :, 0] = 1.0
    P[1, :, 1] = 1.0
    P[2, 0, 0] = 1.0
    P[2, 1, 1] = 1.0
    R = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.2]])
    return P, R


def test_multichain_mdp_core_reports_status_multichain():
    # Optimal gain 0 from state 0 and 1 from states 1 and 2: the jitted core returns an
    # optimal policy, the gain from state 0, a finite bias and status MULTICHAIN.
    P, R = _two_absorbing_states()
    sol = jm.policy_iteration(P, R)
    assert int(sol.status) == jm.Status.MULTICHAIN
    assert int(sol.num_steps) == 2  # greedy start (0, 0, 0), then (0, 0, 1)
    np.testing.assert_array_equal(sol.policy, [0, 0, 1])
    assert float(sol.gain) == 0.0
    # The bias of (0, 0, 1) (P* h = 0): h_2 = r - g_2 + h_1 = 0.2 - 1.
    np.testing.assert_allclose(sol.bias, [0.0, 0.0, -0.8], atol=1e-14)
    ref_gains = _multichain_lp_reference_gains(P, R, np.ones((3, 2), bool))
    np.testing.assert_allclose(ref_gains, [0.0, 1.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(_policy_gains_reference(P, R, np.asarray(sol.policy)),
                               ref_gains, atol=1e-9)
    # Under jit the eager check cannot run: the traced result comes back unchecked.
    gain, weighted_bias = _gain_and_weighted_bias(P, R)
    assert float(gain) == 0.0
    np.testing.assert_allclose(weighted_bias, _WEIGHTS[2] * -0.8, atol=1e-14)


def test_multichain_mdp_with_unichain_start_converges_to_optimum():
    # State 0: stay (reward 0) or go to 1; state 1: stay (reward 1) or go to 0;
    # state 2: go to 0 or to 1. "Stay, stay" is multichain; the optimum is to reach 1.
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = 1.0
    P[1, 0, 1] = P[1, 1, 0] = 1.0
    P[2, 0, 0] = P[2, 1, 1] = 1.0
    R = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    cold = jm.policy_iteration(P, R)  # greedy in R: stay, stay, -> multichain, then fixed
    assert int(cold.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(cold.policy, [1, 0, 1])
    np.testing.assert_allclose(cold.gain, 1.0, atol=1e-15)
    np.testing.assert_allclose(cold.bias, [0.0, 1.0, 0.0], atol=1e-15)
    warm = jm.policy_iteration(P, R, init_policy=np.array([1, 0, 1]))
    assert int(warm.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(warm.policy, [1, 0, 1])
    np.testing.assert_allclose(warm.gain, 1.0, atol=1e-15)
    np.testing.assert_allclose(warm.gain, _lp_reference_gain(P, R, np.ones((3, 2), bool)))


def test_mask_restricts_actions_and_gaps_are_inf_on_inadmissible():
    P, R = _paper()
    mask = np.array([[True, True], [True, False], [True, True]])  # forbid a2 in x2
    mdp = jm.MDP(P, R, mask)
    gain, bias, policy = jm.solve_average_reward(mdp)
    ref_gain, ref_bias, ref_policy = _enumerate_reference(P, R, mask)
    np.testing.assert_array_equal(policy, ref_policy)
    np.testing.assert_allclose(gain, ref_gain, atol=1e-12)
    np.testing.assert_allclose(bias, ref_bias, atol=1e-12)
    delta = np.asarray(jm.gaps(mdp))
    assert delta[1, 1] == np.inf and np.all(np.isfinite(delta[mask]))
    bound = jm.regret_lower_bound(mdp)
    assert np.asarray(bound.K)[1, 1] == np.inf and np.isfinite(float(bound.constant))


def test_extra_mask_argument_intersects_and_keeps_empty_rows():
    mdp = jm.envs.paper_mdp()
    P, R = _paper()
    extra = np.array([[True, True], [True, False], [False, False]])
    _, _, policy = jm.solve_average_reward(mdp, mask=extra)
    # Row 2 is empty after restriction, so it keeps mdp.mask (both actions).
    effective = np.array([[True, True], [True, False], [True, True]])
    np.testing.assert_array_equal(policy, _enumerate_reference(P, R, effective)[2])


def test_inadmissible_or_out_of_range_warm_start_is_replaced():
    P, R = _paper()
    mask = np.array([[True, False], [True, True], [True, True]])
    sol = jm.policy_iteration(P, R, mask, init_policy=np.array([1, 7, -1]), max_steps=1)
    # Replaced by the largest-reward admissible action: (a1, a2, a1).
    np.testing.assert_array_equal(sol.policy, [0, 1, 0])


# ---------------------------------------------------------------------------------------
# Transformations and dtypes.


def test_jit_vmap_match_single_solves():
    rng = np.random.default_rng(7)
    batch = [_dirichlet_mdp(rng, 3, 2) for _ in range(8)]
    P = np.stack([b[0] for b in batch])
    R = np.stack([b[1] for b in batch])
    mdps = jm.MDP.unchecked(P, R)
    gain, bias, policy = jax.jit(jax.vmap(jm.solve_average_reward))(mdps)
    for i, (P_i, R_i) in enumerate(batch):
        ref_gain, ref_bias, ref_policy = _enumerate_reference(P_i, R_i)
        np.testing.assert_array_equal(policy[i], ref_policy)
        np.testing.assert_allclose(gain[i], ref_gain, atol=1e-12)
        np.testing.assert_allclose(bias[i], ref_bias, atol=1e-12)


def test_warm_start_inside_scan():
    # The simulator's pattern: re-solve every step, warm-started from the last policy.
    mdp = jm.envs.paper_mdp()

    def step(policy, scale):
        sol = jm.policy_iteration(mdp.P, scale * mdp.R, mdp.mask, init_policy=policy)
        return sol.policy, sol.num_steps

    policy, steps = jax.lax.scan(step, jnp.zeros(3, jnp.int32), jnp.linspace(1.0, 2.0, 5))
    np.testing.assert_array_equal(policy, [0, 1, 0])
    np.testing.assert_array_equal(steps, [2, 1, 1, 1, 1])


def test_float32():
    mdp = jm.envs.paper_mdp(dtype=jnp.float32)
    sol = jm.policy_iteration(mdp.P, mdp.R)
    assert sol.gain.dtype == jnp.float32 and sol.bias.dtype == jnp.float32
    np.testing.assert_array_equal(sol.policy, [0, 1, 0])
    P, R = _paper()
    ref_gain, ref_bias, _ = _enumerate_reference(P, R)
    np.testing.assert_allclose(sol.gain, ref_gain, atol=1e-6)
    np.testing.assert_allclose(sol.bias, ref_bias, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"init_policy": np.zeros(4, int)}, "init_policy"),
        ({"init_policy": np.zeros(3)}, "init_policy"),
        ({"max_steps": 0}, "max_steps"),
        ({"mask": np.ones((2, 2), bool)}, "mask"),
    ],
)
def test_bad_solver_arguments(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        jm.solve_average_reward(jm.envs.paper_mdp(), **kwargs)


def test_solver_rejects_non_mdp():
    P, R = _paper()
    with pytest.raises(ValueError, match=r"\bmdp\b"):
        jm.solve_average_reward((P, R))


# ---------------------------------------------------------------------------------------
# Implicit derivatives of gain and bias.


def _simplex_directions(rng, shape, num):
    """Random perturbations of P with zero row sums (tangent to the simplex)."""
    d = rng.normal(size=(num,) + shape)
    return d - d.mean(-1, keepdims=True)


def _gradient_mdps():
    rng = np.random.default_rng(11)
    return {"paper": _paper(), "random": _dirichlet_mdp(rng, 3, 2)}


_WEIGHTS = np.array([0.3, -1.2, 0.7])


@jax.jit
def _gain_and_weighted_bias(P, R):
    gain, bias, _ = jm.solve_average_reward(jm.MDP.unchecked(P, R))
    return gain, jnp.dot(_WEIGHTS, bias)


# Module level, so every test reuses one compiled program per shape.
_jacobians = jax.jit(jax.jacrev(_gain_and_weighted_bias, argnums=(0, 1)))


@pytest.mark.parametrize("name", ["paper", "random"])
def test_gradients_match_central_differences(name):
    P, R = _gradient_mdps()[name]
    jacobians = _jacobians(P, R)
    rng = np.random.default_rng(5)
    h = 1e-5
    for index in (0, 1):  # gain, then a weighted sum of the bias
        gP, gR = jacobians[index]
        for dP in _simplex_directions(rng, P.shape, 3):
            plus = _gain_and_weighted_bias(P + h * dP, R)[index]
            minus = _gain_and_weighted_bias(P - h * dP, R)[index]
            np.testing.assert_allclose(np.sum(gP * dP), (plus - minus) / (2 * h), atol=1e-6)
        for dR in rng.normal(size=(2,) + R.shape):
            plus = _gain_and_weighted_bias(P, R + h * dR)[index]
            minus = _gain_and_weighted_bias(P, R - h * dR)[index]
            np.testing.assert_allclose(np.sum(gR * dR), (plus - minus) / (2 * h), atol=1e-6)


def test_gradient_of_gain_in_reward_is_stationary_distribution():
    # d gain / d R[x, a] = mu(x) 1{a = policy(x)}: a closed form.
    P, R = _paper()
    _, gR = _jacobians(P, R)[0]
    _, _, policy = _enumerate_reference(P, R)
    P_pi = P[np.arange(3), policy]
    system = np.vstack([(np.eye(3) - P_pi).T, np.ones(3)])
    mu = np.linalg.lstsq(system, np.r_[np.zeros(3), 1.0], rcond=None)[0]
    expected = np.zeros((3, 2))
    expected[np.arange(3), policy] = mu
    np.testing.assert_allclose(gR, expected, atol=1e-12)


def test_jvp_matches_vjp():
    P, R = _paper()
    rng = np.random.default_rng(3)
    dP = _simplex_directions(rng, P.shape, 1)[0]
    dR = rng.normal(size=R.shape)
    _, tangents = jax.jit(lambda P, R, dP, dR: jax.jvp(_gain_and_weighted_bias, (P, R), (dP, dR)))(
        P, R, dP, dR
    )
    for (gP, gR), tangent in zip(_jacobians(P, R), tangents, strict=True):
        np.testing.assert_allclose(tangent, np.sum(gP * dP) + np.sum(gR * dR), atol=1e-12)


def test_multichain_gradients_are_zero_not_nan():
    P, R = _two_absorbing_states()
    for gP, gR in _jacobians(P, R):
        assert np.all(np.asarray(gP) == 0) and np.all(np.asarray(gR) == 0)


# ---------------------------------------------------------------------------------------
# Regret lower bound.


@pytest.mark.parametrize("name", ["paper", "random"])
def test_regret_lower_bound_matches_reference(name):
    P, R = _gradient_mdps()[name]
    bound = jm.regret_lower_bound(jm.MDP(P, R))
    gain, bias, policy = _enumerate_reference(P, R)
    ref_gaps = gain + bias[:, None] - R - P @ bias
    np.testing.assert_allclose(bound.gaps, ref_gaps, atol=1e-12)
    K = np.asarray(bound.K)
    expected_constant = 0.0
    for x, a in itertools.product(range(3), range(2)):
        if a == policy[x]:
            assert K[x, a] == 0.0
            continue
        ref_K = _kinf_reference(P[x, a], bias, gain + bias[x] - R[x, a])
        if np.isinf(ref_K):
            assert K[x, a] == np.inf
        else:
            np.testing.assert_allclose(K[x, a], ref_K, rtol=1e-8)
            expected_constant += ref_gaps[x, a] / ref_K
    np.testing.assert_allclose(bound.constant, expected_constant, rtol=1e-8)


def test_paper_lower_bound_has_an_infinite_K_pair():
    # In the paper's example a2 in x3 can never become optimal by changing p^{a2}_{x3}
    # alone: its level is above max v, so K = +inf and the pair contributes 0.
    bound = jm.regret_lower_bound(jm.envs.paper_mdp())
    assert np.asarray(bound.K)[2, 1] == np.inf
    assert np.isfinite(float(bound.constant)) and float(bound.constant) > 0


# ---------------------------------------------------------------------------------------
# Communicating MDPs whose policies may be multichain (zero transitions), and multichain
# MDPs (issue 13): multichain policy iteration after a singular evaluation.


def _stay_or_switch():
    """Two states; in each "stay" (rewards 0.5 and 0.6) or "switch" (reward 0)."""
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 1] = P[1, 1, 0] = 1.0
    return P, np.array([[0.5, 0.0], [0.6, 0.0]])


@pytest.mark.parametrize("init", [None, (0, 0), (0, 1), (1, 0), (1, 1)])
def test_stay_or_switch_is_solved_exactly_from_every_start(init):
    # "Stay, stay" (the reward-greedy start) has two recurrent classes; the optimum is
    # to switch in state 0 and stay in state 1: gain 0.6, bias (0, 0.6).
    P, R = _stay_or_switch()
    init_policy = None if init is None else np.array(init)
    sol = jm.policy_iteration(P, R, init_policy=init_policy)
    assert int(sol.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(sol.policy, [1, 0])
    np.testing.assert_allclose(sol.gain, 0.6, rtol=0, atol=1e-15)
    np.testing.assert_allclose(sol.bias, [0.0, 0.6], rtol=0, atol=1e-15)
    gain, bias, policy = jm.solve_average_reward(jm.MDP(P, R), init_policy=init_policy)
    np.testing.assert_array_equal(policy, [1, 0])
    np.testing.assert_allclose(gain, _lp_reference_gain(P, R, np.ones((2, 2), bool)),
                               atol=1e-12)
    assert _optimality_residual(P, R, np.ones((2, 2), bool), gain, bias) < 1e-15


def test_stay_or_switch_gaps_and_lower_bound_match_independent_computation():
    P, R = _stay_or_switch()
    bound = jm.regret_lower_bound(jm.MDP(P, R))
    # Gaps: stay in 0 loses 0.6 - 0.5; switch in 1 loses 0.6 + v_1 - 0 - v_0 = 1.2.
    np.testing.assert_allclose(bound.gaps, [[0.1, 0.0], [0.0, 1.2]], atol=1e-14)
    np.testing.assert_allclose(jm.gaps(jm.MDP(P, R)), bound.gaps, rtol=0, atol=0)
    # K(0, stay): p = (1, 0), v = (0, 0.6), level 0.1: q must move mass 1/6 to state 1,
    # where p is 0; KL = ln(6/5). K(1, switch): level 1.2 > max v, so +inf.
    ref_K = _kinf_primal_reference(P[0, 0], np.array([0.0, 0.6]), 0.1)
    np.testing.assert_allclose(ref_K, np.log(1.2), rtol=1e-6)
    K = np.asarray(bound.K)
    np.testing.assert_allclose(K[0, 0], np.log(1.2), rtol=1e-12)
    assert K[1, 1] == np.inf and K[0, 1] == 0 and K[1, 0] == 0
    np.testing.assert_allclose(bound.constant, 0.1 / np.log(1.2), rtol=1e-12)


def _eager_calls():
    return {
        "solve_average_reward": jm.solve_average_reward,
        "gaps": jm.gaps,
        "regret_lower_bound": jm.regret_lower_bound,
        "simulate": lambda mdp: jm.simulate(mdp, "ucb", horizon=10, replications=1, seed=0,
                                            progress=False),
    }


@pytest.mark.parametrize("name", ["solve_average_reward", "gaps", "regret_lower_bound",
                                  "simulate"])
def test_eager_api_raises_on_multichain_mdp(name):
    P, R = _two_absorbing_states()
    with pytest.raises(ValueError, match=r"mdp is multichain.*optimal gain 1 from states "
                       r"\[1, 2\] \(2 states\); 0 from states \[0\] \(1 state\)"):
        _eager_calls()[name](jm.MDP(P, R))


def test_eager_api_names_the_mask_when_it_makes_the_mdp_multichain():
    # With "switch" forbidden in both states, stay-or-switch has two closed classes.
    P, R = _stay_or_switch()
    mask = np.array([[True, False], [True, False]])
    with pytest.raises(ValueError, match=r"with the given mask.*0\.6 from states \[1\]"):
        jm.solve_average_reward(jm.MDP(P, R), mask=mask)


def _grid_mdp(rows, cols, slip, rewards):
    """Grid world: actions stay, up, down, left, right; a move succeeds w.p. 1 - slip and
    otherwise leaves the agent in place (off-grid moves stay). Only "stay" is rewarded,
    so the reward-greedy policy makes every cell absorbing; the MDP is communicating."""
    S = rows * cols
    P = np.zeros((S, 5, S))
    R = np.zeros((S, 5))
    for s in range(S):
        r, c = divmod(s, cols)
        P[s, 0, s] = 1.0
        R[s, 0] = rewards[s]
        for a, (dr, dc) in enumerate([(-1, 0), (1, 0), (0, -1), (0, 1)], start=1):
            rr, cc = r + dr, c + dc
            target = rr * cols + cc if 0 <= rr < rows and 0 <= cc < cols else s
            P[s, a, target] += 1.0 - slip
            P[s, a, s] += slip
    return P, R


def _grid_rewards(S):
    return ((np.arange(S) * 7) % S + 1.0) / S  # distinct, maximum 1 in one cell


# One shape (6 states, 5 actions) for all grids and sparse MDPs: one compilation.
@pytest.mark.parametrize("rows,cols,slip", [(2, 3, 0.0), (2, 3, 0.3), (3, 2, 0.1), (6, 1, 0.5)])
def test_grid_worlds_with_absorbing_policies_match_lp_and_rvi(rows, cols, slip):
    S = rows * cols
    P, R = _grid_mdp(rows, cols, slip, _grid_rewards(S))
    mask = np.ones(R.shape, bool)
    sol = jm.policy_iteration(P, R)
    assert int(sol.status) == jm.Status.CONVERGED
    gain, bias, policy = (np.asarray(x) for x in (sol.gain, sol.bias, sol.policy))
    ref_gain, bracket = _rvi_aperiodic_reference(P, R, mask)
    np.testing.assert_allclose(gain, 1.0, rtol=0, atol=1e-13)
    np.testing.assert_allclose(gain, ref_gain, rtol=0, atol=1e-11)
    np.testing.assert_allclose(gain, _lp_reference_gain(P, R, mask), rtol=0, atol=1e-9)
    assert bias[0] == 0 and _optimality_residual(P, R, mask, gain, bias) < 1e-12
    np.testing.assert_allclose(_policy_gains_reference(P, R, policy), gain, atol=1e-12)
    # The eager API agrees, and the lower bound is finite, positive and matches kinf's
    # dual (a reference independent of jaxmdp) on every suboptimal pair.
    mdp = jm.MDP(P, R)
    np.testing.assert_array_equal(jm.solve_average_reward(mdp)[2], policy)
    bound = jm.regret_lower_bound(mdp)
    ref_gaps = gain + bias[:, None] - R - P @ bias
    np.testing.assert_allclose(bound.gaps, np.where(ref_gaps > 1e-12, ref_gaps, 0), atol=1e-12)
    expected = 0.0
    for x, a in zip(*np.nonzero(np.asarray(bound.gaps) > 0), strict=True):
        ref_K = _kinf_reference(P[x, a], bias, gain + bias[x] - R[x, a])
        if np.isinf(ref_K):
            assert np.asarray(bound.K)[x, a] == np.inf
        else:
            np.testing.assert_allclose(bound.K[x, a], ref_K, rtol=1e-7)
            expected += ref_gaps[x, a] / ref_K
    assert expected > 0
    np.testing.assert_allclose(bound.constant, expected, rtol=1e-7)


def test_grid_lower_bound_matches_primal_kl_minimisation():
    # kinf with zeros in P: q may put mass where P[x, a] is 0. Checked against SLSQP on
    # the primal (KL over the simplex), a method independent of kinf's 1-D dual.
    P, R = _grid_mdp(2, 3, 0.0, _grid_rewards(6))
    bound = jm.regret_lower_bound(jm.MDP(P, R))
    gain, bias, _ = jm.solve_average_reward(jm.MDP(P, R))
    gain, bias = float(gain), np.asarray(bias)
    checked = 0
    for x, a in zip(*np.nonzero(np.asarray(bound.gaps) > 0), strict=True):
        ref_K = _kinf_primal_reference(P[x, a], bias, gain + bias[x] - R[x, a])
        if np.isfinite(ref_K):
            assert np.sum(P[x, a] == 0) == 5  # deterministic rows
            np.testing.assert_allclose(bound.K[x, a], ref_K, rtol=1e-6)
            checked += 1
        else:
            assert bound.K[x, a] == np.inf
    assert checked >= 4


def test_tied_optimal_classes_converge_with_finite_derivatives():
    # States 0 and 2 share the best reward for "stay" (action 0); action 1 moves on
    # cyclically (0 -> 1 -> 2 -> 0) with reward 0. The optimal gain is constant (1), but
    # the returned optimal policy keeps both 0 and 2 absorbing: two recurrent classes.
    # The result is CONVERGED and exact; gain and bias are not differentiable there (a
    # maximum over the tied classes) and their derivatives are documented to be 0.
    P = np.zeros((3, 2, 3))
    P[np.arange(3), 0, np.arange(3)] = 1.0
    P[np.arange(3), 1, (np.arange(3) + 1) % 3] = 1.0
    R = np.array([[1.0, 0.0], [0.5, 0.0], [1.0, 0.0]])
    mask = np.ones(R.shape, bool)
    sol = jm.policy_iteration(P, R)
    assert int(sol.status) == jm.Status.CONVERGED
    np.testing.assert_array_equal(sol.policy, [0, 1, 0])
    np.testing.assert_allclose(sol.gain, 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(sol.bias, [0.0, -1.0, 0.0], rtol=0, atol=1e-14)
    assert _optimality_residual(P, R, mask, float(sol.gain), np.asarray(sol.bias)) < 1e-14
    for gP, gR in _jacobians(P, R):
        assert np.all(np.asarray(gP) == 0) and np.all(np.asarray(gR) == 0)


def _sparse_mdp(seed):
    """Two blocks of 3 states with sparse random rows (1 or 2 next states, zeros
    elsewhere) inside each block; ``seed % 3`` bridges: none (multichain), one-way
    from state 2 to state 3 (multichain or weakly communicating), or both ways."""
    rng = np.random.default_rng(seed)
    S, A, b = 6, 5, 1 + seed % 2
    P = np.zeros((S, A, S))
    for block in (range(3), range(3, 6)):
        P_block, _ = _garnet_mdp(rng, 3, A, b)
        P[block.start:block.stop, :, block.start:block.stop] = P_block
    bridges = [[], [(2, 3)], [(2, 3), (3, 2)]][seed % 3]
    for x, y in bridges:
        P[x, A - 1] = np.eye(S)[y]
    return P, np.round(rng.uniform(size=(S, A)), 2)


_SPARSE_SEEDS = range(12)


def test_sparse_mdps_match_multichain_lp_single_and_vmapped():
    # Randomized but fixed (seeded) structured MDPs with many zero transitions: some are
    # communicating or weakly communicating, some have a start-dependent optimal gain.
    instances = [_sparse_mdp(seed) for seed in _SPARSE_SEEDS]
    P_all, R_all = (np.stack(x) for x in zip(*instances, strict=True))
    batched = jax.jit(jax.vmap(lambda P, R: jm.policy_iteration(P, R)))(P_all, R_all)
    outcomes = []
    for i, (P, R) in enumerate(instances):
        mask = np.ones(R.shape, bool)
        ref_gains = _multichain_lp_reference_gains(P, R, mask)
        sol = jm.policy_iteration(P, R)
        for field in sol._fields[:5]:  # the vmapped batch solves each MDP identically
            np.testing.assert_array_equal(getattr(batched, field)[i], getattr(sol, field))
        policy = np.asarray(sol.policy)
        # The returned policy is optimal from every state, in either case.
        np.testing.assert_allclose(_policy_gains_reference(P, R, policy), ref_gains,
                                   atol=1e-9)
        np.testing.assert_allclose(sol.gain, ref_gains[0], atol=1e-9)
        assert float(sol.bias[0]) == 0.0
        if np.ptp(ref_gains) < 1e-9:
            outcomes.append("constant")
            assert int(sol.status) == jm.Status.CONVERGED, i
            assert _optimality_residual(P, R, mask, float(sol.gain), np.asarray(sol.bias)) < 1e-12
            gain, bias, _ = jm.solve_average_reward(jm.MDP(P, R))
            np.testing.assert_allclose(gain, _rvi_aperiodic_reference(P, R, mask)[0],
                                       atol=1e-10)
        else:
            outcomes.append("multichain")
            assert int(sol.status) == jm.Status.MULTICHAIN, i
            with pytest.raises(ValueError, match="multichain"):
                jm.solve_average_reward(jm.MDP(P, R))
    assert outcomes.count("constant") >= 3 and outcomes.count("multichain") >= 3, outcomes
