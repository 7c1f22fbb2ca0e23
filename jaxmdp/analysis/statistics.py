"""Confidence intervals for regret results: normal, bootstrap, paired and stratified.

These functions run on saved results (NumPy arrays), not inside ``jit``. Every interval
comes back with its confidence level, its method and the number of values it rests on, so
a table built from it can say which interval it shows:

* :func:`mean_ci` — the normal-approximation interval ``mean +- z sd / sqrt(n)`` (the
  bands of the regret figures);
* :func:`bootstrap_ci` — a bootstrap interval for the mean or the median over
  replications (:func:`scipy.stats.bootstrap`, BCa by default, percentile on request);
* :func:`paired_difference` — two agents run on the same seeds: the mean of the
  per-seed differences with its bootstrap interval and the fraction of seeds on which the
  first has the smaller value;
* :func:`normalised_regret`, :func:`interquartile_mean` and
  :func:`stratified_bootstrap_ci` — an ensemble of MDP instances or several
  environments: regret divided by each instance's lower bound ``C ln T``, the
  interquartile mean (IQM) over all instances and replications, and percentile intervals
  from a bootstrap that resamples replications within each instance, as the ``rliable``
  library does (Agarwal, Schwarzer, Castro, Courville & Bellemare, "Deep Reinforcement
  Learning at the Edge of the Statistical Precipice", NeurIPS 2021).

Example:
    >>> import numpy as np
    >>> from jaxmdp.analysis.statistics import bootstrap_ci
    >>> regret = np.random.default_rng(0).gamma(4.0, 10.0, size=200)
    >>> ci = bootstrap_ci(regret, statistic="mean", seed=0)
    >>> print(f"{ci.estimate:.1f} [{ci.low:.1f}, {ci.high:.1f}], {ci.level:.0%} {ci.method}, "
    ...       f"n = {ci.n}")
    38.6 [36.1, 41.5], 95% BCa, n = 200
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "ConfidenceInterval",
    "PairedDifference",
    "bootstrap_ci",
    "interquartile_mean",
    "mean_ci",
    "normalised_regret",
    "paired_difference",
    "stratified_bootstrap_ci",
]

_METHODS = {"bca": "BCa", "percentile": "percentile", "basic": "basic"}
_STATISTICS = ("mean", "median")
_AGGREGATES = ("iqm", "mean", "median")
#: Resampled values held in memory at once (float64: 32 MB).
_CHUNK_ELEMENTS = 4_000_000


class ConfidenceInterval(NamedTuple):
    """A point estimate with a two-sided confidence interval.

    Attributes:
        estimate: the statistic on the data (a float, or an array for batched input).
        low: the interval's lower end (same shape as ``estimate``).
        high: the interval's upper end.
        level: the confidence level, e.g. ``0.95``.
        method: how the interval was computed: ``"BCa"``, ``"percentile"`` or
            ``"basic"`` (:func:`scipy.stats.bootstrap`), or ``"stratified percentile"``
            (:func:`stratified_bootstrap_ci`).
        n: the number of values the statistic is computed from (replications; for a
            stratified interval, replications over all strata).
    """

    estimate: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    level: float
    method: str
    n: int


# The fields of a ConfidenceInterval, then the fractions of seeds on which ``a < b`` and
# ``a == b``.
_PairedFields = NamedTuple("_PairedFields", [
    *ConfidenceInterval.__annotations__.items(),
    ("fraction_lower", "float | np.ndarray"),
    ("fraction_tied", "float | np.ndarray"),
])


class PairedDifference(_PairedFields):
    """The mean per-seed difference ``a - b`` of two agents run on the same seeds.

    Attributes:
        estimate: the mean of ``a - b`` over seeds.
        low: the lower end of its bootstrap interval.
        high: the upper end.
        level: the confidence level.
        method: the bootstrap interval's method (``"BCa"``, ``"percentile"``, ``"basic"``).
        n: the number of seeds.
        fraction_lower: the fraction of seeds with ``a < b`` (for regret: ``a`` better).
        fraction_tied: the fraction of seeds with ``a == b``.
    """

    __slots__ = ()


def _scalar_or_array(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def _samples(values, name: str, axis: int, minimum: int = 1) -> np.ndarray:
    """``values`` as float64 with ``axis`` checked; ValueError naming ``name`` if bad."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of numbers, got {values!r}") from error
    if array.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got the scalar {array}")
    if not -array.ndim <= axis < array.ndim:
        raise ValueError(f"axis must index an axis of {name} (shape {array.shape}), "
                         f"got {axis}")
    if array.shape[axis] < minimum or array.size == 0:
        raise ValueError(f"{name} must hold at least {minimum} value(s) along axis {axis}, "
                         f"got shape {array.shape}")
    bad = ~np.isfinite(array)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be finite, got {array[index]} at index {index}")
    return array


