"""SCAL, SCAL+, TUCRL and rlexplorer's UCRL: their planners against NumPy transcriptions
of the published Cython loops (RonanFR/UCRL ``ab64d14`` ``rlexplorer/evi/scopt.pyx`` and
``_lpproba.pyx``; ``ecf4acc`` ``UCRL/evi/tevi.pyx`` and ``_max_proba.pyx``; ties to the
lowest index or by the published noise), their warm starts, their sets against the
published formulas, their episode rules and their options; ``ucrl_rlexplorer`` round by
round against the NumPy loop of the published learner (``tests.reference.rlexplorer``)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as scipy_stats

import jaxmdp as jm
from jaxmdp.agents import env_spec
from jaxmdp.agents.ucrl import EpisodeStats
from jaxmdp.planning import (
    BoxBounds,
    ConfidenceSet,
    ModelChange,
    scopt,
    scopt_mixture,
    scopt_noise,
    tevi,
)
from tests.reference import rlexplorer

TAU = 0.9


def _lpproba_bernstein(v, p, beta, reverse):
    """``LPPROBA_bernstein`` (``_lpproba.pyx`` lines 9-32), one pair, the states ordered
    by ``v`` (stable)."""
    return rlexplorer.lp_bernstein(v, p, np.argsort(v, kind="stable"), beta, reverse)


def _isclose(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _numpy_scopt(p, r, beta, u0, epsilon, c, noise=None):
    """``SCOPT.run`` (``scopt.pyx`` lines 171-408), TOP operator, augmented reward,
    relative value iteration, the tie noise ``noise`` (lines 232, 330, 352; ``None``:
    jaxmdp's lowest index, all the weight on the pessimistic action where the two values
    are close); returns ``(u1, greedy, min_action, weight, sweeps, u2 - u2[0])``."""
    S, A = r.shape
    n = np.zeros(A) if noise is None else np.asarray(noise)
    th_c = c / TAU
    u1 = u0 - u0[0]
    sweeps = 0
    while True:
        u3 = np.empty(S)
        greedy = np.zeros(S, int)
        for s in range(S):
            for a in range(A):
                c1 = r[s, a] + TAU * _lpproba_bernstein(u1, p[s, a], beta[s, a], 0) + (
                    1 - TAU) * u1[s]
                if a == 0 or c1 + n[a] > u3[s] + n[greedy[s]]:
                    u3[s], greedy[s] = c1, a
        sweeps += 1
        th = u3.min() + th_c
        u2 = np.minimum(u3, th)
        d = u2 - u1
        if d.max() - d.min() < epsilon:
            break
        u1 = u2 - u2[0]
    min_action = np.zeros(S, int)
    weight = np.zeros(S)
    for s in range(S):
        if u3[s] < th:
            continue
        u_min = None
        for a in range(A):
            c1 = TAU * _lpproba_bernstein(u1, p[s, a], beta[s, a], 1) + (1 - TAU) * u1[s]
            if a == 0 or c1 + n[a] < u_min + n[min_action[s]]:
                u_min, min_action[s] = c1, a
        if _isclose(u_min, u3[s]):
            weight[s] = 1.0 if noise is None else float(
                u_min + n[min_action[s]] > u3[s] + n[greedy[s]])
        elif _isclose(u_min, th):
            weight[s] = 1.0
        elif _isclose(u3[s], th):
            weight[s] = 0.0
        else:
            weight[s] = (u3[s] - th) / (u3[s] - u_min)
    return u1, greedy, min_action, weight, sweeps, u2 - u2[0]


def _model(seed, S=4, A=3):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, (S, A, S)).astype(float)
    n = np.maximum(counts.sum(-1), 1)
    p = np.where(counts.sum(-1, keepdims=True) > 0, counts / n[..., None], 1.0 / S)
    beta = rng.uniform(0.0, 0.4, (S, A, S))
    r = rng.uniform(0.0, 1.0, (S, A))
    return p, r, beta


@pytest.mark.parametrize("seed, c", [(0, 5.0), (1, 0.3), (2, 0.3), (3, 0.05)])
def test_scopt_is_the_published_loop(seed, c):
    p, r, beta = _model(seed)
    u0 = np.random.default_rng(seed + 10).uniform(0, 1, p.shape[0])
    bounds = BoxBounds(np.maximum(p - beta, 0.0), p + beta)
    mask = np.ones(r.shape, bool)
    sol = scopt(p, r, bounds, mask, u0 - u0[0], 1e-4, c, TAU, max_steps=10_000)
    u1, greedy, min_action, weight, sweeps, _ = _numpy_scopt(p, r, beta, u0, 1e-4, c)
    assert int(sol.num_steps) == sweeps
    np.testing.assert_allclose(sol.bias, u1, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(sol.policy, greedy)
    action, w, feasible = scopt_mixture(r, bounds, mask, sol.bias, c, TAU)
    assert bool(feasible)
    np.testing.assert_allclose(w, weight, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.where(weight > 0, action, 0),
                                  np.where(weight > 0, min_action, 0))
    if seed >= 2:  # the cap binds somewhere: some state mixes
        assert np.any((weight > 0) & (weight < 1))


def _box_model(p, r, beta, epsilon):
    S, A = r.shape
    return ConfidenceSet(p, r, BoxBounds(np.maximum(p - beta, 0.0), p + beta),
                         np.ones((S, A), bool), epsilon)


@pytest.mark.parametrize("published_warm_start", [False, True])
def test_scal_warm_start_from_the_end_of_the_last_sweep(published_warm_start):
    """``published_warm_start``: the next episode's ScOpt starts from ``u_2 - u_2(0)`` at
    the end of the last sweep (``scopt.pyx`` lines 175-177, 390-392), else from the values
    that sweep started from."""
    c, epsilon = 0.3, 1e-3
    agent = jm.get_agent("scal", span_constraint=c, published_warm_start=published_warm_start)
    planner = agent.config.planner
    first, second = _model(1), _model(2)
    sol, state = planner.update(planner.init(_box_model(*first, epsilon)),
                                ModelChange(_box_model(*first, epsilon)))
    u1, _, _, _, sweeps, end = _numpy_scopt(*first, np.zeros(4), epsilon, c)
    assert int(sol.num_steps) == sweeps
    np.testing.assert_allclose(sol.bias, u1, rtol=1e-10, atol=1e-10)
    expected = end if published_warm_start else u1
    np.testing.assert_allclose(state, expected, rtol=1e-10, atol=1e-10)
    sol2, _ = planner.update(state, ModelChange(_box_model(*second, epsilon)))
    u1, greedy, _, _, sweeps, _ = _numpy_scopt(*second, expected, epsilon, c)
    assert int(sol2.num_steps) == sweeps
    np.testing.assert_allclose(sol2.bias, u1, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(sol2.policy, greedy)


def test_noise_ties_are_the_published_draw():
    """``ties="noise"``: one ``U_a`` per action, uniform on ``[0, 1)``, drawn at a
    replication's start; the noise ``0.1 min(1e-6, epsilon) U_a`` of ``scopt.pyx`` lines
    157-164; the greedy action, the pessimistic one and the weight between them chosen as
    the published loop chooses them (lines 232, 330, 352) given the same uniforms."""
    spec = env_spec(jm.envs.make("toy3d-1"))
    agent = jm.get_agent("scal", ties="noise")
    keys = jax.random.split(jax.random.key(0), 2000)
    draws = np.asarray(jax.vmap(lambda k: agent.init(k, spec).action_noise)(keys))
    assert draws.shape == (2000, 2) and np.all((draws >= 0) & (draws < 1))
    for a in range(2):
        assert scipy_stats.kstest(draws[:, a], "uniform").pvalue > 1e-3
    assert not np.any(np.asarray(jm.get_agent("scal").init(keys[0], spec).action_noise))
    published = np.random.RandomState(3).random_sample(2)  # evi.pyx line 133, seed 3
    for epsilon in (0.01, 1e-7):
        np.testing.assert_array_equal(scopt_noise(published, epsilon),
                                      rlexplorer.tie_noise(published, epsilon))
    p, r, beta = _model(3, A=2)
    p[:, 1:], beta[:, 1:] = p[:, :1], beta[:, :1]  # equal laws: the pessimistic values tie
    r[::2, 1:] = r[::2, :1]  # and the greedy ones in states 0 and 2
    bounds, mask, epsilon, c = BoxBounds(np.maximum(p - beta, 0.0), p + beta), np.ones(
        r.shape, bool), 1e-4, 0.05
    for uniforms in (draws[0], draws[0][::-1]):
        noise = scopt_noise(uniforms, epsilon)
        sol = scopt(p, r, bounds, mask, np.zeros(4), epsilon, c, TAU, max_steps=10_000,
                    noise=noise)
        action, weight, _ = scopt_mixture(r, bounds, mask, sol.bias, c, TAU, noise)
        u1, greedy, min_action, w, sweeps, _ = _numpy_scopt(p, r, beta, np.zeros(4), epsilon,
                                                            c, noise=np.asarray(noise))
        assert int(sol.num_steps) == sweeps
        np.testing.assert_array_equal(sol.policy, greedy)
        np.testing.assert_allclose(weight, w, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(np.where(w > 0, action, 0), np.where(w > 0, min_action, 0))
        best = int(np.argmax(uniforms))
        assert sol.policy[0] == sol.policy[2] == best  # exact ties: the larger noise
        assert np.all(np.where(w > 0, action, 1 - best) == 1 - best)  # the smaller


def test_ucrl_rlexplorer_bounds_the_optimistic_reward():
    """``evi.pyx`` lines 167-168 with ``r_max_vi = r_max = 1`` (``Ucrl.py`` lines 33-34):
    ``min(1, r_hat + beta_r)``, exactly 1 for an untried pair, SCAL's sets otherwise
    (``Ucrl.py`` lines 307-383); the first sweep of the optimistic MDP from zeros is the
    best bounded reward of each state."""
    mdp = jm.envs.make("toy3d-1")
    spec = env_spec(mdp)
    counts, rewards, sums, squares = _statistics(0)
    S, A, t_k = 3, 2, 37.0
    stats = _stats(counts, sums, squares, t_k, 0)
    agent = jm.get_agent("ucrl_rlexplorer")
    p_hat, r_tilde, box = agent.config.sets.confidence(stats, spec, agent.config.delta)
    scal = jm.get_agent("scal", published_delta=True)
    _, r_scal, box_scal = scal.config.sets.confidence(stats, spec, scal.config.delta)
    np.testing.assert_array_equal(box.lower, box_scal.lower)
    np.testing.assert_array_equal(box.upper, box_scal.upper)
    delta = 1 / math.sqrt(t_k)
    for s in range(S):
        for a in range(A):
            N = counts[s, a].sum()
            n = max(1, N)
            mean = float(np.mean(rewards[s][a])) if N else 0.0
            var = float(np.var(rewards[s][a])) if N else 0.0
            L = math.log(6 * S * A * n / delta) / n
            assert float(r_scal[s, a]) == pytest.approx(mean + math.sqrt(var * L) + L,
                                                        rel=1e-13)
            assert float(r_tilde[s, a]) == min(1.0, float(r_scal[s, a]))
            if not N:
                assert float(r_tilde[s, a]) == 1.0 < float(r_scal[s, a])
    assert np.all(np.asarray(r_tilde) <= 1.0)
    planner = jm.get_agent("ucrl_rlexplorer", max_evi_steps=1).config.planner
    model = ConfidenceSet(p_hat, r_tilde, box, mdp.mask, 1e-12)
    _, values = planner.update(planner.init(model), ModelChange(model))
    best = np.max(np.where(mdp.mask, np.asarray(r_tilde), -np.inf), axis=-1)
    np.testing.assert_allclose(values, best - best[0], rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name, options, kind", [
    ("ucrl_rlexplorer", {}, "UcrlMdp"),
    ("scal", {"published_delta": True, "ties": "noise", "published_warm_start": True},
     "SCAL")])
def test_rlexplorer_options_are_the_published_loop_on_toy3d_weak(name, options, kind):
    """On ``toy3d-weak`` (deterministic transitions and rewards) the published learner's
    every round follows from its tie noise: jaxmdp's run replays, round by round, in the
    NumPy loop of the published learner (``tests.reference.rlexplorer``) given the
    replication's uniforms; the two orders of the noise give different paths."""
    mdp = jm.envs.make("toy3d-weak")
    P, R, mask = np.asarray(mdp.P), np.asarray(mdp.R), np.asarray(mdp.mask)
    actions = [list(np.flatnonzero(row)) for row in mask]
    traj = jm.simulate(mdp, jm.get_agent(name, **options), horizon=400, replications=3,
                       seed=0, record_path=True, progress=False)
    uniforms = np.asarray(traj.agent_state.action_noise)
    assert len({bool(u[0] > u[1]) for u in uniforms}) == 2  # both orders
    paths = []
    for i in range(3):
        states, played, _, episodes = rlexplorer.run(
            kind, P, R, actions, 400, i, noise_uniforms=uniforms[i],
            transition=lambda s, a: int(np.argmax(P[s, a])))
        np.testing.assert_array_equal(traj.states[i], states)
        np.testing.assert_array_equal(traj.actions[i], played)
        assert int(traj.agent_state.episodes[i]) == episodes
        paths.append(tuple(played))
    assert len(set(paths)) == 2


