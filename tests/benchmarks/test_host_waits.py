"""benchmarks/host_waits.py: the counting interpreter against trip counts worked out by
hand, and one agent's row at a tiny size."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("host_waits",
                                               ROOT / "benchmarks" / "host_waits.py")
host_waits = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(host_waits)


def _program(x):
    """Per row: double ``x`` until its least entry reaches 100 (rows stop apart), in
    three rounds of a scan whose unbatched conditional sorts the row, then a final
    sort."""

    def double(c):
        return c[0] * 2.0, c[1] + 1

    def round_(carry, t):
        value, steps = lax.while_loop(lambda c: jnp.min(c[0]) < 100.0, double, carry)
        value = lax.cond(t % 2 == 0, jnp.sort, lambda v: v, value)
        return (value, steps), None

    (value, steps), _ = lax.scan(round_, (x, 0), jnp.arange(3))
    return jnp.sort(value), steps


def test_counts_match_the_trips_worked_out_by_hand():
    # Rows of 4 values; under vmap the loop runs while any row goes on.
    x = jnp.array([[1.0, 3.0, 50.0, 200.0], [2.0, 1000.0, 4.0, 5.0]])
    closed = jax.make_jaxpr(jax.vmap(_program))(x)
    sites = host_waits.survey(closed.jaxpr, {})
    outs, counts = jax.jit(lambda x: host_waits.interpret(
        closed.jaxpr, closed.consts, [x], jnp.zeros((host_waits._slots(sites),), jnp.int32),
        sites))(x)
    # The interpreted program computes what XLA's does.
    for got, want in zip(outs, jax.vmap(_program)(x)):
        np.testing.assert_array_equal(got, want)
    by_kind = {}
    for slot, kind, _, elements in sites.values():
        by_kind.setdefault(kind, []).append((slot, elements))
    [(loop, _)] = by_kind["while"]
    [(cond, _)] = by_kind["cond"]
    # First round: row 1's least entry, 1, doubles 7 times to 128 (row 2's, 2, stops
    # after 6); rounds 2 and 3 find every entry at 100 or more (no trip).
    assert counts[loop] == 7 and counts[loop + 1] == 3
    # The conditional's predicate (the round) is not batched: a real one, run 3 times.
    assert counts[cond] == 3
    # Sorts: the conditional's (taken in rounds 1 and 3) and the final one, each of
    # the whole batch (8 elements).
    assert sorted(int(counts[slot]) for slot, _ in by_kind["sort"]) == [1, 2]
    assert {elements for _, elements in by_kind["sort"]} == {8}


def test_an_agent_row_at_a_tiny_size():
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "host_waits.py"),
                             "--one", "ucrl2", "--horizon", "40", "--replications", "8"],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    row = json.loads(result.stdout.strip().splitlines()[-1])
    per_round = row["per_round"]
    # An accelerator's batching: one unbatched test per round ("does any replication
    # start an episode?"), at most one planning loop run per round.
    assert per_round["conds"] == 1.0 and 0 < per_round["loops"] <= 1.0
    assert per_round["waits"] == per_round["trips"] + per_round["loops"] + 1.0
    assert row["static"]["while"] >= 1 and row["final_pseudo_regret"] > 0
