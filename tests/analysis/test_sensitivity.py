"""Tests for gradient-based sensitivity analysis (jaxmdp.sensitivity).

Every gradient is checked against central finite differences in float64, along
directions that keep each transition row on the simplex (``e_i - e_j`` within a row, so
the perturbed rows stay positive and sum to 1), to 1e-5 relative; the gain gradient also
against the stationary-distribution formula, and ``K`` and ``d_R`` of the lower bound
against a scipy solution of ``kinf``'s dual (paper, Theorem 4). The indices are
differentiated by finite differences of NumPy/SciPy references of ``kl_ucb``, ``kinf``
and ``l1_ucb`` (DESIGN.md's one-unknown forms, solved by ``brentq``), independent of the
JAX solvers. Compile time dominates, so each function is compiled as few times as
possible: one batched call (``jit`` of ``vmap``) evaluates every perturbed MDP at once
and is also the ``jit``/``vmap`` test.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import jaxmdp as jm

EPS = 1e-5  # finite-difference step
RTOL = 1e-5  # relative agreement required


def _random_mdp(seed):
    """A fixed positive 3-state, 2-action MDP with action 1 of state 2 inadmissible."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(3) * 2.0, size=(3, 2))
    R = rng.uniform(size=(3, 2))
    mask = np.ones((3, 2), bool)
    mask[2, 1] = False
    return jm.MDP(P, R, mask)


def _simplex_directions(num_states, num_actions, mask):
    """Zero-sum unit directions e_i - e_j within each admissible row of P, [K, S, A, S]."""
    out = []
    for x, a in itertools.product(range(num_states), range(num_actions)):
        if not mask[x, a]:
            continue
        for i, j in itertools.combinations(range(num_states), 2):
            d = np.zeros((num_states, num_actions, num_states))
            d[x, a, i], d[x, a, j] = 1.0, -1.0
            out.append(d)
    return np.stack(out)


def _reward_directions(num_states, num_actions, mask):
    out = []
    for x, a in zip(*np.nonzero(mask), strict=True):
        d = np.zeros((num_states, num_actions))
        d[x, a] = 1.0
        out.append(d)
    return np.stack(out)


def _perturbations(mdp):
    """The MDP at +-EPS along every P and R direction, as lists of (P, R) pairs."""
    P, R, mask = (np.asarray(a) for a in (mdp.P, mdp.R, mdp.mask))
    dirs_P = _simplex_directions(*R.shape, mask)
    dirs_R = _reward_directions(*R.shape, mask)
    Ps = [P + s * EPS * d for d in dirs_P for s in (1, -1)]
    Ps += [P] * (2 * len(dirs_R))
    Rs = [R] * (2 * len(dirs_P))
    Rs += [R + s * EPS * d for d in dirs_R for s in (1, -1)]
    return Ps, Rs, dirs_P, dirs_R


def _check_fd(values, dirs_P, dirs_R, d_P, d_R):
    """Central differences of ``values`` (ordered as _perturbations) vs the gradients."""
    values = np.asarray(values).reshape(-1, 2)
    fd = (values[:, 0] - values[:, 1]) / (2 * EPS)
    analytic = np.concatenate([np.tensordot(dirs_P, np.asarray(d_P), axes=3),
                               np.tensordot(dirs_R, np.asarray(d_R), axes=2)])
    scale = np.max(np.abs(analytic))
    np.testing.assert_allclose(fd, analytic, rtol=RTOL, atol=RTOL * scale)


@pytest.fixture(scope="module")
def mdps():
    return [jm.envs.paper_mdp(), _random_mdp(9), _random_mdp(10)]


def _batch(mdps):
    """Every MDP, then each MDP's perturbations: one batched program for everything."""
    Ps, Rs, masks, slices = [], [], [], []
    for mdp in mdps:
        Ps.append(np.asarray(mdp.P))
        Rs.append(np.asarray(mdp.R))
        masks.append(np.asarray(mdp.mask))
    for mdp in mdps:
        P_list, R_list, dirs_P, dirs_R = _perturbations(mdp)
        slices.append((len(Ps), len(Ps) + len(P_list), dirs_P, dirs_R))
        Ps += P_list
        Rs += R_list
        masks += [np.asarray(mdp.mask)] * len(P_list)
    batch = jm.MDP.unchecked(jnp.asarray(np.stack(Ps)), jnp.asarray(np.stack(Rs)),
                             jnp.asarray(np.stack(masks)))
    return batch, slices


@pytest.fixture(scope="module")
def lower_bound_batch(mdps):
    batch, slices = _batch(mdps)
    return jax.jit(jax.vmap(jm.lower_bound_sensitivity))(batch), slices


