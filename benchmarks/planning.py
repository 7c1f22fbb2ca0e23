"""Time average-reward policy iteration (``jaxmdp.policy_iteration``).

Cases (each jitted once, then timed; the median of ``--reps`` calls after one warm-up,
with ``block_until_ready``):

* ``batch``: 1,000 random MDPs (Dirichlet rows) with S = 10, A = 4 in one vmapped call;
* ``single``: one random MDP with S = 1000, A = 4;
* ``garnet``: 1,000 GARNET MDPs with S = 10, A = 4 and b = 2 next states per row
  (sparser, so policy iteration takes more steps);
* ``simulator``: 1,000 copies of the paper's 3-state, 2-action MDP with perturbed
  transitions, in one vmapped call (the simulator's per-step solve).

For each it reports the time of a cold start (largest-reward actions), of a warm start
from the optimal policy (one evaluation plus one improvement check), and of a warm start
from the optimal policy of a nearby MDP (``0.95 P + 0.05 P'``, what the simulator sees
from one step to the next), and the number of policy-iteration steps (evaluations) of
each: the mean and maximum over the batch, and the fraction that converged (the rest
stopped at a singular, multichain evaluation).

Usage::

    python benchmarks/planning.py               # float64, all cases
    python benchmarks/planning.py --dtype float32 --reps 5

This is not part of the tests.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

import jaxmdp as jm  # noqa: E402


def _median_seconds(fn, *args, reps: int) -> float:
    jax.block_until_ready(fn(*args))  # compile and warm up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _solve(P, R, init):
    return jm.policy_iteration(P, R, init_policy=init)


def _random_batch(key, batch: int, S: int, A: int, dtype):
    keys = jax.random.split(key, batch)
    mdps = jax.vmap(lambda k: jm.envs.random_mdp(k, S, A, dtype=dtype))(keys)
    return mdps.P, mdps.R


def _garnet_batch(key, batch: int, S: int, A: int, b: int, dtype):
    keys = jax.random.split(key, batch)
    mdps = jax.vmap(lambda k: jm.envs.garnet(k, S, A, b, dtype=dtype))(keys)
    return mdps.P, mdps.R


def _paper_batch(key, batch: int, dtype):
    paper = jm.envs.paper_mdp(dtype=dtype)
    noise_P, _ = _random_batch(key, batch, 3, 2, dtype)
    P = 0.9 * paper.P + 0.1 * noise_P
    return P, jnp.broadcast_to(paper.R, (batch, 3, 2))


def _row(name: str, label: str, seconds: float, batch: int, sol) -> str:
    steps = jnp.atleast_1d(sol.num_steps)
    converged = jnp.mean(sol.status == jm.Status.CONVERGED)
    per_mdp_us = seconds / batch * 1e6
    return (
        f"{name:<10} {label:<12} {seconds * 1e3:>10.3f} {per_mdp_us:>12.2f} "
        f"{float(jnp.mean(steps)):>10.2f} {int(jnp.max(steps)):>9d} {float(converged):>9.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--cases", nargs="+", default=["batch", "single", "garnet", "simulator"])
    args = parser.parse_args()
    import _calibration
    _calibration.no_compile_cache()  # timings: real compiles, no cache

    print(_calibration.calibration_line(), flush=True)
    dtype = jnp.dtype(args.dtype)

    key = jax.random.key(0)
    cases = {
        "batch": (1000, 10, 4),
        "single": (1, 1000, 4),
        "garnet": (1000, 10, 4),
        "simulator": (1000, 3, 2),
    }
    print(
        f"jax {jax.__version__}, backend {jax.default_backend()}, {args.dtype}, "
        f"median of {args.reps} calls after warm-up"
    )
    header = (
        f"{'case':<10} {'start':<12} {'ms/call':>10} {'us/MDP':>12} "
        f"{'mean steps':>10} {'max steps':>9} {'converged':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in args.cases:
        batch, S, A = cases[name]
        key, k_mdp, k_near = jax.random.split(key, 3)
        if name == "simulator":
            P, R = _paper_batch(k_mdp, batch, dtype)
            P_near, _ = _paper_batch(k_near, batch, dtype)
        elif name == "garnet":
            P, R = _garnet_batch(k_mdp, batch, S, A, 2, dtype)
            P_near, _ = _garnet_batch(k_near, batch, S, A, 2, dtype)
        else:
            P, R = _random_batch(k_mdp, batch, S, A, dtype)
            P_near, _ = _random_batch(k_near, batch, S, A, dtype)
        P_near = 0.95 * P + 0.05 * P_near
        solve = jax.jit(jax.vmap(_solve))
        cold_init = jnp.full((batch, S), -1, jnp.int32)  # out of range: the default start
        cold = solve(P, R, cold_init)
        near = solve(P_near, R, cold_init)
        starts = {
            "cold": cold_init,
            "warm(opt)": cold.policy,
            "warm(near)": near.policy,
        }
        for label, init in starts.items():
            seconds = _median_seconds(solve, P, R, init, reps=args.reps)
            sol = solve(P, R, init)
            print(_row(f"{name}", label, seconds, batch, sol))
        print(f"{'':<10} (batch {batch}, S = {S}, A = {A})")


if __name__ == "__main__":
    main()
