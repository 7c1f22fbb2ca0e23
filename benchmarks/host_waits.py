"""What a GPU waits for, counted on the CPU: loop trips, conditionals and sorts per round.

On a GPU every trip of a data-dependent ``while`` loop copies its predicate to the host
and waits for the device, every unbatched conditional likewise once, and a sort of 16,385
elements or more in all becomes a CUB radix sort whose offsets are built on the host.
These counts do not depend on the device, so they are measured here, on the CPU, for the
program a GPU runs: while an agent is built and traced, ``jax.default_backend()`` reads
``"gpu"`` (so every backend-dependent choice is an accelerator's: the episodic agents'
``cond="auto"``, the incremental planner's chunk, EVI's maximiser, the index solvers'
layout), and the replications run as one block.

For each agent, one chunk of ``--horizon`` rounds (``--replications`` replications of
``--env``, float32, default options) is traced to a jaxpr (after ``vmap``: every loop is
the batch's loop) and run by an interpreter that threads a counter vector through every
``while`` (trips and executions), ``scan``, conditional and sort of the program (the
counters live in the loop carries: no callback, no host copy). Printed per agent:

* static: the ``while``, ``sort`` and conditional (``case``/``if``) ops of the lowered
  (StableHLO) program of the chunk;
* per round: the trips of data-dependent loops (``trips``), the loops run (``loops``),
  the unbatched conditionals run (``conds``), the sorts run (``sorts``) and those of
  16,385 elements or more (``cub``), and the host waits they cost a GPU,
  ``waits = trips + loops + conds`` (each loop tests its predicate once more than it
  trips).

``--root PATH`` runs another checkout's ``jaxmdp`` instead of this one (for a before /
after table); each agent runs in its own process. The rows go to ``--out`` as JSON with
the settings, saved after every agent; run again with the same settings, the command
computes only the agents not saved yet. The results page's rows::

    python benchmarks/host_waits.py --root OLD_CHECKOUT --label before
    python benchmarks/host_waits.py --label after
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Elements of a sort (all its rows together) from which XLA's GPU backend runs CUB's
#: radix sort.
CUB_ELEMENTS = 16_385


# --------------------------------------------------------------------------------------
# The counting interpreter.


def _subjaxprs(eqn):
    """The closed jaxprs of ``eqn``'s parameters (for the site survey)."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    for value in eqn.params.values():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, Jaxpr):
                yield item


def survey(jaxpr, sites: dict) -> dict:
    """``sites``: ``id(eqn) -> (slot, kind, where, elements)`` for every ``while``,
    conditional and ``sort`` of ``jaxpr`` and its sub-jaxprs (a ``while`` takes two
    slots: trips, then executions)."""
    from jax._src import source_info_util

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if id(eqn) not in sites and name in ("while", "cond", "sort"):
            where = source_info_util.summarize(eqn.source_info)
            elements = 1
            if name == "sort":
                for d in eqn.invars[0].aval.shape:
                    elements *= d
            slot = sum(2 if kind == "while" else 1 for _, kind, _, _ in sites.values())
            sites[id(eqn)] = (slot, name, where, elements)
        for sub in _subjaxprs(eqn):
            survey(sub, sites)
    return sites


def _slots(sites: dict) -> int:
    return sum(2 if kind == "while" else 1 for _, kind, _, _ in sites.values())


