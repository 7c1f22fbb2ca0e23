"""Matplotlib helpers shared by the experiment scripts.

Regret curves are drawn as the mean over replications with a 95% confidence band for the
mean (normal approximation, ``mean +- 1.96 sd / sqrt(n)``), optionally beside the
asymptotic lower-bound line ``C ln t``; :func:`regret_figure` lays out the usual pair of
panels (log-time on the left, linear time on the right).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from jaxmdp.analysis.statistics import mean_ci

#: Display names and colours of the registered agents (fixed, so figures stay comparable).
AGENT_LABELS = {"ucb": "MDP-UCB", "dmed": "MDP-DMED", "olp": "OLP", "ps": "MDP-PS",
                "ucrl2": "UCRL2", "kl_ucrl": "KL-UCRL", "tsde": "TSDE", "imed_rl": "IMED-RL",
                "ucrl2b": "UCRL2B", "ucrl3": "UCRL3", "psrl": "PSRL",
                "optimistic_q": "Optimistic Q", "med_rl": "MED-RL", "scal": "SCAL",
                "scal_plus": "SCAL+", "tucrl": "TUCRL"}
AGENT_COLORS = {"ucb": "tab:blue", "dmed": "tab:red", "olp": "tab:green", "ps": "tab:purple",
                "ucrl2": "tab:orange", "kl_ucrl": "tab:brown", "tsde": "tab:pink",
                "imed_rl": "tab:olive", "ucrl2b": "tab:gray", "ucrl3": "tab:cyan",
                "psrl": "gold", "optimistic_q": "navy", "med_rl": "darkgreen",
                "scal": "crimson", "scal_plus": "teal", "tucrl": "indigo"}
LOWER_BOUND_COLOR = "black"


def median_quartiles(values, *, axis: int = 0):
    """Median and interquartile band along ``axis``: ``(median, q1, q3)``."""
    q1, median, q3 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75],
                                   axis=axis)
    return median, q1, q3


def agent_label(name: str) -> str:
    """The paper's name for an agent (``"ucb"`` -> ``"MDP-UCB"``); unknown names as given."""
    return AGENT_LABELS.get(name, name)


def agent_color(name: str, index: int = 0) -> str:
    """A fixed colour per paper agent; other agents cycle through matplotlib's defaults."""
    return AGENT_COLORS.get(name, f"C{(index + 4) % 10}")


def plot_mean_ci(ax, times, values, *, label: str | None = None, color=None,
                 faint: bool = False, linestyle: str = "-", statistic: str = "mean"):
    """Draws the mean of ``values`` over replications with its 95% band (or, with
    ``statistic="median"``, the median with its interquartile band).

    Args:
        ax: matplotlib axes.
        times: x values, shape ``[K]``.
        values: samples, shape ``[replications, K]``.
        label: legend label.
        color: line and band colour.
        faint: draw thin and translucent (for comparison curves in the background).
        linestyle: matplotlib line style.
        statistic: ``"mean"`` (95% CI band) or ``"median"`` (quartile band).

    Returns:
        The line artist.
    """
    mean, lower, upper = (mean_ci(values) if statistic == "mean" else
                          median_quartiles(values))
    alpha_line, alpha_band, width = (0.35, 0.08, 1.0) if faint else (1.0, 0.22, 1.8)
    (line,) = ax.plot(times, mean, color=color, label=label, alpha=alpha_line,
                      linewidth=width, linestyle=linestyle)
    ax.fill_between(times, lower, upper, color=line.get_color(), alpha=alpha_band,
                    linewidth=0)
    return line


def plot_lower_bound(ax, times, constant: float, *, label: str | None = None,
                     linestyle: str = "--"):
    """Draws the asymptotic lower bound ``constant * ln t`` (dashed, black).

    Args:
        ax: matplotlib axes.
        times: x values (rounds ``t >= 1``), shape ``[K]``.
        constant: the Burnetas–Katehakis constant ``sum gap / K``.
        label: legend label; defaults to ``"asymptotic lower bound C ln t"`` with ``C``.
        linestyle: matplotlib line style (several bounds in one panel).

    Returns:
        The line artist.
    """
    times = np.asarray(times, dtype=np.float64)
    if label is None:
        label = f"asymptotic lower bound {constant:.3g} ln t"
    (line,) = ax.plot(times, constant * np.log(times), color=LOWER_BOUND_COLOR,
                      linestyle=linestyle, linewidth=1.4, label=label)
    return line


