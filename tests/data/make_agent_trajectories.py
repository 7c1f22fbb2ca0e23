"""Provenance of agent_trajectories.npz: the state, action and pseudo-regret of every
round of seven agents on three environments, simulated with the code of commit 3e978f7,
before the planning package and the agents' shared rules were introduced.

Run from the repository root (with that commit checked out), once per OpenBLAS kernel
family, since the planners' linear solves (jaxlib's CPU LAPACK, through SciPy's OpenBLAS)
round differently under different kernels:
    OPENBLAS_CORETYPE=Haswell python tests/data/make_agent_trajectories.py
    OPENBLAS_CORETYPE=SkylakeX python tests/data/make_agent_trajectories.py \
        tests/data/agent_trajectories_skylakex.npz
(Under Zen, the runs checked matched the Haswell recording.)
tests/test_agent_trajectories.py re-simulates the same runs and requires every
array to equal one of the recordings bit for bit.
"""

import sys

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxmdp as jm  # noqa: E402

AGENTS = ("ucrl2", "tsde", "imed_rl", "ucb", "dmed", "olp", "ps")
ENVS = ("riverswim-6", "grid-4-room", "paper-mdp")
# More runs on riverswim-6: KL-UCRL, and agents that learn their rewards.
EXTRA = (("kl_ucrl", {}), ("ucb", {"known_rewards": False}),
         ("ucrl2", {"known_rewards": False}), ("imed_rl", {"known_rewards": False}))
HORIZON, REPLICATIONS, SEED = 400, 3, 11
#: Options the recorded runs were made with that are no longer the defaults: IMED-RL's
#: runs were recorded with LU policy evaluations (``planner="full"``); its default planner
#: now updates the previous inverse, whose last bits break the exact ties of grid-4-room
#: (three actions at the level, each played once) another way.
RECORDED_WITH = {"imed_rl": {"planner": "full"}}


def key(agent: str, options: dict, env: str) -> str:
    """The name of a run in the file: ``agent[+option=value...]/env``."""
    suffix = "".join(f"+{k}={v}" for k, v in sorted(options.items()))
    return f"{agent}{suffix}/{env}"


def runs():
    """Every run in the file as ``(agent, options, env)``."""
    return ([(agent, {}, env) for env in ENVS for agent in AGENTS]
            + [(agent, options, "riverswim-6") for agent, options in EXTRA])


def run(agent: str, options: dict, env: str):
    """One recorded run: (states, actions, pseudo-regret) of every round."""
    options = {**RECORDED_WITH.get(agent, {}), **options}
    traj = jm.simulate(jm.envs.make(env), jm.get_agent(agent, **options), HORIZON,
                       REPLICATIONS, SEED,
                       record_path=True, progress=False)
    return (np.asarray(traj.states), np.asarray(traj.actions),
            np.asarray(traj.pseudo_regret))


if __name__ == "__main__":
    out = {}
    for agent, options, env in runs():
        states, actions, pseudo = run(agent, options, env)
        name = key(agent, options, env)
        out[f"{name}/states"] = states.astype(np.int16)
        out[f"{name}/actions"] = actions.astype(np.int8)
        out[f"{name}/pseudo_regret"] = pseudo
        print(name, float(pseudo[:, -1].mean()), flush=True)
    target = sys.argv[1] if len(sys.argv) > 1 else "tests/data/agent_trajectories.npz"
    np.savez_compressed(target, **out)