def interpret(jaxpr, consts, args, counts, sites):
    """Evaluates ``jaxpr`` (consts, then args) and returns ``(outputs, counts)``, where
    ``counts`` (int32 ``[slots]``) has every run of a surveyed site added."""
    from jax import lax
    from jax.extend.core import ClosedJaxpr, Literal

    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        name, params = eqn.primitive.name, eqn.params
        site = sites.get(id(eqn))
        if name == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            cond_consts, body_consts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
            cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]

            def test(values, counts, cond_jaxpr=cond_jaxpr, cond_consts=cond_consts):
                # A loop's test holds no surveyed site (a sort in a test would be lost).
                outs, _ = interpret(cond_jaxpr.jaxpr, cond_jaxpr.consts,
                                    [*cond_consts, *values], counts, sites)
                return outs[0]

            def cond_fn(carry, test=test):
                # A batched test (vmap of a loop whose rows stop apart) runs while any row
                # goes on, as XLA lowers it (the select is the lowering's too, below).
                go = test(*carry)
                return go if go.ndim == 0 else go.any()

            def body_fn(carry, body_jaxpr=body_jaxpr, body_consts=body_consts,
                        slot=site[0], test=test):
                outs, counts = interpret(body_jaxpr.jaxpr, body_jaxpr.consts,
                                         [*body_consts, *carry[0]], carry[1], sites)
                go = test(*carry)
                if go.ndim:  # the rows that have stopped keep their values
                    outs = [lax.select(lax.broadcast_in_dim(go, new.shape,
                                                            tuple(range(go.ndim))), new, old)
                            for new, old in zip(outs, carry[0])]
                return outs, counts.at[slot].add(1)

            outs, counts = lax.while_loop(cond_fn, body_fn, (list(init), counts))
            counts = counts.at[site[0] + 1].add(1)
        elif name == "scan":
            nc, ncarry = params["num_consts"], params["num_carry"]
            scan_consts, init, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
            body_jaxpr = params["jaxpr"]

            def step(carry, x, body_jaxpr=body_jaxpr, scan_consts=scan_consts,
                     ncarry=ncarry):
                outs, counts = interpret(body_jaxpr.jaxpr, body_jaxpr.consts,
                                         [*scan_consts, *carry[0], *x], carry[1], sites)
                return (outs[:ncarry], counts), outs[ncarry:]

            (carry, counts), ys = lax.scan(step, (list(init), counts), list(xs),
                                           length=params["length"],
                                           reverse=params["reverse"],
                                           unroll=params["unroll"])
            outs = [*carry, *ys]
        elif name == "cond":
            index, *operands = ins

            def branch(closed, operands, counts):
                return interpret(closed.jaxpr, closed.consts, operands, counts, sites)

            outs, counts = lax.switch(index, [functools.partial(branch, b)
                                              for b in params["branches"]],
                                      operands, counts)
            counts = counts.at[site[0]].add(1)
        elif name in ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call",
                      "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_vmap_call",
                      "checkpoint", "remat"):
            inner = next(params[key] for key in ("jaxpr", "call_jaxpr", "fun_jaxpr", "call")
                         if params.get(key) is not None)
            inner_consts = getattr(inner, "consts", [])
            inner = getattr(inner, "jaxpr", inner)
            outs, counts = interpret(inner, inner_consts, ins, counts, sites)
        else:
            if any(isinstance(v, ClosedJaxpr) for v in params.values()):
                raise NotImplementedError(f"host_waits: no rule for {name!r}")
            outs = eqn.primitive.bind(*ins, **params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
            if name == "sort":
                counts = counts.at[site[0]].add(1)
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars], counts


# --------------------------------------------------------------------------------------
# One agent, in this process.