def _check_level(level) -> float:
    if not (isinstance(level, (int, float, np.floating)) and 0.0 < float(level) < 1.0):
        raise ValueError(f"level must be a number strictly between 0 and 1, got {level!r}")
    return float(level)


def _check_resamples(n_resamples) -> int:
    if (isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer))
            or n_resamples < 1):
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    return int(n_resamples)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


def mean_ci(values, *, axis: int = 0, z: float = 1.96):
    r"""Mean and normal-approximation confidence band of the mean along ``axis``.

    .. math::
        \bar x \pm z \, s / \sqrt{n}, \qquad s^2 = \tfrac{1}{n-1} \textstyle\sum_i
        (x_i - \bar x)^2,

    the central-limit interval of level ``2 Phi(z) - 1`` (95% for ``z = 1.96``).

    Args:
        values: samples, e.g. shape ``[replications, times]``.
        axis: the replication axis.
        z: the standard-normal quantile, ``>= 0`` (1.96 for 95%).

    Returns:
        ``(mean, lower, upper)``, each with ``axis`` removed. With one sample the band
        has zero width.

    Raises:
        ValueError: if ``values`` is empty, a scalar, or not finite, if ``axis`` is out of
            range, or if ``z`` is negative or not finite.

    Example:
        >>> from jaxmdp.analysis.statistics import mean_ci
        >>> mean, lower, upper = mean_ci([1.0, 2.0, 3.0, 4.0])
        >>> print(f"{mean:.3f} [{lower:.3f}, {upper:.3f}]")
        2.500 [1.235, 3.765]
    """
    if not (isinstance(z, (int, float, np.floating)) and np.isfinite(z) and z >= 0):
        raise ValueError(f"z must be a finite number >= 0, got {z!r}")
    values = _samples(values, "values", axis)
    n = values.shape[axis]
    mean = values.mean(axis=axis)
    if n < 2:
        return mean, mean.copy(), mean.copy()
    half = z * values.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def _scipy_interval(values, statistic, *, axis, level, method, n_resamples, seed):
    """scipy's bootstrap interval, with its degenerate-data warnings silenced."""
    from scipy import stats  # here: importing scipy.stats costs every process ~0.4 s

    batch = max(1, _CHUNK_ELEMENTS // values.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # DegenerateDataWarning is one
        result = stats.bootstrap((values,), statistic, n_resamples=n_resamples,
                                 batch=batch, vectorized=True, axis=axis,
                                 confidence_level=level, method=method,
                                 random_state=np.random.default_rng(seed))
    return (np.asarray(result.confidence_interval.low, dtype=np.float64),
            np.asarray(result.confidence_interval.high, dtype=np.float64))


def bootstrap_ci(values, statistic: str = "mean", *, axis: int = 0, level: float = 0.95,
                 method: str = "BCa", n_resamples: int = 9999,
                 seed: int = 0) -> ConfidenceInterval:
    r"""Bootstrap confidence interval of the mean or the median over replications.

    Resamples the ``n`` values along ``axis`` with replacement ``n_resamples`` times and
    forms the interval of level ``level`` from the statistic's bootstrap distribution with
    :func:`scipy.stats.bootstrap`: ``"BCa"`` (bias-corrected and accelerated; Efron &
    Tibshirani 1993, section 14.3) or ``"percentile"`` (the distribution's
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles) or ``"basic"``.

    Two edge cases are decided here, not by scipy. Where every value is the same, every
    resample has that statistic, and the interval is that point (``low = high =
    estimate``). Where BCa is undefined (its bias correction is infinite, which happens
    for the median of few or heavily tied values: every resampled median lies on one side
    of the sample's), the percentile interval of the same resamples is returned and
    ``method`` says so (``"percentile"``, or ``"BCa, percentile where BCa is undefined"``
    for batched input that mixes both).

    Args:
        values: the statistic's data, shape ``[n, ...]`` with the replications along
            ``axis``; other axes are batched (one interval each).
        statistic: ``"mean"`` or ``"median"``.
        axis: the replication axis.
        level: the confidence level, strictly between 0 and 1.
        method: ``"BCa"`` (default), ``"percentile"`` or ``"basic"`` (case-insensitive).
        n_resamples: the number of bootstrap resamples.
        seed: seeds :func:`numpy.random.default_rng`; the same seed gives the same
            interval.

    Returns:
        A :class:`ConfidenceInterval`; ``estimate``, ``low`` and ``high`` are floats for
        one-dimensional ``values`` and arrays of the other axes' shape otherwise.

    Raises:
        ValueError: if ``values`` has fewer than 2 values along ``axis`` or is not finite,
            or if ``statistic``, ``level``, ``method``, ``n_resamples`` or ``seed`` is not
            one of the values above.

    Example:
        >>> from jaxmdp.analysis.statistics import bootstrap_ci
        >>> ci = bootstrap_ci([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], statistic="median",
        ...                   method="percentile", seed=1)
        >>> ci.estimate, ci.low, ci.high, ci.level, ci.method, ci.n
        (3.5, 1.0, 6.0, 0.95, 'percentile', 8)
    """
    if statistic not in _STATISTICS:
        raise ValueError(f"statistic must be one of {_STATISTICS}, got {statistic!r}")
    key = method.lower() if isinstance(method, str) else None
    if key not in _METHODS:
        raise ValueError(f"method must be one of {tuple(_METHODS.values())}, got {method!r}")
    level = _check_level(level)
    n_resamples = _check_resamples(n_resamples)
    seed = _check_seed(seed)
    values = _samples(values, "values", axis, minimum=2)
    function = np.mean if statistic == "mean" else np.median
    estimate = function(values, axis=axis)
    constant = np.ptp(values, axis=axis) == 0
    low, high = estimate.copy(), estimate.copy()
    name = _METHODS[key]
    if not constant.all():
        low, high = _scipy_interval(values, function, axis=axis, level=level, method=key,
                                    n_resamples=n_resamples, seed=seed)
        low, high = np.where(constant, estimate, low), np.where(constant, estimate, high)
        undefined = ~(np.isfinite(low) & np.isfinite(high))
        if undefined.any():
            plow, phigh = _scipy_interval(values, function, axis=axis, level=level,
                                          method="percentile", n_resamples=n_resamples,
                                          seed=seed)
            low, high = np.where(undefined, plow, low), np.where(undefined, phigh, high)
            name = ("percentile" if undefined[~constant].all() else
                    f"{name}, percentile where {name} is undefined")
    return ConfidenceInterval(_scalar_or_array(estimate), _scalar_or_array(low),
                              _scalar_or_array(high), level, name, values.shape[axis])


def paired_difference(a, b, *, axis: int = 0, level: float = 0.95, method: str = "BCa",
                      n_resamples: int = 9999, seed: int = 0) -> PairedDifference:
    r"""Mean per-seed difference of two agents run on the same seeds, with its interval.

    With ``d_i = a_i - b_i`` on seed ``i``, the estimate is ``mean(d)`` and the interval is
    :func:`bootstrap_ci` of the mean of ``d`` (resampling seeds, so the pairs stay
    together: the paired bootstrap). An interval that excludes 0 says, at level
    ``level``, which agent has the smaller mean.

    Args:
        a: the first agent's values (e.g. regret at the horizon), shape ``[seeds, ...]``.
        b: the second agent's values on the same seeds, the same shape as ``a``.
        axis: the seed axis.
        level: the confidence level, as in :func:`bootstrap_ci`.
        method: the bootstrap interval, as in :func:`bootstrap_ci`.
        n_resamples: the number of resamples, as in :func:`bootstrap_ci`.
        seed: the resampling seed, as in :func:`bootstrap_ci`.

    Returns:
        A :class:`PairedDifference`: the mean difference ``a - b``, its interval, and the
        fractions of seeds with ``a < b`` and ``a == b``.

    Raises:
        ValueError: if ``a`` or ``b`` is empty or not finite, if ``b``'s shape differs
            from ``a``'s, if there are fewer than 2 seeds, or for a bad ``level``,
            ``method``, ``n_resamples`` or ``seed``.

    Example:
        >>> from jaxmdp.analysis.statistics import paired_difference
        >>> diff = paired_difference([10.0, 12.0, 9.0, 15.0, 11.0, 13.0],
        ...                          [12.0, 15.0, 9.5, 18.0, 11.0, 16.0], seed=0)
        >>> print(f"{diff.estimate:.2f} [{diff.low:.2f}, {diff.high:.2f}] {diff.method}, "
        ...       f"a lower on {diff.fraction_lower:.0%}, tied on {diff.fraction_tied:.0%}")
        -1.92 [-2.83, -0.75] BCa, a lower on 83%, tied on 17%
    """
    a = _samples(a, "a", axis)
    b = _samples(b, "b", axis)
    if a.shape != b.shape:
        raise ValueError(f"b must have the shape of a (the same seeds), got {b.shape} "
                         f"for b and {a.shape} for a")
    difference = a - b
    if difference.shape[axis] < 2:
        raise ValueError(f"a and b must hold at least 2 seeds along axis {axis}, got "
                         f"shape {a.shape}")
    ci = bootstrap_ci(difference, "mean", axis=axis, level=level, method=method,
                      n_resamples=n_resamples, seed=seed)
    return PairedDifference(*ci, fraction_lower=_scalar_or_array((a < b).mean(axis=axis)),
                            fraction_tied=_scalar_or_array((a == b).mean(axis=axis)))


def normalised_regret(regret, lower_bound, horizon) -> np.ndarray:
    r"""Regret divided by each instance's asymptotic lower bound ``C ln T``.

    .. math::
        \tilde R_m = R_m(T) / (C_m \ln T),

    with ``C_m`` the Burnetas–Katehakis constant of instance ``m``
    (:func:`jaxmdp.regret_lower_bound`). An asymptotically optimal agent has
    ``\tilde R_m -> 1`` as ``T -> infinity``, so values are comparable across instances
    of different hardness.

    Args:
        regret: regret per instance, shape ``[M, ...]`` (e.g. ``[M, R]`` at the horizon,
            or ``[M, R, K]`` along recorded times).
        lower_bound: the constants ``C_m > 0``, shape ``[M]``.
        horizon: ``T > 1``: a number, or the recorded times, shape ``[K]``, broadcast
            against the last axis of ``regret``.

    Returns:
        ``regret / (C ln T)``, the shape of ``regret``.

    Raises:
        ValueError: if ``regret`` is empty or not finite, if ``lower_bound`` is not one
            positive finite constant per instance, or if ``horizon`` is not ``> 1``.

    Example:
        >>> import numpy as np
        >>> from jaxmdp.analysis.statistics import normalised_regret
        >>> regret = np.array([[20.0, 30.0], [5.0, 7.0]])  # 2 instances x 2 replications
        >>> normalised_regret(regret, [2.0, 0.5], np.e ** 5)
        array([[2. , 3. ],
               [2. , 2.8]])
    """
    regret = _samples(regret, "regret", 0)
    lower_bound = np.asarray(lower_bound, dtype=np.float64)
    if lower_bound.shape != regret.shape[:1]:
        raise ValueError(f"lower_bound must have one constant per instance, shape "
                         f"{regret.shape[:1]}, got shape {lower_bound.shape}")
    if not (np.isfinite(lower_bound).all() and (lower_bound > 0).all()):
        raise ValueError(f"lower_bound must be positive and finite, got {lower_bound}")
    horizon = np.asarray(horizon, dtype=np.float64)
    if horizon.ndim > 1 or horizon.size == 0 or not (np.isfinite(horizon).all()
                                                     and (horizon > 1).all()):
        raise ValueError(f"horizon must be a number > 1 or a 1-D array of them, got "
                         f"{horizon}")
    if horizon.ndim == 1 and (regret.ndim < 2 or regret.shape[-1] != horizon.shape[0]):
        raise ValueError(f"horizon of shape {horizon.shape} must match the last axis of "
                         f"regret (shape {regret.shape})")
    scale = lower_bound.reshape((-1,) + (1,) * (regret.ndim - 1)) * np.log(horizon)
    return regret / scale


def _strata(scores, name: str) -> list[np.ndarray]:
    """``scores`` as a list of finite 1-D float64 arrays, one per stratum."""
    if isinstance(scores, np.ndarray) or not isinstance(scores, Sequence):
        array = _samples(scores, name, 0)
        if array.ndim != 2:
            raise ValueError(f"{name} must have shape [instances, replications] or be a "
                             f"list of 1-D arrays, got shape {array.shape}")
        return list(array)
    if len(scores) == 0:
        raise ValueError(f"{name} must hold at least one instance, got {scores!r}")
    strata = []
    for m, row in enumerate(scores):
        row = _samples(row, f"{name}[{m}]", 0)
        if row.ndim != 1:
            raise ValueError(f"{name}[{m}] must be 1-D (replications), got shape "
                             f"{row.shape}")
        strata.append(row)
    return strata


def _trimmed_rows(x: np.ndarray) -> np.ndarray:
    """The interquartile mean of each row of ``x`` (``[B, N]`` -> ``[B]``)."""
    cut = int(0.25 * x.shape[-1])
    return np.sort(x, axis=-1)[..., cut:x.shape[-1] - cut].mean(axis=-1)


def _aggregate(strata: list[np.ndarray], statistic: str) -> np.ndarray:
    """The aggregate of resampled strata, each ``[B, R_m]``: shape ``[B]``."""
    if statistic == "iqm":
        return _trimmed_rows(np.concatenate(strata, axis=-1))
    means = np.stack([s.mean(axis=-1) for s in strata], axis=-1)
    return means.mean(axis=-1) if statistic == "mean" else np.median(means, axis=-1)


def interquartile_mean(scores) -> float:
    r"""Interquartile mean (IQM) of all scores of all instances and replications.

    The mean of the middle half of the pooled, sorted scores: with ``N`` scores and
    ``k = floor(N / 4)``, the mean of the order statistics ``x_(k+1), ..., x_(N-k)``.
    This is ``rliable``'s ``aggregate_iqm`` (github.com/google-research/rliable at commit
    3ccd9f4, ``rliable/metrics.py``, lines 61–70:
    ``scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)``), which trims
    ``floor(N / 4)`` whole scores from each end; for ``N`` not divisible by 4 it is not
    the interpolated 25%–75% mean. Less sensitive to outlying runs than the mean, and
    uses more of the data than the median (Agarwal et al. 2021, section 4).

    Args:
        scores: shape ``[M, R]`` (instances x replications), or a list of ``M`` 1-D
            arrays of replications (their numbers may differ).

    Returns:
        The IQM, a float.

    Raises:
        ValueError: if ``scores`` or one of its instances is empty or not finite, or if
            an array is not 2-D.

    Example:
        >>> from jaxmdp.analysis.statistics import interquartile_mean
        >>> interquartile_mean([[1.0, 2.0, 3.0, 100.0], [4.0, 5.0, 6.0, -50.0]])
        3.5
    """
    return float(_trimmed_rows(np.concatenate(_strata(scores, "scores"))))


def stratified_bootstrap_ci(scores, *, statistic: str = "iqm", level: float = 0.95,
                            n_resamples: int = 9999, seed: int = 0) -> ConfidenceInterval:
    r"""Stratified-bootstrap percentile interval of an aggregate over instances.

    Each resample draws, for every instance (stratum) ``m`` independently, ``R_m``
    replications with replacement from that instance's ``R_m``, keeping the instances
    fixed; the aggregate is recomputed on the resample, and the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the ``n_resamples``
    aggregates (numpy's linear interpolation between order statistics). The interval
    therefore covers the uncertainty from the finite number of seeds on this set of
    instances, not from the choice of instances.

    This follows ``rliable``'s ``StratifiedBootstrap`` with ``task_bootstrap=False``
    (github.com/google-research/rliable at commit 3ccd9f4, ``rliable/library.py``,
    lines 114–121: run indices drawn independently per task)
    and the default ``method='percentile'`` of its ``get_interval_estimates`` (line 214),
    with ``rliable``'s aggregates (``rliable/metrics.py``): ``"iqm"`` is
    ``aggregate_iqm`` (:func:`interquartile_mean` of all scores pooled), ``"mean"`` is
    ``aggregate_mean`` (the mean over instances of each instance's mean) and
    ``"median"`` is ``aggregate_median`` (the median over instances of each instance's
    mean). ``rliable`` takes scores as ``[runs, tasks]``; here instances come first,
    ``[M, R]``, like the batched simulator's output, and instances may have different
    numbers of replications. Resamples are drawn in chunks with
    ``numpy.random.default_rng(seed)``.

    Args:
        scores: shape ``[M, R]`` (instances x replications), e.g. from
            :func:`normalised_regret`, or a list of ``M`` 1-D arrays of replications.
        statistic: ``"iqm"`` (default), ``"mean"`` or ``"median"``.
        level: the confidence level, strictly between 0 and 1.
        n_resamples: the number of bootstrap resamples.
        seed: the resampling seed; the same seed gives the same interval.

    Returns:
        A :class:`ConfidenceInterval` with method ``"stratified percentile"`` and ``n``
        the number of scores over all instances.

    Raises:
        ValueError: if ``scores`` (or one instance) is empty or not finite or an array
            is not 2-D, or for a bad ``statistic``, ``level``, ``n_resamples`` or
            ``seed``.

    Example:
        >>> import numpy as np
        >>> from jaxmdp.analysis.statistics import stratified_bootstrap_ci
        >>> rng = np.random.default_rng(0)
        >>> scores = rng.lognormal(0.0, 0.5, size=(20, 8))  # 20 instances x 8 seeds
        >>> ci = stratified_bootstrap_ci(scores, seed=0)
        >>> print(f"IQM {ci.estimate:.3f} [{ci.low:.3f}, {ci.high:.3f}], {ci.level:.0%} "
        ...       f"{ci.method}, n = {ci.n}")
        IQM 1.036 [0.960, 1.122], 95% stratified percentile, n = 160
    """
    if statistic not in _AGGREGATES:
        raise ValueError(f"statistic must be one of {_AGGREGATES}, got {statistic!r}")
    level = _check_level(level)
    n_resamples = _check_resamples(n_resamples)
    seed = _check_seed(seed)
    strata = _strata(scores, "scores")
    total = sum(s.size for s in strata)
    estimate = float(_aggregate([s[None] for s in strata], statistic)[0])
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // total)
    replicates = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        resampled = [s[rng.integers(0, s.size, size=(size, s.size))] for s in strata]
        replicates.append(_aggregate(resampled, statistic))
    replicates = np.concatenate(replicates)
    low, high = np.percentile(replicates, [50 * (1 - level), 50 * (1 + level)])
    return ConfidenceInterval(estimate, float(low), float(high), level,
                              "stratified percentile", total)