def _time_axes(ax, times, *, log_time: bool, log_y: bool, ylabel: str) -> None:
    """Log or linear time on x, regret on y (from 0, or log from 1), a light grid."""
    if log_time:
        ax.set_xscale("log")
        ax.set_xlim(max(1, times[0]), times[-1])
    else:
        ax.set_xlim(0, times[-1])
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
        ax.set_ylim(bottom=1)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)


def regret_figure(times, curves: Mapping[str, np.ndarray], *,
                  lower_bound: float | Mapping[str, float] | None = None,
                  background: Mapping[str, np.ndarray] | None = None,
                  background_label: str = "", title: str = "",
                  ylabel: str = "cumulative pseudo-regret",
                  order: Sequence[str] | None = None, background_style: str = "faint",
                  log_y: bool = False):
    """Two panels of mean regret with 95% bands: log-time (left) and linear time (right).

    Args:
        times: rounds ``[K]`` at which the curves were recorded.
        curves: agent name -> samples ``[replications, K]``.
        lower_bound: constant ``C`` of the ``C ln t`` line, or a mapping label ->
            constant for several lines (dashed, dotted, ...), or None for no line.
        background: optional agent name -> samples drawn faint behind ``curves`` (same
            colour per agent), e.g. the un-rigged runs behind the rigged ones.
        background_style: ``"faint"`` (thin, translucent) or ``"dashed"`` (full
            strength, dashed: a second family of curves as readable as the first).
        log_y: logarithmic regret axes (from 1), for curves spanning decades.
        background_label: what the faint curves are, for the legend.
        title: figure title.
        ylabel: y-axis label.
        order: the order of agents in the legend; defaults to ``curves``' order.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    times = np.asarray(times)
    names = list(order) if order is not None else list(curves)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    for ax, log_time in zip(axes, (True, False)):
        for i, name in enumerate(names):
            color = agent_color(name, i)
            if background is not None and name in background:
                plot_mean_ci(ax, times, background[name], color=color,
                             faint=background_style == "faint",
                             linestyle="--" if background_style == "dashed" else "-")
            plot_mean_ci(ax, times, curves[name], color=color, label=agent_label(name))
        bounds = ({} if lower_bound is None else dict(lower_bound)
                  if isinstance(lower_bound, Mapping) else {None: lower_bound})
        for style, (label, constant) in zip(("--", ":", "-."), bounds.items()):
            plot_lower_bound(ax, times, constant, label=label, linestyle=style)
        _time_axes(ax, times, log_time=log_time, log_y=log_y, ylabel=ylabel)
        ax.set_title("log time" if log_time else "linear time")
        ax.set_xlabel("round t")
    handles, labels = axes[0].get_legend_handles_labels()
    if background is not None:
        dashed = background_style == "dashed"
        (proxy,) = axes[0].plot([], [], color="gray", alpha=1.0 if dashed else 0.35,
                                linewidth=1.8 if dashed else 1.0,
                                linestyle="--" if dashed else "-")
        handles.append(proxy)
        kind = "dashed" if dashed else "faint"
        labels.append(f"{kind}: {background_label}" if background_label else
                      f"{kind}: background")
    fig.legend(handles, labels, loc="outside right center", fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def comparison_figure(times, curves: Mapping[str, np.ndarray], *,
                      lower_bound: float | None = None, title: str = "",
                      ylabel: str = "cumulative pseudo-regret", log_y: bool = False):
    """Four panels: mean with 95% CI (top) and median with quartiles (bottom), each in log
    and linear time, with the ``C ln t`` line.

    Args:
        times: rounds ``[K]``.
        curves: agent label -> samples ``[replications, K]``.
        lower_bound: constant of the ``C ln t`` line, or None.
        title: figure title.
        ylabel: y-axis label.
        log_y: logarithmic regret axes (from 1).

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    times = np.asarray(times)
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), constrained_layout=True, sharex="col")
    for row, statistic in enumerate(("mean", "median")):
        for col, log_time in enumerate((True, False)):
            ax = axes[row, col]
            for i, name in enumerate(curves):
                plot_mean_ci(ax, times, curves[name], color=agent_color(name, i),
                             label=agent_label(name), statistic=statistic)
            if lower_bound is not None:
                plot_lower_bound(ax, times, lower_bound)
            _time_axes(ax, times, log_time=log_time, log_y=log_y, ylabel=ylabel)
            what = "mean, 95% CI" if statistic == "mean" else "median, quartiles"
            ax.set_title(f"{what}; {'log' if log_time else 'linear'} time", fontsize=10)
            if row == 1:
                ax.set_xlabel("round t")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    return fig
