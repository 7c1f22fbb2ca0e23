"""The MDPs of the reference loops and their exact solution, in NumPy.

* The paper's 3-state example (section 5, ``PAPER_P``, ``PAPER_R``) and its rigged start
  (section 5.1, ``RIGGED_COUNTS``); RiverSwim (:func:`riverswim`) and StatisticalRL's
  ``river-swim-6`` in that code's action order (:func:`riverswim6_statisticalrl`);
  :func:`load_env` reads any ``jaxmdp.envs`` environment's arrays (command lines only).
* :func:`policy_iteration`: the one average-reward policy iteration of every loop
  (``numpy.linalg.solve`` for each evaluation, warm-started, ties to the lowest index).
* :func:`solve_true_mdp` and :func:`true_gaps`: the true MDP's gain, bias and gaps, robust
  to zero transition probabilities, checked against the optimality equations.
"""

from __future__ import annotations

import numpy as np

# The paper's 3-state example (section 5), P[x, a, y] and R[x, a].
PAPER_P = np.array([
    [[0.04, 0.69, 0.27], [0.28, 0.68, 0.04]],
    [[0.88, 0.01, 0.11], [0.26, 0.33, 0.41]],
    [[0.02, 0.46, 0.52], [0.43, 0.35, 0.22]],
])
PAPER_R = np.array([[0.13, 0.18], [0.47, 0.71], [0.89, 0.63]])
# The rigged start of section 5.1, N[x, a, y].
RIGGED_COUNTS = np.array([
    [[8, 1, 1], [1, 1, 8]],
    [[1, 1, 8], [8, 1, 1]],
    [[8, 1, 1], [1, 1, 8]],
])


def riverswim(n_states=6):
    """RiverSwim: (P [S, 2, S], R [S, 2]); action 0 = left, 1 = right; start in state 0.

    Left moves to max(s-1, 0) surely. Right: from 0 to 1 w.p. 0.4 (else stays); from
    0 < s < S-1 right 0.4, left 0.05, stays 0.55; from S-1 left 0.05, stays 0.95.
    Rewards r(0, left) = 0.005, r(S-1, right) = 1, all others 0.
    """
    S = n_states
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for s in range(S):
        P[s, 0, max(s - 1, 0)] = 1.0
        if s == 0:
            P[s, 1, 1] = 0.4
            P[s, 1, 0] = 0.6
        elif s < S - 1:
            P[s, 1, s + 1] = 0.4
            P[s, 1, s - 1] = 0.05
            P[s, 1, s] = 0.55
        else:
            P[s, 1, s - 1] = 0.05
            P[s, 1, s] = 0.95
    R[0, 0] = 0.005
    R[S - 1, 1] = 1.0
    return P, R


def riverswim6_statisticalrl():
    """StatisticalRL's ``river-swim-6`` (``register.py`` line 276: 6 states, right
    succeeds w.p. 0.4, goes back w.p. 0.05, rewards 0.005 on the left, 1 on the right;
    ``RiverSwim.py`` lines 21-59), in *their* action order: 0 = right, 1 = left."""
    S = 6
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for s in range(S):
        prr = 0.4 if s < S - 1 else 0.0
        prl = 0.05 if s > 0 else 0.0
        if s < S - 1:
            P[s, 0, s + 1] += prr
        if s > 0:
            P[s, 0, s - 1] += prl
        P[s, 0, s] += 1 - prr - prl
        P[s, 1, max(s - 1, 0)] = 1.0
    R[S - 1, 0] = 1.0
    R[0, 1] = 0.005
    return P, R


def load_env(name):
    """``(P, R, mask, reward_law)`` of a named ``jaxmdp.envs`` environment, as float64
    NumPy arrays (for the command lines; the loops themselves never import jaxmdp)."""
    import jaxmdp as jm

    mdp = jm.envs.make(name)
    return (np.asarray(mdp.P, np.float64), np.asarray(mdp.R, np.float64),
            np.asarray(mdp.mask, bool), mdp.reward_law)