@pytest.fixture(scope="module")
def gain_batch(mdps):
    batch, slices = _batch(mdps)
    return jax.jit(jax.vmap(jm.gain_sensitivity))(batch), slices


# ---------------------------------------------------------------------------------------
# NumPy/SciPy references of the three indices (one instance each).

_XTOL = 1e-15
_RTOL = 4 * np.finfo(float).eps


def _kl_ucb_ref(p, v, delta):
    """C = eta - c with h(eta) = sum p ln(eta - v) + ln sum p/(eta - v) = delta, eta > V."""
    V = v.max()

    def h(eta):
        return p @ np.log(eta - v) + np.log(p @ (1 / (eta - v))) - delta

    lo, hi = V + 1e-12, V + 1.0
    while h(hi) > 0:
        hi = V + 2 * (hi - V)
    eta = scipy.optimize.brentq(h, lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=500)
    return eta - 1 / (p @ (1 / (eta - v)))


def _kinf_ref(p, v, rho):
    """(D, lam): lam in (0, 1/(V - rho)) solves sum p (rho - v)/(1 + lam (rho - v)) = 0."""
    V, mu = v.max(), p @ v
    if rho <= mu:
        return 0.0, 0.0
    if rho >= V:
        return np.inf, 0.0

    def g(lam):
        return p @ ((rho - v) / (1 + lam * (rho - v)))

    lam = scipy.optimize.brentq(g, 0.0, (1 - 1e-15) / (V - rho), xtol=_XTOL * 1e-3,
                                rtol=_RTOL, maxiter=500)
    return p @ np.log1p(lam * (rho - v)), lam


def _l1_ucb_ref(p, v, d):
    """Move min(d/2, 1 - p_best) of mass to an argmax-v state from the lowest-v states."""
    q = p.astype(float).copy()
    best = int(np.argmax(v))
    move = min(d / 2, 1 - q[best])
    q[best] += move
    for y in np.argsort(v):
        if y == best:
            continue
        taken = min(move, q[y])
        q[y] -= taken
        move -= taken
    return q @ v


# ---------------------------------------------------------------------------------------
# Lower bound.


def test_lower_bound_gradient_is_tangent(mdps):
    for mdp in mdps:
        sens = jm.lower_bound_sensitivity(mdp)
        assert float(sens.constant) > 0
        np.testing.assert_allclose(np.sum(sens.d_P, axis=-1), 0.0, atol=1e-13)
        mask = np.asarray(mdp.mask)
        assert np.all(np.asarray(sens.d_P)[~mask] == 0) and np.all(np.asarray(sens.d_R)[~mask] == 0)


def test_lower_bound_finite_differences(lower_bound_batch, mdps):
    batched, slices = lower_bound_batch
    for mdp, (lo, hi, dirs_P, dirs_R) in zip(mdps, slices, strict=True):
        sens = jm.lower_bound_sensitivity(mdp)
        # The perturbations keep the policy, so the constant is smooth along them.
        assert np.all(np.asarray(batched.policy[lo:hi]) == np.asarray(sens.policy))
        _check_fd(batched.constant[lo:hi], dirs_P, dirs_R, sens.d_P, sens.d_R)


def test_lower_bound_reward_gradient_closed_form(mdps):
    # For a suboptimal pair, r_{x,a} enters only its own term Delta/K (the policy, gain
    # and bias do not depend on it): d/dr (Delta/K) = -1/K + Delta lam / K^2, lam = dK/drho.
    for mdp in mdps:
        sens = jm.lower_bound_sensitivity(mdp)
        gain_sens = jm.gain_sensitivity(mdp)
        P, R = np.asarray(mdp.P), np.asarray(mdp.R)
        gain, bias = float(gain_sens.gain), np.asarray(gain_sens.bias)
        gaps = np.asarray(sens.gaps)
        checked = 0
        for x, a in zip(*np.nonzero((gaps > 0) & np.isfinite(gaps)), strict=True):
            K, lam = _kinf_ref(P[x, a], bias, gain + bias[x] - R[x, a])
            np.testing.assert_allclose(sens.K[x, a], K, rtol=1e-12)
            if np.isfinite(K):
                expected = -1 / K + gaps[x, a] * lam / K**2
                np.testing.assert_allclose(sens.d_R[x, a], expected, rtol=1e-10)
                checked += 1
        assert checked > 0


def test_lower_bound_vmap_matches_single(lower_bound_batch, mdps):
    batched, _ = lower_bound_batch
    for b, mdp in enumerate(mdps):
        single = jm.lower_bound_sensitivity(mdp)
        for field in single._fields:
            np.testing.assert_allclose(getattr(batched, field)[b], getattr(single, field),
                                       rtol=1e-12, atol=1e-14, err_msg=field)


