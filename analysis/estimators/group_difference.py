"""Does a paired delta differ between two groups of items? A permutation test of the difference of means.

The statistic is mean(d[group]) - mean(d[rest]) of the per-item deltas d; under the null that the group
label says nothing about an item's delta the labels are exchangeable, so they are permuted across items
(every split of the same sizes when there are at most n_perm of them, else n_perm random ones) and the
two-sided p is the share of splits whose statistic is at least as far from 0 as the observed one
(Phipson & Smyth 2010's (1 + b) / (1 + n_perm) for random splits). scipy.stats.permutation_test computes
the same test (tests/test_group_difference.py checks it on small data); here a batch of random splits is
one matrix product of 0/1 label rows with d, without the per-permutation Python call scipy makes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from analysis.estimators.resampling import BATCH_ELEMENTS


@dataclass(frozen=True)
class GroupDifference:
    """mean(d[group]) - mean(d[rest]), its two-sided permutation p, and how the null was drawn."""

    difference: float
    p: float
    exact: bool
    n_perm: int


def _statistics(d: np.ndarray, labels: np.ndarray, m: int) -> np.ndarray:
    """The difference of means for each row of 0/1 labels (m ones a row)."""
    in_sum = labels @ d
    return in_sum / m - (d.sum() - in_sum) / (d.size - m)


def group_difference_test(
    d: np.ndarray, in_group: np.ndarray, n_perm: int, rng: np.random.Generator
) -> GroupDifference:
    """Two-sided permutation test of mean(d[in_group]) - mean(d[~in_group]) = 0 (labels permuted)."""
    d = np.asarray(d, dtype=np.float64)
    group = np.asarray(in_group, dtype=bool)
    n, m = d.size, int(group.sum())
    if m == 0 or m == n:
        raise ValueError("group_difference_test: both groups need at least one item")
    observed = float(d[group].mean() - d[~group].mean())
    # A tolerance for ties: a split with the same statistic up to rounding counts as at least as extreme.
    bar = abs(observed) - 1e-12 * max(1.0, float(np.abs(d).max()))
    if math.comb(n, m) <= n_perm:
        hits = total = 0
        for chosen in itertools.combinations(range(n), m):
            labels = np.zeros(n)
            labels[list(chosen)] = 1.0
            hits += int(abs(_statistics(d, labels[None, :], m)[0]) >= bar)
            total += 1
        return GroupDifference(observed, hits / total, True, total)
    step = max(1, min(n_perm, BATCH_ELEMENTS // n))
    base = np.zeros(n)
    base[:m] = 1.0
    hits = 0
    for s in range(0, n_perm, step):
        b = min(step, n_perm - s)
        labels = rng.permuted(np.tile(base, (b, 1)), axis=1)
        hits += int((np.abs(_statistics(d, labels, m)) >= bar).sum())
    return GroupDifference(observed, (1 + hits) / (1 + n_perm), False, n_perm)
