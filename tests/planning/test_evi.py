"""Tests of ``jaxmdp.evi`` (extended value iteration, UCRL2 / KL-UCRL).

The inner maxima against ``scipy.optimize.linprog`` (L1) and SLSQP on the simplex (KL),
and against ``l1_ucb`` / ``kl_ucb``; the span stopping rule; the greedy policy; the gain
of the returned optimistic MDP against policy evaluation (Jaksch et al. 2010, Theorem 7);
radius 0 against ``solve_average_reward``; batching, dtypes and argument checks.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog, minimize

import jaxmdp as jm
from jaxmdp.planning import BALLS, BoxBounds

# ---------------------------------------------------------------------------------------
# Problems and references.


def _rows(seed, S, A, *, zeros=0, ties=False):
    """p_hat [S, A, S] with `zeros` zero entries per row, and u [S]."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(S, 0.8), size=(S, A))
    if zeros:
        for s in range(S):
            for a in range(A):
                p[s, a, rng.choice(S, zeros, replace=False)] = 0.0
        p /= p.sum(-1, keepdims=True)
    u = rng.normal(size=S)
    if ties:
        u = np.round(2 * u) / 2
    return p, u


def _radii(seed, S, A, high):
    """Radii in (0, high), with one pair at 0 and one above every bound (when A * S > 2)."""
    rng = np.random.default_rng(seed + 1000)
    radius = rng.uniform(0, high, size=(S, A))
    radius[0, 0] = 0.0
    radius[-1, -1] = 10.0 * high
    return radius


def _mdp(seed, S, A, *, zeros=0):
    rng = np.random.default_rng(seed)
    p, _ = _rows(seed, S, A, zeros=zeros)
    r = rng.uniform(size=(S, A))
    return p, r


def _maximisers(p, u, radius, ball):
    """The inner maximisers at u, through the public API: one sweep from u0 = u."""
    S, A, _ = p.shape
    res = jm.evi(p, np.zeros((S, A)), radius, ball=ball, epsilon=1.0, max_steps=1, u0=u)
    assert int(res.num_steps) == 1
    np.testing.assert_array_equal(res.bias, u)
    return np.asarray(res.q_opt)


