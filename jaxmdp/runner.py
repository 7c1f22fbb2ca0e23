"""The one regret-experiment runner: run agents, save resumably, tabulate, plot.

Every regret experiment (``experiments/regret.py``, ``robustness.py``,
``regret_garnet.py``, ``rewards.py``, ``compare.py``) and the ``jaxmdp run`` command line
go through :func:`run_agents`: it simulates each agent with :func:`jaxmdp.simulate` and
saves the results after each agent, so an interrupted run resumes where it stopped and a
finished one is never recomputed unless ``force``. A results file ``<name>.npz`` holds the
arrays (curves, times, wall seconds); beside it ``<name>.json`` holds the run's settings
by name (jaxmdp version, environment, seed, horizon, each agent's options, ...). Both are
written atomically (a temporary file, then a rename) and read back together by
:func:`load_results`. :func:`summary_rows` turns the saved curves into a table (mean with
its normal 95% CI and its bootstrap interval, median with its bootstrap interval and
quartiles, wall time) and :func:`paired_rows` into paired differences between agents on
the same seeds, written as CSV and markdown by :func:`write_tables`; every table states
the number of replications and the interval.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> import jaxmdp as jm
    >>> from jaxmdp import runner
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     data = runner.run_agents(Path(folder) / "results.npz", jm.envs.make("paper-mdp"),
    ...                              agents=["ucb"], horizon=100, replications=4, seed=0,
    ...                              env="paper-mdp", progress=False)
    ...     files = sorted(path.name for path in Path(folder).iterdir())
    >>> files, data["pseudo_regret_ucb"].shape
    (['results.json', 'results.npz'], (4, 100))
    >>> [(row["agent"], row["replications"]) for row in runner.summary_rows(data, ["ucb"])]
    [('ucb', 4)]
"""

from __future__ import annotations

import csv
import hashlib
import importlib.metadata
import io
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxmdp._distributed import broadcast, is_writer
from jaxmdp._files import json_plain, write_atomic
from jaxmdp._simulate import optimum, simulate
from jaxmdp.agents import Agent, agent_options, get_agent
from jaxmdp.analysis.lower_bound import regret_lower_bound
from jaxmdp.analysis.statistics import bootstrap_ci, mean_ci, paired_difference
from jaxmdp.mdp import MDP

__all__ = [
    "BOOTSTRAP",
    "INFORMATIONAL_SETTINGS",
    "RESULTS_VERSION",
    "SETTINGS_FORMAT",
    "agent_settings",
    "curves",
    "load_npz",
    "load_results",
    "paired_rows",
    "parse_agents",
    "rows_to_csv",
    "run_agents",
    "run_settings",
    "save_npz_atomic",
    "save_results",
    "settings_difference",
    "settings_path",
    "summary_rows",
    "write_atomic",
    "write_tables",
]

#: Bumped when an agent's behaviour changes, so saved results are not reused across it
#: (2: MDP-PS and MDP-DMED follow the paper at zero counts; 3: the UCRL family and
#: optimistic Q-learning read the previous round's reward as drawn, not as a difference
#: of reward sums).
RESULTS_VERSION = 3

#: The bootstrap intervals of the summary tables (:func:`~jaxmdp.bootstrap_ci`, BCa).
BOOTSTRAP = dict(level=0.95, method="BCa", n_resamples=9999, seed=0)

#: The layout of the settings file written by :func:`save_results`.
SETTINGS_FORMAT = 1

#: Settings that describe a run without changing its numbers; resuming does not compare
#: them (the environment's arrays are compared through ``mdp``).
INFORMATIONAL_SETTINGS = ("jaxmdp_version", "environment")


def save_npz_atomic(path: Path | str, **arrays) -> Path:
    """Writes ``arrays`` to ``path`` via a temporary file in the same folder and a rename."""
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    return write_atomic(path, write)


