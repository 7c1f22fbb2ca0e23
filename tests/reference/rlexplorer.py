"""rlexplorer's ``UcrlMdp`` and ``SCAL`` (RonanFR/UCRL ``ab64d14``) as plain Python loops.

One replication, one round at a time, scalar Python arithmetic in the published order of
operations, no jaxmdp inside. The rules are those of ``docs/guide/published.md`` and
:mod:`jaxmdp.agents.ucrl.rlexplorer` / :mod:`jaxmdp.agents.ucrl.scal`, each with its file
and line:

* the learner (``rlexplorer/Ucrl.py``): uniform ``P`` and ``r_hat = 0`` for untried pairs
  (lines 138-148), running mean and Welford variance of the rewards (385-417),
  ``delta_k = 1/sqrt(t + 1)`` (207), the Bernstein widths with ``L_CONST = 6``
  (307-383), ``epsilon_k = 1/sqrt(t + 1)`` (458), transition estimates updated at
  episode ends (279-285), the doubling test after each round on the pair just played
  (255-266, 164-165);
* ``EVI.run`` (``rlexplorer/evi/evi.pyx`` 94-212): ``min(r_max_vi, r_hat + beta_r)``
  (167-168; ``r_max_vi = 1`` for ``UcrlMdp``, ``2^31 - 1`` for ``SCAL``, ``scal.py`` 41),
  the aperiodicity transform ``tau = 0.9``, ``LPPROBA_bernstein`` (``_lpproba.pyx``
  9-33), the tie noise (131-137, 180), the stop ``sp(u2 - u1) < epsilon`` (194), the warm
  start ``u2 - u2[0]`` (144-146);
* ``SCOPT.run`` (``rlexplorer/evi/scopt.pyx`` 105-408) for ``SCAL``: the cap
  ``min(u3, min u3 + c / tau)`` (253-264), relative value iteration (392-400), the mixing
  policy with its noise (273-380).

The tie noise's uniforms ``U_a`` and the environment are arguments: ``noise_uniforms``
(default: the published ``RandomState(seed).random_sample(A)``, ``evi.pyx`` line 133)
and ``transition(s, a) -> next state`` (default: the published ``np.random.choice`` on
the global stream, seeded with ``seed``). ``SCAL``'s action draws use
``RandomState(seed)`` as published (``Ucrl.py`` lines 83, 430).

Options that depart from the published code (for ablations): ``warm="start"`` keeps the
values the last sweep started from (jaxmdp's default warm start).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["KINDS", "evi_run", "lp_bernstein", "run", "scopt_run", "sorted_indices",
           "tie_noise"]

KINDS = ("UcrlMdp", "SCAL")
TAU = 0.9  # Ucrl.py 149
L_CONST = 6  # Ucrl.py 324, 365


def sorted_indices(x, idx):
    """``get_sorted_indices`` (``_utils.pyx`` 85-92): exchange sort in place, ascending."""
    n = len(x)
    for i in range(n - 1):
        for j in range(i + 1, n):
            if x[idx[j]] < x[idx[i]]:
                idx[i], idx[j] = idx[j], idx[i]
    return idx


def lp_bernstein(v, p, asc, beta, reverse):
    """``LPPROBA_bernstein`` (``_lpproba.pyx`` 9-33), ``bplus = 0``."""
    n = len(p)
    delta, fval = 1.0, 0.0
    for i in range(n):
        idx = asc[i]
        a = max(0.0, p[idx] - beta[idx])
        delta -= a
        fval += a * v[idx]
    i = n - 1
    while delta > 0 and i >= 0:
        idx = asc[n - 1 - i] if reverse else asc[i]
        b = p[idx] + beta[idx]
        a = max(0.0, p[idx] - beta[idx])
        new = min(delta, b - a)
        fval += new * v[idx]
        delta -= new
        i -= 1
    return fval


def tie_noise(uniforms, epsilon):
    """``0.1 min(1e-6, max(1e-12, epsilon)) U_a`` (``evi.pyx`` 131-137, ``scopt.pyx``
    157-164)."""
    factor = 0.1 * min(1e-6, max(1e-12, epsilon))
    return [factor * u for u in uniforms]


def _isclose(a, b):
    """``isclose_c`` (``_utils.pyx`` 24-25): relative ``1e-9``."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


class Solver:
    """The solver's persistent ``u1``, ``u2`` and sorted indices (``evi.pyx`` 42-58)."""

    def __init__(self, S):
        self.u1 = [0.0] * S
        self.u2 = [0.0] * S
        self.idx = list(range(S))


