"""Gradient-based sensitivity of the regret lower bound for the paper's 3-state example.

Default run (``figures/sensitivity.png``, ``results/sensitivity.npz``):

(a) heat maps of d(lower-bound constant)/dP for each action (``jaxmdp.lower_bound_sensitivity``,
    projected onto each row's simplex tangent space);
(b) the constant along the steepest-ascent and steepest-descent directions in P (a line
    search of +- step sizes, rows kept positive) against the first-order prediction, and
    the error of that prediction against the step size;
(c) the MDP-UCB index of each action at one state of a learning run (the paper's rigged
    counts, section 5.1) as a function of the KL radius delta: C(delta) and dC/ddelta
    (``jaxmdp.index_sensitivity`` at the actual delta = ln t / n).

``--design`` (``figures/sensitivity_design.png``, ``results/sensitivity_design.npz``):
moves P within the simplex (entries >= ``--min-prob``) and a total L1 budget
``sum_{x,a} ||P[x,a] - P0[x,a]||_1 <= --budget`` to maximise and/or minimise the constant
by projected gradient steps (optax Adam, then the exact Euclidean projection onto that
set), then simulates MDP-UCB on the start and end MDPs and prints the constant and the
measured mean pseudo-regret at the horizon with a 95% CI.

    python experiments/sensitivity.py [--force] [--plot-only]
    python experiments/sensitivity.py --design [--objective both|max|min] [--budget 0.2]
        [--steps 150] [--lr 0.01] [--replications 200] [--horizon 10000]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from _common import (  # noqa: E402
    base_parser,
    load_npz,
    positive_int,
    save_figure,
    save_npz_atomic,
    saved_results,
)

jax.config.update("jax_enable_x64", True)

import jaxmdp as jm  # noqa: E402
from jaxmdp import plotting  # noqa: E402
from jaxmdp._progress import Progress  # noqa: E402

NAME = "sensitivity"
DESIGN_NAME = "sensitivity_design"
STATE_NAMES = ("x1", "x2", "x3")
ACTION_NAMES = ("a1", "a2")
# Panel (c): the paper's rigged counts (section 5.1) at state x1, round t = 61 (the first
# round after the 60 rigged transitions).
INDEX_STATE = 0
INDEX_ROUND = 61


# ---------------------------------------------------------------------------------------
# Default run: heat maps, line search, index vs delta.


def _max_step(P, direction, floor):
    """Largest s >= 0 with P + s * direction >= floor entrywise."""
    shrinking = direction < 0
    if not np.any(shrinking):
        return np.inf
    return float(np.min((P[shrinking] - floor) / -direction[shrinking]))


def compute_default(num_steps: int) -> dict[str, np.ndarray]:
    mdp = jm.envs.paper_mdp()
    P = np.asarray(mdp.P)
    sens = jm.lower_bound_sensitivity(mdp)
    d_P = np.asarray(sens.d_P)
    norm = float(np.linalg.norm(d_P))
    direction = d_P / norm  # steepest ascent within the simplex (unit Frobenius norm)
    floor = 1e-3
    s_up = 0.95 * _max_step(P, direction, floor)
    s_down = 0.95 * _max_step(P, -direction, floor)
    half = num_steps // 2
    # Geometric spacing near 0 (to show the first-order regime) plus linear to the edge.
    up = np.unique(np.r_[np.geomspace(1e-4, s_up, half // 2), np.linspace(0, s_up, half)])
    down = np.unique(np.r_[np.geomspace(1e-4, s_down, half // 2), np.linspace(0, s_down, half)])
    steps = np.r_[-down[::-1], up[1:]]
    Ps = P[None] + steps[:, None, None, None] * direction[None]
    Ps = np.clip(Ps, 0, None)
    Ps /= Ps.sum(-1, keepdims=True)  # no-op up to rounding: direction rows sum to 0
    batch = jm.MDP.unchecked(jnp.asarray(Ps), jnp.broadcast_to(mdp.R, (len(steps),) + mdp.R.shape),
                             jnp.broadcast_to(mdp.mask, (len(steps),) + mdp.R.shape))
    along = jax.jit(jax.vmap(jm.regret_lower_bound))(batch)
    policies = jax.vmap(lambda m: jm.solve_average_reward(m)[2])(batch)

    counts = jm.envs.rigged_counts()
    index = jm.index_sensitivity(counts, INDEX_STATE, INDEX_ROUND, "ucb", mdp)
    deltas = np.geomspace(1e-3, 3.0, 200)
    p_hat, bias = index.p_hat, index.bias
    curve = jax.vmap(lambda p: jm.kl_ucb(p, bias, deltas))(p_hat)  # [A, D]
    slope = jax.vmap(lambda p: jax.vmap(jax.grad(jm.kl_ucb, argnums=2), (None, None, 0))(
        p, bias, jnp.asarray(deltas)))(p_hat)
    return {
        "P": P,
        "R": np.asarray(mdp.R),
        "constant": np.asarray(sens.constant),
        "d_P": d_P,
        "d_R": np.asarray(sens.d_R),
        "K": np.asarray(sens.K),
        "gaps": np.asarray(sens.gaps),
        "policy": np.asarray(sens.policy),
        "steps": steps,
        "constant_along": np.asarray(along.constant),
        "policy_along": np.asarray(policies),
        "gradient_norm": np.asarray(norm),
        "index_deltas": deltas,
        "index_curve": np.asarray(curve) + np.asarray(mdp.R[INDEX_STATE])[:, None],
        "index_slope": np.asarray(slope),
        "index_level": np.asarray(index.level),
        "index_value": np.asarray(index.index),
        "index_d_level": np.asarray(index.d_level),
        "index_d_p_hat": np.asarray(index.d_p_hat),
        "index_d_bias": np.asarray(index.d_bias),
        "index_action": np.asarray(index.action),
        "index_config": np.array([INDEX_STATE, INDEX_ROUND]),
        "config": np.array([num_steps]),
    }


def _heatmap(ax, values, title, vmax, *, row_labels, col_labels, notes=None):
    import matplotlib.pyplot as plt  # noqa: F401

    im = ax.imshow(values, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            ax.text(j, i, f"{v:+.2f}", ha="center", va="center", fontsize=9,
                    color="white" if abs(v) > 0.6 * vmax else "black")
    ax.set_xticks(range(values.shape[1]), col_labels)
    ax.set_yticks(range(values.shape[0]), [
        lab + (f"\n{notes[i]}" if notes is not None and notes[i] else "")
        for i, lab in enumerate(row_labels)])
    ax.set_xlabel("next state y")
    ax.set_title(title, fontsize=10)
    return im


def plot_default(data, figures_dir):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(13, 12.5), constrained_layout=True)
    grid = fig.add_gridspec(3, 2)
    d_P, K, gaps, policy = data["d_P"], data["K"], data["gaps"], data["policy"]
    vmax = float(np.max(np.abs(d_P)))
    for a in range(2):
        ax = fig.add_subplot(grid[0, a])
        notes = []
        for x in range(3):
            if policy[x] == a:
                notes.append("optimal")
            elif not np.isfinite(K[x, a]):
                notes.append("K = inf")
            else:
                notes.append(f"gap {gaps[x, a]:.2f}, K {K[x, a]:.2f}")
        im = _heatmap(ax, d_P[:, a, :],
                      f"(a) d(constant)/dP[x, {ACTION_NAMES[a]}, y]  (rows sum to 0)", vmax,
                      row_labels=[f"x = {s}" for s in STATE_NAMES], col_labels=STATE_NAMES,
                      notes=notes)
        if a == 1:
            fig.colorbar(im, ax=ax, shrink=0.8)

    steps, along = data["steps"], data["constant_along"]
    c0, g = float(data["constant"]), float(data["gradient_norm"])
    pol0 = data["policy"]
    same = np.all(data["policy_along"] == pol0[None], axis=1)
    ax = fig.add_subplot(grid[1, 0])
    ax.plot(steps[same], along[same], "o", ms=3, color="tab:blue",
            label="constant at P + s D (optimal policy unchanged)")
    if np.any(~same):
        ax.plot(steps[~same], along[~same], "x", ms=4, color="tab:red",
                label="optimal policy changed")
    ax.plot(steps, c0 + g * steps, "-", color="black", lw=1.2,
            label=f"first order: {c0:.3f} + {g:.2f} s")
    ax.axvline(0, color="grey", lw=0.6)
    finite = along[np.isfinite(along)]
    ax.set_ylim(0, min(np.max(finite) * 1.05, 6 * c0))
    ax.set_xlabel("step s along D = grad / ||grad||   (s < 0: steepest descent, "
                  "s > 0: steepest ascent)")
    ax.set_ylabel("lower-bound constant")
    ax.set_title("(b) constant along the steepest directions in P (rows kept >= 1e-3)",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left")

    ax = fig.add_subplot(grid[1, 1])
    for sign, color, label in ((1, "tab:orange", "ascent (s > 0)"),
                               (-1, "tab:green", "descent (s < 0)")):
        sel = (np.sign(steps) == sign) & same
        err = np.abs(along[sel] - (c0 + g * steps[sel])) / c0
        ax.loglog(np.abs(steps[sel]), np.maximum(err, 1e-16), "o", ms=3, color=color,
                  label=label)
    s_ref = np.geomspace(1e-4, 1e-1, 10)
    ax.loglog(s_ref, s_ref**2, ":", color="grey", label="slope 2 (s^2)")
    ax.set_xlabel("|s|")
    ax.set_ylabel("|constant - first-order prediction| / constant")
    ax.set_title("(b') error of the first-order prediction: O(s^2) at small steps",
                 fontsize=10)
    ax.legend(fontsize=8)

    deltas = data["index_deltas"]
    level = data["index_level"]
    colors = ("tab:blue", "tab:red")
    ax = fig.add_subplot(grid[2, 0])
    for a in range(2):
        ax.semilogx(deltas, data["index_curve"][a], color=colors[a],
                    label=f"u({ACTION_NAMES[a]}) = r + C(p_hat, v_hat, delta)")
        ax.plot(level[a], data["index_value"][a], "o", color=colors[a], ms=7)
    ax.axvline(level[0], color="grey", lw=0.6, ls="--")
    x, t = data["index_config"]
    ax.set_xlabel("KL radius delta")
    ax.set_ylabel("MDP-UCB index")
    ax.set_title(f"(c) MDP-UCB index at state {STATE_NAMES[x]}, rigged counts, t = {t} "
                 f"(dots: delta = ln t / n = {level[0]:.3f}); plays "
                 f"{ACTION_NAMES[int(data['index_action'])]}", fontsize=10)
    ax.legend(fontsize=8)

    ax = fig.add_subplot(grid[2, 1])
    for a in range(2):
        ax.loglog(deltas, data["index_slope"][a], color=colors[a],
                  label=f"dC/ddelta for {ACTION_NAMES[a]} (envelope: c)")
        numeric = np.gradient(data["index_curve"][a], deltas)
        ax.loglog(deltas[::8], numeric[::8], "+", color=colors[a], ms=6,
                  label=f"numerical slope of the curve ({ACTION_NAMES[a]})")
        ax.plot(level[a], data["index_d_level"][a], "o", color=colors[a], ms=7)
    ax.axvline(level[0], color="grey", lw=0.6, ls="--")
    ax.set_xlabel("KL radius delta")
    ax.set_ylabel("dC/ddelta")
    ax.set_title("(c') its derivative (dots: jaxmdp.index_sensitivity d_level)", fontsize=10)
    ax.legend(fontsize=8)
    fig.suptitle("Sensitivity of the Burnetas-Katehakis regret lower bound, paper's 3-state "
                 f"example (constant = {c0:.4f})", fontsize=12)
    return save_figure(fig, NAME, figures_dir=figures_dir)


def summary_default(data) -> str:
    c0, g = float(data["constant"]), float(data["gradient_norm"])
    steps, along = data["steps"], data["constant_along"]
    lines = [f"lower-bound constant {c0:.6f}; ||d(constant)/dP|| (tangent) = {g:.4f}"]
    for s in (1e-3, 1e-2, 5e-2):
        for sign in (1, -1):
            i = int(np.argmin(np.abs(steps - sign * s)))
            pred = c0 + g * steps[i]
            lines.append(f"  s = {steps[i]:+.4f}: constant {along[i]:.6f}, first order "
                         f"{pred:.6f}, relative error {abs(along[i] - pred) / c0:.2e}")
    d = data["d_R"]
    lines.append("d(constant)/dR = " + np.array2string(d, precision=3))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# --design: projected gradient on P, then simulation.


def project(P, P0, mask, budget, floor, *, iterations: int = 60):
    r"""Euclidean projection of ``P`` onto ``{rows in the simplex, P >= floor,
    sum_{x,a} ||P[x,a] - P0[x,a]||_1 <= budget}`` (rows of inadmissible pairs stay P0).

    With a multiplier ``theta >= 0`` for the L1 budget and ``nu`` for each row's sum, the
    solution is ``p = max(floor, p0 + soft(y - nu - p0, theta))`` (``soft`` the
    soft-threshold); ``nu`` is found by bisection per row (the row sum decreases in
    ``nu``) and ``theta`` by an outer bisection (the total L1 distance decreases in
    ``theta``); ``theta = 0`` when the budget is slack. Needs ``P0 >= floor`` and
    ``floor * S < 1``.
    """
    z = P - P0

    def rows(theta):
        def at(nu):
            u = z - nu[..., None]
            return jnp.maximum(floor, P0 + jnp.sign(u) * jnp.maximum(jnp.abs(u) - theta, 0.0))

        def step(_, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            above = jnp.sum(at(mid), axis=-1) > 1.0
            return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

        lo = jnp.min(z, axis=-1) - theta - 1.0
        hi = jnp.max(z, axis=-1) + theta + 1.0
        lo, hi = jax.lax.fori_loop(0, iterations, step, (lo, hi))
        p = at(0.5 * (lo + hi))
        return jnp.where(mask[..., None], p / jnp.sum(p, axis=-1, keepdims=True), P0)

    def distance(theta):
        return jnp.sum(jnp.abs(rows(theta) - P0))

    def outer(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        over = distance(mid) > budget
        return jnp.where(over, mid, lo), jnp.where(over, hi, mid)

    theta_hi = jnp.max(jnp.abs(z)) + 1.0
    _, theta = jax.lax.fori_loop(0, iterations, outer, (jnp.zeros(()), theta_hi))
    theta = jnp.where(distance(0.0) <= budget, 0.0, theta)
    return rows(theta)


def optimise(mdp, *, sign: float, budget: float, floor: float, steps: int, lr: float,
             progress: bool):
    """Projected Adam on P to maximise (sign=+1) or minimise (sign=-1) the constant."""
    P0, R, mask = mdp.P, mdp.R, mdp.mask
    optimiser = optax.adam(lr)

    @jax.jit
    def update(P, state):
        sens = jm.lower_bound_sensitivity(jm.MDP.unchecked(P, R, mask))
        updates, state = optimiser.update(-sign * sens.d_P, state, P)
        P_next = project(optax.apply_updates(P, updates), P0, mask, budget, floor)
        return P_next, state, sens.constant, sens.policy

    P, state = P0, optimiser.init(P0)
    history, policies, iterates = [], [], []
    label = "maximise" if sign > 0 else "minimise"
    with Progress(steps, f"design: {label} constant", enabled=progress) as bar:
        for _ in range(steps):
            P_next, state, constant, policy = update(P, state)
            history.append(float(constant))
            policies.append(np.asarray(policy))
            iterates.append(np.asarray(P))
            P = P_next
            bar.update(1, info=f"constant {history[-1]:.4f}")
    history = np.asarray(history)
    # The best iterate seen (projected Adam need not be monotone).
    best = int(np.argmax(sign * history))
    return iterates[best], history, np.stack(policies), best


def _table(data, names, horizon) -> str:
    log_t = np.log(horizon)
    lines = [f"MDP-UCB, {data['pseudo_regret_start'].shape[0]} replications, horizon "
             f"T = {horizon}; pseudo-regret at T (mean +- 95% CI half-width)",
             f"{'MDP':6s} {'policy':>7s} {'L1 moved':>8s} {'constant':>9s} {'1st-order':>9s} "
             f"{'C ln T':>7s} {'pseudo-regret at T':>22s} {'regret/start':>12s} "
             f"{'C/start':>8s}"]
    start_mean = None
    c_start = float(data["constant_start"])
    for name in names:
        final = data[f"pseudo_regret_{name}"][:, -1]
        mean, lo, hi = plotting.mean_ci(final)
        start_mean = mean if start_mean is None else start_mean
        c = float(data[f"constant_{name}"])
        change = data[f"P_{name}"] - data["P_start"]
        first_order = c_start + float(np.sum(data["d_P_start"] * change))
        policy = "".join(str(int(a) + 1) for a in data[f"policy_{name}"])
        lines.append(f"{name:6s} {'a' + policy:>7s} {np.abs(change).sum():8.3f} {c:9.4f} "
                     f"{first_order:9.4f} {c * log_t:7.3f} {mean:10.3f} +- {hi - mean:6.3f} "
                     f"{mean / start_mean:11.3f}x {c / c_start:7.3f}x")
    lines.append("policy: the optimal action (1 = a1, 2 = a2) in x1 x2 x3; 1st-order: "
                 "constant(start) + <d(constant)/dP, P - P_start>")
    return "\n".join(lines)


def compute_design(args, path: Path) -> dict[str, np.ndarray]:
    mdp = jm.envs.paper_mdp()
    objectives = {"both": ("min", "max"), "max": ("max",), "min": ("min",)}[args.objective]
    config = np.array([args.budget, args.min_prob, args.steps, args.lr, args.replications,
                       args.horizon, args.seed, args.record_every])
    saved = None if args.force else load_npz(path)
    if saved is not None and (not np.array_equal(saved.get("config"), config)):
        saved = None
    data = dict(saved) if saved is not None else {"config": config}
    sens = jm.lower_bound_sensitivity(mdp)
    data["P_start"] = np.asarray(mdp.P)
    data["constant_start"] = np.asarray(sens.constant)
    data["d_P_start"] = np.asarray(sens.d_P)
    data["policy_start"] = np.asarray(sens.policy)
    for objective in objectives:
        if f"P_{objective}" in data:
            print(f"design {objective}: reusing {path}", flush=True)
            continue
        start = time.perf_counter()
        P_end, history, policies, best = optimise(
            mdp, sign=1.0 if objective == "max" else -1.0, budget=args.budget,
            floor=args.min_prob, steps=args.steps, lr=args.lr, progress=not args.no_progress)
        end = jm.MDP(P_end, mdp.R, mdp.mask)  # validated: rows on the simplex, positive
        data[f"P_{objective}"] = np.asarray(end.P)
        end_sens = jm.lower_bound_sensitivity(end)
        data[f"constant_{objective}"] = np.asarray(end_sens.constant)
        data[f"policy_{objective}"] = np.asarray(end_sens.policy)
        data[f"history_{objective}"] = history
        data[f"policies_{objective}"] = policies
        data[f"best_step_{objective}"] = np.asarray(best)
        data[f"seconds_design_{objective}"] = np.asarray(time.perf_counter() - start)
        save_npz_atomic(path, **data)
    for name in ("start",) + objectives:
        if f"pseudo_regret_{name}" in data:
            print(f"simulate {name}: reusing {path}", flush=True)
            continue
        start = time.perf_counter()
        target = jm.MDP(data[f"P_{name}"], mdp.R, mdp.mask)
        traj = jm.simulate(target, "ucb", args.horizon, args.replications, args.seed,
                           record_every=args.record_every, progress=not args.no_progress)
        data[f"pseudo_regret_{name}"] = np.asarray(traj.pseudo_regret, dtype=np.float32)
        data["times"] = np.asarray(traj.times)
        data[f"seconds_simulate_{name}"] = np.asarray(time.perf_counter() - start)
        save_npz_atomic(path, **data)
    return data


def plot_design(data, names, figures_dir):
    import matplotlib.pyplot as plt

    colors = {"start": "black", "min": "tab:green", "max": "tab:red"}
    labels = {"start": "start (paper's P)", "min": "minimised constant",
              "max": "maximised constant"}
    start_policy = data["policy_start"]
    for name in names[1:]:
        if not np.array_equal(data[f"policy_{name}"], start_policy):
            policy = "".join(ACTION_NAMES[int(a)][1] for a in data[f"policy_{name}"])
            labels[name] += f" (optimal policy changed to a{policy})"
    fig, axes = plt.subplots(2, 2, figsize=(13, 10), constrained_layout=True)
    ax = axes[0, 0]
    for name in names[1:]:
        history = data[f"history_{name}"]
        ax.plot(np.arange(len(history)), history, color=colors[name], label=labels[name])
        best = int(data[f"best_step_{name}"])
        ax.plot(best, history[best], "o", color=colors[name])
    ax.axhline(float(data["constant_start"]), color="black", lw=0.8, ls="--", label="start")
    histories = np.concatenate([data[f"history_{name}"] for name in names[1:]])
    if histories.max() > 20 * histories.min():  # a gap closed: the constant blew up
        ax.set_yscale("log")
    ax.set_xlabel("projected Adam step")
    ax.set_ylabel("lower-bound constant")
    budget, floor = float(data["config"][0]), float(data["config"][1])
    ax.set_title(f"(a) constant during the design (L1 budget {budget:g}, P >= {floor:g}; "
                 "dot: iterate kept)", fontsize=10)
    ax.legend(fontsize=8)

    times = data["times"]
    ax = axes[0, 1]
    for name in names:
        plotting.plot_mean_ci(ax, times, data[f"pseudo_regret_{name}"], color=colors[name],
                              label=f"{labels[name]}: MDP-UCB")
        c = float(data[f"constant_{name}"])
        ax.plot(times, c * np.log(times), ls="--", lw=1, color=colors[name],
                label=f"{c:.3g} ln t")
    ax.set_xscale("log")
    ax.set_xlim(times[0], times[-1])
    top = max(plotting.mean_ci(data[f"pseudo_regret_{name}"])[2].max() for name in names)
    ax.set_ylim(0, 1.35 * max(top, float(data["constant_start"]) * np.log(times[-1])))
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative pseudo-regret")
    ax.set_title("(b) MDP-UCB regret (mean, 95% CI) and the lower-bound line C ln t",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2)

    ax = axes[1, 0]
    horizon = int(times[-1])
    cs = []
    for name in names:
        mean, lo, hi = plotting.mean_ci(data[f"pseudo_regret_{name}"][:, -1])
        c = float(data[f"constant_{name}"])
        cs.append(c)
        ax.errorbar([c], [mean], yerr=[[mean - lo], [hi - mean]], fmt="o", capsize=4,
                    color=colors[name], label=f"{labels[name]}")
    wide = max(cs) > 10 * min(cs)
    grid = np.geomspace(min(cs) / 1.5, max(cs) * 1.5, 50) if wide else np.linspace(
        0, max(cs) * 1.15, 50)
    ax.plot(grid, grid * np.log(horizon), "k--", lw=1, label="C ln T (asymptotic bound)")
    start_mean = plotting.mean_ci(data["pseudo_regret_start"][:, -1])[0]
    ax.plot(grid, start_mean * grid / cs[0], ":", color="grey", lw=1.2,
            label="regret proportional to C (through start)")
    top = max(plotting.mean_ci(data[f"pseudo_regret_{name}"][:, -1])[2] for name in names)
    top = 1.3 * max(top, cs[0] * np.log(horizon))
    if wide:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(grid[0], grid[-1])
        ax.set_ylim(top / 30, top)
    else:
        ax.set_xlim(0, grid[-1])
        ax.set_ylim(0, top)
    ax.set_xlabel("lower-bound constant C")
    ax.set_ylabel(f"mean pseudo-regret at T = {horizon}")
    ax.set_title("(c) did the regret move the way the gradient said?", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    blocks = [data[f"P_{name}"] - data["P_start"] for name in names[1:]]
    rows = [f"({STATE_NAMES[x]},{ACTION_NAMES[a]})" for x in range(3) for a in range(2)]
    mats = [b.reshape(6, 3) for b in blocks]
    gap = np.full((6, 1), np.nan)
    joined = np.concatenate([m if i == 0 else np.concatenate([gap, m], 1)
                             for i, m in enumerate(mats)], axis=1)
    vmax = max(float(np.nanmax(np.abs(joined))), 1e-9)
    im = ax.imshow(joined, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    cols = []
    for i, name in enumerate(names[1:]):
        cols += ([""] if i else []) + [f"{name}: {s}" for s in STATE_NAMES]
    for i in range(joined.shape[0]):
        for j in range(joined.shape[1]):
            if np.isfinite(joined[i, j]) and abs(joined[i, j]) > 5e-4:
                ax.text(j, i, f"{joined[i, j]:+.3f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(joined.shape[1]), cols, rotation=30, fontsize=8)
    ax.set_yticks(range(6), rows)
    ax.set_title("(d) change P_end - P_start (rows (x, a), columns next state y)",
                 fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("Designing P with the lower-bound gradient, paper's 3-state example",
                 fontsize=12)
    return save_figure(fig, DESIGN_NAME, figures_dir=figures_dir)


# ---------------------------------------------------------------------------------------
# CLI.


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--design", action="store_true",
                        help="optimise P for the constant and simulate MDP-UCB")
    parser.add_argument("--line-points", type=int, default=120,
                        help="points on the line search of panel (b)")
    parser.add_argument("--objective", choices=("both", "max", "min"), default="both")
    parser.add_argument("--budget", type=float, default=0.2,
                        help="total L1 budget sum_{x,a} ||P[x,a] - P0[x,a]||_1")
    parser.add_argument("--min-prob", type=float, default=0.005,
                        help="every entry of P stays >= this (rows strictly positive)")
    parser.add_argument("--steps", type=int, default=150, help="projected gradient steps")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--record-every", type=int, default=10)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    positive_int("--line-points", args.line_points)
    positive_int("--steps", args.steps)
    positive_int("--replications", args.replications)
    positive_int("--horizon", args.horizon)
    positive_int("--record-every", args.record_every)
    if not args.budget > 0:
        raise ValueError(f"--budget must be positive, got {args.budget!r}")
    if not args.lr > 0:
        raise ValueError(f"--lr must be positive, got {args.lr!r}")
    p_min = float(np.min(np.asarray(jm.envs.paper_mdp().P)))
    if not 0 < args.min_prob <= p_min:
        raise ValueError(f"--min-prob must be in (0, {p_min}] (the smallest entry of the "
                         f"paper's P), got {args.min_prob!r}")
    if args.horizon % args.record_every:
        raise ValueError(f"--horizon must be a multiple of --record-every, got "
                         f"{args.horizon} and {args.record_every}")

    if args.design:
        path = args.results_dir / f"{DESIGN_NAME}.npz"
        if args.plot_only:
            data = saved_results(path)
        else:
            data = compute_design(args, path)
        names = ["start"] + [n for n in ("min", "max") if f"pseudo_regret_{n}" in data]
        print(_table(data, names, int(data["times"][-1])))
        figure = plot_design(data, names, args.figures_dir)
    else:
        path = args.results_dir / f"{NAME}.npz"
        data = None if args.force else load_npz(path)
        if args.plot_only and data is None:
            raise SystemExit(f"--plot-only: no saved results at {path}")
        if data is not None and not args.plot_only and not np.array_equal(
                data.get("config"), np.array([args.line_points])):
            data = None
        if data is None:
            data = compute_default(args.line_points)
            save_npz_atomic(path, **data)
        else:
            print(f"reusing {path}")
        print(summary_default(data))
        figure = plot_default(data, args.figures_dir)
    print(f"results: {path}")
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