def policy_iteration(P, R, mask=None, policy=None, max_iter=100):
    """Average-reward policy iteration for a unichain MDP; returns (gain, bias, policy).

    Each evaluation solves ``g + h_x - sum_y P_pi[x, y] h_y = r_x`` with ``h_0 = 0``
    (``numpy.linalg.solve``), so the bias is normalised by ``bias[0] = 0``. ``mask``
    (default: every action) marks the admissible actions; ``policy`` (default: the
    lowest admissible action of each state) is the warm start, its inadmissible actions
    replaced by the lowest admissible one. An improvement step keeps the current action
    unless another is better by more than a relative 1e-12; ties go to the lowest action
    index. Stops at a policy that improvement keeps, or after ``max_iter`` evaluations.
    """
    S = P.shape[0]
    states = np.arange(S)
    if mask is None:
        mask = np.ones(R.shape, dtype=bool)
    first = np.argmax(mask, axis=1)
    policy = first if policy is None else np.where(mask[states, policy], policy, first)
    R_masked = np.where(mask, R, -np.inf)
    eye = np.eye(S)
    for _ in range(max_iter):
        # g + h_x - sum_y P_pi[x, y] h_y = r_x with h_0 = 0: unknowns (g, h_1, ..., h_{S-1}).
        M = eye - P[states, policy]
        M[:, 0] = 1.0
        bias = np.linalg.solve(M, R[states, policy])
        gain = bias[0]
        bias[0] = 0.0
        Q = R_masked + P @ bias
        best = Q.max(axis=1)
        near = Q >= (best - 1e-12 * max(1.0, np.abs(best).max()))[:, None]
        new_policy = np.where(near[states, policy], policy, np.argmax(near, axis=1))
        if np.array_equal(new_policy, policy):
            return gain, bias, policy
        policy = new_policy
    return gain, bias, policy


def solve_true_mdp(P, R, mask, tau=0.5, tol=1e-13, max_iter=1_000_000):
    """Gain, bias (bias[0] = 0) and policy of the true MDP, robust to zero transitions.

    Relative value iteration on the aperiodic transform P' = tau P + (1 - tau) I,
    r' = tau r (same bias and optimal actions, gain tau g) until the span of
    T h - h is below ``tol``; then exact policy iteration started from its greedy policy
    (a linear solve: the fixed point satisfies the optimality equations with equality);
    finally the optimality equations are checked. Assumes a unichain optimal policy
    (true of the paper's MDP and RiverSwim, whose every policy reaches state 0).
    """
    S = P.shape[0]
    Pt = tau * P + (1.0 - tau) * np.eye(S)[:, None, :]
    Rt = tau * R
    h = np.zeros(S)
    for _ in range(max_iter):
        Th = np.where(mask, Rt + Pt @ h, -np.inf).max(axis=1)
        diff = Th - h
        h = Th - Th[0]
        if diff.max() - diff.min() < tol:
            break
    else:
        raise RuntimeError("relative value iteration did not converge")
    rvi_gain = 0.5 * (diff.max() + diff.min()) / tau
    Q = np.where(mask, R + P @ h, -np.inf)
    greedy = np.argmax(Q >= Q.max(axis=1, keepdims=True) - 1e-10, axis=1)
    gain, bias, policy = policy_iteration(P, R, mask, greedy)
    residual = np.where(mask, R + P @ bias, -np.inf).max(axis=1) - (gain + bias)
    if np.abs(residual).max() > 1e-9 or abs(gain - rvi_gain) > 1e-9:
        raise RuntimeError(f"true MDP solve failed: residual {np.abs(residual).max():.3g}, "
                           f"gain {gain} vs relative value iteration {rvi_gain}")
    return gain, bias, policy


def true_gaps(P, R, mask=None):
    """Gain of the true MDP and the gaps Delta(x, a) = g + h_x - r(x, a) - P[x, a].h
    (``mask``: the admissible actions, default all)."""
    if mask is None:
        mask = np.ones(R.shape, dtype=bool)
    gain, bias, _ = solve_true_mdp(P, R, mask)
    gap = gain + bias[:, None] - (R + P @ bias)
    gap = np.where(mask, np.maximum(gap, 0.0), 0.0)
    gap[np.abs(gap) < 1e-12] = 0.0
    return gain, gap