def load_npz(path: Path | str | None) -> dict[str, np.ndarray] | None:
    """Loads an ``.npz`` file's arrays as a dict, or returns None if there is none."""
    if path is None or not Path(path).exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def settings_path(path: Path | str) -> Path:
    """The settings file beside the results file ``path``: ``path`` with suffix ``.json``.

    Example:
        >>> from jaxmdp import runner
        >>> runner.settings_path("results/rs6/results.npz").as_posix()
        'results/rs6/results.json'
    """
    return Path(path).with_suffix(".json")


def _sha256(*arrays) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def agent_settings(agent: str | Agent) -> dict:
    """An agent's settings by name: ``{"name": ..., "options": {...}}``.

    ``options`` is the agent's configuration as a dict (a ``NamedTuple`` or dataclass
    config by field, in JSON types: tuples become lists, functions their qualified names,
    non-finite floats strings); a config that is neither is stored under ``"config"``.

    Args:
        agent: a registered name (default options) or an :class:`~jaxmdp.Agent`.

    Returns:
        The dict, as it reads back from the settings file.

    Example:
        >>> from jaxmdp import runner
        >>> runner.agent_settings("ps")["options"]["known_rewards"]
        True
    """
    agent = get_agent(agent)
    config = json_plain(agent.config)
    if config is None or isinstance(config, dict):
        return {"name": agent.name, "options": config or {}}
    return {"name": agent.name, "options": {}, "config": config}


def run_settings(mdp: MDP, agents, *, horizon: int, replications: int, seed: int = 0,
                 record_every: int = 1, initial_counts=None, env: str | None = None) -> dict:
    """The settings :func:`run_agents` saves for these arguments, by name.

    Keys: ``format`` (:data:`SETTINGS_FORMAT`), ``jaxmdp_version``, ``results_version``
    (:data:`RESULTS_VERSION`), ``environment`` (``env``, or ``"arrays"``), ``mdp`` (its
    size, dtype, reward law and a SHA-256 of ``P``, ``R`` and ``mask``), ``horizon``,
    ``replications``, ``seed``, ``record_every``, ``initial_counts`` (``None``, or the
    number of transitions and a SHA-256 of the array) and ``agents`` (label ->
    :func:`agent_settings`).

    Args:
        mdp: the environment (one MDP, not a batch).
        agents: as for :func:`run_agents`.
        horizon, replications, seed, record_every, initial_counts: as for
            :func:`run_agents`.
        env: the environment's name for the record: a :func:`jaxmdp.envs.make` name,
            ``"file:<path>"`` for an MDP read by :meth:`jaxmdp.MDP.load`; ``None`` means
            ``"arrays"`` (an MDP built in Python).

    Returns:
        The settings dict (JSON data).

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import runner
        >>> s = runner.run_settings(jm.envs.make("riverswim-6"), ["ucb"], horizon=10,
        ...                         replications=2, env="riverswim-6")
        >>> s["mdp"]["num_states"], s["seed"], list(s["agents"])
        (6, 0, ['ucb'])
    """
    P, R, mask = (np.asarray(x) for x in (mdp.P, mdp.R, mdp.mask))
    counts = None
    if initial_counts is not None:
        array = np.asarray(initial_counts)
        counts = {"transitions": json_plain(array.sum()), "shape": list(array.shape),
                  "sha256": _sha256(array)}
    try:
        version = importlib.metadata.version("jaxmdp")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "format": SETTINGS_FORMAT,
        "jaxmdp_version": version,
        "results_version": RESULTS_VERSION,
        "environment": "arrays" if env is None else str(env),
        "mdp": {"num_states": int(P.shape[-1]), "num_actions": int(R.shape[-1]),
                "dtype": str(P.dtype), "reward_law": mdp.reward_law,
                "reward_sigma": float(mdp.reward_sigma), "sha256": _sha256(P, R, mask)},
        "horizon": int(horizon),
        "replications": int(replications),
        "seed": int(seed),
        "record_every": int(record_every),
        "initial_counts": counts,
        "agents": {label: agent_settings(agent) for label, agent in _labelled(agents)},
    }


