"""``jaxmdp.simulate(..., devices=...)``: replications split over 4 forced host devices
equal the one-device runs bit for bit.

One subprocess (``XLA_FLAGS=--xla_force_host_platform_device_count=4``; the device count
is fixed when JAX starts) runs the specs of tests/shared_runs.py named in ``SHARDED`` on
all 4 devices. Splitting the replication axis leaves each replication's computation as it
is; what it can break is the code that looks across replications or pads them, so the
specs cover each such path: UCRL2 and KL-UCRL (``cond_chunked``, 16 replications, paths
recorded), TSDE (6 replications: 2, 2, 1 and 1 padded), and MDP-PS
learning Bernoulli rewards on a garnet with records of 2 rounds over two chunks (7
replications: 2, 2, 2 and 1 padded), which also runs on an explicit list of one of the
four devices. The one-device runs are those that agents/test_ucrl.py and
agents/test_psrl.py check (simulated once per process). A batch of MDPs split over four
devices equals the one-device batched run.

Also here: replications in cache-sized blocks against one batch, bit for bit, and the
validation of the ``devices`` argument.
"""

import importlib
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from shared_runs import SHARED_RUNS, run_spec, shared_run

import jaxmdp as jm
from jaxmdp import _sharding

#: The specs of tests/shared_runs.py run split over 4 devices (see the module docstring).
SHARDED = ["ucrl2", "kl_ucrl", "tsde", "ps_learner_garnet"]

FIELDS = ["pseudo_regret", "regret", "times", "counts", "state", "policy", "reward_sums",
          "states", "actions"]

_SHARDED_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from shared_runs import SHARED_RUNS, run_spec

    assert len(jax.devices()) == 4, jax.devices()
    fields, names = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    out = {}
    runs = [(name, name, None) for name in names]  # devices=None: all four
    # An explicit list of one device (of the four) runs there alone.
    runs.append(("ps_learner_garnet/one", "ps_learner_garnet", jax.devices()[:1]))
    for key, name, devices in runs:
        traj = run_spec(SHARED_RUNS[name], devices=devices)
        for field in fields:
            if getattr(traj, field) is not None:
                out[f"{key}/{field}"] = np.asarray(getattr(traj, field))
        for i, leaf in enumerate(jax.tree_util.tree_leaves(traj.agent_state)):
            out[f"{key}/agent_state/{i}"] = np.asarray(leaf)
        out[f"{key}/devices"] = len(traj.counts.sharding.device_set)
    np.savez(sys.argv[1], **out)
""")


def test_sharded_runs_equal_single_device_runs(run_on_host_devices, tmp_path):
    import json

    path = tmp_path / "sharded.npz"
    run_on_host_devices(_SHARDED_SCRIPT, 4, str(path), json.dumps(FIELDS),
                        json.dumps(SHARDED))
    sharded = dict(np.load(path))
    assert sys.modules["shared_runs"].SHARED_RUNS is SHARED_RUNS
    runs = [(name, name, 4) for name in SHARDED]
    runs.append(("ps_learner_garnet/one", "ps_learner_garnet", 1))
    for key, name, devices in runs:
        one = shared_run(name)  # this process: one device
        for field in FIELDS:
            value = getattr(one, field)
            if value is None:
                assert f"{key}/{field}" not in sharded, (key, field)
                continue
            # Bit for bit: float64 values compared exactly.
            np.testing.assert_array_equal(sharded.pop(f"{key}/{field}"), value,
                                          err_msg=f"{key} {field}")
        leaves = jax.tree_util.tree_leaves(one.agent_state)
        assert leaves, key
        for i, leaf in enumerate(leaves):
            np.testing.assert_array_equal(sharded.pop(f"{key}/agent_state/{i}"), leaf,
                                          err_msg=f"{key} agent state leaf {i}")
        assert int(sharded.pop(f"{key}/devices")) == devices, key
        assert len(one.counts.sharding.device_set) == 1, key
    assert not sharded, sorted(sharded)  # the same fields and agent state leaves
    # The specs differ where they should: recorded paths, MDP-PS's learner draws rewards
    # (realised regret differs from the deterministic run's), records of 2 rounds.
    assert shared_run("ucrl2").actions.shape == (16, 2000)
    assert shared_run("tsde").actions is None
    ps, learner = shared_run("ps_garnet"), shared_run("ps_learner_garnet")
    assert not np.array_equal(learner.regret, ps.regret)
    assert ps.pseudo_regret.shape == (7, 60) and ps.actions.shape == (7, 120)
    assert np.sum(ps.counts) == 7 * 120
    # Different replications are different runs.
    assert not np.array_equal(ps.counts[0], ps.counts[1])


_BATCHED_SCRIPT = textwrap.dedent("""
    import sys
    import jax, numpy as np
    import jaxmdp as jm

    assert len(jax.devices()) == 4, jax.devices()
    mdps = jm.envs.batch("garnet-5-2-3", seeds=range(3))
    traj = jm.simulate(mdps, "ucb", 90, 3, 2, progress=False, chunk_size=40)
    assert len(traj.counts.sharding.device_set) == 4
    np.savez(sys.argv[1], pseudo_regret=traj.pseudo_regret, regret=traj.regret,
             counts=traj.counts)