def _max_proba_purec(p, v, beta, allowed):
    """``max_proba_purec`` (``_max_proba.pyx`` lines 14-41) over ``allowed``, one pair,
    then ``sparse_dot_prod`` (the value over the allowed states)."""
    order = [i for i in np.argsort(v, kind="stable") if allowed[i]]
    n = len(order)
    new = np.zeros(len(p))
    top = order[n - 1]
    temp = min(1.0, p[top] + beta / 2)
    new[top] = temp
    total = temp
    if temp < 1.0:
        for i in range(n - 1):
            new[order[i]] = p[order[i]]
            total += p[order[i]]
        i = 0
        while total > 1.0 and i < n:
            idx = order[i]
            total -= p[idx]
            new[idx] = max(0.0, 1.0 - total)
            total += new[idx]
            i += 1
    return sum(new[i] * v[i] for i in order)


def _numpy_tevi(p, r, beta, truncated, observed, terminal, all_observed, u0, epsilon,
                published_stop, noise):
    """``TEVI.run`` (``tevi.pyx`` lines 169-276) with ``relative_vi = 0``."""
    S, A = r.shape
    u1 = u0 - u0[0]
    old_span = float(np.finfo("f").max)
    sweeps = 0
    while True:
        u2 = np.empty(S)
        greedy = np.zeros(S, int)
        for s in range(S):
            for a in range(A):
                if all_observed:
                    dot = _lpproba_bernstein(u1, p[s, a], beta[s, a], 0)
                else:
                    allowed = observed if truncated[s, a] else np.ones(S, bool)
                    dot = _max_proba_purec(p[s, a], u1, beta[s, a].sum(), allowed)
                c1 = r[s, a] + TAU * (dot - u1[s]) + u1[s]
                if a == 0 or c1 + noise[a] > u2[s] + noise[greedy[s]]:  # line 230
                    u2[s], greedy[s] = c1, a
        sweeps += 1
        d = (u2 - u1)[terminal]
        span = d.max() - d.min()
        if (old_span - span < epsilon) if published_stop else (span < epsilon):
            return u1, greedy, sweeps
        u1 = u2
        old_span = span


