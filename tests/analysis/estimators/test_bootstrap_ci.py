"""analysis.estimators.bootstrap_ci against scipy.stats.bootstrap on small data (same Generator, same
draws)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.bootstrap_ci import bootstrap_mean_ci, cluster_bootstrap
from analysis.estimators.passk import pass_at_k_items
from analysis.estimators.resampling import percentile_interval, rng_for


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_bootstrap_mean_ci_equals_scipy_bootstrap(method):
    rng = np.random.default_rng(7)
    x = rng.exponential(1.0, 37)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=999, batch=100, method=method, rng=np.random.default_rng(5)
    )
    ours = bootstrap_mean_ci(
        x, 999, np.random.default_rng(5), method=method.lower(), batch=100, compress=False
    )
    assert ours[0].lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours[0].hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert ours[0].method == method.lower()


def test_paired_bootstrap_equals_scipy_paired_bootstrap():
    rng = np.random.default_rng(8)
    pre = rng.random(50)
    post = pre + rng.normal(0.05, 0.2, 50)

    def stat(a, b, axis=-1):
        return np.mean(b - a, axis=axis)

    ref = stats.bootstrap((pre, post), stat, paired=True, n_resamples=2000, batch=500, method="BCa",
                          rng=np.random.default_rng(9))  # fmt: skip
    d = post - pre
    ours = bootstrap_mean_ci(d, 2000, np.random.default_rng(9), batch=500, compress=False)[0]
    assert (ours.lo, ours.hi) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_constant_data_gives_a_point_interval(method, compress):
    for value in (0.0, 0.25, 1.0):
        ci = bootstrap_mean_ci(
            np.full(64, value), 500, np.random.default_rng(0), method=method, compress=compress
        )
        assert (ci[0].lo, ci[0].hi) == (value, value)


def test_bca_never_returns_nan():
    x = np.zeros(200)
    x[0] = 1.0  # very skewed: most resamples equal the estimate or lie below it
    ci = bootstrap_mean_ci(x, 2000, np.random.default_rng(0))[0]
    assert math.isfinite(ci.lo) and math.isfinite(ci.hi) and ci.lo <= x.mean() <= ci.hi


@given(st.lists(st.integers(-4, 4), min_size=20, max_size=120), st.booleans(), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_bootstrap_ci_mirrors_under_negation(values, compress, seed):
    d = np.array(values) / 4
    a = bootstrap_mean_ci(d, 400, rng_for(seed, "item"), compress=compress)[0]
    b = bootstrap_mean_ci(-d, 400, rng_for(seed, "item"), compress=compress)[0]
    assert b.lo == pytest.approx(-a.hi, abs=1e-12)
    assert b.hi == pytest.approx(-a.lo, abs=1e-12)


def test_cluster_bootstrap_equals_scipy_resampling_whole_items():
    rng = np.random.default_rng(12)
    scores = (rng.random((30, 6)) < rng.random((30, 1))).astype(float)
    ks = [1, 2, 3, 4, 5, 6]  # more than four columns: the counts-times-rows path (one column gathers)

    def stat(idx, axis=-1):
        resampled = scores[idx]  # (batch, n, k): each drawn item keeps its own k samples
        flat = resampled.reshape(-1, scores.shape[1])
        return pass_at_k_items(flat, ks).reshape(*idx.shape, len(ks)).mean(axis=-2).T

    ref = stats.bootstrap((np.arange(30),), stat, n_resamples=500, batch=50, method="percentile",
                          rng=np.random.default_rng(3))  # fmt: skip
    est, theta = cluster_bootstrap(
        scores, lambda cl: pass_at_k_items(cl, ks), 500, np.random.default_rng(3), batch=50, compress=False
    )
    lo, hi = percentile_interval(theta, 0.05)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert est == pytest.approx(pass_at_k_items(scores, ks).mean(axis=0))
