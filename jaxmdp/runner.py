"""The one regret-experiment runner: run agents, save resumably, tabulate, plot.

Every regret experiment (``experiments/regret.py``, ``robustness.py``,
``regret_garnet.py``, ``rewards.py``, ``compare.py``) and the ``jaxmdp run`` command line
go through :func:`run_agents`: it simulates each agent with :func:`jaxmdp.simulate` and
saves the results file atomically (a temporary file, then a rename) after each agent, so an
interrupted run resumes where it stopped and a finished one is never recomputed unless
``force``. :func:`summary_rows` turns the saved curves into a table (mean with its normal
95% CI and its bootstrap interval, median with its bootstrap interval and quartiles, wall
time) and :func:`paired_rows` into paired differences between agents on the same seeds,
written as CSV and markdown by :func:`write_tables`; every table states the number of
replications and the interval.

Example:
    >>> import jaxmdp as jm
    >>> from jaxmdp import runner
    >>> data = runner.run_agents(None, jm.envs.make("paper-mdp"), agents=["ucb"],
    ...                          horizon=100, replications=4, seed=0, progress=False)
    >>> data["pseudo_regret_ucb"].shape
    (4, 100)
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxmdp.agents import Agent, get_agent
from jaxmdp.analysis.statistics import bootstrap_ci, mean_ci, paired_difference
from jaxmdp.mdp import MDP
from jaxmdp.planning import regret_lower_bound
from jaxmdp.simulate import simulate

__all__ = [
    "BOOTSTRAP",
    "RESULTS_VERSION",
    "curves",
    "load_npz",
    "paired_rows",
    "parse_agents",
    "rows_to_csv",
    "run_agents",
    "save_npz_atomic",
    "summary_rows",
    "write_atomic",
    "write_tables",
]

#: Bumped when an agent's behaviour changes, so saved results are not reused across it
#: (2: MDP-PS and MDP-DMED follow the paper at zero counts).
RESULTS_VERSION = 2

#: The bootstrap intervals of the summary tables (:func:`~jaxmdp.bootstrap_ci`, BCa).
BOOTSTRAP = dict(level=0.95, method="BCa", n_resamples=9999, seed=0)


def write_atomic(path: Path | str, write, suffix: str = ".tmp") -> Path:
    """Calls ``write(tmp_path)`` on a temporary file beside ``path``, then renames it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def save_npz_atomic(path: Path | str, **arrays) -> Path:
    """Writes ``arrays`` to ``path`` via a temporary file in the same folder and a rename."""
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    return write_atomic(path, write)


def load_npz(path: Path | str | None) -> dict[str, np.ndarray] | None:
    """Loads a results file as a dict, or returns None if there is none."""
    if path is None or not Path(path).exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _labelled(agents) -> list[tuple[str, str | Agent]]:
    """``[(label, agent)]`` from names (``"ucb"``) or ``(label, Agent)`` pairs."""
    out = []
    for agent in agents:
        if isinstance(agent, str):
            out.append((agent, agent))
        elif isinstance(agent, Agent):
            out.append((agent.name, agent))
        else:
            label, value = agent
            out.append((str(label), value))
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"agents must have distinct labels, got {labels}")
    return out


def parse_agents(text: str | Sequence[str], **options) -> list[tuple[str, Agent]]:
    """Agents from a comma-separated list of names (``"ucb,ps,ucrl2"``).

    ``options`` (e.g. ``known_rewards=False``) configure every agent that has them; an
    agent without an option keeps its default. Labels are the names.

    Raises:
        ValueError: for an unknown name (listing the known ones) or an empty list.
    """
    names = text.split(",") if isinstance(text, str) else list(text)
    names = [n.strip().lower() for n in names if n.strip()]
    if not names:
        raise ValueError(f"agents must name at least one agent, got {text!r}")
    out = []
    for name in names:
        agent = get_agent(name)  # ValueError listing the known names
        accepted = {k: v for k, v in options.items() if hasattr(agent.config, k)}
        out.append((name, get_agent(name, **accepted) if accepted else agent))
    return out