def _l1_linprog(p, u, d):
    """max u.q s.t. |q - p| <= t, sum t <= d, sum q = 1, q, t >= 0 (variables [q, t])."""
    n = len(p)
    eye = np.eye(n)
    a_ub = np.vstack([
        np.hstack([eye, -eye]),  # q - t <= p
        np.hstack([-eye, -eye]),  # -q - t <= -p
        np.concatenate([np.zeros(n), np.ones(n)])[None],  # sum t <= d
    ])
    b_ub = np.concatenate([p, -p, [d]])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None]
    res = linprog(
        np.concatenate([-u, np.zeros(n)]),
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return -res.fun


def _kl(p, q):
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def _kl_slsqp(p, u, delta):
    """max u.exp(y) s.t. KL(p || exp(y)) <= delta, sum exp(y) = 1 (zeros of p allowed)."""
    support = p > 0
    log_p = np.log(np.where(support, p, 1.0))

    def kl(y):
        return p @ np.where(support, log_p - y, 0.0)

    cons = [
        {"type": "ineq", "fun": lambda y: delta - kl(y), "jac": lambda y: p},
        {"type": "eq", "fun": lambda y: np.exp(y).sum() - 1, "jac": np.exp},
    ]
    # Start strictly inside: KL(p || (1 - t) p + t / S) <= -ln(1 - t) = delta / 2.
    t = min(0.5, -np.expm1(-delta / 2))
    y0 = np.log((1 - t) * p + t / len(p))
    res = minimize(lambda y: -(u @ np.exp(y)), y0, jac=lambda y: -u * np.exp(y),
                   constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    assert res.status in (0, 8), res.message
    q = np.exp(res.x)
    assert _kl(p, q) <= delta + 1e-8 and abs(q.sum() - 1) < 1e-9
    return float(u @ q)


def _sweep(res, p, r, radius, mask, ball):
    """T u at the returned u, by the independent index functions (l1_ucb / kl_ucb)."""
    index = jm.l1_ucb if ball == "l1" else jm.kl_ucb
    q_values = np.asarray(r + index(p, jnp.asarray(res.bias), radius))
    return np.where(mask, q_values, -np.inf)


def _policy_gain(q_opt, r, policy):
    """Gain of `policy` in the optimistic MDP, from every state (multichain allowed)."""
    S = len(policy)
    P_pi = q_opt[np.arange(S), policy]
    r_pi = r[np.arange(S), policy]
    # Cesaro limit by a long power of the lazy chain (aperiodic, same stationary laws).
    lazy = 0.5 * (np.eye(S) + P_pi)
    limit = np.linalg.matrix_power(lazy, 1 << 16)
    return limit @ r_pi


# ---------------------------------------------------------------------------------------
# Inner maxima.

INNER_CASES = [
    # seed, S, A, zeros per row, ties in u
    (0, 2, 2, 0, False),
    (1, 6, 2, 0, False),
    (2, 6, 2, 2, False),
    (3, 6, 2, 2, True),
    (4, 12, 3, 5, True),
]


@pytest.mark.parametrize("seed, S, A, zeros, ties", INNER_CASES)
def test_l1_inner_max_matches_linprog_and_l1_ucb(seed, S, A, zeros, ties):
    p, u = _rows(seed, S, A, zeros=zeros, ties=ties)
    radius = _radii(seed, S, A, 1.5)
    q = _maximisers(p, u, radius, "l1")
    values = q @ u
    np.testing.assert_allclose(values, jm.l1_ucb(p, u, radius), rtol=0, atol=1e-12)
    for s in range(S):
        for a in range(A):
            assert values[s, a] == pytest.approx(_l1_linprog(p[s, a], u, radius[s, a]),
                                                 abs=1e-9)
    # Feasible: on the simplex and within the ball.
    assert np.all(q >= 0)
    np.testing.assert_allclose(q.sum(-1), 1, atol=1e-13)
    assert np.all(np.abs(q - p).sum(-1) <= radius + 1e-12)
    # Radius 0 leaves p_hat; a radius above 2 puts all mass on a state of largest u.
    np.testing.assert_array_equal(q[0, 0], p[0, 0])
    assert q[-1, -1, u == u.max()].max() == pytest.approx(1, abs=1e-13)
    assert values[-1, -1] == pytest.approx(u.max(), abs=1e-13)


@pytest.mark.parametrize("seed, S, A, zeros, ties", INNER_CASES)
def test_l1_inner_max_same_on_cpu_and_accelerators(seed, S, A, zeros, ties, monkeypatch):
    # The CPU form (a scan over p_hat laid out states-first) and the accelerator form (a
    # gather and a cumulative sum) of the L1 inner maximisation agree.
    p, u = _rows(seed, S, A, zeros=zeros, ties=ties)
    radius = jnp.asarray(_radii(seed, S, A, 1.5))
    p, u = jnp.asarray(p), jnp.asarray(u)
    results = []
    for backend in ("cpu", "gpu"):
        monkeypatch.setattr(jax, "default_backend", lambda backend=backend: backend)
        inner = BALLS["l1"]()
        results.append(jax.jit(inner.solve, static_argnums=3)(inner.layout(p), u, radius, True))
    (values, q), (values_ref, q_ref) = results
    assert q.shape == q_ref.shape == p.shape
    np.testing.assert_allclose(values, values_ref, rtol=0, atol=1e-14)
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(values, jm.l1_ucb(p, u, radius), rtol=0, atol=1e-14)


KL_INNER_CASES = [
    # seed, S, A, zeros per row, ties in u
    (0, 6, 2, 0, False),
    (1, 6, 2, 1, False),
    (2, 6, 2, 2, False),
    (3, 6, 2, 3, True),
]


@pytest.mark.parametrize("seed, S, A, zeros, ties", KL_INNER_CASES)
def test_kl_inner_max_matches_slsqp_and_kl_ucb(seed, S, A, zeros, ties):
    p, u = _rows(seed, S, A, zeros=zeros, ties=ties)
    radius = _radii(seed, S, A, 0.6)
    radius[-1, -1] = 60.0
    q = _maximisers(p, u, radius, "kl")
    values = q @ u
    np.testing.assert_allclose(values, jm.kl_ucb(p, u, radius), rtol=0, atol=1e-10)
    for s in range(S):
        for a in range(A):
            if 0 < radius[s, a] < 10:
                assert values[s, a] == pytest.approx(_kl_slsqp(p[s, a], u, radius[s, a]),
                                                     abs=1e-8)
            assert _kl(p[s, a], q[s, a]) <= radius[s, a] + 1e-9
    assert np.all(q >= 0)
    np.testing.assert_allclose(q.sum(-1), 1, atol=1e-12)
    # Radius 0 leaves p_hat; a huge radius moves (almost) all mass to the largest u.
    np.testing.assert_allclose(q[0, 0], p[0, 0], atol=1e-15)
    top = u == u.max()
    assert q[-1, -1, top].sum() > 1 - 1e-12


def test_kl_inner_max_boundary_mass_on_zero_probability_state():
    # The largest u only where p_hat is 0: for a large enough radius the maximiser puts
    # mass there (Filippi, Cappé & Garivier 2010, section 3.2).
    p = np.array([0.4, 0.3, 0.2, 0.0, 0.1, 0.0])
    u = np.array([0.0, 0.4, 0.5, 1.0, 0.2, -1.0])
    deltas = np.array([[0.05, 0.4], [1.5, 3.0], [0.0, 0.1], [0.2, 0.3], [0.6, 0.8], [1.0, 2.0]])
    q = _maximisers(np.broadcast_to(p, (6, 2, 6)), u, deltas, "kl")
    for (s, a), delta in np.ndenumerate(deltas):
        assert u @ q[s, a] == pytest.approx(_kl_slsqp(p, u, delta) if delta else p @ u, abs=1e-8)
        assert u @ q[s, a] == pytest.approx(float(jm.kl_ucb(p, u, delta)), abs=1e-12)
        assert q[s, a, 5] == 0  # never mass on a zero-probability state below the top
    assert q[1, 0, 3] > 0.1  # delta = 1.5 is on the boundary branch


# ---------------------------------------------------------------------------------------
# The iteration.

EVI_CASES = [
    # ball, seed, S, A, zeros per row, radius scale
    ("l1", 0, 6, 2, 0, 0.5),
    ("l1", 1, 6, 2, 3, 0.3),
    ("l1", 2, 12, 3, 4, 1.0),
    ("kl", 3, 6, 2, 0, 0.2),
    ("kl", 4, 6, 2, 2, 0.1),
]


def _evi_problem(seed, S, A, zeros, scale):
    p, r = _mdp(seed, S, A, zeros=zeros)
    radius = np.random.default_rng(seed + 7).uniform(0.2 * scale, scale, size=(S, A))
    mask = np.ones((S, A), bool)
    mask[1, 0] = False
    return p, r, radius, mask


@pytest.mark.parametrize("ball, seed, S, A, zeros, scale", EVI_CASES)
def test_evi_stops_by_the_span_rule_with_a_greedy_policy(ball, seed, S, A, zeros, scale):
    p, r, radius, mask = _evi_problem(seed, S, A, zeros, scale)
    eps = 1e-6
    res = jm.evi(p, r, radius, mask, ball=ball, epsilon=eps, max_steps=5000)
    assert int(res.status) == jm.Status.CONVERGED
    assert float(res.span) < eps
    # One more sweep at u, by the index functions: the same span, and the policy is its
    # argmax (admissible, lowest index among ties).
    q_values = _sweep(res, p, r, radius, mask, ball)
    diff = q_values.max(-1) - np.asarray(res.bias)
    assert diff.max() - diff.min() == pytest.approx(float(res.span), abs=1e-10)
    assert (diff.max() + diff.min()) / 2 == pytest.approx(float(res.gain), abs=1e-10)
    np.testing.assert_array_equal(res.policy, np.argmax(q_values, -1))
    assert np.all(mask[np.arange(S), res.policy])
    # q_opt holds the maximisers at u: their Q-values are the index values.
    q_opt = np.asarray(res.q_opt)
    np.testing.assert_allclose(np.where(mask, r + q_opt @ np.asarray(res.bias), -np.inf),
                               q_values, atol=1e-10)
    # Not before: one sweep fewer leaves the span at or above epsilon.
    early = jm.evi(p, r, radius, mask, ball=ball, epsilon=eps, max_steps=int(res.num_steps) - 1)
    assert int(early.status) == jm.Status.MAX_STEPS
    assert int(early.num_steps) == int(res.num_steps) - 1
    assert float(early.span) >= eps


@pytest.mark.parametrize("ball, seed, S, A, zeros, scale", EVI_CASES)
def test_evi_gain_in_the_optimistic_mdp(ball, seed, S, A, zeros, scale):
    # Jaksch et al. (2010), Theorem 7: the greedy policy's gain in the optimistic MDP is
    # within span/2 of the estimate; and it is optimistic: at least the optimal gain of
    # the MDP (p_hat, r_tilde), which lies in the confidence set.
    p, r, radius, mask = _evi_problem(seed, S, A, zeros, scale)
    eps = 1e-5
    res = jm.evi(p, r, radius, mask, ball=ball, epsilon=eps, max_steps=5000)
    gains = _policy_gain(np.asarray(res.q_opt), r, np.asarray(res.policy))
    half = float(res.span) / 2 + 1e-9
    np.testing.assert_allclose(gains, float(res.gain), rtol=0, atol=half)
    # The nominal optimal gain by radius 0 (relative value iteration on p_hat; checked
    # against solve_average_reward below).
    nominal = jm.evi(p, r, np.zeros_like(radius), mask, ball=ball, epsilon=1e-9)
    assert float(nominal.gain) <= float(res.gain) + half + 1e-9


@pytest.mark.parametrize("ball", ["l1", "kl"])
def test_radius_zero_is_relative_value_iteration_on_p_hat(ball):
    for mdp in (jm.MDP(*_mdp(11, 6, 2)), jm.MDP(*_mdp(12, 6, 2, zeros=2))):
        gain, _, policy = jm.solve_average_reward(mdp)
        eps = 1e-9
        res = jm.evi(mdp.P, mdp.R, np.zeros(mdp.R.shape), mdp.mask, ball=ball, epsilon=eps)
        assert int(res.status) == jm.Status.CONVERGED
        assert float(res.gain) == pytest.approx(float(gain), abs=eps)
        np.testing.assert_array_equal(res.policy, policy)
        np.testing.assert_allclose(res.q_opt, mdp.P, atol=1e-15)


def test_ties_take_the_lowest_action_and_masks_exclude():
    p, r = _mdp(5, 6, 1)
    radius = np.full((6, 1), 0.3)
    # Two copies of the same action: exact ties everywhere.
    p2, r2, d2 = (np.repeat(x, 2, axis=1) for x in (p, r, radius))
    res = jm.evi(p2, r2, d2, ball="l1", epsilon=1e-8)
    np.testing.assert_array_equal(res.policy, 0)
    # An inadmissible action is never chosen, however large its reward; a state with no
    # admissible action keeps all of them.
    r2[:, 1] = 100.0
    mask = np.ones((6, 2), bool)
    mask[:, 1] = False
    mask[5] = False
    res = jm.evi(p2, r2, d2, mask, ball="l1", epsilon=1e-8)
    np.testing.assert_array_equal(res.policy, [0, 0, 0, 0, 0, 1])


@pytest.mark.parametrize("ball", ["l1", "kl"])
def test_warm_start(ball):
    p, r, radius, mask = _evi_problem(2, 6, 2, 0, 0.3)
    cold = jm.evi(p, r, radius, mask, ball=ball, epsilon=1e-4)
    warm = jm.evi(p, r, radius, mask, ball=ball, epsilon=1e-8, u0=cold.bias)
    again = jm.evi(p, r, radius, mask, ball=ball, epsilon=1e-4, u0=warm.bias)
    assert int(again.num_steps) == 1
    np.testing.assert_array_equal(again.policy, warm.policy)
    # The iteration is shift-invariant: a shifted warm start gives the same result.
    shifted = jm.evi(p, r, radius, mask, ball=ball, epsilon=1e-8, u0=cold.bias + 3.0)
    assert int(shifted.num_steps) == int(warm.num_steps)
    np.testing.assert_allclose(shifted.gain, warm.gain, atol=1e-12)


@pytest.mark.parametrize("ball", ["l1", "kl"])
def test_vmap_and_jit_match_a_loop(ball):
    problems = [_evi_problem(seed, 6, 2, 1, 0.3) for seed in range(3)]
    p, r, radius, mask = (np.stack(x) for x in zip(*problems))
    eps = np.array([1e-3, 1e-6, 1e-9])  # traced epsilon, one per member

    def run(p, r, radius, mask, eps):
        return jm.evi(p, r, radius, mask, ball=ball, epsilon=eps, max_steps=3000)

    batched = jax.jit(jax.vmap(run))(p, r, radius, mask, eps)
    for i in range(3):
        single = jm.evi(p[i], r[i], radius[i], mask[i], ball=ball, epsilon=eps[i],
                        max_steps=3000)
        for name, a, b in zip(single._fields, single, batched):
            np.testing.assert_allclose(b[i], a, atol=1e-12, rtol=1e-12, err_msg=name)
    assert len(set(np.asarray(batched.num_steps).tolist())) > 1  # members stop apart


@pytest.mark.parametrize("ball", ["l1", "kl"])
def test_float32_is_finite(ball):
    p, r, radius, mask = _evi_problem(1, 6, 2, 3, 0.3)
    f32 = [np.asarray(x, np.float32) for x in (p, r, radius)]
    res = jm.evi(*f32, mask, ball=ball, epsilon=1e-3)
    assert res.bias.dtype == jnp.float32 and res.q_opt.dtype == jnp.float32
    assert int(res.status) == jm.Status.CONVERGED
    for x in (res.bias, res.q_opt, res.gain, res.span):
        assert np.all(np.isfinite(x))
    ref = jm.evi(p, r, radius, mask, ball=ball, epsilon=1e-3)
    assert float(res.gain) == pytest.approx(float(ref.gain), abs=1e-3)


def test_max_steps_status():
    p, r, radius, mask = _evi_problem(0, 6, 2, 0, 0.5)
    res = jm.evi(p, r, radius, mask, epsilon=1e-12, max_steps=3)
    assert int(res.status) == jm.Status.MAX_STEPS and int(res.num_steps) == 3
    assert float(res.span) >= 1e-12


@pytest.mark.parametrize("max_steps", [7, 8])
@pytest.mark.parametrize("u0", [(0.0, 0.0, 0.0), (0.0, 0.5, 0.25)])
def test_cycle_memory_skips_a_cycle_with_the_full_result(max_steps, u0):
    # A deterministic 3-cycle 0 -> 1 -> 2 -> 0 (lower = upper: the box holds one law) with
    # rewards (1, 0, 0) is periodic: the iterates cycle with period 3 and never converge.
    P = np.zeros((3, 1, 3))
    P[[0, 1, 2], 0, [1, 2, 0]] = 1.0
    R = np.array([[1.0], [0.0], [0.0]])
    bounds = BoxBounds(P, P)
    # The full iteration in NumPy (the same shifts as evi's loop).
    u, previous = np.asarray(u0), None
    for _ in range(max_steps):
        nxt = R[:, 0] + P[:, 0] @ u
        diff = nxt - u
        previous, u = u, nxt - nxt.min()
    runs = [jm.evi(P, R, bounds, ball="box", epsilon=1e-3, max_steps=max_steps,
                   u0=np.asarray(u0),
                   cycle_memory=memory) for memory in (0, 4)]
    for res in runs:
        assert int(res.status) == jm.Status.MAX_STEPS and int(res.num_steps) == max_steps
        np.testing.assert_array_equal(res.bias, previous)
        assert float(res.span) == diff.max() - diff.min()
    for a, b in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(runs[1])):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cycle_memory": -1}, "cycle_memory"),
        ({"cycle_memory": 2.0}, "cycle_memory"),
        ({"ball": "linf"}, "ball"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1e-3}, "epsilon"),
        ({"epsilon": np.ones(2)}, "epsilon"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": 10.0}, "max_steps"),
        ({"p_hat": np.ones((3, 2, 4)) / 4}, "p_hat"),
        ({"r_tilde": np.zeros((3, 3))}, "r_tilde"),
        ({"radius": np.zeros(3)}, "radius"),
        ({"radius": -np.ones((3, 2))}, "radius"),
        ({"mask": np.ones((2, 2), bool)}, "mask"),
        ({"u0": np.zeros(4)}, "u0"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {"p_hat": np.ones((3, 2, 3)) / 3, "r_tilde": np.zeros((3, 2)),
            "radius": np.full((3, 2), 0.1), "mask": None}
    options = {"ball": "l1", "epsilon": 1e-3}
    for name, value in kwargs.items():
        (args if name in args else options)[name] = value
    with pytest.raises(ValueError, match=match):
        jm.evi(args["p_hat"], args["r_tilde"], args["radius"], args["mask"], **options)
