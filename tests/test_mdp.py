"""Tests for the MDP pytree, its validation, and saving and loading it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmdp as jm


def _valid(S=3, A=2):
    P = np.full((S, A, S), 1.0 / S)
    R = np.arange(S * A, dtype=float).reshape(S, A) / (S * A)
    return P, R


def test_construction_stores_float_arrays_and_default_mask():
    P, R = _valid()
    mdp = jm.MDP(P, R)
    assert mdp.P.dtype == jnp.float64 and mdp.R.dtype == jnp.float64
    assert mdp.mask.dtype == jnp.bool_ and bool(mdp.mask.all())
    assert (mdp.num_states, mdp.num_actions) == (3, 2)
    np.testing.assert_array_equal(mdp.P, P)


def test_integer_inputs_become_float_and_01_mask_becomes_bool():
    P = np.zeros((2, 1, 2), dtype=int)
    P[:, 0, 1] = 1
    mdp = jm.MDP(P, np.array([[1], [2]]), mask=np.array([[1], [1]]))
    assert jnp.issubdtype(mdp.P.dtype, jnp.floating) and mdp.P.dtype == mdp.R.dtype
    assert mdp.mask.dtype == jnp.bool_


def test_negative_rewards_are_allowed():
    P, R = _valid()
    jm.MDP(P, -R - 1.0)


def test_inadmissible_rows_need_not_sum_to_one():
    P, R = _valid()
    P[1, 1] = 0.0
    mask = np.ones((3, 2), bool)
    mask[1, 1] = False
    mdp = jm.MDP(P, R, mask)
    assert not bool(mdp.mask[1, 1])


def test_float32_rows_normalised_by_division_pass():
    P = np.random.default_rng(0).uniform(size=(1000, 2, 1000)).astype(np.float32)
    P = P / P.sum(-1, keepdims=True)
    jm.MDP(P, jnp.zeros((1000, 2), jnp.float32))


_BAD_INPUTS = {
    # name: (P, R, mask, argument named in the message, fragment of the message)
    "P_rank": (np.full((3, 3), 1 / 3), np.zeros((3, 2)), None, "P", "got shape (3, 3)"),
    "P_not_square": (np.full((3, 2, 4), 0.25), np.zeros((3, 2)), None, "P", "got shape"),
    "P_empty": (np.zeros((0, 2, 0)), np.zeros((0, 2)), None, "P", "got shape"),
    "R_rank": (np.full((3, 2, 3), 1 / 3), np.zeros((3, 2, 1)), None, "R", "got shape"),
    "R_shape": (np.full((3, 2, 3), 1 / 3), np.zeros((3, 3)), None, "R", "got shape (3, 3)"),
    "mask_shape": (
        np.full((3, 2, 3), 1 / 3),
        np.zeros((3, 2)),
        np.ones((2, 3), bool),
        "mask",
        "got shape (2, 3)",
    ),
    "mask_values": (
        np.full((3, 2, 3), 1 / 3),
        np.zeros((3, 2)),
        np.full((3, 2), 2),
        "mask",
        "got values",
    ),
    "P_negative": (
        np.array([[[1.1, -0.1]], [[0.5, 0.5]]]),
        np.zeros((2, 1)),
        None,
        "P",
        "got P[0, 0, 1] = -0.1",
    ),
    "P_nan": (
        np.array([[[np.nan, 1.0]], [[0.5, 0.5]]]),
        np.zeros((2, 1)),
        None,
        "P",
        "got P[0, 0, 0] = nan",
    ),
    "P_inf": (
        np.array([[[0.5, 0.5]], [[np.inf, 0.0]]]),
        np.zeros((2, 1)),
        None,
        "P",
        "got P[1, 0, 0] = inf",
    ),
    "R_nan": (np.full((2, 1, 2), 0.5), np.array([[0.0], [np.nan]]), None, "R", "= nan"),
    "R_inf": (np.full((2, 1, 2), 0.5), np.array([[-np.inf], [0.0]]), None, "R", "= -inf"),
    "P_row_sum": (
        np.array([[[0.5, 0.5]], [[0.5, 0.5 + 2e-6]]]),
        np.zeros((2, 1)),
        None,
        "P",
        "sum(P[1, 0])",
    ),
    "P_row_sum_below": (
        np.array([[[0.3, 0.3]], [[0.5, 0.5]]]),
        np.zeros((2, 1)),
        None,
        "P",
        "sum(P[0, 0]) = 0.6",
    ),
    "no_admissible_action": (
        np.full((3, 2, 3), 1 / 3),
        np.zeros((3, 2)),
        np.array([[True, False], [False, False], [True, True]]),
        "mask",
        "got state 1",
    ),
    "complex": (np.full((2, 1, 2), 0.5 + 0j), np.zeros((2, 1)), None, "P", "got dtype"),
    "float16": (np.full((2, 1, 2), 0.5, np.float16), np.zeros((2, 1), np.float16), None, "P",
                "got dtype float16"),
    "bfloat16": (jnp.full((2, 1, 2), 0.5, jnp.bfloat16), jnp.zeros((2, 1), jnp.bfloat16), None,
                 "P", "got dtype"),
}


@pytest.mark.parametrize("case", sorted(_BAD_INPUTS))
def test_bad_input_raises_value_error_naming_argument(case):
    P, R, mask, name, fragment = _BAD_INPUTS[case]
    with pytest.raises(ValueError, match=rf"\b{name}\b") as info:
        jm.MDP(P, R, mask)
    assert fragment in str(info.value)
    assert "got" in str(info.value)


def test_row_sum_within_tolerance_passes():
    P = np.array([[[0.5, 0.5]], [[0.5, 0.5 + 5e-7]]])
    jm.MDP(P, np.zeros((2, 1)))


def test_unchecked_skips_validation():
    mdp = jm.MDP.unchecked(np.full((2, 1, 2), 0.7), np.zeros((2, 1)))
    assert mdp.mask.shape == (2, 1) and bool(mdp.mask.all())
    with pytest.raises(ValueError):
        jm.MDP(np.full((2, 1, 2), 0.7), np.zeros((2, 1)))


def test_pytree_roundtrip_jit_vmap_scan():
    mdp = jm.envs.paper_mdp()
    leaves, treedef = jax.tree_util.tree_flatten(mdp)
    assert len(leaves) == 3
    again = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(again, jm.MDP)
    paths = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_leaves_with_path(mdp)]
    assert paths == [".P", ".R", ".mask"]

    @jax.jit
    def scaled(m):
        return jm.MDP.unchecked(m.P, 2 * m.R, m.mask)

    np.testing.assert_allclose(scaled(mdp).R, 2 * mdp.R)

    batch = jax.tree.map(lambda x: jnp.stack([x, x]), mdp)
    sums = jax.vmap(lambda m: m.R.sum())(batch)
    np.testing.assert_allclose(sums, [mdp.R.sum()] * 2)
    assert batch.num_states == 3 and batch.num_actions == 2

    def step(m, _):
        return jm.MDP.unchecked(m.P, m.R + 1, m.mask), m.R.sum()

    final, outs = jax.lax.scan(step, mdp, length=3)
    np.testing.assert_allclose(final.R, mdp.R + 3)
    assert outs.shape == (3,)


def test_constructor_on_tracers_runs_shape_checks_only():
    P, R = _valid()

    @jax.jit
    def build(P, R):
        return jm.MDP(P, R).R.sum()

    assert float(build(P, R)) == pytest.approx(R.sum())
    with pytest.raises(ValueError, match=r"\bR\b"):
        jax.jit(lambda P: jm.MDP(P, np.zeros((2, 2))).R)(P)


# --- MDP.save / MDP.load ----------------------------------------------------------------


def _random_mdp(dtype, reward_law, seed=0, S=4, A=3):
    """A random MDP with a mask (state 1 lacks action 2; its inadmissible row is not a
    distribution) in ``dtype``; rewards in [0, 1] for every law."""
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S)).astype(dtype)
    P /= P.sum(axis=-1, keepdims=True)
    mask = np.ones((S, A), bool)
    mask[1, 2] = False
    P[1, 2] = 0.3  # inadmissible: finite, non-negative, not summing to 1
    R = rng.random((S, A)).astype(dtype)
    sigma = 0.7 if reward_law == "gaussian" else None
    return jm.MDP(P, R, mask, reward_law=reward_law, reward_sigma=sigma)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reward_law", jm.mdp.REWARD_LAWS)
def test_save_and_load_round_trip_bit_for_bit(tmp_path, dtype, reward_law):
    mdp = _random_mdp(dtype, reward_law)
    path = mdp.save(tmp_path / "sub" / "m.npz")
    assert path == tmp_path / "sub" / "m.npz"
    again = jm.MDP.load(str(path))
    for name in ("P", "R", "mask"):
        saved, loaded = np.asarray(getattr(mdp, name)), np.asarray(getattr(again, name))
        assert loaded.dtype == saved.dtype
        assert loaded.tobytes() == saved.tobytes(), name
    assert again.P.dtype == np.dtype(dtype)
    assert (again.reward_law, again.reward_sigma) == (mdp.reward_law, mdp.reward_sigma)
    # The file itself: plain arrays that numpy reads without pickling.
    with np.load(path, allow_pickle=False) as data:
        assert sorted(data.files) == ["P", "R", "mask", "reward_law", "reward_sigma"]
        assert str(data["reward_law"]) == reward_law
        assert float(data["reward_sigma"]) == (0.7 if reward_law == "gaussian" else 0.0)
    # The loaded MDP runs like the original (same solution of the planning problem).
    np.testing.assert_array_equal(jm.solve_average_reward(again)[0],
                                  jm.solve_average_reward(mdp)[0])


def _write(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def _arrays(**changes):
    mdp = _random_mdp(np.float64, "deterministic")
    arrays = dict(P=np.array(mdp.P), R=np.array(mdp.R), mask=np.array(mdp.mask),
                  reward_law=np.asarray("deterministic"), reward_sigma=np.asarray(0.0))
    arrays.update(changes)
    return arrays


def _bad_row():
    P = _arrays()["P"]
    P[2, 1, 0] += 0.01
    return P


def _negative():
    P = _arrays()["P"]
    P[0, 0, 0], P[0, 0, 1] = -0.25, P[0, 0, 1] + P[0, 0, 0] + 0.25
    return P


@pytest.mark.parametrize(
    "changes, drop, message",
    [
        ({"P": _bad_row()}, None, r"P\[s, a\] must sum to 1 .* sum\(P\[2, 1\]\)"),
        ({"P": _negative()}, None, r"P must be non-negative, got P\[0, 0, 0\] = -0.25"),
        ({"R": np.zeros((4, 2))}, None, r"R must have shape \[S, A\] = \(4, 3\)"),
        ({"mask": np.zeros((4, 3), bool)}, None, "mask must allow at least one action"),
        ({"reward_law": np.asarray("poisson")}, None, "reward_law must be one of"),
        ({"reward_law": np.asarray(["deterministic"])}, None, "reward_law must be a string"),
        ({"reward_sigma": np.asarray(0.5)}, None, "reward_sigma is only used by the Gaussian"),
        ({"reward_law": np.asarray("gaussian")}, None, "reward_sigma must be a positive"),
        ({}, "P", r"misses the array\(s\) \['P'\]"),
        ({}, "mask", r"misses the array\(s\) \['mask'\]"),
    ],
)
def test_load_rejects_a_corrupt_file_naming_the_array(tmp_path, changes, drop, message):
    arrays = _arrays(**changes)
    if drop is not None:
        del arrays[drop]
    path = _write(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message) as info:
        jm.MDP.load(path)
    assert str(path) in str(info.value)


def test_load_reports_a_missing_file_and_a_file_that_is_not_npz(tmp_path):
    with pytest.raises(FileNotFoundError, match="no MDP file at .*nothing.npz"):
        jm.MDP.load(tmp_path / "nothing.npz")
    (tmp_path / "text.npz").write_text("not an archive")
    with pytest.raises(ValueError, match="is not an .npz file written by MDP.save"):
        jm.MDP.load(tmp_path / "text.npz")


def test_save_rejects_a_batch_and_traced_values(tmp_path):
    mdp = _random_mdp(np.float64, "deterministic")
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), mdp)
    with pytest.raises(ValueError, match=r"got a batch: P of shape \(2, 4, 3, 4\)"):
        batch.save(tmp_path / "b.npz")

    @jax.jit
    def save(m):
        m.save(tmp_path / "t.npz")
        return m.P

    with pytest.raises(ValueError, match="traced values"):
        save(mdp)
    assert not list(tmp_path.iterdir())