def run_agents(path: Path | str | None, mdp: MDP, *, agents, horizon: int,
               replications: int, seed: int = 0, record_every: int = 1,
               initial_counts=None, force: bool = False, progress: bool = True,
               lower_bound: float | None = None, devices=None) -> dict[str, np.ndarray]:
    """Simulates each agent and saves ``path`` after each one; reuses saved agents.

    Args:
        path: the results file (``.npz``), or None to keep nothing on disk.
        mdp: the environment.
        agents: names (default options), :class:`~jaxmdp.Agent` objects (labelled by
            their name) or ``(label, agent)`` pairs.
        horizon, replications, seed, record_every, initial_counts, devices: passed to
            :func:`jaxmdp.simulate`.
        force: recompute agents already in the file.
        progress: progress bars.
        lower_bound: the constant of the ``C ln t`` line; default
            ``regret_lower_bound(mdp).constant``.

    Returns:
        The saved dict: ``config`` (horizon, replications, seed, record_every, number of
        initial transitions, ``RESULTS_VERSION``), ``times``, ``lower_bound``, and per
        agent label ``pseudo_regret_<label>``, ``regret_<label>`` (float32
        ``[replications, K]``) and ``seconds_<label>`` (wall time, compile included).
        A file saved with other settings is recomputed, not mixed.
    """
    labelled = _labelled(agents)
    n0 = 0 if initial_counts is None else int(np.asarray(initial_counts).sum())
    config = np.array([horizon, replications, seed, record_every, n0, RESULTS_VERSION],
                      dtype=np.int64)
    saved = None if force else load_npz(path)
    if saved is not None and not np.array_equal(saved.get("config"), config):
        saved = None  # different settings: recompute everything
    data = dict(saved) if saved is not None else {}
    if "lower_bound" not in data:
        if lower_bound is None:
            lower_bound = float(regret_lower_bound(mdp).constant)
        data["lower_bound"] = np.asarray(float(lower_bound))
    data["config"] = config
    for label, agent in labelled:
        if f"pseudo_regret_{label}" in data:
            print(f"{label}: reusing {path}", flush=True)
            continue
        start = time.perf_counter()
        traj = simulate(mdp, agent, horizon, replications, seed, initial_counts,
                        record_every=record_every, progress=progress, devices=devices)
        data[f"pseudo_regret_{label}"] = np.asarray(traj.pseudo_regret, dtype=np.float32)
        data[f"regret_{label}"] = np.asarray(traj.regret, dtype=np.float32)
        data["times"] = np.asarray(traj.times)
        data[f"seconds_{label}"] = np.asarray(time.perf_counter() - start)
        if path is not None:
            save_npz_atomic(path, **data)
    return data