""")


def test_batched_mdps_sharded_equal_one_device(run_on_host_devices, tmp_path):
    """A batch of 3 MDPs x 3 replications (9 rows, padded to 12) split over 4 devices
    equals the one-device batched run bit for bit."""
    import jaxmdp as jm

    path = tmp_path / "batched.npz"
    run_on_host_devices(_BATCHED_SCRIPT, 4, str(path))
    sharded = dict(np.load(path))
    one = jm.simulate(jm.envs.batch("garnet-5-2-3", seeds=range(3)), "ucb", 90, 3, 2,
                      progress=False, chunk_size=40)
    assert sharded["pseudo_regret"].shape == (3, 3, 90)
    for field, value in sharded.items():
        np.testing.assert_array_equal(value, getattr(one, field), err_msg=field)


def test_blocked_replications_equal_one_batch(monkeypatch):
    """On CPU, replications run in cache-sized blocks (and a smaller last block): the
    results are those of one vmapped batch, bit for bit. MDP-PS on a garnet, 7
    replications, two chunks of records of 2 rounds (tests/shared_runs.py's "ps_garnet",
    whose one-batch run test_sharding.py also splits over devices)."""
    simulate_module = importlib.import_module("jaxmdp._simulate")
    assert SHARED_RUNS["ps_garnet"][3]["replications"] == 7
    one = shared_run("ps_garnet")  # 7 replications: one batch (they fit in the cache)
    # Blocks of 3, 3 and a last block of 1.
    monkeypatch.setattr(simulate_module, "replication_block", lambda *a, **k: 3)
    blocks = run_spec(SHARED_RUNS["ps_garnet"])
    for field in ("pseudo_regret", "regret", "counts", "state", "policy", "reward_sums",
                  "states", "actions"):
        np.testing.assert_array_equal(getattr(one, field), getattr(blocks, field), field)
    jax.tree_util.tree_map(np.testing.assert_array_equal, one.agent_state,
                           blocks.agent_state)


def test_replication_block_size(monkeypatch):
    simulate_module = importlib.import_module("jaxmdp._simulate")
    carry = {"a": jnp.zeros((10, 1000), jnp.float32), "b": jnp.zeros((10, 250), jnp.int32)}
    assert simulate_module.replication_block(carry, 10, "cpu") is None  # 5 kB each
    monkeypatch.setattr(simulate_module, "CPU_BLOCK_BYTES", 3 * 5000 + 10)
    assert simulate_module.replication_block(carry, 10, "cpu") == 3
    assert simulate_module.replication_block(carry, 10, "gpu") is None
    monkeypatch.setattr(simulate_module, "CPU_BLOCK_BYTES", 10)
    assert simulate_module.replication_block(carry, 10, "cpu") == 1


def test_devices_argument_is_validated():
    with pytest.raises(ValueError, match="non-empty"):
        _sharding.replication_mesh([])
    with pytest.raises(ValueError, match="jax.Device"):
        _sharding.replication_mesh(["cpu:0"])
    with pytest.raises(ValueError, match="planner"):
        jm.get_agent("ucb", planner="lu")
    with pytest.raises(ValueError, match="refresh_every"):
        jm.get_agent("ucb", refresh_every=0)