@pytest.mark.parametrize("case", ["all", "some", "terminal", "ties"])
@pytest.mark.parametrize("published_stop", [False, True])
def test_tevi_is_the_published_loop(case, published_stop):
    from jaxmdp.planning import TUCRLBounds

    p, r, beta = _model(5, S=5, A=2)
    S, A = r.shape
    noise = np.zeros(A)
    if case == "ties":  # equal rewards and laws: every choice is a tie the noise decides
        p, r, beta = p[:, :1].repeat(A, 1), r[:, :1].repeat(A, 1), beta[:, :1].repeat(A, 1)
        noise = np.array([1e-7 * 0.3, 1e-7 * 0.8])
    observed = (np.array([True, True, False, True, False]) if case not in ("all", "ties")
                else np.ones(S, bool))
    truncated = np.zeros((S, A), bool)
    if case not in ("all", "ties"):
        truncated[[0, 1, 3]] = [[True, False], [True, True], [False, True]]
    terminal = observed if case == "terminal" else np.ones(S, bool)
    all_observed = case in ("all", "ties")
    bounds = TUCRLBounds(np.maximum(p - beta, 0.0), p + beta, beta.sum(-1), truncated,
                         observed, terminal, np.asarray(all_observed), noise)
    u0 = np.random.default_rng(7).uniform(0, 1, S)
    sol = tevi(p, r, bounds, np.ones((S, A), bool), u0 - u0[0], 1e-5, TAU,
               max_steps=10_000, published_stop=published_stop)
    u1, greedy, sweeps = _numpy_tevi(p, r, beta, truncated, observed, terminal, all_observed,
                                     u0, 1e-5, published_stop, noise)
    assert int(sol.num_steps) == sweeps
    np.testing.assert_allclose(sol.bias, u1, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(sol.policy, greedy)
    if case == "ties":
        np.testing.assert_array_equal(sol.policy, 1)  # the larger noise


def _statistics(seed, S=3, A=2):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, (S, A, S))
    counts[1] = 0  # state 1 never left
    counts[2, 1] = 0
    rewards = [[rng.random(c) for c in row] for row in counts.sum(-1)]
    sums = np.array([[x.sum() for x in row] for row in rewards])
    squares = np.array([[(x**2).sum() for x in row] for row in rewards])
    return counts, rewards, sums, squares


