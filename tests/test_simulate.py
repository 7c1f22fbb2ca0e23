"""Tests for jaxmdp.simulate: conventions, reproducibility, and the NumPy reference.

Compilation dominates the cost of these tests, so every call shares one configuration
where it can: the paper's MDP shape, 64 replications, ``chunk_size=CHUNK`` and horizons
that are multiples of it, so each agent's chunk function is compiled once for the whole
file (MDPs with other masks reuse it: the mask is data, not configuration).
"""

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp.agents import Observation, env_spec
from jaxmdp.planning import estimate
from tests.reference import mdp as ref

NAMES = ["ucb", "dmed", "olp", "ps"]
SIMULATE_MODULE = sys.modules["jaxmdp._simulate"]  # jm.simulate is the function
CHUNK = 250
REPS = 64
HORIZON = 2000

# Mean pseudo-regret at t = 2000 of the NumPy/SciPy reference loop
# (tests/reference/paper.py, an independent implementation: per-step NumPy policy
# iteration, scipy.optimize.brentq for the KL indices, numpy's Dirichlet sampler) on the
# paper's MDP from zero counts, 256 replications, seed 2024, float64. Obtained with
#   python -m tests.reference.paper --horizon 2000 --replications 256 --seed 2024
# which prints, per agent, the mean and its standard error; recorded here as (mean, se).
NUMPY_REFERENCE_T2000 = {
    "ucb": (8.0950, 0.0898),
    "dmed": (25.7338, 1.0746),  # the paper's zero-count rule (no untried-first)
    "olp": (14.8163, 0.1573),
    "ps": (4.7422, 0.1183),  # the paper's zero-count rule (no untried-first)
}

# The same reference on RiverSwim-6 (known rewards), seed 2024, 256 replications:
#   python -m tests.reference.paper --mdp riverswim-6 --horizon 2000 \
#       --replications 256 --seed 2024
NUMPY_REFERENCE_RIVERSWIM_T2000 = {
    "ucb": (370.7049, 4.2050),
    "dmed": (619.0663, 38.4727),
    "olp": (416.0784, 6.0064),
    "ps": (175.7542, 3.3261),
}

# Learned Bernoulli rewards on the paper's MDP, T = 500, seed 2024, 256 replications:
#   python -m tests.reference.paper --rewards bernoulli --unknown-rewards \
#       --horizon 500 --replications 256 --seed 2024
NUMPY_REFERENCE_LEARNED_T500 = {
    "ucb": (16.7976, 0.1960),
    "dmed": (96.4396, 2.5176),
    "olp": (23.0591, 0.2371),
    "ps": (11.7366, 0.2830),
}


def _run(agent, horizon=CHUNK, seed=0, mdp=None, **kwargs):
    kwargs.setdefault("chunk_size", CHUNK)
    mdp = jm.envs.paper_mdp() if mdp is None else mdp
    return jm.simulate(mdp, agent, horizon, REPS, seed, progress=False, **kwargs)


