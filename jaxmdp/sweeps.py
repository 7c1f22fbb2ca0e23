"""Hyperparameter sweeps saved with their settings: ``jaxmdp sweep`` and its files.

:func:`run_sweep` runs :func:`jaxmdp.sweep` (the grid's points as one batch axis, one
compiled program) and saves the final curves of every point beside their settings, as
:func:`jaxmdp.runner.run_agents` does for agents: a second call with the same settings
reuses the saved points and computes only the points it does not have (the file keeps
every point computed). :func:`sweep_rows` summarises the final pseudo-regret of each
point (mean and bootstrap interval), :func:`sweep_figure` draws it against each swept
option, one line per value of the other options.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxmdp._distributed import is_writer
from jaxmdp._files import json_plain
from jaxmdp._simulate import grid_points, sweep
from jaxmdp.agents import get_agent
from jaxmdp.analysis.statistics import bootstrap_ci
from jaxmdp.mdp import MDP
from jaxmdp.runner import (
    BOOTSTRAP,
    load_results,
    rows_to_csv,
    run_settings,
    save_results,
    settings_difference,
    write_atomic,
)

__all__ = ["STATISTICS", "run_sweep", "sweep_figure", "sweep_markdown", "sweep_rows",
           "write_sweep_outputs"]


def _sweep_settings(mdp: MDP, agent: str, options: dict, *, horizon: int,
                    replications: int, seed: int, record_every: int, env) -> dict:
    """The run-level settings of a sweep (those of :func:`jaxmdp.runner.run_settings`,
    the agent's name and its options shared by every point)."""
    settings = run_settings(mdp, [(agent, get_agent(agent, **options))], horizon=horizon,
                            replications=replications, seed=seed,
                            record_every=record_every, env=env)
    del settings["agents"]
    settings["sweep"] = {"agent": agent, "options": json_plain(options)}
    return settings


def run_sweep(path: Path | str | None, mdp: MDP, agent: str, grid, *, horizon: int,
              replications: int, seed: int = 0, options: dict | None = None,
              record_every: int = 1, progress: bool = True, env: str | None = None,
              devices=None) -> tuple[dict, dict]:
    """Runs the points of ``grid`` not saved at ``path`` in one :func:`jaxmdp.sweep` call
    and saves every point's curves with the sweep's settings.

    Args:
        path: the results file (``.npz``; settings in the ``.json`` beside it), or None.
        mdp: the environment (one MDP).
        agent: the agent's name.
        grid: as for :func:`jaxmdp.sweep` (``{option: values}`` or a list of points).
        horizon, replications, seed, record_every, devices: as for :func:`jaxmdp.sweep`.
        options: options shared by every point.
        progress: a progress bar.
        env: the environment's name, kept in the settings.

    Returns:
        ``(settings, arrays)``: ``settings["sweep"]["points"]`` lists the saved points in
        the order of the arrays ``pseudo_regret`` and ``regret`` (``[points,
        replications, horizon // record_every]``, float32); ``times``; ``seconds`` (wall
        time of the call that computed each point, compilation included).

    Raises:
        ValueError: as :func:`jaxmdp.sweep`.
    """
    options = dict(options or {})
    points = [json_plain(point) for point in grid_points(grid)]
    requested = _sweep_settings(mdp, agent, options, horizon=horizon,
                                replications=replications, seed=seed,
                                record_every=record_every, env=env)
    saved_points, arrays = [], {}
    if path is not None and Path(path).exists():
        try:
            settings, arrays = load_results(path)
            difference = settings_difference(dict(settings, sweep=dict(
                settings.get("sweep", {}), points=None)), dict(requested, sweep=dict(
                    requested["sweep"], points=None)))
            if difference is None:
                saved_points = settings["sweep"]["points"]
            else:
                print(f"{path}: saved with other settings ({difference}): recomputing",
                      flush=True)
                arrays = {}
        except ValueError as error:
            print(f"{error}: recomputing", flush=True)
            arrays = {}
    missing = [point for point in points if point not in saved_points]
    if saved_points and not missing:
        print(f"{path}: reusing the {len(points)} points", flush=True)
    if missing:
        start = time.perf_counter()
        traj = sweep(mdp, agent, missing, horizon, replications, seed, options=options,
                     record_every=record_every, progress=progress, devices=devices)
        seconds = time.perf_counter() - start
        new = {"pseudo_regret": np.asarray(traj.pseudo_regret, np.float32),
               "regret": np.asarray(traj.regret, np.float32),
               "seconds": np.full(len(missing), seconds)}
        arrays = {key: np.concatenate([arrays[key], value]) if saved_points else value
                  for key, value in new.items()}
        arrays["times"] = np.asarray(traj.times)
        saved_points = saved_points + missing
    settings = dict(requested, sweep=dict(requested["sweep"], points=saved_points))
    arrays = {key: value for key, value in arrays.items() if key != "settings_sha256"}
    if path is not None and missing and is_writer():
        save_results(path, settings, arrays)
    return settings, arrays


#: The statistics of a row of :func:`sweep_rows`, after the point's options.
STATISTICS = ("replications", "mean", "ci_low", "ci_high", "se", "median", "realised_mean")


def _swept(rows: Sequence[dict]) -> list[str]:
    """The options whose value differs between the rows' points (all the points' options
    where none differs), in the points' order."""
    names = list(dict.fromkeys(name for row in rows for name in row
                               if name not in STATISTICS))
    swept = [name for name in names
             if len({json.dumps(row.get(name)) for row in rows}) > 1]
    return swept or names


def sweep_rows(settings: dict, arrays: dict, points: Sequence[dict] | None = None
               ) -> list[dict]:
    """One row per point (all saved points, or ``points``): the point's options, the
    final pseudo-regret's mean with its bootstrap interval (:data:`~jaxmdp.runner.BOOTSTRAP`),
    median and standard error, and the final realised regret's mean."""
    saved = settings["sweep"]["points"]
    points = saved if points is None else [json_plain(p) for p in points]
    rows = []
    for point in points:
        i = saved.index(point)
        final = np.asarray(arrays["pseudo_regret"][i][:, -1], np.float64)
        realised = np.asarray(arrays["regret"][i][:, -1], np.float64)
        interval = bootstrap_ci(final, **BOOTSTRAP) if final.size > 1 else None
        rows.append({**point, "replications": int(final.size),
                     "mean": float(final.mean()),
                     "ci_low": float(interval.low) if interval else math.nan,
                     "ci_high": float(interval.high) if interval else math.nan,
                     "se": float(final.std(ddof=1) / np.sqrt(final.size))
                     if final.size > 1 else math.nan,
                     "median": float(np.median(final)),
                     "realised_mean": float(realised.mean())})
    return rows


def sweep_markdown(settings: dict, rows: Sequence[dict]) -> str:
    """The table of :func:`sweep_rows` as Markdown, with the sweep's settings above it."""
    options = _swept(rows)
    shared = settings["sweep"]["options"]
    lines = [f"{settings['sweep']['agent']} on {settings['environment']}: final pseudo-regret "
             f"at t = {settings['horizon']} ({settings['replications']} replications per "
             f"point, seed {settings['seed']}"
             + (f"; options {json.dumps(shared)}" if shared else "") + "); the interval is "
             f"the {BOOTSTRAP['level']:.0%} {BOOTSTRAP['method']} bootstrap CI of the mean.",
             "",
             "| " + " | ".join(options) + " | mean | bootstrap CI | se | median | "
             "realised |",
             "|" + "---|" * (len(options) + 5)]
    for r in rows:
        interval = "n/a" if math.isnan(r["ci_low"]) else f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        lines.append("| " + " | ".join(str(r[o]) for o in options)
                     + f" | {r['mean']:.2f} | {interval} | {r['se']:.2f} | "
                     f"{r['median']:.2f} | {r['realised_mean']:.2f} |")
    return "\n".join(lines) + "\n"


def sweep_figure(settings: dict, rows: Sequence[dict]):
    """Final pseudo-regret (mean and bootstrap interval) against each swept option, one
    panel per option and one line per combination of the other swept options' values (a
    logarithmic axis for positive values spanning more than a decade)."""
    import matplotlib.pyplot as plt

    options = _swept(rows)
    fig, axes = plt.subplots(1, len(options), figsize=(5.2 * len(options), 3.8),
                             squeeze=False)
    for ax, option in zip(axes[0], options):
        others = [o for o in options if o != option]
        groups: dict[str, list[dict]] = {}
        for r in rows:
            key = ", ".join(f"{o}={r[o]}" for o in others)
            groups.setdefault(key, []).append(r)
        for key, group in groups.items():
            group = sorted(group, key=lambda r: r[option])
            x = np.asarray([r[option] for r in group], float)
            y = np.asarray([r["mean"] for r in group])
            low = np.asarray([r["ci_low"] for r in group])
            high = np.asarray([r["ci_high"] for r in group])
            line, = ax.plot(x, y, marker="o", label=key or None)
            if not np.all(np.isnan(low)):
                ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
        values = np.asarray([r[option] for r in rows], float)
        if np.all(values > 0) and values.max() / values.min() > 10:
            ax.set_xscale("log")
        ax.set_xlabel(option)
        ax.set_ylabel(f"pseudo-regret at t = {settings['horizon']}")
        ax.grid(alpha=0.3)
        if others:
            ax.legend(fontsize=8)
    fig.suptitle(f"{settings['sweep']['agent']} on {settings['environment']} "
                 f"({settings['replications']} replications per point)")
    fig.tight_layout()
    return fig


def write_sweep_outputs(settings: dict, arrays: dict, folder: Path | str,
                        points: Sequence[dict] | None = None) -> dict[str, Path]:
    """Writes ``table.csv``, ``table.md`` and ``sweep.png`` of the points (all saved
    points by default) to ``folder``, atomically; returns their paths by kind."""
    folder = Path(folder)
    rows = sweep_rows(settings, arrays, points)
    fig = sweep_figure(settings, rows)
    written = {"csv": folder / "table.csv", "md": folder / "table.md",
               "figure": folder / "sweep.png"}
    write_atomic(written["csv"], lambda tmp: Path(tmp).write_text(rows_to_csv(rows)), ".csv")
    write_atomic(written["md"],
                 lambda tmp: Path(tmp).write_text(sweep_markdown(settings, rows)), ".md")
    write_atomic(written["figure"], lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight",
                                                            format="png"), ".png")
    return written