# ---------------------------------------------------------------------------------------
# Gain.


def _stationary(P_pi):
    S = P_pi.shape[0]
    system = np.vstack([(np.eye(S) - P_pi).T, np.ones(S)])
    return np.linalg.lstsq(system, np.r_[np.zeros(S), 1.0], rcond=None)[0]


def test_gain_gradient_closed_form(mdps):
    for mdp in mdps:
        sens = jm.gain_sensitivity(mdp)
        S = mdp.num_states
        policy = np.asarray(sens.policy)
        mu = _stationary(np.asarray(mdp.P)[np.arange(S), policy])
        d_R = np.zeros((S, mdp.num_actions))
        d_R[np.arange(S), policy] = mu
        bias = np.asarray(sens.bias)
        d_P = d_R[:, :, None] * (bias - bias.mean())[None, None, :]
        np.testing.assert_allclose(sens.d_R, d_R, atol=1e-13)
        np.testing.assert_allclose(sens.d_P, d_P, atol=1e-13)
        np.testing.assert_allclose(sens.gain, jm.solve_average_reward(mdp)[0], rtol=1e-14)


def test_gain_finite_differences_and_vmap(gain_batch, mdps):
    batched, slices = gain_batch
    for b, (mdp, (lo, hi, dirs_P, dirs_R)) in enumerate(zip(mdps, slices, strict=True)):
        sens = jm.gain_sensitivity(mdp)
        _check_fd(batched.gain[lo:hi], dirs_P, dirs_R, sens.d_P, sens.d_R)
        for field in sens._fields:
            np.testing.assert_allclose(getattr(batched, field)[b], getattr(sens, field),
                                       rtol=1e-12, atol=1e-14, err_msg=field)


# ---------------------------------------------------------------------------------------
# Indices at one state of a learning run.

# (counts scale, state, round): the paper's rigged counts times a factor, at each state.
INDEX_CASES = [(5, 0, 200), (5, 1, 200), (5, 2, 3000)]


def _index_formula(agent, p_hat, bias, level, rewards, visits, best):
    """The paper's index of every action from the references: ``[A, S], [S], [A] -> [A]``."""
    A = rewards.shape[0]
    if agent == "ucb":
        return rewards + np.array([_kl_ucb_ref(p_hat[a], bias, level[a]) for a in range(A)])
    if agent == "olp":
        return rewards + np.array([_l1_ucb_ref(p_hat[a], bias, level[a]) for a in range(A)])
    target = rewards[best] + p_hat[best] @ bias
    out = np.full(A, -np.inf)
    for a in range(A):
        if a != best:
            out[a] = level[a] / _kinf_ref(p_hat[a], bias, target - rewards[a])[0] - visits[a]
    return out


def _level(agent, log_t, visits):
    if agent == "ucb":
        return log_t / visits
    if agent == "olp":
        return np.sqrt(2 * log_t / visits)
    return np.full(visits.shape, log_t)