@pytest.fixture(scope="module")
def long_runs():
    """One T = 2000, 64-replication run per agent, shared by several tests."""
    return {name: _run(name, HORIZON, seed=11) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_mean_pseudo_regret_matches_numpy_reference(long_runs, name):
    ref_mean, ref_se = NUMPY_REFERENCE_T2000[name]
    final = np.asarray(long_runs[name].pseudo_regret[:, -1])
    se = final.std(ddof=1) / np.sqrt(len(final))
    # Independent Monte Carlo estimates: allow 4 standard errors of the difference.
    assert abs(final.mean() - ref_mean) < 4.0 * np.hypot(se, ref_se), (final.mean(), se)


def _agrees_with_reference(final, reference):
    ref_mean, ref_se = reference
    se = final.std(ddof=1) / np.sqrt(len(final))
    # Independent Monte Carlo estimates: 4 standard errors of the difference.
    assert abs(final.mean() - ref_mean) < 4 * np.hypot(se, ref_se), (final.mean(), reference)


@functools.cache
def _riverswim_run(agent):
    """T = 2000, 64 replications on RiverSwim-6, recorded every 2 rounds in one chunk: the
    program the command line compiles for ``--horizon 2000 --replications 64`` (test_cli
    and test_envs run it; tests/conftest.py sends the three modules to one worker). Kept:
    two tests use MDP-DMED's run."""
    return jm.simulate(jm.envs.make("riverswim-6"), agent, HORIZON, REPS, 5, progress=False,
                       chunk_size=HORIZON, record_every=2)


@pytest.mark.parametrize("name", NAMES)
def test_riverswim_regret_matches_numpy_reference(name):
    """All four agents on RiverSwim-6 (zero transitions), the paper's zero-count rules."""
    traj = _riverswim_run(name)
    _agrees_with_reference(np.asarray(traj.pseudo_regret[:, -1]),
                           NUMPY_REFERENCE_RIVERSWIM_T2000[name])


def test_riverswim_dmed_is_no_longer_trapped_by_the_untried_rule():
    """The untried-first rule made DMED play "left" in state 0 for most of the run and
    never reach the rewarding end (issue: 8,662 pseudo-regret at T = 10^4, nearly
    linear); the paper's rule explores through its discrepancies."""
    paper_rule = _riverswim_run("dmed")
    forced = _riverswim_run(jm.get_agent("dmed", force_untried=True))
    left_in_0 = [float(np.mean(t.counts[:, 0, 0].sum(-1))) for t in (paper_rule, forced)]
    assert left_in_0[1] > 0.35 * HORIZON and left_in_0[1] > 2.5 * left_in_0[0]
    final = [float(np.mean(t.pseudo_regret[:, -1])) for t in (paper_rule, forced)]
    assert final[1] > 2 * final[0]


@pytest.mark.parametrize("name", NAMES)
def test_learned_rewards_regret_matches_numpy_reference(name):
    """Bernoulli rewards learned (joint-law indices, Beta posterior) on the paper's MDP."""
    mdp = jm.envs.paper_mdp().with_reward_law("bernoulli")
    traj = jm.simulate(mdp, jm.get_agent(name, known_rewards=False), 500, 128, 3,
                       progress=False, chunk_size=500)
    _agrees_with_reference(np.asarray(traj.pseudo_regret[:, -1]),
                           NUMPY_REFERENCE_LEARNED_T500[name])


@pytest.mark.parametrize("name", NAMES)
def test_counts_sum_to_horizon_and_shapes(long_runs, name):
    traj = long_runs[name]
    assert traj.pseudo_regret.shape == (REPS, HORIZON)
    assert traj.regret.shape == (REPS, HORIZON)
    np.testing.assert_array_equal(traj.times, np.arange(1, HORIZON + 1))
    assert traj.counts.shape == (REPS, 3, 2, 3)
    np.testing.assert_array_equal(traj.counts.sum(axis=(1, 2, 3)), HORIZON)
    # Pseudo-regret is a non-decreasing sum of gaps; MDP-UCB and OLP try every action
    # (their convention); PS and DMED need not (the paper's rules).
    assert np.all(np.diff(np.asarray(traj.pseudo_regret), axis=1) >= 0)
    if name in ("ucb", "olp"):
        assert np.all(traj.counts.sum(-1) >= 1)
    assert traj.policy.shape == (REPS, 3) and traj.reward_sums.shape == (REPS, 3, 2)
    # It grows much more slowly than linearly: the second half adds less than the first.
    mean = np.asarray(traj.pseudo_regret).mean(0)
    assert mean[-1] - mean[HORIZON // 2 - 1] < mean[HORIZON // 2 - 1]


def test_realised_regret_is_close_to_pseudo_regret(long_runs):
    """Both regrets differ by a bounded (O(1) in expectation) martingale-like term."""
    for traj in long_runs.values():
        diff = np.asarray(traj.regret[:, -1] - traj.pseudo_regret[:, -1])
        assert abs(diff.mean()) < 5.0 * diff.std(ddof=1) / np.sqrt(len(diff)) + 1.0


def test_same_seed_identical_other_seed_differs():
    a = _run("ps", seed=3)
    b = _run("ps", seed=3)
    c = _run("ps", seed=4)
    jax.tree_util.tree_map(np.testing.assert_array_equal, a, b)  # every field, agent state
    assert not np.array_equal(a.counts, c.counts)
    # Replications use independent keys: no two rows are the same.
    rows = {tuple(r) for r in np.asarray(a.pseudo_regret)}
    assert len(rows) == REPS


def test_chunking_and_recording_do_not_change_results(long_runs):
    # A shorter run is a prefix of the long one (same seed, 2 chunks instead of 8).
    full = _run("olp", horizon=2 * CHUNK, seed=11)
    np.testing.assert_array_equal(full.pseudo_regret,
                                  long_runs["olp"].pseudo_regret[:, :2 * CHUNK])
    np.testing.assert_array_equal(full.regret, long_runs["olp"].regret[:, :2 * CHUNK])
    every = _run("olp", horizon=2 * CHUNK, seed=11, record_every=10)
    assert every.pseudo_regret.shape == (REPS, 2 * CHUNK // 10)
    np.testing.assert_array_equal(every.times, np.arange(10, 2 * CHUNK + 1, 10))
    np.testing.assert_allclose(every.pseudo_regret, full.pseudo_regret[:, 9::10])
    np.testing.assert_allclose(every.regret, full.regret[:, 9::10])
    np.testing.assert_array_equal(every.counts, full.counts)


@pytest.mark.parametrize("name", NAMES)
def test_one_action_per_state_has_zero_pseudo_regret(name):
    base = jm.envs.paper_mdp()
    mask = np.array([[False, True], [True, False], [False, True]])
    traj = _run(name, mdp=jm.MDP(base.P, base.R, mask))
    np.testing.assert_array_equal(traj.pseudo_regret, 0.0)
    assert np.all(np.isfinite(traj.regret))
    assert np.all(np.asarray(traj.counts.sum(-1))[:, ~mask] == 0)


def test_only_admissible_actions_played():
    base = jm.envs.paper_mdp()
    mask = np.array([[True, True], [False, True], [True, False]])
    traj = _run("ps", mdp=jm.MDP(base.P, base.R, mask))
    visits = np.asarray(traj.counts.sum(-1))
    assert np.all(visits[:, ~mask] == 0)
    assert np.all(visits[:, mask] >= 0) and np.all(np.isfinite(traj.pseudo_regret))


@pytest.mark.parametrize("name", ["ucb", "olp"])
def test_first_steps_try_every_action(name):
    """MDP-UCB and OLP's convention: untried actions first."""
    traj = _run(name, horizon=CHUNK, seed=1)
    visits = np.asarray(traj.counts.sum(-1))  # [R, S, A]
    # A state visited at least A = 2 times has tried both actions.
    assert np.all(visits[visits.sum(-1) >= 2] >= 1)


def _python_loops(mdp, agent, horizon, keys, transitions):
    """The scan's step written as a Python loop over the agent protocol, one loop per key
    (one compiled step for all); the transitions are fed first."""
    delta = jm.gaps(mdp)
    counts0 = jnp.zeros(mdp.P.shape, jnp.int32)
    t0 = 1
    for x, a, y in transitions:  # feeding: counts and t advance, no regret
        counts0 = counts0.at[x, a, y].add(1)
        t0 += 1
    spec = env_spec(mdp)
    sums = jnp.zeros(mdp.R.shape, mdp.R.dtype)

    @jax.jit
    def play(key, bits_key, t, step, x, counts, state):
        # The simulator's draws for round `step`: the agent's key fold_in(key, step) and
        # the environment's uniform from the round's threefry words.
        k_action = jax.random.fold_in(key, step)
        words = SIMULATE_MODULE._round_words(bits_key, step, 4)
        obs = Observation(t=t, step=step, state=x, counts=counts, reward_sums=sums)
        a, state = agent.step(k_action, state, obs, spec)
        c = jnp.cumsum(mdp.P[x, a])
        u = SIMULATE_MODULE._uniform(words[:2], c.dtype) * c[-1]
        y = jnp.minimum(jnp.searchsorted(c, u, side="right"), c.shape[0] - 1)
        return a, y.astype(jnp.int32), counts.at[x, a, y].add(1), state

    loops = []
    _, round_keys, bits_keys = SIMULATE_MODULE._stream_keys(keys)
    for key, bits_key in zip(round_keys, bits_keys):
        state = agent.init(jax.random.key(0), spec)
        x, t, counts, pseudo, out = jnp.int32(0), t0, counts0, 0.0, []
        for step in range(horizon):
            a, y, counts, state = play(key, bits_key, jnp.int32(t), jnp.int32(step), x,
                                       counts, state)
            pseudo += float(delta[x, a])
            out.append(pseudo)
            x, t = y, t + 1
        loops.append((np.array(out), counts))
    return loops


def test_rigged_start_equals_feeding_the_transitions():
    mdp = jm.envs.paper_mdp()
    rigged = np.asarray(jm.envs.rigged_counts())
    transitions = [(x, a, y) for x in range(3) for a in range(2) for y in range(3)
                   for _ in range(rigged[x, a, y])]
    horizon = 12
    traj = _run("olp", horizon=CHUNK, seed=9, initial_counts=rigged)
    # The simulator draws its random bits with a fixed threefry layout; so does the loop.
    with jax.threefry_partitionable(SIMULATE_MODULE.PARTITIONABLE_THREEFRY):
        keys = jax.random.split(jax.random.key(9), REPS)
        loops = _python_loops(mdp, jm.get_agent("olp"), horizon, keys[:2], transitions)
    for i, (pseudo, _) in enumerate(loops):
        np.testing.assert_allclose(traj.pseudo_regret[i, :horizon], pseudo, rtol=1e-12,
                                   atol=1e-12)
    # Regret counts only the played rounds; the counts hold both.
    np.testing.assert_array_equal(traj.counts.sum(axis=(1, 2, 3)), 60 + CHUNK)
    assert np.all(np.asarray(traj.counts) >= rigged)


def test_rigged_start_misleads_ucb_first_decisions():
    """From the rigged counts the estimated policy is (a2, a1, a1), as the paper says."""
    est = estimate(jm.envs.rigged_counts(), jm.envs.paper_mdp())
    np.testing.assert_array_equal(est.policy, [1, 0, 0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(horizon=0), "horizon must be a positive integer, got 0"),
        (dict(horizon=-5), "horizon must be a positive integer, got -5"),
        (dict(horizon=10.5), "horizon must be a positive integer, got 10.5"),
        (dict(replications=0), "replications must be a positive integer, got 0"),
        (dict(record_every=0), "record_every must be a positive integer, got 0"),
        (dict(agent="greedy"), r"agent must be an Agent or one of .*got 'greedy'"),
        (dict(initial_counts=np.zeros((3, 2, 2))),
         r"initial_counts must have shape \(3, 2, 3\).*got shape \(3, 2, 2\)"),
        (dict(initial_counts=-np.ones((3, 2, 3))), "initial_counts must be non-negative"),
        (dict(initial_counts=np.full((3, 2, 3), 0.5)), "initial_counts must be whole"),
        (dict(seed="zero"), "seed must be an int or a PRNG key, got 'zero'"),
    ],
)
def test_validation(kwargs, match):
    args = dict(mdp=jm.envs.paper_mdp(), agent="ucb", horizon=10, replications=2,
                seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        jm.simulate(**args, progress=False)


def test_numpy_reference_gaps_agree_with_planning():
    gain, gap = ref.true_gaps(ref.PAPER_P, ref.PAPER_R, np.ones((3, 2), bool))
    np.testing.assert_allclose(jm.gaps(jm.envs.paper_mdp()), gap, atol=1e-12)
    np.testing.assert_allclose(jm.solve_average_reward(jm.envs.paper_mdp())[0], gain)


# --- The simulator's random draws -----------------------------------------------------------
def test_round_uniforms_use_the_dtype_s_mantissa():
    ones, zeros = jnp.uint32(0xFFFFFFFF), jnp.uint32(0)
    for dtype, bits in [(jnp.float32, 23), (jnp.float64, 52)]:
        assert float(SIMULATE_MODULE._uniform([zeros, zeros], dtype)) == 0.0
        top = SIMULATE_MODULE._uniform([ones, ones], dtype)
        assert top.dtype == dtype and float(top) == 1.0 - 2.0 ** -bits
    # float64 uses both words: the low word's high bits reach the last mantissa bits.
    assert float(SIMULATE_MODULE._uniform([zeros, jnp.uint32(1 << 12)], jnp.float64)) == 2.0 ** -52
    assert float(SIMULATE_MODULE._uniform([zeros, jnp.uint32(1 << 31)], jnp.float32)) == 0.0


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_round_uniforms_are_uniform_and_independent(dtype):
    from scipy import stats

    keys = jax.random.split(jax.random.key(3), 64)
    _, _, bits_keys = SIMULATE_MODULE._stream_keys(keys)
    rounds = jnp.arange(500, dtype=jnp.int32)
    count = 4 if jnp.dtype(dtype).itemsize == 8 else 2

    def draws(bits_key, index):
        words = SIMULATE_MODULE._round_words(bits_key, index, count)
        half = count // 2
        return (SIMULATE_MODULE._uniform(words[:half], dtype),
                SIMULATE_MODULE._uniform(words[half:], dtype))

    u, v = jax.vmap(jax.vmap(draws, in_axes=(None, 0)), in_axes=(0, None))(bits_keys, rounds)
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)  # [replications, rounds]
    assert u.dtype == v.dtype and 0 <= u.min() and u.max() < 1
    for sample in (u.ravel(), v.ravel()):
        assert stats.kstest(sample, "uniform").pvalue > 1e-4
    # No correlation between the two uniforms of a round, consecutive rounds or
    # neighbouring replications (32,000 pairs: |r| < 0.03 is over 5 standard errors).
    for a, b in [(u, v), (u[:, 1:], u[:, :-1]), (u[1:], u[:-1]), (v[:, 1:], v[:, :-1])]:
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.03
    # Replications do not repeat one another's draws.
    assert len(np.unique(u[:, 0])) == u.shape[0]


def test_next_states_follow_the_transition_law():
    from scipy import stats

    # One action everywhere, every row the same law: the counts of next states over all
    # rounds and replications are multinomial. Includes a state of probability 1e-12.
    p = jnp.array([0.2, 0.5, 1e-12, 0.3 - 1e-12])
    mdp = jm.MDP(jnp.broadcast_to(p, (4, 1, 4)), jnp.zeros((4, 1)))
    only = jm.Agent("only-action", lambda key, spec, config: (),
                    lambda key, state, obs, spec, config: (jnp.int32(0), state))
    traj = jm.simulate(mdp, only, 500, 64, 4, progress=False)
    observed = np.asarray(traj.counts.sum(axis=(0, 1, 2)), np.float64)
    assert observed[2] == 0
    kept = np.asarray(p)[[0, 1, 3]]
    expected = kept / kept.sum() * observed.sum()
    assert stats.chisquare(observed[[0, 1, 3]], expected).pvalue > 1e-4


def test_gaussian_rewards_are_normal():
    from scipy import stats

    mdp = jm.MDP(jnp.ones((1, 1, 1)), jnp.array([[0.3]]), reward_law="gaussian",
                 reward_sigma=0.7)
    u = jax.random.uniform(jax.random.key(0), (20_000,), jnp.float64)
    r = jax.vmap(lambda u: SIMULATE_MODULE._observed_reward(u, mdp.R[0, 0], mdp))(u)
    assert np.all(np.isfinite(np.asarray(r)))
    assert stats.kstest(np.asarray(r), "norm", args=(0.3, 0.7)).pvalue > 1e-4
    # The smallest uniform (0) maps to a finite value, the top of [0, 1) below +inf.
    edge = SIMULATE_MODULE._observed_reward(jnp.array([0.0, 1.0 - 2.0 ** -52]), mdp.R[0, 0], mdp)
    assert np.all(np.isfinite(np.asarray(edge)))


def test_keys_of_other_implementations_become_threefry_keys():
    """An rbg key draws a vmapped batch's bits from one key; the simulator replaces it by
    the threefry key of its first 64 bits (MDP-PS's rejection loop used to spin forever
    on such keys: a row's fresh key gave the same bits)."""
    rbg = jax.random.key(4, impl="rbg")
    converted = jax.random.wrap_key_data(jax.random.bits(rbg, (2,), jnp.uint32),
                                         impl="threefry2x32")
    a, b = _run("ps", seed=rbg), _run("ps", seed=converted)
    np.testing.assert_array_equal(a.pseudo_regret, b.pseudo_regret)
    assert len(np.unique(np.asarray(a.pseudo_regret[:, -1]))) > 1
    with pytest.raises(ValueError, match="single PRNG key"):
        _run("ps", seed=jax.random.split(jax.random.key(0), 2))


# --- A batch of MDPs: one program, instance by instance equal to separate calls ---------

_BATCH_FIELDS = ("pseudo_regret", "regret", "counts", "state", "reward_sums", "policy")


def _separate_and_batched(agent, instances, **kwargs):
    kwargs = dict(horizon=120, replications=3, seed=5, progress=False, chunk_size=50,
                  **kwargs)
    batched = jm.simulate(jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *instances),
                          agent, **kwargs)
    return batched, [jm.simulate(m, agent, **kwargs) for m in instances]


@pytest.mark.parametrize("agent", ["ucb", "ucrl2"])
def test_batched_mdps_equal_separate_calls_bit_for_bit(agent):
    """Instance m, replication r of a batched call is replication r of
    ``simulate(mdp[m], ...)`` with the same seed: same keys, gain and gaps, so equal
    bit for bit (a paper agent and a baseline; different instances, different MDPs)."""
    instances = [jm.envs.make("garnet-5-2-3", seed=s) for s in range(3)]
    batched, separate = _separate_and_batched(agent, instances, record_path=True)
    assert batched.pseudo_regret.shape == (3, 3, 120)
    assert batched.states.shape == (3, 3, 120)
    np.testing.assert_array_equal(batched.times, separate[0].times)
    for m, single in enumerate(separate):
        for field in _BATCH_FIELDS + ("states", "actions"):
            mine, theirs = getattr(batched, field), getattr(single, field)
            if theirs is None:
                assert mine is None, field
                continue
            np.testing.assert_array_equal(mine[m], theirs, err_msg=f"{agent} {m} {field}")
    # Different instances give different trajectories (the MDP is gathered per row).
    assert not np.array_equal(batched.pseudo_regret[0], batched.pseudo_regret[1])


def test_batched_mdps_in_blocks_and_from_a_list(monkeypatch):
    """Replications run in several vmapped blocks (a tiny CPU block budget) still equal
    the separate calls; a list of MDPs is stacked like an MDP batch."""
    monkeypatch.setattr(SIMULATE_MODULE, "CPU_BLOCK_BYTES", 1)
    instances = [jm.envs.make("garnet-4-2-2", seed=s) for s in (7, 8)]
    batched, separate = _separate_and_batched("ps", instances)
    listed = jm.simulate(instances, "ps", 120, 3, 5, progress=False, chunk_size=50)
    for m, single in enumerate(separate):
        np.testing.assert_array_equal(batched.regret[m], single.regret)
        np.testing.assert_array_equal(listed.regret[m], single.regret)


def test_batched_mdps_bad_input():
    small, big = jm.envs.make("garnet-4-2-2"), jm.envs.make("garnet-5-2-2")
    with pytest.raises(ValueError, match=r"mdp: MDPs of different sizes.*mdp\[1\]"):
        jm.simulate([small, big], "ucb", 10, 1, progress=False)
    with pytest.raises(ValueError, match="mdp must be a jaxmdp.MDP or a non-empty list"):
        jm.simulate([], "ucb", 10, 1, progress=False)
    with pytest.raises(ValueError, match="mdp must be a jaxmdp.MDP or a non-empty list"):
        jm.simulate([small, "garnet"], "ucb", 10, 1, progress=False)
    with pytest.raises(ValueError, match="one leading axis"):
        jm.simulate(jm.MDP.unchecked(jnp.ones((1, 1, 2, 1, 1)), jnp.ones((1, 1, 2, 1))),
                    "ucb", 10, 1, progress=False)
    # Validation per instance, naming it: instance 1 has a row that does not sum to 1.
    P = jnp.stack([small.P, small.P.at[2, 1, 0].add(0.5)])
    with pytest.raises(ValueError, match=r"mdp\[1\] \(instance 1 of the batch\)"):
        jm.simulate(jm.MDP.unchecked(P, jnp.stack([small.R] * 2)), "ucb", 10, 1,
                    progress=False)
    # A multichain instance: two absorbing states with different rewards.
    P2 = jnp.stack([jnp.eye(2)[:, None, :]] * 2)
    R2 = jnp.array([[[0.5], [0.5]], [[1.0], [0.0]]])
    with pytest.raises(ValueError, match=r"mdp\[1\].*multichain"):
        jm.simulate(jm.MDP.unchecked(P2, R2), "ucb", 10, 1, progress=False)
    # Learned Bernoulli rewards need means in [0, 1] in every instance.
    R3 = jnp.stack([small.R, small.R.at[0, 0].set(2.0)])
    with pytest.raises(ValueError, match=r"mdp\[1\]"):
        jm.simulate(jm.MDP.unchecked(jnp.stack([small.P] * 2), R3),
                    jm.get_agent("ucb", known_rewards=False), 10, 1, progress=False)


def test_gains_and_gaps_of_a_batch_equal_the_one_mdp_solvers():
    from jaxmdp.planning import Status
    from jaxmdp.planning.suboptimality import gains_and_gaps

    mdps = jm.envs.batch("random-5-3", seeds=range(6))
    gain, delta, status = gains_and_gaps(mdps)
    assert gain.shape == (6,) and delta.shape == (6, 5, 3)
    for m in range(6):
        one = jm.envs.make("random-5-3", seed=m)
        np.testing.assert_array_equal(gain[m], jm.solve_average_reward(one)[0])
        np.testing.assert_array_equal(delta[m], jm.gaps(one))
        assert int(status[m]) == Status.CONVERGED
    # Two absorbing states with different rewards: multichain, flagged, never raised.
    P = jnp.stack([jnp.eye(2)[:, None, :]] * 2)
    R = jnp.array([[[0.5], [0.5]], [[1.0], [0.0]]])
    status = gains_and_gaps(jm.MDP.unchecked(P, R))[2]
    assert [int(s) for s in status] == [Status.CONVERGED, Status.MULTICHAIN]