def _start(solver):
    """``u1 = u2 - u2[0]``, ``u2 = 0``, sorted (``evi.pyx`` 144-150, ``scopt.pyx``
    175-181)."""
    u1, u2, idx = solver.u1, solver.u2, solver.idx
    c1 = u2[0]
    for i in range(len(u1)):
        u1[i] = u2[i] - c1
        u2[i] = 0.0
        idx[i] = i
    sorted_indices(u1, idx)


def _optimistic(s, a, solver, P, r_hat, beta_r, beta_p, r_max_vi):
    """``c1`` of ``evi.pyx`` 163-174 (holding times 1, ``tau_opt = 1``, ``gamma = 1``)."""
    dotp = lp_bernstein(solver.u1, P[s][a], solver.idx, beta_p[s][a], 0)
    r_opt = min(r_max_vi, r_hat[s][a] + beta_r[s][a])
    return r_opt + dotp * TAU + (1.0 - TAU) * solver.u1[s]


def evi_run(solver, actions, P, r_hat, beta_r, beta_p, r_max_vi, epsilon, noise, policy):
    """``EVI.run`` (``evi.pyx`` 94-212), ``relative_vi = 0``; writes the greedy action
    index of each state into ``policy``; returns the sweeps."""
    S = len(actions)
    epsilon = max(1e-12, epsilon)
    _start(solver)
    u1, u2 = solver.u1, solver.u2
    sweeps = 0
    while True:
        for s in range(S):
            for a in actions[s]:
                c = _optimistic(s, a, solver, P, r_hat, beta_r, beta_p, r_max_vi)
                if a == actions[s][0] or c + noise[a] > u2[s] + noise[policy[s]]:  # 180
                    u2[s], policy[s] = c, a
        sweeps += 1
        diff = [u2[i] - u1[i] for i in range(S)]
        if max(diff) - min(diff) < epsilon:
            return sweeps
        u1[:] = u2
        sorted_indices(u1, solver.idx)


def scopt_run(solver, actions, P, r_hat, beta_r, beta_p, r_max_vi, epsilon, noise, policy,
              span_constraint, warm="end"):
    """``SCOPT.run`` (``scopt.pyx`` 105-408), ``relative_vi = 1``, ``augment_reward = 1``;
    writes ``(min_action, greedy, weight_min)`` of each state into ``policy``; returns the
    sweeps."""
    S = len(actions)
    span_c = span_constraint / TAU  # line 122
    epsilon = max(1e-12, epsilon)
    _start(solver)
    u1, u2, idx = solver.u1, solver.u2, solver.idx
    u3, greedy = [0.0] * S, [0] * S
    sweeps = 0
    while True:
        for s in range(S):  # lines 188-242
            for a in actions[s]:
                c = _optimistic(s, a, solver, P, r_hat, beta_r, beta_p, r_max_vi)
                if a == actions[s][0] or c + noise[a] > u3[s] + noise[greedy[s]]:  # 232
                    u3[s], greedy[s] = c, a
        sweeps += 1
        th = min(u3) + span_c  # lines 253-264
        for s in range(S):
            u2[s] = min(u3[s], th)
        diff = [u2[i] - u1[i] for i in range(S)]
        if max(diff) - min(diff) < epsilon:  # line 268
            break
        u1[:] = u2  # lines 392-400
        sorted_indices(u1, idx)
        c1 = u1[0]
        for i in range(S):
            u1[i] -= c1
    for s in range(S):  # lines 273-380
        if u3[s] < th:
            policy[s] = (greedy[s], greedy[s], 0.0)
            continue
        u_min, a_min = 0.0, actions[s][0]
        for a in actions[s]:
            dotp = lp_bernstein(u1, P[s][a], idx, beta_p[s][a], 1)
            c = dotp * TAU + (1.0 - TAU) * u1[s]
            if a == actions[s][0] or c + noise[a] < u_min + noise[a_min]:  # line 330
                u_min, a_min = c, a
        if u_min > th:
            raise RuntimeError("ScOpt: -21")
        if _isclose(u_min, u3[s]):
            w = 1.0 if u_min + noise[a_min] > u3[s] + noise[greedy[s]] else 0.0  # 352
        elif _isclose(u_min, th):
            w = 1.0
        elif _isclose(u3[s], th):
            w = 0.0
        else:
            w = (u3[s] - th) / (u3[s] - u_min)
        policy[s] = (a_min, greedy[s], w)
    if warm == "start":
        u2[:] = u1
    return sweeps


