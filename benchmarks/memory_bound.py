"""One MDP-UCB replication-step against one read pass over the ``[S, A, S]`` model.

The per-round planner (``jaxmdp.agents.rounds``) updates the one changed row of the
estimate, re-solves by a Sherman–Morrison update of the evaluation inverse and reads the
model once for policy improvement. An exact per-round re-solve cannot read less than the
model once (``S A S`` entries) plus the ``S x S`` inverse once, so the cost of a
replication-step is compared with the time of one read pass over the model, measured in
the same run and the same dtype:

* ``pass (one model)``: ``jnp.sum`` over one ``[S, A, S]`` array (16 MB in float32 at
  S = 1000: it fits this CPU's 32 MB L3 cache, so this is the fast reference);
* ``pass (per replication)``: ``jnp.sum`` over the ``[R, S, A, S]`` array of all ``R``
  replications' models, divided by ``R`` (what the vmapped simulator's model pass
  streams from memory).

The replication-step is the marginal cost of rounds ``H + 1 .. 2H`` (the median of
``--repeats`` calls of ``2H`` rounds minus that of ``H`` rounds, divided by ``H R``, the
method of ``experiments/scaling.py``; and, paired, the median over repeats of the ratio
of that difference to a read pass timed right after it, since on a shared host the
speed of the whole machine drifts between runs), on a GARNET MDP (A = 4, branching 5) started from
``--initial-visits`` transitions per pair. ``--profile`` adds a per-operation breakdown
of the steady-state rounds from a JAX profiler trace (operations that run once per round;
times are per replication-step).

    python benchmarks/memory_bound.py [--states 1000] [--replications 10] [--horizon 200]
                                      [--repeats 3] [--profile] [--x64]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path

import _timing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "experiments"))


def step_us(mdp, counts, *, horizon, replications, repeats, agent="ucb", read_pass=None):
    """Marginal µs per replication-step of ``agent`` (rounds ``H + 1 .. 2H``,
    ``_timing.marginal``).

    With ``read_pass`` (a function timing one read pass, s), a pass is timed right after
    each pair of calls and the ratio step / pass is computed per pair: the machine's
    speed drifts (a shared host), and a ratio of times taken together drifts less.
    Returns ``(µs per replication-step, median ratio or nan)``.
    """
    import jaxmdp as jm

    def call(seed, rounds):
        return jm.simulate(mdp, agent, rounds, replications, seed, counts, progress=False,
                           chunk_size=horizon)

    cost = _timing.marginal(call, horizon, replications, repeats,
                            between=None if read_pass is None else
                            lambda step: step / read_pass())
    return cost.us, (statistics.median(cost.between) if cost.between else float("nan"))


def profile(mdp, counts, *, horizon, replications, agent="ucb", top=12):
    """``[(op, µs per replication-step, calls)]`` of the ops that run once per round."""
    import jax

    import jaxmdp as jm

    def call(seed):
        return jax.block_until_ready(jm.simulate(
            mdp, agent, horizon, replications, seed, counts, progress=False,
            chunk_size=horizon))

    call(0)
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp, create_perfetto_trace=True)
        call(1)
        jax.profiler.stop_trace()
        trace = next(Path(tmp).rglob("*.trace.json.gz"))
        events = json.load(gzip.open(trace))["traceEvents"]
    total, calls = collections.Counter(), collections.Counter()
    for event in events:
        if event.get("ph") == "X" and not event["name"].startswith(("$", "Thunk", "Pjit")):
            total[event["name"]] += event.get("dur", 0)
            calls[event["name"]] += 1
    # Steady-state operations run once per round and block: a multiple of the horizon
    # (blocks of replications run one after another on CPU, jaxmdp.simulate).
    per_round = [(name, total[name] / (horizon * replications), calls[name])
                 for name in total
                 if calls[name] >= horizon - 1 and calls[name] % horizon in (0, horizon - 1)]
    return sorted(per_round, key=lambda row: -row[1])[:top]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--initial-visits", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    args = parser.parse_args(argv)

    _timing.setup(x64=args.x64)
    import jax
    import jax.numpy as jnp
    import scaling

    S, R = args.states, args.replications
    mdp = scaling.garnet(S, 0)
    counts = scaling.initial_counts(mdp, args.initial_visits, 0)
    dtype = mdp.P.dtype
    one, batched = scaling.read_passes(S, R, dtype=dtype)
    step, paired = step_us(mdp, counts, horizon=args.horizon, replications=R,
                           repeats=args.repeats,
                           read_pass=scaling.read_pass((S, scaling.ACTIONS, S), dtype))
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {jnp.dtype(dtype).name}, "
          f"GARNET S={S} A={scaling.ACTIONS}, {R} replications, H={args.horizon}")
    print(f"read pass, one [S, A, S] model:        {one:9.1f} us")
    print(f"read pass, per replication of {R:>5}:   {batched:9.1f} us")
    print(f"MDP-UCB replication-step:              {step:9.1f} us")
    print(f"ratio to the one-model pass:           {step / one:9.2f}")
    print(f"ratio to the per-replication pass:     {step / batched:9.2f}")
    print(f"ratio to the one-model pass, paired:   {paired:9.2f}  (median of per-repeat "
          "ratios, each pass timed right after its calls)")
    if args.profile:
        print("\nsteady-state operations (one call per round), us per replication-step:")
        for name, us, calls in profile(mdp, counts, horizon=args.horizon, replications=R):
            print(f"  {us:9.1f}  {calls:5d} calls  {name}")


if __name__ == "__main__":
    main()