def _stats(counts, sums, squares, t_k, state):
    """The episode's statistics of a variant's ``confidence`` (no action noise)."""
    return EpisodeStats(jnp.asarray(counts), jnp.asarray(sums), jnp.asarray(squares),
                        jnp.asarray(t_k), jnp.int32(state), jnp.zeros(2))


def test_scal_sets_are_the_published_bounds():
    """``Ucrl.py`` lines 307-383 (Bernstein, ``L_CONST = 6``), at a fixed and at the
    published ``delta = 1/sqrt(t_k)``; SCAL+'s bonus and pulled ``p_hat``, ``scal.py``
    lines 110-142."""
    mdp = jm.envs.make("toy3d-1")
    spec = env_spec(mdp)
    counts, rewards, sums, squares = _statistics(0)
    S, A, t_k = 3, 2, 37.0
    for published in (False, True):
        delta = 1 / math.sqrt(t_k) if published else 0.05
        agent = jm.get_agent("scal", span_constraint=2.0, published_delta=published)
        stats = _stats(counts, sums, squares, t_k, 0)
        p_hat, r_tilde, box = agent.config.sets.confidence(stats, spec, agent.config.delta)
        plus = jm.get_agent("scal_plus", span_constraint=2.0, published_delta=published)
        p_plus, r_plus, box_plus = plus.config.sets.confidence(stats, spec, plus.config.delta)
        for s in range(S):
            for a in range(A):
                N = counts[s, a].sum()
                n = max(1, N)
                P = counts[s, a] / n if N else np.full(S, 1 / S)
                mean = float(np.mean(rewards[s][a])) if N else 0.0
                var = float(np.var(rewards[s][a])) if N else 0.0
                L = math.log(6 * S * A * n / delta) / n
                beta_p = np.sqrt(P * (1 - P) * L) + L
                np.testing.assert_allclose(p_hat[s, a], P, rtol=1e-14)
                np.testing.assert_allclose(box.lower[s, a], np.maximum(P - beta_p, 0), atol=1e-14)
                np.testing.assert_allclose(box.upper[s, a], P + beta_p, rtol=1e-14)
                assert float(r_tilde[s, a]) == pytest.approx(mean + math.sqrt(var * L) + L,
                                                             rel=1e-13)
                pulled = np.full(S, 1 / S)
                if N:
                    pulled = counts[s, a] / (N + 1.0)
                    pulled[0] += 1 / (N + 1.0)
                beta = math.sqrt(math.log(6 * S * A * n / delta) / n)
                bonus = beta + 2.0 * (beta + 1 / (N + 1))
                np.testing.assert_allclose(p_plus[s, a], pulled, rtol=1e-14)
                np.testing.assert_allclose(box_plus.lower[s, a], pulled, rtol=1e-14)
                assert float(r_plus[s, a]) == pytest.approx(mean + bonus, rel=1e-13)