@pytest.mark.parametrize("agent", ["ucb", "olp", "dmed"])
def test_index_finite_differences(agent):
    mdp = jm.envs.paper_mdp()
    rigged = np.asarray(jm.envs.rigged_counts())
    A, S = mdp.num_actions, mdp.num_states
    sensitivity = jm.index_sensitivity
    if agent == "ucb":  # also the jit test: counts, x and t traced
        sensitivity = jax.jit(jm.index_sensitivity, static_argnums=3)
    for scale, x, t in INDEX_CASES:
        counts = rigged * scale
        sens = sensitivity(counts, x, t, agent, mdp)
        p_hat, bias = np.asarray(sens.p_hat), np.asarray(sens.bias)
        np.testing.assert_allclose(p_hat, (counts[x] + 1) / (counts[x].sum(-1, keepdims=True) + S))
        np.testing.assert_allclose(bias, jm.estimate(counts, mdp).bias, rtol=1e-14)
        rewards = np.asarray(mdp.R[x])
        visits = counts[x].sum(-1).astype(float)
        level = _level(agent, np.log(t), visits)
        best = int(np.argmax(rewards + p_hat @ bias))
        np.testing.assert_allclose(sens.level, level, rtol=1e-14)

        # Directions: e_i - e_j in each row, unit vectors in bias, in each level, in ln t.
        points = []
        for b in range(A):
            for i, j in itertools.combinations(range(S), 2):
                d = np.zeros((A, S))
                d[b, i], d[b, j] = EPS, -EPS
                points += [(p_hat + s * d, bias, level) for s in (1, -1)]
        for y in range(S):
            points += [(p_hat, bias + s * EPS * np.eye(S)[y], level) for s in (1, -1)]
        for a in range(A):
            points += [(p_hat, bias, level + s * EPS * np.eye(A)[a]) for s in (1, -1)]
        points += [(p_hat, bias, _level(agent, np.log(t) + s * EPS, visits)) for s in (1, -1)]
        points.append((p_hat, bias, level))
        values = np.stack([_index_formula(agent, *point, rewards, visits, best)
                           for point in points])
        np.testing.assert_allclose(sens.index, values[-1], rtol=1e-12)
        with np.errstate(invalid="ignore"):  # inf - inf in a*'s column (no discrepancy)
            fd = (values[:-1:2] - values[1::2]) / (2 * EPS)  # [directions, A]

        analytic = []
        for b in range(A):
            for i, j in itertools.combinations(range(S), 2):
                analytic.append(sens.d_p_hat[:, b, i] - sens.d_p_hat[:, b, j])
        analytic += [sens.d_bias[:, y] for y in range(S)]
        analytic += [np.eye(A)[a] * sens.d_level for a in range(A)]
        analytic.append(sens.d_log_t)
        analytic = np.stack([np.asarray(g) for g in analytic])
        finite = np.isfinite(np.asarray(sens.index))
        assert finite.any()
        scale_ = np.max(np.abs(analytic[:, finite]))
        np.testing.assert_allclose(fd[:, finite], analytic[:, finite], rtol=RTOL,
                                   atol=RTOL * scale_, err_msg=f"{agent} x={x} t={t}")
        assert np.all(np.asarray(sens.d_p_hat)[~finite] == 0)
        d_p_hat = np.asarray(sens.d_p_hat)
        np.testing.assert_allclose(d_p_hat.sum(-1), 0.0, atol=1e-13 * np.abs(d_p_hat).max())


def test_index_action_is_the_agents_choice():
    # MDP-DMED's rule is the intricate one (a*, challengers, untried first); MDP-UCB and OLP
    # play the argmax of the index, checked against the paper's formulas above.
    agent = "dmed"
    mdp = jm.envs.paper_mdp()
    rigged = np.asarray(jm.envs.rigged_counts())
    untried = rigged.copy()
    untried[1, 0] = 0  # action 0 never tried in state 1
    from jaxmdp.agents.paper import dmed_select_action

    select = jax.jit(dmed_select_action)
    for counts, x, t in [(rigged * 5, 0, 200), (rigged * 5, 1, 200), (rigged, 2, 3000),
                         (untried, 1, 51)]:
        sens = jm.index_sensitivity(counts, x, t, agent, mdp)
        est = jm.estimate(counts, mdp)
        expected = select(jax.random.key(0), t, x, jnp.asarray(counts), est)
        assert int(sens.action) == int(expected), (agent, x, t)
        assert not np.any(np.isnan(np.asarray(sens.d_p_hat)))


def test_index_untried_action():
    mdp = jm.envs.paper_mdp()
    counts = np.asarray(jm.envs.rigged_counts()).copy()
    counts[1, 0] = 0  # action a1 never tried in state x2
    sens = jm.index_sensitivity(counts, 1, 51, "olp", mdp)
    assert sens.index[0] == np.inf and sens.level[0] == np.inf and int(sens.action) == 0
    assert np.all(np.asarray(sens.d_p_hat[0]) == 0) and np.all(np.asarray(sens.d_bias[0]) == 0)
    assert np.isfinite(sens.index[1]) and np.any(np.asarray(sens.d_bias[1]) != 0)


# ---------------------------------------------------------------------------------------
# Input validation.


def test_invalid_inputs():
    mdp = jm.envs.paper_mdp()
    counts = jm.envs.rigged_counts()
    with pytest.raises(ValueError, match="mdp"):
        jm.lower_bound_sensitivity(mdp.P)
    with pytest.raises(ValueError, match="got P of shape"):
        jm.gain_sensitivity(jm.MDP.unchecked(mdp.P[None], mdp.R[None]))
    with pytest.raises(ValueError, match="agent"):
        jm.index_sensitivity(counts, 0, 10, "ps", mdp)
    with pytest.raises(ValueError, match="counts"):
        jm.index_sensitivity(counts[:2], 0, 10, "ucb", mdp)
    with pytest.raises(ValueError, match="x must"):
        jm.index_sensitivity(counts, 3, 10, "ucb", mdp)
    with pytest.raises(ValueError, match="t must"):
        jm.index_sensitivity(counts, 0, 0, "ucb", mdp)