def _difference(saved, requested, name: str) -> str | None:
    """The dotted name of the first entry where ``saved`` and ``requested`` differ."""
    if isinstance(saved, dict) and isinstance(requested, dict):
        for key in list(requested) + [k for k in saved if k not in requested]:
            if key not in saved or key not in requested:
                return f"{name}.{key}" if name else key
            found = _difference(saved[key], requested[key], f"{name}.{key}" if name else key)
            if found is not None:
                return found
        return None
    return None if saved == requested and type(saved) is type(requested) else name


def _lookup(settings: dict, name: str):
    for key in name.split("."):
        if not isinstance(settings, dict) or key not in settings:
            return "(absent)"
        settings = settings[key]
    return settings


def settings_difference(saved: dict, requested: dict) -> str | None:
    """The first setting by which ``saved`` differs from ``requested``, or ``None``.

    Compares every run-level setting except :data:`INFORMATIONAL_SETTINGS`, and each
    agent of ``requested["agents"]`` that ``saved`` holds too (an agent missing from
    ``saved`` is not a difference: it is still to run).

    Args:
        saved, requested: settings dicts (:func:`run_settings`, :func:`load_results`).

    Returns:
        A message ``"<name>: saved <value>, requested <value>"`` naming the setting with
        dots (``"horizon"``, ``"mdp.sha256"``, ``"agents.ucb.options.known_rewards"``), or
        ``None`` when they agree.

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import runner
        >>> mdp = jm.envs.make("paper-mdp")
        >>> a = runner.run_settings(mdp, ["ucb"], horizon=10, replications=2)
        >>> b = runner.run_settings(mdp, ["ucb"], horizon=20, replications=2)
        >>> runner.settings_difference(a, b)
        'horizon: saved 10, requested 20'
    """
    ignored = set(INFORMATIONAL_SETTINGS) | {"agents"}
    name = _difference({k: v for k, v in saved.items() if k not in ignored},
                       {k: v for k, v in requested.items() if k not in ignored}, "")
    if name is None:
        saved_agents = saved.get("agents", {})
        for label, agent in requested.get("agents", {}).items():
            if label in saved_agents:
                name = _difference(saved_agents[label], agent, f"agents.{label}")
                if name is not None:
                    break
    if name is None:
        return None
    return (f"{name}: saved {json.dumps(_lookup(saved, name))}, "
            f"requested {json.dumps(_lookup(requested, name))}")


def save_results(path: Path | str, settings: dict, arrays: dict) -> Path:
    """Writes ``arrays`` to ``path`` (``.npz``) and ``settings`` beside it (``.json``).

    Each file is written atomically. The arrays gain ``settings_sha256``, the SHA-256 of
    the settings file's text, so that :func:`load_results` never pairs arrays with the
    settings of another run (a run interrupted between the two writes).

    Args:
        path: the results file (``.npz``); the settings go to :func:`settings_path`.
        settings: JSON data (see :func:`run_settings`).
        arrays: name -> array.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from jaxmdp import runner
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = runner.save_results(os.path.join(folder, "r.npz"), {"seed": 3},
        ...                                {"x": np.arange(3)})
        ...     settings, arrays = runner.load_results(path)
        >>> settings, arrays["x"].tolist()
        ({'seed': 3}, [0, 1, 2])
    """
    text = json.dumps(settings, indent=2) + "\n"
    arrays = dict(arrays)
    arrays["settings_sha256"] = np.asarray(hashlib.sha256(text.encode()).hexdigest())
    save_npz_atomic(path, **arrays)
    write_atomic(settings_path(path), lambda tmp: Path(tmp).write_text(text), ".json")
    return Path(path)


