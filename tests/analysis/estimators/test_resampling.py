"""analysis.estimators.resampling: the bootstrap's draws, their variance, seeds and threads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.estimators import resampling
from analysis.estimators.bootstrap_ci import bootstrap_mean_ci
from analysis.estimators.resampling import bootstrap_distribution, rng_for, weighted_means


def test_grouped_bootstrap_has_the_bootstrap_variance_of_a_mean():
    # 0/1-score differences fall into few distinct values: the multinomial path. Its resampled means must
    # have the plug-in variance var(x)/n, as the item-by-item bootstrap does.
    rng = np.random.default_rng(4)
    x = rng.integers(-4, 5, 3000) / 4
    for compress in (True, False):
        theta = bootstrap_distribution(x, weighted_means, 20_000, np.random.default_rng(1), compress=compress)
        assert theta.mean() == pytest.approx(x.mean(), abs=4 * x.std() / math.sqrt(3000 * 20_000))
        assert theta.var() == pytest.approx(x.var() / x.size, rel=0.04)
    grouped = bootstrap_mean_ci(x, 20_000, np.random.default_rng(2), method="percentile")[0]
    plain = bootstrap_mean_ci(x, 20_000, np.random.default_rng(2), method="percentile", compress=False)[0]
    width = plain.hi - plain.lo
    assert abs(grouped.lo - plain.lo) < 0.05 * width and abs(grouped.hi - plain.hi) < 0.05 * width


def test_rng_for_is_deterministic_and_separates_purposes():
    a = rng_for(1234, "item").integers(0, 1 << 30, 5)
    b = rng_for(1234, "item").integers(0, 1 << 30, 5)
    c = rng_for(1234, "perm").integers(0, 1 << 30, 5)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


def test_threaded_draws_do_not_depend_on_the_number_of_threads(monkeypatch):
    rows = np.random.default_rng(5).random((700, 3))
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(resampling, "_DRAW_THREADS", threads)
        runs.append(bootstrap_distribution(rows, weighted_means, 900, rng_for(1, "x"), batch=100))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    # A statistic of more than four columns is counted in the caller's thread: the same draws.
    wide = np.hstack([rows, rows])
    theta = bootstrap_distribution(wide, weighted_means, 900, rng_for(1, "x"), batch=100)
    assert theta[:, :3] == pytest.approx(runs[0], abs=1e-12)
    assert theta.var(axis=0) == pytest.approx(wide.var(axis=0) / 700, rel=0.15)
