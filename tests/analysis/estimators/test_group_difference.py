"""The permutation test of a delta's difference between two groups of items, against scipy.stats."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.group_difference import group_difference_test


def _scipy_p(d: np.ndarray, group: np.ndarray, n_resamples: int, seed: int = 0) -> float:
    """scipy's p of |mean difference| (its own two-sided p doubles the smaller tail instead)."""
    res = stats.permutation_test(
        (d[group], d[~group]),
        lambda x, y, axis: np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis)),
        permutation_type="independent",
        alternative="greater",
        n_resamples=n_resamples,
        random_state=seed,
    )
    return float(res.pvalue)


def test_every_split_enumerated_gives_scipys_exact_p() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(size=11).round(2)
    group = np.zeros(11, dtype=bool)
    group[[0, 3, 4, 9]] = True
    got = group_difference_test(d, group, n_perm=10_000, rng=rng)
    assert got.exact and got.n_perm == 330  # C(11, 4) splits, all of them
    assert got.difference == pytest.approx(d[group].mean() - d[~group].mean())
    assert got.p == pytest.approx(_scipy_p(d, group, 10_000), abs=1e-12)


def test_random_splits_agree_with_scipy_within_monte_carlo_error() -> None:
    rng = np.random.default_rng(5)
    d = np.concatenate([rng.normal(0.3, 1, 40), rng.normal(0.0, 1, 160)])
    group = np.arange(200) < 40
    got = group_difference_test(d, group, n_perm=20_000, rng=np.random.default_rng(1))
    ref = _scipy_p(d, group, 20_000)
    assert not got.exact
    assert abs(got.p - ref) < 4 * np.sqrt(ref * (1 - ref) / 20_000) + 1e-3


def test_a_planted_difference_is_found_and_ties_count_as_extreme() -> None:
    d = np.r_[np.ones(30), np.zeros(170)]
    group = np.arange(200) < 30
    assert group_difference_test(d, group, 5_000, np.random.default_rng(0)).p == pytest.approx(1 / 5_001)
    flat = np.ones(50)
    assert group_difference_test(flat, np.arange(50) < 10, 2_000, np.random.default_rng(0)).p == 1.0


def test_an_empty_group_is_refused() -> None:
    with pytest.raises(ValueError, match="both groups"):
        group_difference_test(np.ones(5), np.zeros(5, dtype=bool), 100, np.random.default_rng(0))