def load_results(path: Path | str) -> tuple[dict, dict[str, np.ndarray]]:
    """Reads a results file and its settings: ``(settings, arrays)``.

    ``settings`` is the dict of :func:`run_settings` (by name: ``settings["horizon"]``,
    ``settings["agents"]["ucb"]["options"]``); ``arrays`` the ``.npz`` file's arrays
    (see :func:`run_agents`). Results files written by jaxmdp before settings were named
    (a positional ``config`` array, no ``.json`` beside) are not read: run them again.

    Args:
        path: the results file (``.npz``).

    Returns:
        ``(settings, arrays)``.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the settings file is missing or unreadable, or does not belong to
            these arrays.

    Example:
        >>> import os, tempfile
        >>> import jaxmdp as jm
        >>> from jaxmdp import runner
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "r.npz")
        ...     _ = runner.run_agents(path, jm.envs.make("riverswim-6"), agents=["ps"],
        ...                           horizon=50, replications=3, seed=1,
        ...                           env="riverswim-6", progress=False)
        ...     settings, arrays = runner.load_results(path)
        >>> settings["replications"], arrays["pseudo_regret_ps"].shape
        (3, (3, 50))
    """
    arrays = load_npz(path)
    if arrays is None:
        raise FileNotFoundError(f"path: no results file at {str(path)!r}")
    json_path = settings_path(path)
    if not json_path.is_file():
        old = " (it has a positional 'config' array: an older format)" if (
            "config" in arrays) else ""
        raise ValueError(f"path: {str(path)!r} has no settings file {str(json_path)!r} "
                         f"beside it{old}; run the experiment again")
    text = json_path.read_text()
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"path: the settings file {str(json_path)!r} is not JSON "
                         f"({error})") from None
    digest = hashlib.sha256(text.encode()).hexdigest()
    if str(arrays.get("settings_sha256", "")) != digest:
        raise ValueError(f"path: the settings file {str(json_path)!r} does not belong to "
                         f"the arrays of {str(path)!r} (written by another run, or edited)")
    return settings, arrays


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
        accepted = {k: v for k, v in options.items() if k in agent_options(name)}
        out.append((name, get_agent(name, **accepted) if accepted else agent))
    return out


def _agent_arrays(label: str) -> tuple[str, str, str]:
    return f"pseudo_regret_{label}", f"regret_{label}", f"seconds_{label}"


def _resumable(path, requested: dict) -> tuple[dict, dict]:
    """The saved ``(settings, arrays)`` that a run with ``requested`` settings may reuse:
    those of ``path`` less the agents saved with other options, or empty ones when the
    file is missing, unreadable or saved with other run-level settings."""
    if path is None or not Path(path).exists():
        return {}, {}
    try:
        settings, arrays = load_results(path)
    except ValueError as error:
        print(f"{error}: recomputing every agent", flush=True)
        return {}, {}
    run_level = dict(requested, agents={})
    difference = settings_difference(settings, run_level)
    if difference is not None:
        print(f"{path}: saved with other settings ({difference}): recomputing every agent",
              flush=True)
        return {}, {}
    agents = dict(settings.get("agents", {}))
    for label, agent in requested["agents"].items():
        difference = settings_difference({"agents": {label: agents.get(label, agent)}},
                                         {"agents": {label: agent}})
        complete = all(key in arrays for key in _agent_arrays(label))
        if difference is not None or not complete:
            if difference is not None:
                print(f"{label}: saved with other options ({difference}): recomputing",
                      flush=True)
            agents.pop(label, None)
            for key in _agent_arrays(label):
                arrays.pop(key, None)
    return dict(settings, agents=agents), arrays


