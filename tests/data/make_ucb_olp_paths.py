# ruff: noqa: E402, E501, E741
"""Provenance of ucb_olp_paths.npz: (state, action) per round from jaxmdp at commit
3fc08ff, the last commit before the agent protocol (stateless select_action agents).

Run from the repository root with a worktree of that commit at /tmp/oldjm:
    git worktree add /tmp/oldjm 3fc08ff && python tests/data/make_ucb_olp_paths.py
The actions are recovered from the change of the counts in each scan step.
"""
import sys

sys.path.insert(0, "/tmp/oldjm")
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
import jaxmdp as jm

S = sys.modules["jaxmdp.simulate"]
from jaxmdp.estimators import estimated_mdp
from jaxmdp.incremental import default_refresh_every, init_evaluation

assert "/tmp/oldjm" in jm.__file__, jm.__file__

def run(mdp, name, horizon, reps, seed, counts0=None):
    # the same path as simulate(): record every round, incremental planner
    traj = jm.simulate(mdp, name, horizon, reps, seed, initial_counts=counts0, progress=False,
                       chunk_size=horizon)
    agent = jm.get_agent(name)
    gain, _, _ = jm.solve_average_reward(mdp)
    delta = jm.gaps(mdp)
    counts0 = np.zeros(mdp.P.shape, np.int32) if counts0 is None else np.asarray(counts0, np.int32)
    first = jnp.argmax(mdp.mask, axis=1).astype(jnp.int32)
    ev = init_evaluation(estimated_mdp(counts0, mdp).P, mdp.R, first)
    ev = jax.tree_util.tree_map(lambda l: jnp.broadcast_to(l, (reps,) + l.shape), ev)
    with S._prng_layout():
        keys = S._keys(seed, reps)
    carry = S._Carry(keys, jnp.full((reps,), int(counts0.sum()) + 1, jnp.int32),
                     jnp.zeros(reps, jnp.int32), jnp.broadcast_to(jnp.asarray(counts0), (reps,) + counts0.shape),
                     jnp.broadcast_to(first, (reps, mdp.num_states)), jnp.zeros(reps), jnp.zeros(reps), ev)
    step = S._make_step(agent, mdp, gain, delta, "incremental", default_refresh_every(jnp.float64))
    def step2(c, i):
        c2, out = step(c, i)
        d = (c2.counts - c.counts).reshape(-1)
        k = jnp.argmax(d)
        A, Sn = mdp.num_actions, mdp.num_states
        return c2, (c.state, (k // Sn) % A, out[0])
    with S._prng_layout():
        _, (xs, acts, pr) = jax.jit(jax.vmap(lambda c: jax.lax.scan(step2, c, jnp.arange(horizon, dtype=jnp.int32))))(carry)
    np.testing.assert_array_equal(np.asarray(pr), np.asarray(traj.pseudo_regret))
    return np.asarray(xs, np.int16), np.asarray(acts, np.int8), np.asarray(traj.pseudo_regret)

out = {}
paper = jm.envs.paper_mdp()
garnet = jm.envs.garnet(jax.random.key(3), 12, 3, 4)
rigged = jm.envs.rigged_counts()
out["garnet_P"], out["garnet_R"] = np.asarray(garnet.P), np.asarray(garnet.R)
for name in ("ucb", "olp"):
    for tag, mdp, c0 in (("paper", paper, None), ("rigged", paper, rigged), ("garnet", garnet, None)):
        xs, acts, pr = run(mdp, name, 1500, 4, 7, c0)
        out[f"{name}_{tag}_states"], out[f"{name}_{tag}_actions"] = xs, acts
        out[f"{name}_{tag}_pseudo_regret"] = pr
for name in ("dmed", "ps"):  # their old rule: untried actions first (force_untried=True now)
    xs, acts, pr = run(paper, name, 1500, 4, 7, None)
    out[f"{name}_paper_states"], out[f"{name}_paper_actions"] = xs, acts
    out[f"{name}_paper_pseudo_regret"] = pr
np.savez_compressed("tests/data/ucb_olp_paths.npz", **out)
