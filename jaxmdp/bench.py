"""``jaxmdp bench``: every registered agent on a named suite of environments.

A *suite* is a list of environments: single named MDPs (``paper-mdp``, ``riverswim-6``)
and *ensembles*, one batch of instances of a seeded family (``garnet-10-2-3`` drawn with
seeds ``0, ..., M-1``: :func:`jaxmdp.envs.batch`), each run by one batched
:func:`jaxmdp.simulate` call per agent. A *size* fixes the horizon ``T``, the
replications ``R`` per MDP and the instances ``M`` per ensemble: :data:`SIZES` has a
CPU-sized ``"default"`` and a GPU-sized ``"full"``. Every agent of
:func:`jaxmdp.agent_names` runs on every environment (or the agents given).

Results go under ``out``: per environment, ``results/<env>.npz`` and its settings
``results/<env>.json`` (:func:`jaxmdp.runner.run_agents`: written atomically after each
agent, reused on a re-run with the same settings, recomputed with ``force``) and the
exact hardness of every instance in ``results/<env>.hardness.json``: the
Burnetas–Katehakis constant for agents told the mean rewards and for agents that learn
them (:func:`jaxmdp.regret_lower_bound` with ``known_rewards=True`` and ``False``) and the
diameter (:func:`jaxmdp.hardness`); then

* ``leaderboard.csv`` and ``leaderboard.md``: per environment and agent, the agent's
  reward setting (``rewards``: ``"known"`` for an agent configured with
  ``known_rewards=True``, the paper's four by default; ``"learned"`` for every other), the
  pseudo-regret at ``T`` (mean over all runs with its bootstrap interval, the runner's
  :data:`~jaxmdp.runner.BOOTSTRAP`) and the normalised regret ``R(T) / (C ln T)``
  (:func:`~jaxmdp.analysis.statistics.normalised_regret`, ``C`` each instance's constant
  *for the agent's reward setting*) as an interquartile mean over instances and runs with
  its stratified-bootstrap interval
  (:func:`~jaxmdp.analysis.statistics.stratified_bootstrap_ci`, instances as strata), and
  the agent's wall time (compilation included); and per agent over the whole suite
  (every instance of every environment a stratum), ranked by that IQM among the agents of
  the same reward setting: one leaderboard for the agents told the rewards, one for the
  agents that learn them;
* ``figures/<env>.png``: the regret curves of every agent (for an ensemble, over all its
  runs, with the line ``mean(C) ln t``);
* ``figures/hardness-<agent>.png``: one point per MDP instance, the agent's mean
  ``R(T) / ln T`` against the instance's constant ``C`` for the agent's reward setting
  (with the line ``y = C``) and against its diameter ``D``;
* ``bench.json``: the suite, size and agents of the run.

Example:
    >>> import tempfile
    >>> from jaxmdp import bench
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     rows = bench.run_bench(folder, agents=["ucb"], suite="tiny", size="tiny",
    ...                            progress=False, quiet=True)
    >>> sorted({row["environment"] for row in rows})
    ['all', 'garnet-4-2-2 x4', 'paper-mdp']
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["REWARDS", "SIZES", "SUITES", "Entry", "Size", "entries", "leaderboard_rows",
           "reward_setting", "run_bench", "size_of"]

#: Families whose instances are drawn by seed: a suite entry of one of them is an ensemble.
SEEDED = re.compile(r"(garnet-\d+-\d+-\d+|random-\d+-\d+)")


class Entry(NamedTuple):
    """One environment of a suite.

    Attributes:
        name: a :func:`jaxmdp.envs.make` name.
        ensemble: ``True``: instances of ``name`` drawn with seeds ``0, ..., M-1`` (``M``
            the size's ``instances``), run as one batch; ``False``: the one MDP.
    """

    name: str
    ensemble: bool


class Size(NamedTuple):
    """How long and how many: horizon ``T``, replications per MDP, instances per
    ensemble."""

    horizon: int
    replications: int
    instances: int


#: The named suites. ``standard``: the paper's MDP, RiverSwim-6 and a GARNET ensemble;
#: ``extended``: every fixed environment and one instance or ensemble per family of
#: :data:`jaxmdp.envs.PATTERNS`; ``tiny``: for tests.
SUITES: dict[str, tuple[Entry, ...]] = {
    "standard": (Entry("paper-mdp", False), Entry("riverswim-6", False),
                 Entry("garnet-10-2-3", True)),
    "extended": (Entry("paper-mdp", False), Entry("riverswim-6", False),
                 Entry("riverswim-25", False), Entry("riverswim-osband-6", False),
                 Entry("riverswim-ergodic-6", False), Entry("riverswim-ergodic-25", False),
                 Entry("grid-2-room", False), Entry("grid-4-room", False),
                 Entry("sixarms", False), Entry("garnet-10-2-3", True),
                 Entry("garnet-20-4-3", True), Entry("random-10-4", True),
                 Entry("riverswim-12", False), Entry("grid-5-5", False),
                 Entry("deepsea-10", False), Entry("frozenlake-4", False)),
    "tiny": (Entry("paper-mdp", False), Entry("garnet-4-2-2", True)),
}

#: The sizes: ``default`` finishes on a 2-core CPU in minutes with the ``standard``
#: suite, ``full`` is for a GPU; ``tiny`` is for tests.
SIZES: dict[str, Size] = {
    "default": Size(horizon=5_000, replications=8, instances=16),
    "full": Size(horizon=100_000, replications=100, instances=100),
    "tiny": Size(horizon=60, replications=3, instances=4),
}

#: Records kept per curve at most (``record_every = ceil(T / RECORDS)``).
RECORDS = 1000

#: The reward settings of the leaderboards, in the order they are listed: agents told the
#: mean rewards, agents that learn them.
REWARDS = ("known", "learned")

#: The key of each reward setting's lower-bound constant in an environment's hardness.
_BOUND = {"known": "lower_bound", "learned": "lower_bound_learned"}


def entries(suite: str | Sequence[str]) -> list[Entry]:
    """The environments of ``suite``: a name of :data:`SUITES`, or environment names (a
    sequence, or one comma-separated string) where the seeded families (``garnet-S-A-b``,
    ``random-S-A``) become ensembles.

    Raises:
        ValueError: for an empty suite, an unknown suite name or environment name
            (naming ``suite``).

    Example:
        >>> from jaxmdp import bench
        >>> bench.entries("paper-mdp,garnet-5-2-2")
        [Entry(name='paper-mdp', ensemble=False), Entry(name='garnet-5-2-2', ensemble=True)]
    """
    from jaxmdp import envs

    if isinstance(suite, str) and suite in SUITES:
        return list(SUITES[suite])
    names = suite.split(",") if isinstance(suite, str) else list(suite)
    names = [str(name).strip() for name in names if str(name).strip()]
    if not names:
        raise ValueError(f"suite must name a suite ({', '.join(SUITES)}) or at least one "
                         f"environment, got {suite!r}")
    out = []
    for name in names:
        try:
            envs.make(name)
        except ValueError as error:
            raise ValueError(f"suite: {name!r} is neither a suite ({', '.join(SUITES)}) "
                             f"nor an environment ({error})") from None
        out.append(Entry(name, SEEDED.fullmatch(name) is not None))
    return out


def size_of(size: str | Size) -> Size:
    """The :class:`Size` named ``size`` (a key of :data:`SIZES`), or ``size`` itself.

    Raises:
        ValueError: for an unknown name or non-positive numbers (naming ``size``).
    """
    if isinstance(size, str):
        if size not in SIZES:
            raise ValueError(f"size must be one of {list(SIZES)}, got {size!r}")
        return SIZES[size]
    size = Size(*size)
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in size) \
            or size.horizon < 2:
        raise ValueError(f"size must have a horizon >= 2 and positive replications and "
                         f"instances, got {size!r}")
    return size


def _label(entry: Entry, size: Size) -> str:
    return f"{entry.name} x{size.instances}" if entry.ensemble else entry.name


def _stem(label: str) -> str:
    return label.replace(" ", "_")


def _agents(agents) -> list[str]:
    from jaxmdp.agents import agent_names, get_agent

    if agents is None:
        return agent_names()
    names = agents.split(",") if isinstance(agents, str) else list(agents)
    names = [str(name).strip().lower() for name in names if str(name).strip()]
    if not names:
        raise ValueError(f"agents must name at least one agent, got {agents!r}")
    for name in names:
        try:
            get_agent(name)
        except ValueError as error:
            raise ValueError(f"agents: {error}") from None
    if len(set(names)) != len(names):
        raise ValueError(f"agents must be distinct, got {names}")
    return names


def reward_setting(name: str) -> str:
    """``"known"`` if the registered agent ``name`` is told the mean rewards (configured
    with ``known_rewards=True``: the paper's four agents by default), else ``"learned"``.

    Example:
        >>> from jaxmdp import bench
        >>> bench.reward_setting("ucb"), bench.reward_setting("ucrl2")
        ('known', 'learned')
    """
    from jaxmdp.agents import get_agent

    return "known" if getattr(get_agent(name).config, "known_rewards", False) is True \
        else "learned"


def _learned_bounds(mdp) -> np.ndarray:
    """Each instance's lower-bound constant for an agent that learns the rewards (1-D),
    NaN where it is not defined (rewards outside ``[0, 1]`` for a non-Gaussian law)."""
    import jax

    from jaxmdp.analysis.lower_bound import regret_lower_bound

    leaves, tree = jax.tree_util.tree_flatten(mdp)
    batch = np.shape(mdp.P)[:-3]
    out = np.full(batch, np.nan)
    for index in np.ndindex(*batch):
        one = jax.tree_util.tree_unflatten(tree, [leaf[index] for leaf in leaves])
        try:
            out[index] = float(regret_lower_bound(one, known_rewards=False).constant)
        except ValueError:
            pass
    return np.atleast_1d(out.ravel())


def _hardness(mdp, path: Path, settings_sha: str) -> dict[str, np.ndarray]:
    """The instances' lower-bound constants (rewards known and learned) and diameters
    (1-D arrays), saved in ``path`` and reused while the MDP's arrays are the same."""
    keys = ("lower_bound", "lower_bound_learned", "diameter")
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved.get("mdp_sha256") == settings_sha and all(key in saved for key in keys):
            return {key: np.asarray(saved[key], np.float64) for key in keys}
    from jaxmdp.analysis.hardness import hardness
    from jaxmdp.runner import write_atomic

    measured = hardness(mdp)
    out = {key: np.atleast_1d(np.asarray(getattr(measured, key), np.float64))
           for key in ("lower_bound", "diameter")}
    out["lower_bound_learned"] = _learned_bounds(mdp)
    text = json.dumps({"mdp_sha256": settings_sha,
                       **{key: value.tolist() for key, value in out.items()}}) + "\n"
    write_atomic(path, lambda tmp: Path(tmp).write_text(text), ".json")
    return out


def run_bench(out, *, agents=None, suite: str | Sequence[str] = "standard",
              size: str | Size = "default", seed: int = 0, progress: bool = True,
              force: bool = False, quiet: bool = False) -> list[dict]:
    """Runs the benchmark and writes its files under ``out`` (see :mod:`jaxmdp.bench`).

    Resumable: each environment's results file is saved after each agent, and a re-run
    with the same settings reuses what is saved (``force`` recomputes). A progress bar
    advances once per environment and agent over the whole suite. Runs in float64 (it
    turns on ``jax_enable_x64``). An agent that cannot run on an environment (its
    ``check`` raises ``ValueError``) is left out of that environment's rows, with the
    reason at the end of ``leaderboard.md``. Over several processes (``jax.distributed``,
    every process calling it with the same arguments), the replications are split over
    the devices of all of them and process 0 alone reads and writes the files (see
    :func:`jaxmdp.runner.run_agents`).

    Args:
        out: the output folder (created).
        agents: agent names (a sequence or a comma-separated string); default every
            registered agent (:func:`jaxmdp.agent_names`).
        suite: a name of :data:`SUITES` or environment names (see :func:`entries`).
        size: a name of :data:`SIZES` or a :class:`Size`.
        seed: the simulator's seed (every agent and environment runs on the same seeds).
        progress: draw the progress bar.
        force: recompute saved results.
        quiet: print nothing but errors (no leaderboard).

    Returns:
        The leaderboard's rows (see :func:`leaderboard_rows`; each agent's reward setting
        from :func:`reward_setting`); in processes other than process 0, an empty list.

    Raises:
        ValueError: for an empty suite, an unknown suite, environment or agent name, or
            an unknown size (naming the argument).
    """
    import jax

    from jaxmdp import envs, runner
    from jaxmdp._progress import Progress

    jax.config.update("jax_enable_x64", True)
    suite_entries = entries(suite)
    size = size_of(size)
    names = _agents(agents)
    out = Path(out)
    # Over several processes (jax.distributed), process 0 alone writes files; the others
    # simulate their share (jaxmdp.runner.run_agents) and print nothing.
    writer = jax.process_index() == 0
    quiet = quiet or not writer
    if writer:
        (out / "results").mkdir(parents=True, exist_ok=True)
        (out / "figures").mkdir(parents=True, exist_ok=True)
    record_every = max(1, math.ceil(size.horizon / RECORDS))
    record = {"suite": suite if isinstance(suite, str) else list(suite),
              "environments": [_label(e, size) for e in suite_entries],
              "size": size._asdict(), "seed": int(seed), "record_every": record_every,
              "agents": names}
    if writer:
        runner.write_atomic(out / "bench.json", lambda tmp: Path(tmp).write_text(
            json.dumps(record, indent=2) + "\n"), ".json")
    results, skipped = {}, []
    with Progress(len(suite_entries) * len(names), "bench",
                  enabled=progress and writer) as bar:
        for entry in suite_entries:
            label = _label(entry, size)
            mdp = (envs.batch(entry.name, seeds=range(size.instances)) if entry.ensemble
                   else envs.make(entry.name))
            path = out / "results" / f"{_stem(label)}.npz"
            bound = measured = None
            if writer:
                mdp_sha = runner.run_settings(mdp, [], horizon=size.horizon,
                                              replications=size.replications)["mdp"]["sha256"]
                measured = _hardness(mdp, out / "results" / f"{_stem(label)}.hardness.json",
                                     mdp_sha)
                bound = (measured["lower_bound"] if entry.ensemble
                         else measured["lower_bound"][0])
            data = None
            for name in names:
                bar.update(0, info=f"{label}: {name}")
                try:
                    with contextlib.redirect_stdout(io.StringIO()) if quiet else \
                            contextlib.nullcontext():
                        data = runner.run_agents(
                            path, mdp, agents=[name], horizon=size.horizon,
                            replications=size.replications, seed=seed,
                            record_every=record_every, force=force, progress=False,
                            lower_bound=bound, env=label)
                except ValueError as error:  # an agent that cannot run on this MDP
                    skipped.append((label, name, str(error)))
                    if not quiet:
                        print(f"{label}: {name} not run: {error}", flush=True)
                bar.update(1)
            if data is not None:
                results[label] = (data, measured)
            # Release this environment's compiled programs (they stay in the persistent
            # compilation cache): XLA keeps every loaded program mapped, and a suite of
            # 16 environments x 16 agents otherwise runs past the process's limit on
            # memory mappings (vm.max_map_count) on a CPU.
            jax.clear_caches()
    if not writer:
        return []
    settings = {name: reward_setting(name) for name in names}
    rows = leaderboard_rows(results, names, settings)
    _write(out, rows, results, names, size, skipped, settings)
    if not quiet:
        print((out / "leaderboard.md").read_text())
        print(f"leaderboard: {out / 'leaderboard.csv'}, {out / 'leaderboard.md'}; figures: "
              f"{out / 'figures'}")
    return rows


def _finals(data: dict, name: str) -> np.ndarray | None:
    """The pseudo-regret at ``T`` as ``[M, R]`` (``M = 1`` for one MDP), or None."""
    key = f"pseudo_regret_{name}"
    if key not in data:
        return None
    final = np.asarray(data[key][..., -1], np.float64)
    return final.reshape((-1, final.shape[-1]))


def leaderboard_rows(results: dict, names: Sequence[str],
                     rewards: dict[str, str] | None = None) -> list[dict]:
    """The leaderboards: one row per agent over every environment (``environment =
    "all"``), the agents told the rewards first, each group ranked by normalised-regret
    IQM; then one row per environment and agent.

    Args:
        results: environment label -> ``(data, hardness)``: the arrays of
            :func:`jaxmdp.runner.run_agents` (pseudo-regret ``[R, K]`` or ``[M, R, K]``)
            and the instances' ``lower_bound`` (rewards known), ``lower_bound_learned``
            (rewards learned) and ``diameter`` (``[M]``).
        names: the agents.
        rewards: agent -> its reward setting, ``"known"`` or ``"learned"``; default
            :func:`reward_setting` of each name.

    Returns:
        Dicts with ``environment``, ``agent``, ``rewards`` (the agent's reward setting),
        ``rank`` (among the ``"all"`` rows of the same setting, from 1; 0 in the
        per-environment rows), ``instances``, ``runs``, ``horizon``, ``regret`` (mean
        pseudo-regret at ``T`` over every run) with ``regret_low``, ``regret_high`` (its
        bootstrap interval, NaN for one run; for ``"all"`` rows, NaN: regrets of
        different environments are not pooled), ``normalised_iqm`` with
        ``normalised_low``, ``normalised_high`` (IQM of ``R(T) / (C ln T)``, ``C`` the
        instance's constant for the agent's reward setting, and its stratified-bootstrap
        interval over the ``normalised_instances`` instances whose ``C`` is positive and
        finite: an instance with ``C = 0``, where no sub-optimal action is critical, has
        no normalised score; NaN if none has), ``seconds`` (wall time, compilation
        included) and ``interval`` (how the intervals were computed).

    Raises:
        ValueError: for a reward setting other than ``"known"`` and ``"learned"``.
    """
    from jaxmdp.analysis.statistics import (
        bootstrap_ci,
        interquartile_mean,
        normalised_regret,
        stratified_bootstrap_ci,
    )
    from jaxmdp.runner import BOOTSTRAP

    rewards = {name: reward_setting(name) for name in names} if rewards is None \
        else dict(rewards)
    for name in names:
        if rewards.get(name) not in REWARDS:
            raise ValueError(f"rewards[{name!r}] must be one of {list(REWARDS)}, got "
                             f"{rewards.get(name)!r}")
    level, resamples = BOOTSTRAP["level"], BOOTSTRAP["n_resamples"]
    interval = (f"regret: {level:.0%} {BOOTSTRAP['method']} bootstrap of the mean over "
                f"runs; normalised: {level:.0%} stratified percentile bootstrap of the IQM "
                f"(instances as strata); {resamples} resamples, seed {BOOTSTRAP['seed']}")

    def normalised(final, bound, horizon):
        ok = np.isfinite(bound) & (bound > 0)
        return normalised_regret(final[ok], bound[ok], horizon) if ok.any() else final[:0]

    def summary(scores: list[np.ndarray]):
        if not scores:
            return np.nan, np.nan, np.nan
        iqm = interquartile_mean(scores)
        if sum(len(s) for s in scores) < 2:
            return iqm, np.nan, np.nan
        ci = stratified_bootstrap_ci(scores, level=level, n_resamples=resamples,
                                     seed=BOOTSTRAP["seed"])
        return iqm, ci.low, ci.high

    rows, pooled = [], {name: ([], 0.0, 0, 0) for name in names}
    for label, (data, measured) in results.items():
        horizon = int(data["times"][-1])
        for name in names:
            final = _finals(data, name)
            if final is None:
                continue
            flat = final.ravel()
            if len(flat) > 1:
                ci = bootstrap_ci(flat, "mean", **BOOTSTRAP)
                low, high = ci.low, ci.high
            else:
                low = high = np.nan
            bound = measured[_BOUND[rewards[name]]]
            strata = list(normalised(final, bound, horizon))
            iqm, nlow, nhigh = summary(strata)
            seconds = float(data.get(f"seconds_{name}", np.nan))
            rows.append(dict(environment=label, agent=name, rewards=rewards[name], rank=0,
                             instances=final.shape[0],
                             runs=final.size, horizon=horizon, regret=flat.mean(),
                             regret_low=low, regret_high=high,
                             normalised_instances=len(strata), normalised_iqm=iqm,
                             normalised_low=nlow, normalised_high=nhigh, seconds=seconds,
                             interval=interval))
            all_strata, total, count, instances = pooled[name]
            pooled[name] = (all_strata + strata, total + seconds, count + final.size,
                            instances + final.shape[0])
    overall = []
    for name, (strata, seconds, count, instances) in pooled.items():
        if not count:
            continue
        iqm, low, high = summary(strata)
        overall.append(dict(environment="all", agent=name, rewards=rewards[name], rank=0,
                            instances=instances, runs=count,
                            horizon=max((r["horizon"] for r in rows), default=0),
                            regret=np.nan, regret_low=np.nan, regret_high=np.nan,
                            normalised_instances=len(strata), normalised_iqm=iqm,
                            normalised_low=low, normalised_high=high, seconds=seconds,
                            interval=interval))
    overall.sort(key=lambda row: (REWARDS.index(row["rewards"]),
                                  np.isnan(row["normalised_iqm"]), row["normalised_iqm"]))
    for setting in REWARDS:
        for rank, row in enumerate((r for r in overall if r["rewards"] == setting), 1):
            row["rank"] = rank
    return overall + rows


def _number(value: float, digits: int = 4) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}g}"