def test_tucrl_sets_are_the_published_bounds():
    """``UCRL/Ucrl.py`` lines 264-330 at ``ecf4acc`` (Bernstein, ``bounds.bernstein2``)
    and ``tucrl.py``'s truncation: state 1 never left, so unobserved unless current."""
    mdp = jm.envs.make("toy3d-1")
    spec = env_spec(mdp)
    counts, rewards, sums, squares = _statistics(1)
    S, A, t_k = 3, 2, 5.0
    agent = jm.get_agent("tucrl", published_delta=True)
    delta = 1 / math.sqrt(t_k)
    p_hat, r_tilde, b = agent.config.sets.confidence(_stats(counts, sums, squares, t_k, 0),
                                                     spec, agent.config.delta)
    L = math.log(2 * S * A * t_k / delta)
    for s in range(S):
        for a in range(A):
            N = counts[s, a].sum()
            n, m = max(1, N), max(1, N - 1)
            P = counts[s, a] / n if N else np.full(S, 1 / S)
            beta_p = np.sqrt(14 * P * (1 - P) / n * L) + 49 / (3 * m) * L
            np.testing.assert_allclose(b.upper[s, a], P + beta_p, rtol=1e-13)
            assert float(b.l1[s, a]) == pytest.approx(beta_p.sum(), rel=1e-13)
            x = np.asarray(rewards[s][a])
            mean = x.mean() if N else 100.0
            M2 = ((x - x.mean()) ** 2).sum() if N else 0.0
            expected = min(1.0, mean + math.sqrt(14 * M2 / m / n * L) + 49 / (3 * m) * L)
            assert float(r_tilde[s, a]) == pytest.approx(expected, rel=1e-12)
            explored = max(1, N - 1) > math.sqrt(t_k / (S * A))
            assert bool(b.truncated[s, a]) == (explored and s != 1)
    np.testing.assert_array_equal(b.observed, [True, False, True])
    assert not bool(b.all_observed)
    _, _, b1 = agent.config.sets.confidence(_stats(counts, sums, squares, t_k, 1), spec,
                                            agent.config.delta)
    assert bool(b1.all_observed) and not np.any(b1.truncated)