def curves(data: dict, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """label -> pseudo-regret samples ``[replications, K]`` for the labels saved."""
    return {label: data[f"pseudo_regret_{label}"] for label in labels
            if f"pseudo_regret_{label}" in data}


def _bootstrap(values: np.ndarray, statistic: str) -> tuple[float, float, str]:
    """(low, high, description) of the tables' bootstrap interval; NaN for one value."""
    if len(values) < 2:
        return np.nan, np.nan, "none (1 replication)"
    ci = bootstrap_ci(values, statistic, **BOOTSTRAP)
    return ci.low, ci.high, _describe(ci.level, ci.method)


def _describe(level: float, method: str) -> str:
    return (f"{level:.0%} {method} bootstrap, {BOOTSTRAP['n_resamples']} resamples, "
            f"seed {BOOTSTRAP['seed']}")


def _finals(data: dict, label: str) -> np.ndarray:
    return np.asarray(data[f"pseudo_regret_{label}"][:, -1], np.float64)


def summary_rows(data: dict, labels: Sequence[str]) -> list[dict]:
    """One row per agent: pseudo-regret at the horizon (mean, 95% CI half-width, median,
    quartiles, sd), realised regret (mean, CI), wall seconds, then the bootstrap intervals
    of the mean (``ci_low``, ``ci_high``) and of the median (``median_ci_low``,
    ``median_ci_high``) with their descriptions (``interval``, ``median_interval``).

    ``ci95`` and ``realised_ci95`` are the half-widths of the normal-approximation
    interval (:func:`~jaxmdp.mean_ci`, ``1.96 sd / sqrt(n)``; 0 for one replication);
    the bootstrap intervals follow ``BOOTSTRAP`` (NaN for one replication)."""
    rows = []
    for label in labels:
        if f"pseudo_regret_{label}" not in data:
            continue
        final = np.asarray(data[f"pseudo_regret_{label}"][:, -1], np.float64)
        realised = np.asarray(data[f"regret_{label}"][:, -1], np.float64)
        n = len(final)
        half = mean_ci(final)[2] - final.mean()
        rhalf = mean_ci(realised)[2] - realised.mean()
        q1, median, q3 = np.percentile(final, [25, 50, 75])
        low, high, interval = _bootstrap(final, "mean")
        median_low, median_high, median_interval = _bootstrap(final, "median")
        rows.append(dict(agent=label, horizon=int(data["times"][-1]), replications=n,
                         mean=final.mean(), ci95=half, median=median, q1=q1, q3=q3,
                         sd=final.std(ddof=1) if n > 1 else 0.0,
                         realised_mean=realised.mean(), realised_ci95=rhalf,
                         seconds=float(data.get(f"seconds_{label}", np.nan)),
                         ci_low=low, ci_high=high, median_ci_low=median_low,
                         median_ci_high=median_high, interval=interval,
                         median_interval=median_interval))
    return rows


def paired_rows(data: dict, labels: Sequence[str]) -> list[dict]:
    """One row per pair of agents ``(a, b)``, ``a`` listed before ``b``: the paired
    difference of pseudo-regret at the horizon over the same seeds (replication ``i`` of
    every agent runs on seed ``i``): ``mean_difference`` (mean of ``a - b``), its bootstrap
    interval (``ci_low``, ``ci_high``, described in ``interval``; NaN for one
    replication), ``fraction_a_lower`` and ``fraction_tied`` (fractions of seeds with
    ``a < b`` and ``a == b``; see :func:`~jaxmdp.paired_difference`)."""
    present = [label for label in labels if f"pseudo_regret_{label}" in data]
    rows = []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            x, y = _finals(data, a), _finals(data, b)
            n = len(x)
            if n > 1:
                diff = paired_difference(x, y, **BOOTSTRAP)
                low, high, interval = diff.low, diff.high, _describe(diff.level,
                                                                      diff.method)
            else:
                low, high, interval = np.nan, np.nan, "none (1 replication)"
            rows.append(dict(agent_a=a, agent_b=b, horizon=int(data["times"][-1]),
                             replications=n, mean_difference=float(np.mean(x - y)),
                             ci_low=low, ci_high=high,
                             fraction_a_lower=float(np.mean(x < y)),
                             fraction_tied=float(np.mean(x == y)), interval=interval))
    return rows


def _exceptions(rows: Sequence[dict], keys=("interval", "median_interval")) -> str:
    """Where a row's interval is not the default one (BCa undefined, one replication)."""
    default = _describe(BOOTSTRAP["level"], BOOTSTRAP["method"])
    notes = [f"{r.get('agent') or r['agent_a'] + ' − ' + r['agent_b']}"
             f"{' median' if key == 'median_interval' else ''}: {r[key]}"
             for r in rows for key in keys if r[key] != default]
    return f", except {'; '.join(notes)}" if notes else ""


def _interval_text(low: float, high: float) -> str:
    return "n/a" if np.isnan(low) else f"[{low:.2f}, {high:.2f}]"


def _markdown(rows: list[dict], lower_bound: float, pairs: Sequence[dict] = ()) -> str:
    horizon = rows[0]["horizon"] if rows else 0
    n = rows[0]["replications"] if rows else 0
    lines = [f"Pseudo-regret at t = {horizon} ({n} replications); lower bound C ln t = "
             f"{lower_bound:.4g} x {np.log(max(horizon, 1)):.3f} = "
             f"{lower_bound * np.log(max(horizon, 1)):.4g}",
             "",
             f"Intervals over the {n} replications: ± is the normal-approximation 95% "
             f"CI of the mean (1.96 sd / √n); the bootstrap CIs of the mean and of the "
             f"median are {_describe(BOOTSTRAP['level'], BOOTSTRAP['method'])} "
             f"(scipy.stats.bootstrap){_exceptions(rows)}; q1, q3 are the sample "
             f"quartiles." if n > 1 else "One replication: no confidence intervals.",
             "",
             "| agent | n | mean ± 95% CI | mean, bootstrap CI | median [q1, q3] | "
             "median, bootstrap CI | realised regret | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['agent']} | {r['replications']} | {r['mean']:.2f} ± "
                     f"{r['ci95']:.2f} | {_interval_text(r['ci_low'], r['ci_high'])} | "
                     f"{r['median']:.2f} [{r['q1']:.2f}, {r['q3']:.2f}] | "
                     f"{_interval_text(r['median_ci_low'], r['median_ci_high'])} | "
                     f"{r['realised_mean']:.2f} ± {r['realised_ci95']:.2f} | "
                     f"{r['seconds']:.1f} |")
    if pairs:
        lines += ["",
                  f"Paired differences of pseudo-regret at t = {horizon} over the same "
                  f"{n} seeds: mean of a − b with its bootstrap CI "
                  f"({_describe(BOOTSTRAP['level'], BOOTSTRAP['method'])}"
                  f"{_exceptions(pairs, ('interval',))}); a CI below 0 favours a. a < b: "
                  f"the fraction of seeds on which a had less regret." if n > 1 else
                  f"Paired differences of pseudo-regret at t = {horizon} on one seed.",
                  "",
                  "| a − b | n | mean difference | bootstrap CI | a < b | tied |",
                  "|---|---|---|---|---|---|"]
        for p in pairs:
            lines.append(f"| {p['agent_a']} − {p['agent_b']} | {p['replications']} | "
                         f"{p['mean_difference']:.2f} | "
                         f"{_interval_text(p['ci_low'], p['ci_high'])} | "
                         f"{p['fraction_a_lower']:.0%} | {p['fraction_tied']:.0%} |")
    return "\n".join(lines) + "\n"


def rows_to_csv(rows: list[dict]) -> str:
    """CSV text of summary rows (a header line from the first row's keys)."""
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


def write_tables(data: dict, labels: Sequence[str], stem: Path | str) -> tuple[Path, Path]:
    """Writes ``<stem>.csv`` (:func:`summary_rows`) and ``<stem>.md`` (both tables), and
    with two or more agents ``<stem>_paired.csv`` (:func:`paired_rows`), atomically;
    returns the paths of ``<stem>.csv`` and ``<stem>.md``."""
    rows = summary_rows(data, labels)
    pairs = paired_rows(data, labels)
    stem = Path(stem)
    paths = []
    outputs = [(stem.with_suffix(".csv"), rows_to_csv(rows)),
               (stem.with_suffix(".md"), _markdown(rows, float(data["lower_bound"]), pairs))]
    if pairs:
        outputs.append((stem.with_name(f"{stem.name}_paired.csv"), rows_to_csv(pairs)))
    for path, text in outputs:
        def write(tmp, text=text):
            Path(tmp).write_text(text)
        paths.append(write_atomic(path, write, path.suffix))
    return paths[0], paths[1]