def _simulate_module():
    for name in ("jaxmdp._simulate", "jaxmdp.simulate"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_run_chunk"):
            return module
    raise SystemExit("host_waits: no jaxmdp simulate module with _run_chunk")


def count_agent(agent: str, env: str, horizon: int, replications: int) -> dict:
    """The static and per-round counts of one agent's chunk (see the module's text)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.default_backend = lambda: "gpu"  # every backend-dependent choice an accelerator's
    import jaxmdp as jm

    module = _simulate_module()
    original = module._run_chunk
    found = {}

    def counted(*args, **options):
        options = dict(options, block=None)  # one block of every replication, as on a GPU
        text = original.lower(*args, **options).as_text()
        closed, shapes = jax.make_jaxpr(functools.partial(original.__wrapped__, **options),
                                        return_shape=True)(*args)
        sites = survey(closed.jaxpr, {})

        @jax.jit
        def run(*flat):
            return interpret(closed.jaxpr, closed.consts, flat,
                             jnp.zeros((max(1, _slots(sites)),), jnp.int32), sites)

        outs, counts = run(*jax.tree_util.tree_leaves(args))
        counts = np.asarray(counts)
        found.update(text=text, sites=sites, counts=counts)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), outs)

    module._run_chunk = counted
    mdp = jm.envs.make(env)
    traj = jm.simulate(mdp, jm.get_agent(agent), horizon, replications, seed=0,
                       progress=False, record_every=horizon, chunk_size=horizon)
    counts, text = found["counts"], found["text"]
    totals = dict(trips=0, loops=0, conds=0, sorts=0, cub=0)
    for slot, kind, _, elements in found["sites"].values():
        if kind == "while":
            totals["trips"] += int(counts[slot])
            totals["loops"] += int(counts[slot + 1])
        elif kind == "cond":
            totals["conds"] += int(counts[slot])
        else:
            totals["sorts"] += int(counts[slot])
            totals["cub"] += int(counts[slot]) * (elements >= CUB_ELEMENTS)
    per_round = {k: v / horizon for k, v in totals.items()}
    per_round["waits"] = (totals["trips"] + totals["loops"] + totals["conds"]) / horizon
    return {"agent": agent, "env": env, "horizon": horizon, "replications": replications,
            "static": {"while": text.count("stablehlo.while"),
                       "sort": text.count('"stablehlo.sort"') + text.count("stablehlo.sort("),
                       "conditional": text.count("stablehlo.case") +
                       text.count("stablehlo.if")},
            "per_round": per_round,
            "final_pseudo_regret": float(np.mean(np.asarray(traj.pseudo_regret)[:, -1]))}


# --------------------------------------------------------------------------------------
# The table, one process per agent.


def _child(args, agent: str) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="0")
    command = [sys.executable, str(HERE / "host_waits.py"), "--one", agent, "--env",
               args.env, "--horizon", str(args.horizon), "--replications",
               str(args.replications)]
    if args.root is not None:
        env["PYTHONPATH"] = str(args.root)
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        errors = [line for line in out.stderr.splitlines() if "Error" in line]
        return {"agent": agent, "error": (errors or out.stderr.splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _agents(root) -> list[str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if root is not None:
        env["PYTHONPATH"] = str(root)
    out = subprocess.run([sys.executable, "-c",
                          "import jaxmdp as jm; print(' '.join(jm.agent_names()))"],
                         env=env, capture_output=True, text=True, check=True,
                         cwd=root or HERE.parent)
    return out.stdout.split()


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=None,
                        help="agent names (default: every registered agent)")
    parser.add_argument("--env", default="riverswim-6")
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--replications", type=int, default=10_000)
    parser.add_argument("--root", type=Path, default=None,
                        help="another checkout whose jaxmdp is counted")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.horizon < 1 or args.replications < 1:
        raise ValueError(f"horizon and replications must be positive, got "
                         f"{args.horizon} and {args.replications}")
    if args.one is not None:
        if args.root is not None:
            sys.path.insert(0, str(args.root))
        print(json.dumps(count_agent(args.one, args.env, args.horizon, args.replications)))
        return []
    agents = args.agents or _agents(args.root)
    args.out.mkdir(parents=True, exist_ok=True)
    name = args.label.replace(" ", "-")
    path = args.out / f"host-waits-{args.env}-R{args.replications}-T{args.horizon}-{name}.json"
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                if k not in ("agents", "out", "one")}
    # Rows saved by an earlier run with the same settings are kept, not recomputed.
    rows = []
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved["settings"] == settings:
            rows = [row for row in saved["rows"] if "error" not in row]
    done = {row["agent"] for row in rows}
    print(f"{'agent':18s} {'while':>5s} {'sort':>4s} {'cond':>4s} | per round: "
          f"{'trips':>8s} {'loops':>7s} {'conds':>6s} {'sorts':>8s} {'cub':>7s} "
          f"{'waits':>8s}", flush=True)
    for agent in agents:
        if agent in done:
            row = next(row for row in rows if row["agent"] == agent)
        else:
            row = dict(_child(args, agent), label=args.label)
            rows.append(row)
            tmp = path.with_suffix(".tmp")  # saved after every agent, atomically
            tmp.write_text(json.dumps({"settings": settings, "rows": rows}, indent=2))
            tmp.replace(path)
        if "error" in row:
            print(f"{agent:18s} failed: {row['error']}", flush=True)
            continue
        s, r = row["static"], row["per_round"]
        print(f"{agent:18s} {s['while']:5d} {s['sort']:4d} {s['conditional']:4d} | "
              f"{'':10s} {r['trips']:8.1f} {r['loops']:7.2f} {r['conds']:6.2f} "
              f"{r['sorts']:8.1f} {r['cub']:7.1f} {r['waits']:8.1f}", flush=True)
    print(f"saved {path}")
    return rows


if __name__ == "__main__":
    main()