def _replay_tucrl_episodes(states, actions, S, A):
    """Episodes of TUCRL's rule replayed on a path (NumPy): the doubling rule on the
    action played in the current state earlier in the episode, or ``N_k(x) = 0``."""
    visits = np.zeros((S, A), int)
    episode_visits = visits.copy()
    nu = visits.copy()
    played = np.full(S, -1)
    episodes = 0
    for t, (x, a) in enumerate(zip(states, actions)):
        old = played[x]
        doubling = old >= 0 and nu[x, old] >= max(1, episode_visits[x, old])
        if t == 0 or doubling or episode_visits[x].sum() == 0:
            episodes += 1
            episode_visits, nu, played = visits.copy(), np.zeros_like(nu), np.full(S, -1)
        played[x] = a
        nu[x, a] += 1
        visits[x, a] += 1
    return episodes


@pytest.mark.parametrize("env", ["toy3d-weak", "riverswim-osband-6"])
def test_tucrl_starts_an_episode_in_an_unobserved_state(env):
    """``tucrl.py`` ``_stopping_rule``: the doubling rule, or the current state never left
    before the episode; replayed on the recorded paths."""
    mdp = jm.envs.make(env)
    traj = jm.simulate(mdp, "tucrl", horizon=400, replications=3, seed=4, record_path=True)
    S, A = mdp.R.shape
    for i in range(3):
        expected = _replay_tucrl_episodes(np.asarray(traj.states[i]),
                                          np.asarray(traj.actions[i]), S, A)
        assert int(traj.agent_state.episodes[i]) == expected


@pytest.mark.parametrize("name, option, value", [
    ("scal", "span_constraint", 0.0), ("scal", "span_constraint", float("inf")),
    ("scal", "tau", 1.5), ("scal", "published_delta", 1), ("scal_plus", "span_constraint", -1),
    ("scal", "published_warm_start", 1), ("scal", "ties", "random_least_visited"),
    ("tucrl", "published_stop", "yes"), ("tucrl", "tau", 0.0), ("tucrl", "ties", "noise"),
    ("ucrl_rlexplorer", "tau", 0.0), ("ucrl_rlexplorer", "published_delta", 1),
    ("ucrl_rlexplorer", "ties", "random_least_visited"), ("ucrl2", "ties", "noise")])
def test_bad_options_are_named(name, option, value):
    with pytest.raises(ValueError, match=option):
        jm.get_agent(name, **{option: value})


def test_scal_plus_has_no_known_rewards():
    with pytest.raises(ValueError, match="known_rewards"):
        jm.get_agent("scal_plus", known_rewards=True)