def run_agents(path: Path | str | None, mdp: MDP, *, agents, horizon: int,
               replications: int, seed: int = 0, record_every: int = 1,
               initial_counts=None, force: bool = False, progress: bool = True,
               lower_bound: float | None = None, devices=None,
               env: str | None = None) -> dict[str, np.ndarray]:
    """Simulates each agent and saves ``path`` after each one; reuses saved agents.

    The settings (:func:`run_settings`) go to ``path``'s ``.json`` file beside the arrays
    (:func:`save_results`); read both back with :func:`load_results`. A saved agent is
    reused when the saved run-level settings (seed, horizon, replications,
    ``record_every``, initial counts, the MDP's arrays and reward law,
    :data:`RESULTS_VERSION`) and that agent's saved options equal the requested ones.
    Otherwise the run is recomputed, not mixed: every agent when a run-level setting
    differs, that agent alone when its options differ; a line names the differing
    setting. Result files without a settings file (written by jaxmdp before settings were
    named) are recomputed likewise.

    Over several processes (``jax.distributed``; every process calls it with the same
    arguments), process 0 alone reads and writes ``path``: its reading of the saved
    results is sent to the others (through the coordination service), so every process
    skips the same agents, and the folder need only be reachable from process 0.

    Args:
        path: the results file (``.npz``), or None to keep nothing on disk.
        mdp: the environment.
        agents: names (default options), :class:`~jaxmdp.Agent` objects (labelled by
            their name) or ``(label, agent)`` pairs.
        horizon, replications, seed, record_every, initial_counts, devices: passed to
            :func:`jaxmdp.simulate`.
        force: recompute the requested agents even where the file has them (the file's
            other agents are kept).
        progress: progress bars.
        lower_bound: the constant of the ``C ln t`` line (for a batch of MDPs, one per
            instance, ``[M]``); default ``regret_lower_bound(mdp).constant``.
        env: the environment's name, kept in the settings (see :func:`run_settings`).

    Returns:
        The saved arrays: ``times``, ``lower_bound``, ``settings_sha256`` (links them to
        the settings file), and per agent label ``pseudo_regret_<label>``,
        ``regret_<label>`` (float32 ``[replications, K]``) and ``seconds_<label>`` (wall
        time, compile included). In processes other than process 0: the arrays of the
        agents simulated in this call only.

    Raises:
        ValueError: for repeated labels or an unknown agent name.
    """
    labelled = _labelled(agents)
    requested = run_settings(mdp, labelled, horizon=horizon, replications=replications,
                             seed=seed, record_every=record_every,
                             initial_counts=initial_counts, env=env)
    writer = is_writer()
    settings, data = _resumable(path, requested) if writer else ({}, {})
    if force:  # recompute the requested agents; keep the others saved in the file
        settings = dict(settings, agents={label: value for label, value in
                                          settings.get("agents", {}).items()
                                          if label not in requested["agents"]})
        for label in requested["agents"]:
            for key in _agent_arrays(label):
                data.pop(key, None)
    settings = dict(requested, agents=settings.get("agents", {}))
    # Process 0's reading of the saved results decides for every process.
    reused = set(broadcast(sorted(settings["agents"])))
    data.pop("settings_sha256", None)
    if writer and "lower_bound" not in data:
        if lower_bound is None:
            lower_bound = float(regret_lower_bound(mdp).constant)
        data["lower_bound"] = np.asarray(lower_bound, dtype=np.float64)
    # The MDP's gain and gaps, solved once for every agent that runs.
    solved = optimum(mdp) if any(label not in reused for label, _ in labelled) else None
    for label, agent in labelled:
        if label in reused:
            if writer:
                print(f"{label}: reusing {path}", flush=True)
            continue
        start = time.perf_counter()
        traj = simulate(mdp, agent, horizon, replications, seed, initial_counts,
                        record_every=record_every, progress=progress, devices=devices,
                        optimum=solved)
        pseudo, realised, seconds = _agent_arrays(label)
        data[pseudo] = np.asarray(traj.pseudo_regret, dtype=np.float32)
        data[realised] = np.asarray(traj.regret, dtype=np.float32)
        data["times"] = np.asarray(traj.times)
        data[seconds] = np.asarray(time.perf_counter() - start)
        settings["agents"][label] = requested["agents"][label]
        if path is not None and writer:
            save_results(path, settings, data)
    if path is not None and writer:
        data = load_npz(path)
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
