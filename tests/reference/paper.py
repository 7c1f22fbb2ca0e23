"""A plain per-step NumPy/SciPy loop for the paper's four agents, written the way a
researcher would write it by hand: one replication at a time, one round at a time.

Each round: count-based estimates (p_hat = (N+1)/(n+S), good actions, and with unknown
rewards a reward estimate r_hat), policy iteration on the estimated MDP (warm-started from
the previous policy, ``numpy.linalg.solve`` for each evaluation), the agent's indices
(``scipy.optimize.brentq`` for the KL indices, the sort-based L1 rule for OLP,
``Generator.dirichlet``/``beta``/``normal`` for posterior sampling), the action, and a
transition and a reward drawn from the true MDP.

It shares no code with ``jaxmdp``: it exists to check the JAX simulator (tests compare
mean pseudo-regret) and as the baseline of ``benchmarks/simulate.py``. The policy
iteration, the true MDP's solve and the indices are those of :mod:`tests.reference.mdp`
and :mod:`tests.reference.indices`.

Decision rules (ties go to the lowest action index everywhere):

* MDP-UCB and OLP play the lowest-index untried admissible action first, then the
  argmax of their index.
* MDP-DMED and MDP-PS follow the paper (sections 3.2 and 3.4), with no untried-first
  rule: PS explores through its Dirichlet(N+1) draw; DMED's discrepancy of an untried
  action is ln t / K~ - 0, and K~ = 0 (an action whose L ties the leader's, as in a
  never-visited state) gives D = +inf when ln t > 0, D = -n when ln t = 0 (t = 1).
  ``force_untried=True`` (``--force-untried``) restores the untried-first rule for them.

Rewards: ``known_rewards=True`` (default) gives the agents the true mean rewards R.
With ``known_rewards=False`` they learn them from the observed rewards (visits n[x,a],
sums sr[x,a]): a bounded model for the "bernoulli" and "deterministic" laws (R in
[0, 1]; r_hat = (sr+1)/(n+2), indices over the joint law of (reward in {0,1}, next
state)), or a Gaussian model with known sigma for the "gaussian" law (prior N(0, sigma^2):
r_hat = sr/(n+1)); see ``select_action``. The environment draws R[x,a] exactly,
Bernoulli(R[x,a]) or Normal(R[x,a], sigma^2). Pseudo-regret sums the gaps of the true
MDP; realised regret sums gain* - drawn reward.

MDPs: the paper's 3-state example (section 5) and RiverSwim-6 (``riverswim``). The true
MDP is solved by relative value iteration with an aperiodicity transform, finished by
exact policy iteration and checked against the optimality equations (RiverSwim has zero
transition probabilities); the estimated MDP is always unichain (p_hat > 0).

Run, for example (from the repository root),
``python -m tests.reference.paper --agent ucb --horizon 2000 --replications 256``
or ``... --mdp riverswim-6 --rewards bernoulli --unknown-rewards --agent ucb ps``
to print the mean pseudo-regret at the horizon with its standard error.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from tests.reference.indices import gaussian_kinf, gaussian_kl_ucb, joint_law, kinf, kl_ucb, l1_ucb
from tests.reference.mdp import (
    PAPER_P,
    PAPER_R,
    RIGGED_COUNTS,
    policy_iteration,
    riverswim,
    true_gaps,
)

AGENTS = ("ucb", "dmed", "olp", "ps")
REWARD_LAWS = ("deterministic", "bernoulli", "gaussian")
MDPS = ("paper", "riverswim-6")


def get_mdp(name):
    """(P, R, mask) of ``'paper'`` or ``'riverswim-6'``."""
    if name == "paper":
        P, R = PAPER_P, PAPER_R
    elif name == "riverswim-6":
        P, R = riverswim(6)
    else:
        raise ValueError(f"mdp must be one of {MDPS}, got {name!r}")
    return P, R, np.ones(R.shape, dtype=bool)


# ------------------------------------------------------------------------------- agents
def reward_model(known_rewards, law):
    """'known', 'bounded' (bernoulli / deterministic in [0, 1]) or 'gaussian'."""
    if known_rewards:
        return "known"
    if law not in REWARD_LAWS:
        raise ValueError(f"reward law must be one of {REWARD_LAWS}, got {law!r}")
    return "gaussian" if law == "gaussian" else "bounded"


def reward_estimates(model, visits, reward_sums, R):
    """The rewards the agents plan with: R itself, (sr+1)/(n+2) or sr/(n+1)."""
    if model == "known":
        return R
    if model == "bounded":
        return (reward_sums + 1.0) / (visits + 2.0)
    if model == "gaussian":
        return reward_sums / (visits + 1.0)
    raise ValueError(f"unknown reward model {model!r}")


def select_action(agent, rng, t, x, counts, p_hat, R, mask, bias, *, model="known",
                  reward_sums=None, sigma=1.0, force_untried=False):
    """One decision of ``agent`` at round ``t`` in state ``x``.

    ``R`` holds the rewards the agent believes: the true means for ``model='known'``,
    else r_hat (``reward_estimates``); ``reward_sums`` (sr) is needed by PS's posterior
    with unknown rewards. Ties go to the lowest action index. UCB and OLP (and DMED and
    PS with ``force_untried``) first play the lowest-index untried admissible action.

    Known rewards (the paper): UCB R + kl_ucb(p_hat, v, ln t / n); OLP R + l1_ucb(p_hat,
    v, sqrt(2 ln t / n)); PS R + Q.v, Q ~ Dirichlet(N + 1); DMED L_a = R_a + p_hat_a.v,
    a* = argmax L, K~_a = kinf(p_hat_a, v, L_a* - R_a), D_a = ln t / K~_a - n_a (K~ = 0:
    D = +inf if ln t > 0, else -n_a), play a* if every D <= 0, else argmax D.

    Bounded model (p_joint, w = ``joint_law(p_hat_a, v, r_hat_a)``): UCB kl_ucb(p_joint,
    w, ln t / n); OLP l1_ucb(p_joint, w, sqrt(2 ln t / n)); DMED K~_a = kinf(p_joint_a, w,
    L_a*); PS Beta(1 + sr, 1 + n - sr) + Q.v.

    Gaussian model: UCB ``gaussian_kl_ucb``; OLP r_hat + sigma sqrt(2 ln t / n) +
    l1_ucb(p_hat, v, sqrt(2 ln t / n)); DMED K~_a = ``gaussian_kinf``(..., L_a*); PS
    Normal(r_hat, sigma^2 / (n + 1)) + Q.v.
    """
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    n = counts[x].sum(axis=1)
    actions = [a for a in range(R.shape[1]) if mask[x, a]]
    if agent in ("ucb", "olp") or force_untried:
        untried = [a for a in actions if n[a] == 0]
        if untried:
            return untried[0]
    log_t = math.log(t)
    r = R[x]
    if agent == "dmed":
        values = {a: r[a] + p_hat[x, a] @ bias for a in actions}
        best = max(actions, key=lambda a: (values[a], -a))
        challenger, top = None, -math.inf
        for a in actions:
            if a == best:
                continue
            if values[a] >= values[best]:  # a tie: K~ = 0 (kinf might see rounding)
                K = 0.0
            elif model == "known":
                K = kinf(p_hat[x, a], bias, values[best] - r[a])
            elif model == "bounded":
                K = kinf(*joint_law(p_hat[x, a], bias, r[a]), values[best])
            else:
                K = gaussian_kinf(p_hat[x, a], bias, r[a], sigma, values[best])
            rate = log_t / K if K > 0 else (math.inf if log_t > 0 else 0.0)
            D = rate - n[a]
            if D > top:
                challenger, top = a, D
        return challenger if top > 0 else best
    index = {}
    for a in actions:
        p = p_hat[x, a]
        if agent == "ucb":
            delta = log_t / n[a]
            if model == "known":
                index[a] = r[a] + kl_ucb(p, bias, delta)
            elif model == "bounded":
                index[a] = kl_ucb(*joint_law(p, bias, r[a]), delta)
            else:
                index[a] = gaussian_kl_ucb(p, bias, r[a], sigma, delta)
        elif agent == "olp":
            d = math.sqrt(2.0 * log_t / n[a])
            if model == "known":
                index[a] = r[a] + l1_ucb(p, bias, d)
            elif model == "bounded":
                index[a] = l1_ucb(*joint_law(p, bias, r[a]), d)
            else:
                index[a] = r[a] + sigma * d + l1_ucb(p, bias, d)
        else:  # ps
            if model == "known":
                r_tilde = r[a]
            elif model == "bounded":
                sr = reward_sums[x, a]
                r_tilde = rng.beta(1.0 + sr, 1.0 + n[a] - sr)
            else:
                r_tilde = rng.normal(r[a], sigma / math.sqrt(n[a] + 1.0))
            q = rng.dirichlet(counts[x, a] + 1.0)
            index[a] = r_tilde + q @ bias
    return max(actions, key=lambda a: (index[a], -a))


# --------------------------------------------------------------------------- simulation
def draw_reward(rng, law, mean, sigma):
    """The observed reward: ``mean`` itself, Bernoulli(mean) or Normal(mean, sigma^2)."""
    if law == "deterministic":
        return mean
    if law == "bernoulli":
        return 1.0 if rng.random() < mean else 0.0
    if law == "gaussian":
        return rng.normal(mean, sigma)
    raise ValueError(f"reward law must be one of {REWARD_LAWS}, got {law!r}")


def run_one(P, R, mask, agent, horizon, rng, initial_counts=None, *, rewards="deterministic",
            sigma=1.0, known_rewards=True, force_untried=False):
    """One replication; returns (cumulative pseudo-regret [T], cumulative regret [T], N).

    Each round: estimates, plan, act, then draw the next state (``rng.choice``) and, for
    a random reward law, the reward; the deterministic law draws nothing more.
    """
    S, A, _ = P.shape
    model = reward_model(known_rewards, rewards)
    gain, gap = true_gaps(P, R, mask)
    counts = np.zeros((S, A, S)) if initial_counts is None else initial_counts.astype(float)
    reward_sums = np.zeros((S, A))
    t = int(counts.sum()) + 1
    x = 0
    policy = None
    pseudo = np.empty(horizon)
    regret = np.empty(horizon)
    cum_pseudo = cum_regret = 0.0
    for k in range(horizon):
        n_xa = counts.sum(axis=2)
        p_hat = (counts + 1.0) / (n_xa[:, :, None] + S)
        r_hat = reward_estimates(model, n_xa, reward_sums, R)
        n_x = np.where(mask, n_xa, 0).sum(axis=1)
        log_nx = np.log(np.maximum(n_x, 1.0))
        good = mask & (n_xa >= (log_nx ** 2)[:, None])
        good = np.where(good.any(axis=1, keepdims=True), good, mask)
        _, bias, policy = policy_iteration(p_hat, r_hat, good, policy)
        a = select_action(agent, rng, t, x, counts, p_hat, r_hat, mask, bias, model=model,
                          reward_sums=reward_sums, sigma=sigma, force_untried=force_untried)
        y = rng.choice(S, p=P[x, a])
        reward = draw_reward(rng, rewards, R[x, a], sigma)
        counts[x, a, y] += 1
        reward_sums[x, a] += reward
        cum_pseudo += gap[x, a]
        cum_regret += gain - reward
        pseudo[k] = cum_pseudo
        regret[k] = cum_regret
        x = y
        t += 1
    return pseudo, regret, counts


def run(P, R, mask, agent, horizon, replications, seed, initial_counts=None, *,
        rewards="deterministic", sigma=1.0, known_rewards=True, force_untried=False):
    """``replications`` independent runs (``numpy.random.SeedSequence(seed).spawn``).

    ``rewards``: the law of the observed rewards ('deterministic', 'bernoulli' or
    'gaussian' with standard deviation ``sigma``); ``known_rewards=False`` makes the
    agents estimate them (bounded model for 'bernoulli' and 'deterministic', R in
    [0, 1]; Gaussian model with known ``sigma`` for 'gaussian'). ``force_untried``
    gives DMED and PS the untried-first rule of UCB and OLP.

    Returns:
        dict with ``pseudo_regret`` and ``regret`` ``[replications, horizon]``, ``counts``
        ``[replications, S, A, S]``, ``seconds`` (wall time of the loop) and
        ``cpu_seconds`` (process CPU time of the loop).
    """
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    if rewards not in REWARD_LAWS:
        raise ValueError(f"rewards must be one of {REWARD_LAWS}, got {rewards!r}")
    if rewards == "gaussian" and not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    if rewards == "bernoulli" or (rewards == "deterministic" and not known_rewards):
        if np.any((R < 0) | (R > 1)):
            raise ValueError("bernoulli rewards, or unknown deterministic rewards, need R "
                             "in [0, 1]")
    if initial_counts is not None and not known_rewards:
        raise ValueError("initial_counts need known rewards (no rewards were observed)")
    seeds = np.random.SeedSequence(seed).spawn(replications)
    start, cpu = time.perf_counter(), time.process_time()
    out = [run_one(P, R, mask, agent, horizon, np.random.default_rng(s), initial_counts,
                   rewards=rewards, sigma=sigma, known_rewards=known_rewards,
                   force_untried=force_untried)
           for s in seeds]
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu
    return {
        "pseudo_regret": np.stack([o[0] for o in out]),
        "regret": np.stack([o[1] for o in out]),
        "counts": np.stack([o[2] for o in out]),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, nargs="+", default=list(AGENTS))
    parser.add_argument("--mdp", choices=MDPS, default="paper")
    parser.add_argument("--rewards", choices=REWARD_LAWS, default="deterministic",
                        help="law of the observed rewards (default deterministic)")
    parser.add_argument("--sigma", type=float, default=1.0,
                        help="standard deviation of gaussian rewards (default 1)")
    parser.add_argument("--unknown-rewards", action="store_true",
                        help="the agents estimate the mean rewards")
    parser.add_argument("--force-untried", action="store_true",
                        help="DMED and PS play an untried action first, like UCB and OLP")
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--replications", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rigged", action="store_true",
                        help="start from the rigged counts (paper MDP, known rewards)")
    args = parser.parse_args(argv)
    P, R, mask = get_mdp(args.mdp)
    from benchmarks import _calibration

    print(_calibration.calibration_line(), flush=True)
    if args.rigged and args.mdp != "paper":
        parser.error("--rigged needs --mdp paper")
    init = RIGGED_COUNTS if args.rigged else None
    sigma = f" sigma={args.sigma:g}" if args.rewards == "gaussian" else ""
    print(f"mdp={args.mdp} rewards={args.rewards}{sigma} "
          f"{'unknown' if args.unknown_rewards else 'known'} rewards, "
          f"force_untried={args.force_untried}{' rigged' if args.rigged else ''}", flush=True)
    for agent in args.agent:
        out = run(P, R, mask, agent, args.horizon, args.replications, args.seed, init,
                  rewards=args.rewards, sigma=args.sigma,
                  known_rewards=not args.unknown_rewards, force_untried=args.force_untried)
        final = out["pseudo_regret"][:, -1]
        se = final.std(ddof=1) / math.sqrt(len(final))
        steps = args.horizon * args.replications
        us = out["seconds"] / steps * 1e6
        cpu_us = out["cpu_seconds"] / steps * 1e6
        print(f"{agent:5s} T={args.horizon} R={args.replications} seed={args.seed} "
              f"mean pseudo-regret {final.mean():.4f} se {se:.4f} sd {final.std(ddof=1):.4f}"
              f"  ({us:.1f} us/replication-step, cpu {cpu_us:.1f} us)", flush=True)


if __name__ == "__main__":
    main()
