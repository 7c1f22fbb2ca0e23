"""Microseconds per replication-step of ``jaxmdp.simulate`` on a batch of MDPs, beside the
same number of replications on one MDP.

``rows = M * R`` runs in every layout: ``M`` GARNET instances (``jm.envs.batch(env,
seeds=range(M))``) with ``R`` replications each, for the layouts ``M x R`` given (default
``1x1000`` — one MDP, the replication layout —, ``100x10`` and ``1000x1``). For each agent
and layout: the first call (compile and run) and the steady-state cost, the fastest of
``--repeats`` cached calls (other seeds) divided by ``horizon * rows``, as wall time and
process CPU time. The calibration line (``benchmarks/_calibration.py``) is printed first.
The batched layouts should cost about what the replication layout costs per
replication-step: the runs of a batch only read their own MDP.

    python benchmarks/ensemble.py [--env garnet-10-2-3] [--layouts 1x1000 100x10 1000x1]
                                  [--horizon 2000] [--agents ucb ucrl2] [--x64]
"""

from __future__ import annotations

import argparse

import _timing


def _layout(text: str) -> tuple[int, int]:
    try:
        m, r = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a layout is MxR (e.g. 100x10), got {text!r}")
    if m < 1 or r < 1:
        raise argparse.ArgumentTypeError(f"a layout needs M, R >= 1, got {text!r}")
    return m, r


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="garnet-10-2-3",
                        help="a family instance with seeds (garnet-S-A-b or random-S-A)")
    parser.add_argument("--layouts", nargs="+", type=_layout,
                        default=[(1, 1000), (100, 10), (1000, 1)],
                        help="M x R layouts, e.g. 1x1000 100x10 1000x1")
    parser.add_argument("--horizon", type=int, default=2000, help="rounds per timed call")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--agents", nargs="+", default=["ucb", "ucrl2"])
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per configuration; the fastest is reported")
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    args = parser.parse_args(argv)

    _timing.setup(x64=args.x64)
    import jax

    import jaxmdp as jm

    print(f"env {args.env}, horizon {args.horizon}, chunk {args.chunk_size}, "
          f"{'float64' if args.x64 else 'float32'}, devices {jax.devices()}", flush=True)
    largest = max(m for m, _ in args.layouts)
    every = jm.envs.batch(args.env, seeds=range(largest))
    print(f"{'agent':<10} {'M x R':>10} {'first s':>9} {'us/step wall':>13} "
          f"{'us/step cpu':>12}", flush=True)
    for name in args.agents:
        agent = jm.get_agent(name)
        for m, r in args.layouts:
            # M == 1: one MDP (the replication layout); M > 1: the batch's first M.
            mdp = (jax.tree_util.tree_map(lambda leaf: leaf[0], every) if m == 1 else
                   jax.tree_util.tree_map(lambda leaf, m=m: leaf[:m], every))

            timing = _timing.time_calls(
                lambda seed, mdp=mdp, r=r: jm.simulate(
                    mdp, agent, args.horizon, r, seed, progress=False,
                    chunk_size=args.chunk_size).pseudo_regret, args.repeats)
            steps = args.horizon * m * r
            print(f"{name:<10} {f'{m}x{r}':>10} {timing.first_s:9.2f} "
                  f"{1e6 * min(timing.wall_s) / steps:13.4f} "
                  f"{1e6 * min(timing.cpu_s) / steps:12.4f}", flush=True)


if __name__ == "__main__":
    main()