def _interval(low, high) -> str:
    return "—" if np.isnan(low) else f"[{_number(low)}, {_number(high)}]"


_BOARD_TITLE = {
    "known": "Agents told the mean rewards: R(T) / (C ln T), C the constant for known "
             "rewards (`jaxmdp.regret_lower_bound(mdp)`)",
    "learned": "Agents that learn the rewards: R(T) / (C ln T), C the constant for learned "
               "rewards (`jaxmdp.regret_lower_bound(mdp, known_rewards=False)`)",
}


def _markdown(rows: list[dict], size: Size, skipped) -> str:
    overall = [r for r in rows if r["environment"] == "all"]
    per_env = [r for r in rows if r["environment"] != "all"]
    lines = [f"Horizon T = {size.horizon}; {size.replications} replications per MDP; "
             f"ensembles of {size.instances} instances. Regret is pseudo-regret at T. "
             f"Every agent runs with its default options (`jaxmdp agents`) and is ranked "
             f"with the agents of the same reward setting, its regret divided by C ln T "
             f"with C the Burnetas–Katehakis constant of that setting: the agents told "
             f"the mean rewards against the bound for known rewards, the agents that "
             f"learn them against the larger bound for learned rewards. "
             f"Intervals: {rows[0]['interval'] if rows else ''}."]
    for setting in REWARDS:
        board = [r for r in overall if r["rewards"] == setting]
        if not board:
            continue
        lines += ["", f"**{_BOARD_TITLE[setting]}**", "",
                  "| rank | agent | rewards | R(T) / (C ln T), IQM | interval | "
                  "instances (with C > 0) | runs | wall s |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in board:
            lines.append(f"| {r['rank']} | {r['agent']} | {r['rewards']} | "
                         f"{_number(r['normalised_iqm'])} | "
                         f"{_interval(r['normalised_low'], r['normalised_high'])} | "
                         f"{r['instances']} ({r['normalised_instances']}) | {r['runs']} | "
                         f"{r['seconds']:.1f} |")
    lines += ["", "| environment | agent | rewards | runs | R(T), mean | interval | "
              "R(T) / (C ln T), IQM | interval | instances with C > 0 | wall s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in per_env:
        lines.append(f"| {r['environment']} | {r['agent']} | {r['rewards']} | {r['runs']} | "
                     f"{_number(r['regret'])} | {_interval(r['regret_low'], r['regret_high'])}"
                     f" | {_number(r['normalised_iqm'])} | "
                     f"{_interval(r['normalised_low'], r['normalised_high'])} | "
                     f"{r['normalised_instances']} of {r['instances']} | "
                     f"{r['seconds']:.1f} |")
    for label, name, error in skipped:
        lines.append(f"\n{name} was not run on {label}: {error}")
    return "\n".join(lines) + "\n"


def _write(out: Path, rows: list[dict], results: dict, names, size: Size, skipped,
           rewards: dict[str, str]):
    import csv

    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmdp import plotting
    from jaxmdp.runner import write_atomic

    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    text = buffer.getvalue()
    write_atomic(out / "leaderboard.csv", lambda tmp: Path(tmp).write_text(text), ".csv")
    markdown = _markdown(rows, size, skipped)
    write_atomic(out / "leaderboard.md", lambda tmp: Path(tmp).write_text(markdown), ".md")

    def save(fig, path):
        write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight",
                                                   format="png"), ".png")
        plt.close(fig)

    for label, (data, measured) in results.items():
        curves = {}
        for name in names:
            key = f"pseudo_regret_{name}"
            if key in data:
                curves[name] = np.asarray(data[key]).reshape((-1, data[key].shape[-1]))
        bound = measured["lower_bound"]
        constant = float(np.mean(bound)) if np.isfinite(bound).all() else None
        runs = next(iter(curves.values())).shape[0] if curves else 0
        fig = plotting.comparison_figure(data["times"], curves, lower_bound=constant,
                                         title=f"{label}: pseudo-regret ({runs} runs)")
        save(fig, out / "figures" / f"{_stem(label)}.png")

    for i, name in enumerate(names):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
        drawn = False
        for j, (label, (data, measured)) in enumerate(results.items()):
            final = _finals(data, name)
            if final is None:
                continue
            y = final.mean(axis=1) / math.log(int(data["times"][-1]))
            color = plotting.agent_color(label, j)
            for ax, key in zip(axes, (_BOUND[rewards[name]], "diameter"), strict=True):
                x = measured[key]
                ok = np.isfinite(x)
                ax.scatter(x[ok], y[ok], s=14, alpha=0.7, color=color, label=label)
            drawn = True
        if not drawn:
            plt.close(fig)
            continue
        low, high = axes[0].get_xlim()
        axes[0].plot([low, high], [low, high], "k--", lw=1, label="y = C (lower bound)")
        for ax, xlabel in zip(axes, (f"lower-bound constant C, rewards {rewards[name]} "
                                     f"(Burnetas–Katehakis)", "diameter D"), strict=True):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(xlabel)
            ax.set_ylabel("pseudo-regret R(T) / ln T (mean over runs)")
            ax.grid(alpha=0.3, which="both")
        axes[0].legend(fontsize=7)
        fig.suptitle(f"{plotting.agent_label(name)}: one point per MDP instance, "
                     f"T = {size.horizon}")
        save(fig, out / "figures" / f"hardness-{name}.png")