def run(kind, P, R, actions, horizon, seed, *, span_constraint=5.0, noise_uniforms=None,
        transition=None, warm="end"):
    """One replication of ``kind`` (:data:`KINDS`) from state 0.

    Args:
        kind: ``"UcrlMdp"`` or ``"SCAL"``.
        P: ``[S, A, S]`` transition laws; R: ``[S, A]`` mean rewards (the published
            environments return the mean).
        actions: the action indices of each state (``env.state_actions``; each state's
            list ``0, 1, ...``, so that an index is its position, the published
            ``a_idx``).
        horizon: the rounds.
        seed: ``np.random.seed(seed)`` and the learner's ``random_state``.
        span_constraint: ``SCAL``'s ``c``.
        noise_uniforms: the tie noise's ``U_a`` (default ``RandomState(seed)``'s).
        transition: ``transition(s, a) -> s'`` (default the published draw).
        warm: ``"end"`` (published) or ``"start"``.

    Returns:
        ``(states, actions_played, total_reward, episodes)``.
    """
    np.random.seed(seed)
    P, R = np.asarray(P, float), np.asarray(R, float)
    S = len(actions)
    A = max(len(a) for a in actions)
    r_max = 1.0
    r_max_vi = r_max if kind == "UcrlMdp" else float(np.iinfo(np.int32).max)
    if noise_uniforms is None:
        noise_uniforms = np.random.RandomState(seed).random_sample(A)
    if transition is None:
        def transition(s, a):
            return int(np.random.choice(S, 1, p=P[s, a])[0])
    local_random = np.random.RandomState(seed)  # Ucrl.py 83
    counts = np.zeros((S, A, S), dtype=np.int64)
    P_hat = np.ones((S, A, S)) / S
    r_hat, var_proxy = np.zeros((S, A)), np.zeros((S, A))
    N, nu = np.zeros((S, A), dtype=np.int64), np.zeros((S, A), dtype=np.int64)
    solver = Solver(S)
    policy = [0] * S if kind == "UcrlMdp" else [(0, 0, 0.0)] * S
    t, total_reward, episodes, state = 0, 0.0, 0, 0
    states_played, actions_played = [], []

    def sample(s):  # Ucrl.py 419-435
        if kind == "UcrlMdp":
            return policy[s]
        a_min, a_max, w = policy[s]
        return int(local_random.choice(np.array([a_min, a_max]), p=np.array([w, 1.0 - w])))

    while t < horizon:
        episodes += 1
        nu[:] = 0
        delta = 1 / math.sqrt(t + 1)  # Ucrl.py 207
        n = np.maximum(1, N)
        log_term = np.log(L_CONST * S * A * n / delta) / n  # Ucrl.py 325-328
        beta_r = np.sqrt(var_proxy / n * log_term) + r_max * log_term
        log_term = np.log(L_CONST * S * A * n / delta)  # Ucrl.py 364-368
        beta_p = np.sqrt(P_hat * (1.0 - P_hat) * log_term[..., None] / n[..., None]) + (
            log_term[..., None] / n[..., None])
        epsilon = r_max / math.sqrt(t + 1)  # Ucrl.py 458
        noise = tie_noise(noise_uniforms, epsilon)
        args = (solver, actions, P_hat.tolist(), r_hat.tolist(), beta_r.tolist(),
                beta_p.tolist(), r_max_vi, epsilon, noise, policy)
        if kind == "UcrlMdp":
            evi_run(*args)
        else:
            scopt_run(*args, span_constraint=span_constraint, warm=warm)
        if kind == "UcrlMdp" and warm == "start":
            solver.u2[:] = solver.u1
        visited = set()
        a = sample(state)
        execute = True
        while execute and t < horizon:  # Ucrl.py 255-266
            s = state
            nxt = transition(s, a)
            r = R[s, a]
            states_played.append(s)
            actions_played.append(a)
            scale = N[s, a] + nu[s, a]  # Ucrl.py 397-417
            old = r_hat[s, a]
            r_hat[s, a] *= scale / (scale + 1.0)
            r_hat[s, a] += r / (scale + 1.0)
            var_proxy[s, a] += (r - old) * (r - r_hat[s, a])
            counts[s, a, nxt] += 1
            visited.add((s, a))
            nu[s, a] += 1
            total_reward += r
            t += 1
            state = nxt
            execute = nu[s, a] < max(1, N[s, a])  # lines 164-165, 261-263
            a = sample(state)
        N += nu  # lines 279-285
        for s, b in visited:
            P_hat[s, b] = counts[s, b] / N[s, b]
    return states_played, actions_played, total_reward, episodes
