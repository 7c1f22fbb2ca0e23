"""Confidence intervals and aggregates (jaxmdp.analysis.statistics) against scipy,
brute-force NumPy loops and known distributions."""

import doctest

import numpy as np
import pytest
from scipy import stats

import jaxmdp as jm
from jaxmdp import plotting, runner
from jaxmdp.analysis import statistics
from jaxmdp.analysis.statistics import (
    bootstrap_ci,
    interquartile_mean,
    mean_ci,
    normalised_regret,
    paired_difference,
    stratified_bootstrap_ci,
)


def test_docstring_examples_run():
    result = doctest.testmod(statistics, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0


# ---- mean_ci -----------------------------------------------------------------------------

def test_mean_ci_is_the_t_free_normal_interval():
    x = np.random.default_rng(0).normal(3.0, 2.0, size=(50, 7))
    mean, lower, upper = mean_ci(x, z=1.96)
    sem = stats.sem(x, axis=0)  # ddof=1 standard error
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(upper - mean, 1.96 * sem, rtol=1e-12)
    np.testing.assert_allclose(mean - lower, 1.96 * sem, rtol=1e-12)
    # The normal interval of scipy.stats.norm at the same level (z = Phi^-1(0.975)).
    z = stats.norm.ppf(0.975)
    low, high = stats.norm.interval(0.95, loc=x[:, 0].mean(), scale=sem[0])
    np.testing.assert_allclose(mean_ci(x[:, 0], z=z)[1:], (low, high), rtol=1e-12)


def test_mean_ci_axis_and_single_sample():
    x = np.random.default_rng(1).normal(size=(4, 9))
    for got, want in zip(mean_ci(x, axis=1), mean_ci(x.T, axis=0), strict=True):
        np.testing.assert_array_equal(got, want)
    mean, lower, upper = mean_ci(np.array([[2.0, 5.0]]))
    np.testing.assert_array_equal(mean, [2.0, 5.0])
    np.testing.assert_array_equal(lower, mean)
    np.testing.assert_array_equal(upper, mean)


def test_plotting_uses_the_one_mean_ci():
    assert plotting.mean_ci is mean_ci
    assert jm.mean_ci is mean_ci


def test_mean_ci_coverage_on_normal_data():
    rng = np.random.default_rng(2)
    samples = rng.normal(10.0, 3.0, size=(100, 2000))  # 2000 data sets of n = 100
    _, lower, upper = mean_ci(samples)
    coverage = np.mean((lower <= 10.0) & (10.0 <= upper))
    assert 0.935 <= coverage <= 0.965, coverage


# ---- bootstrap_ci ------------------------------------------------------------------------

@pytest.mark.parametrize("statistic, function", [("mean", np.mean), ("median", np.median)])
@pytest.mark.parametrize("method", ["BCa", "percentile", "basic"])
def test_bootstrap_ci_equals_scipy(statistic, function, method):
    x = np.random.default_rng(3).gamma(2.0, 5.0, size=41)
    ci = bootstrap_ci(x, statistic, method=method, level=0.9, n_resamples=2000, seed=7)
    want = stats.bootstrap((x,), function, n_resamples=2000, confidence_level=0.9,
                           method=method, random_state=np.random.default_rng(7))
    assert ci.estimate == pytest.approx(function(x), rel=1e-14)
    assert ci.low == pytest.approx(want.confidence_interval.low, rel=1e-12)
    assert ci.high == pytest.approx(want.confidence_interval.high, rel=1e-12)
    assert (ci.level, ci.method, ci.n) == (0.9, method, 41)
    assert ci.low < ci.estimate < ci.high


def test_bootstrap_ci_batched_axes_match_one_at_a_time():
    x = np.random.default_rng(4).exponential(size=(30, 3))
    ci = bootstrap_ci(x, "mean", n_resamples=500, seed=0)
    assert ci.estimate.shape == ci.low.shape == ci.high.shape == (3,)
    for j in range(3):
        one = bootstrap_ci(x[:, j], "mean", n_resamples=500, seed=0)
        want = stats.bootstrap((x[:, j],), np.mean, n_resamples=500,
                               random_state=np.random.default_rng(0))
        assert one.low == pytest.approx(want.confidence_interval.low, rel=1e-12)
        assert ci.estimate[j] == pytest.approx(one.estimate, rel=1e-14)
        assert ci.low[j] < ci.estimate[j] < ci.high[j]


def test_bootstrap_ci_is_reproducible_and_seed_dependent():
    x = np.random.default_rng(5).normal(size=25)
    a = bootstrap_ci(x, n_resamples=999, seed=3)
    assert a == bootstrap_ci(x, n_resamples=999, seed=3)
    assert a.low != bootstrap_ci(x, n_resamples=999, seed=4).low


def test_bootstrap_ci_edge_cases():
    constant = bootstrap_ci(np.full(10, 4.0), "median")
    assert (constant.estimate, constant.low, constant.high) == (4.0, 4.0, 4.0)
    # Every resampled median of [1, 1, 1, 1, 2] is >= 1 = the sample median: BCa's bias
    # correction is infinite, so the percentile interval of the same resamples is used.
    tied = bootstrap_ci([1.0, 1.0, 1.0, 1.0, 2.0], "median", seed=0)
    percentile = bootstrap_ci([1.0, 1.0, 1.0, 1.0, 2.0], "median", method="percentile",
                              seed=0)
    assert tied.method == "percentile"
    assert (tied.low, tied.high) == (percentile.low, percentile.high) == (1.0, 2.0)
    mixed = bootstrap_ci(np.array([[1.0, 1.0, 1.0, 1.0, 2.0], [1, 2, 3, 4, 5]]).T, "median",
                         seed=0)
    assert mixed.method == "BCa, percentile where BCa is undefined"
    assert np.isfinite(mixed.low).all() and np.isfinite(mixed.high).all()


@pytest.mark.parametrize("statistic, truth", [("mean", 1.0), ("median", np.log(2.0))])
def test_bootstrap_ci_coverage_on_the_exponential(statistic, truth):
    # 400 data sets of n = 40 from Exp(1); a 90% interval should cover about 90% of them
    # (binomial sd 1.5%; BCa of a mean of 40 skewed values undercovers slightly).
    rng = np.random.default_rng(6)
    covered = []
    for _ in range(400):
        ci = bootstrap_ci(rng.exponential(size=40), statistic, level=0.9, n_resamples=999,
                          seed=int(rng.integers(2**31)))
        covered.append(ci.low <= truth <= ci.high)
    assert 0.84 <= np.mean(covered) <= 0.95, np.mean(covered)


# ---- paired_difference -------------------------------------------------------------------

def test_paired_difference_against_scipy_and_counts():
    rng = np.random.default_rng(8)
    common = rng.gamma(3.0, 10.0, size=64)  # shared seed effect
    a = common + rng.normal(0.0, 2.0, size=64)
    b = common + 1.5 + rng.normal(0.0, 2.0, size=64)
    b[:3] = a[:3]
    diff = paired_difference(a, b, n_resamples=3000, seed=11)
    d = a - b
    want = stats.bootstrap((d,), np.mean, n_resamples=3000,
                           random_state=np.random.default_rng(11))
    assert diff.estimate == pytest.approx(d.mean(), rel=1e-13)
    assert diff.low == pytest.approx(want.confidence_interval.low, rel=1e-12)
    assert diff.high == pytest.approx(want.confidence_interval.high, rel=1e-12)
    assert diff.fraction_lower == np.count_nonzero(a < b) / 64
    assert diff.fraction_tied == 3 / 64
    assert (diff.level, diff.method, diff.n) == (0.95, "BCa", 64)
    # Close to scipy's paired t interval (independent construction), and the pairing
    # matters: the unpaired spread of a and b is far wider.
    t_low, t_high = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert diff.low == pytest.approx(t_low, abs=0.15 * (t_high - t_low))
    assert diff.high == pytest.approx(t_high, abs=0.15 * (t_high - t_low))
    assert diff.high < 0


def test_paired_difference_coverage():
    rng = np.random.default_rng(9)
    covered = []
    for _ in range(300):
        a = rng.normal(0.0, 1.0, size=30)
        b = a + rng.exponential(0.5, size=30)  # true mean difference a - b = -0.5
        diff = paired_difference(a, b, level=0.9, n_resamples=999,
                                 seed=int(rng.integers(2**31)))
        covered.append(diff.low <= -0.5 <= diff.high)
    assert 0.84 <= np.mean(covered) <= 0.95, np.mean(covered)


# ---- ensembles: normalised regret, IQM, stratified bootstrap -----------------------------

def test_normalised_regret():
    regret = np.random.default_rng(10).uniform(1.0, 50.0, size=(3, 5, 4))
    bound = np.array([0.5, 2.0, 7.0])
    times = np.array([10.0, 100.0, 1000.0, 10000.0])
    got = normalised_regret(regret, bound, times)
    for m in range(3):
        for k in range(4):
            np.testing.assert_allclose(got[m, :, k], regret[m, :, k] / (bound[m]
                                       * np.log(times[k])), rtol=1e-14)
    np.testing.assert_allclose(normalised_regret(regret[..., -1], bound, 10000.0),
                               got[..., -1], rtol=1e-14)


@pytest.mark.parametrize("n", [4, 8, 20, 100])
def test_interquartile_mean_by_hand_and_scipy(n):
    scores = np.random.default_rng(n).standard_cauchy(size=(n // 4, 4))
    pooled = np.sort(scores.ravel())
    by_hand = pooled[n // 4: n - n // 4].mean()
    assert interquartile_mean(scores) == pytest.approx(by_hand, rel=1e-13)
    assert interquartile_mean(scores) == pytest.approx(
        stats.trim_mean(scores, 0.25, axis=None), rel=1e-13)


def test_interquartile_mean_ragged_equals_pooled_trim_mean():
    rng = np.random.default_rng(12)
    strata = [rng.normal(size=r) for r in (3, 7, 5)]  # N = 15: scipy trims 3 per end
    assert interquartile_mean(strata) == pytest.approx(
        stats.trim_mean(np.concatenate(strata), 0.25), rel=1e-13)


def _aggregate_by_hand(strata, statistic):
    if statistic == "iqm":
        return stats.trim_mean(np.concatenate(strata), 0.25)
    means = [np.mean(s) for s in strata]
    return np.mean(means) if statistic == "mean" else np.median(means)


def _stratified_percentile_loop(strata, statistic, level, resamples, seed):
    """Brute force: one resample at a time, one instance at a time."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        resample = [s[rng.choice(len(s), size=len(s), replace=True)] for s in strata]
        values.append(_aggregate_by_hand(resample, statistic))
    return np.percentile(values, [50 * (1 - level), 50 * (1 + level)])


@pytest.mark.parametrize("statistic", ["iqm", "mean", "median"])
def test_stratified_bootstrap_matches_a_brute_force_loop(statistic):
    rng = np.random.default_rng(13)
    scores = rng.lognormal(rng.normal(0.0, 0.5, size=(9, 1)), 0.7, size=(9, 12))
    ci = stratified_bootstrap_ci(scores, statistic=statistic, n_resamples=20000, seed=1)
    low, high = _stratified_percentile_loop(list(scores), statistic, 0.95, 20000, seed=2)
    assert ci.estimate == pytest.approx(_aggregate_by_hand(list(scores), statistic),
                                        rel=1e-13)
    # Two independent Monte Carlo runs of 20,000 resamples: endpoints agree to a few
    # percent of the interval's width.
    width = high - low
    assert ci.low == pytest.approx(low, abs=0.05 * width)
    assert ci.high == pytest.approx(high, abs=0.05 * width)
    assert (ci.level, ci.method, ci.n) == (0.95, "stratified percentile", 108)


def test_stratified_bootstrap_keeps_each_instance_in_every_resample():
    # Instance 0 always scores 0, instance 1 always 1: a stratified resample keeps 4 of
    # each, so every resampled mean is 1/2; an unstratified bootstrap of the 8 pooled
    # scores would not be.
    scores = np.array([[0.0] * 4, [1.0] * 4])
    ci = stratified_bootstrap_ci(scores, statistic="mean", n_resamples=500)
    assert (ci.estimate, ci.low, ci.high) == (0.5, 0.5, 0.5)
    pooled = bootstrap_ci(scores.ravel(), "mean", method="percentile", n_resamples=500)
    assert pooled.high - pooled.low > 0.3


def test_stratified_bootstrap_ragged_and_reproducible():
    rng = np.random.default_rng(14)
    strata = [rng.normal(m, 1.0, size=r) for m, r in ((0.0, 6), (2.0, 10), (5.0, 3))]
    ci = stratified_bootstrap_ci(strata, n_resamples=4000, seed=5)
    assert ci == stratified_bootstrap_ci(strata, n_resamples=4000, seed=5)
    assert ci.n == 19
    low, high = _stratified_percentile_loop(strata, "iqm", 0.95, 4000, seed=6)
    assert ci.low == pytest.approx(low, abs=0.1 * (high - low))
    assert ci.high == pytest.approx(high, abs=0.1 * (high - low))


def test_stratified_bootstrap_coverage_of_the_mean_of_instance_means():
    # 10 instances with known means; the mean of their means is the target.
    rng = np.random.default_rng(15)
    means = np.linspace(1.0, 3.0, 10)
    covered = []
    for _ in range(200):
        scores = rng.normal(means[:, None], 1.0, size=(10, 20))
        ci = stratified_bootstrap_ci(scores, statistic="mean", level=0.9, n_resamples=999,
                                     seed=int(rng.integers(2**31)))
        covered.append(ci.low <= means.mean() <= ci.high)
    assert 0.84 <= np.mean(covered) <= 0.95, np.mean(covered)


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mean_ci([]), r"values must hold at least 1 value\(s\) along axis 0, got "
                              r"shape \(0,\)"),
        (lambda: mean_ci([1.0, np.nan]), r"values must be finite, got nan at index \(1,\)"),
        (lambda: mean_ci([1.0, 2.0], axis=1), r"axis must index an axis of values"),
        (lambda: mean_ci([1.0, 2.0], z=-1.0), r"z must be a finite number >= 0, got -1.0"),
        (lambda: bootstrap_ci([]), r"values must hold at least 2 value"),
        (lambda: bootstrap_ci([3.0]), r"values must hold at least 2 value\(s\) along axis "
                                      r"0, got shape \(1,\)"),
        (lambda: bootstrap_ci([1.0, np.inf]), r"values must be finite, got inf"),
        (lambda: bootstrap_ci([1.0, 2.0], "mode"), r"statistic must be one of .*'mode'"),
        (lambda: bootstrap_ci([1.0, 2.0], method="bc"), r"method must be one of .*'bc'"),
        (lambda: bootstrap_ci([1.0, 2.0], level=95), r"level must be a number strictly "
                                                     r"between 0 and 1, got 95"),
        (lambda: bootstrap_ci([1.0, 2.0], n_resamples=0), r"n_resamples must be a positive "
                                                          r"int, got 0"),
        (lambda: bootstrap_ci([1.0, 2.0], seed=-1), r"seed must be a non-negative int"),
        (lambda: paired_difference([1.0, 2.0, 3.0], [1.0, 2.0]),
         r"b must have the shape of a \(the same seeds\), got \(2,\) for b and \(3,\)"),
        (lambda: paired_difference([], []), r"a must hold at least 1 value"),
        (lambda: paired_difference([1.0, np.nan], [1.0, 2.0]), r"a must be finite, got nan"),
        (lambda: paired_difference([1.0], [2.0]), r"a and b must hold at least 2 seeds"),
        (lambda: normalised_regret(np.ones((2, 3)), [1.0], 100),
         r"lower_bound must have one constant per instance, shape \(2,\), got shape \(1,\)"),
        (lambda: normalised_regret(np.ones((2, 3)), [1.0, 0.0], 100),
         r"lower_bound must be positive and finite, got \[1. 0.\]"),
        (lambda: normalised_regret(np.ones((2, 3)), [1.0, 1.0], 1),
         r"horizon must be a number > 1 or a 1-D array of them, got 1.0"),
        (lambda: normalised_regret(np.ones((2, 3)), [1.0, 1.0], [10.0, 20.0]),
         r"horizon of shape \(2,\) must match the last axis of regret"),
        (lambda: normalised_regret(np.ones((2, 0)), [1.0, 1.0], 10), r"regret must hold"),
        (lambda: interquartile_mean([]), r"scores must hold at least one instance"),
        (lambda: interquartile_mean([[1.0], []]), r"scores\[1\] must hold at least 1 value"),
        (lambda: interquartile_mean(np.ones(4)), r"scores must have shape \[instances, "
                                                 r"replications\]"),
        (lambda: stratified_bootstrap_ci(np.array([[1.0, np.nan]])),
         r"scores must be finite, got nan at index \(0, 1\)"),
        (lambda: stratified_bootstrap_ci(np.ones((2, 2)), statistic="max"),
         r"statistic must be one of \('iqm', 'mean', 'median'\), got 'max'"),
        (lambda: stratified_bootstrap_ci(np.ones((2, 2)), level=0.0), r"level must be"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- the runner's tables -----------------------------------------------------------------

def _fake_results(replications=40):
    rng = np.random.default_rng(16)
    times = np.arange(1, 101)
    data = {"times": times, "lower_bound": np.asarray(2.0),
            "config": np.array([100, replications, 0, 1, 0, runner.RESULTS_VERSION])}
    for i, label in enumerate(("ucb", "ps", "ucrl2")):
        final = rng.gamma(4.0, 5.0 + 3 * i, size=replications)
        curve = final[:, None] * np.sqrt(times / 100.0)[None, :]
        data[f"pseudo_regret_{label}"] = curve.astype(np.float32)
        data[f"regret_{label}"] = (curve + rng.normal(size=curve.shape)).astype(np.float32)
        data[f"seconds_{label}"] = np.asarray(1.0 + i)
    return data


def test_summary_rows_state_n_and_the_interval():
    data = _fake_results()
    rows = runner.summary_rows(data, ["ucb", "ps", "ucrl2"])
    for row, label in zip(rows, ("ucb", "ps", "ucrl2"), strict=True):
        final = np.asarray(data[f"pseudo_regret_{label}"][:, -1], np.float64)
        realised = np.asarray(data[f"regret_{label}"][:, -1], np.float64)
        assert row["replications"] == 40
        assert row["mean"] == pytest.approx(final.mean(), rel=1e-13)
        assert row["ci95"] == pytest.approx(1.96 * stats.sem(final), rel=1e-12)
        assert row["realised_ci95"] == pytest.approx(1.96 * stats.sem(realised), rel=1e-12)
        assert row["median"] == pytest.approx(np.median(final), rel=1e-13)
        mean = stats.bootstrap((final,), np.mean, random_state=np.random.default_rng(0))
        median = stats.bootstrap((final,), np.median, random_state=np.random.default_rng(0))
        assert row["ci_low"] == pytest.approx(mean.confidence_interval.low, rel=1e-12)
        assert row["ci_high"] == pytest.approx(mean.confidence_interval.high, rel=1e-12)
        assert row["median_ci_low"] == pytest.approx(median.confidence_interval.low,
                                                     rel=1e-12)
        assert row["median_ci_high"] == pytest.approx(median.confidence_interval.high,
                                                      rel=1e-12)
        assert row["interval"] == "95% BCa bootstrap, 9999 resamples, seed 0"
        assert row["median_interval"] == "95% BCa bootstrap, 9999 resamples, seed 0"


def test_paired_rows_and_tables(tmp_path):
    data = _fake_results()
    pairs = runner.paired_rows(data, ["ucb", "ps", "ucrl2"])
    assert [(p["agent_a"], p["agent_b"]) for p in pairs] == [("ucb", "ps"),
                                                            ("ucb", "ucrl2"),
                                                            ("ps", "ucrl2")]
    a = np.asarray(data["pseudo_regret_ucb"][:, -1], np.float64)
    b = np.asarray(data["pseudo_regret_ps"][:, -1], np.float64)
    assert pairs[0]["mean_difference"] == pytest.approx((a - b).mean(), rel=1e-12)
    assert pairs[0]["fraction_a_lower"] == np.mean(a < b)
    assert pairs[0]["replications"] == 40
    csv_path, md_path = runner.write_tables(data, ["ucb", "ps", "ucrl2"], tmp_path / "t")
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:6] == ["agent", "horizon", "replications", "mean", "ci95", "median"]
    assert {"ci_low", "ci_high", "median_ci_low", "median_ci_high", "interval"} <= set(header)
    paired = (tmp_path / "t_paired.csv").read_text().splitlines()
    assert paired[0].startswith("agent_a,agent_b,horizon,replications,mean_difference")
    assert len(paired) == 4
    text = md_path.read_text()
    assert "40 replications" in text and "95% BCa bootstrap" in text
    assert "| ucb − ps |" in text


def test_one_replication_tables_have_no_bootstrap_interval():
    rows = runner.summary_rows(_fake_results(replications=1), ["ucb"])
    assert rows[0]["ci95"] == 0.0 and np.isnan(rows[0]["ci_low"])
    assert rows[0]["interval"] == "none (1 replication)"
    assert runner.paired_rows(_fake_results(replications=1), ["ucb", "ps"])[0][
        "interval"] == "none (1 replication)"


def test_markdown_names_intervals_that_differ_from_the_default(tmp_path):
    data = _fake_results()
    data["pseudo_regret_ps"][:, -1] = 0.0  # every median resample is 0
    data["pseudo_regret_ps"][:3, -1] = 5.0
    _, md_path = runner.write_tables(data, ["ucb", "ps"], tmp_path / "t")
    assert "except ps median: 95% percentile bootstrap, 9999 resamples, seed 0" in (
        md_path.read_text())
    _, md_path = runner.write_tables(_fake_results(replications=1), ["ucb", "ps"],
                                     tmp_path / "one")
    text = md_path.read_text()
    assert "One replication: no confidence intervals." in text and "| n/a |" in text
