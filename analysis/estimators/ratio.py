"""A ratio of two item sums pooled over a suite with its item-cluster BCa interval; the decided delta.

The pooled ratio R = sum_i c_i / sum_i a_i weighs every counted sample the same (accuracy among answered:
c_i an item's right answered samples, a_i its answered samples; the delta on decided samples: c_i the sum
of an item's paired differences over the samples both arms decided, a_i their number). Its interval
resamples items with their samples and recomputes R; the BCa correction takes its acceleration from the
ratio's influence values (c_i - R a_i) / mean(a), the ratio's linearisation (Efron 1987, "Better bootstrap
confidence intervals", JASA 82: 171-185; Efron and Tibshirani 1993, section 14.3 and 11.4 on the
delta method), so the BCa of means serves the ratio. Resamples whose denominator is 0 are left out and
counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.estimators.bootstrap_ci import bca_interval_means
from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import bootstrap_distribution, weighted_means

RATIO_METHOD = "BCa item-cluster bootstrap of the ratio (acceleration from its influence values)"


@dataclass(frozen=True)
class RatioEstimate:
    """The pooled ratio (None: no counted sample), its interval and method, and the resamples left out."""

    ratio: float | None
    ci: Interval | None
    n_counted: int
    empty_resamples: int


def _ratio(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Column 0's weighted sum over column 1's: the pooled ratio of a resample."""
    means = weighted_means(w, rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        return means[:, :1] / means[:, 1:2]


def pooled_ratio(
    numerators: np.ndarray, denominators: np.ndarray, n_boot: int, rng: np.random.Generator, alpha: float
) -> RatioEstimate:
    """sum(numerators) / sum(denominators) over items, with its BCa item-cluster bootstrap interval."""
    num = np.asarray(numerators, np.float64)
    den = np.asarray(denominators, np.float64)
    n_counted = int(den.sum())
    if n_counted == 0:
        return RatioEstimate(None, None, 0, 0)
    rows = np.stack([num, den], axis=1)
    theta = bootstrap_distribution(rows, _ratio, n_boot, rng)[:, 0]
    finite = theta[np.isfinite(theta)]
    ratio = float(num.sum() / n_counted)
    # The influence values shifted to mean R: their skewness is the ratio's BCa acceleration.
    influence = (num - ratio * den) / den.mean() + ratio
    lo, hi, methods = bca_interval_means(influence, finite[:, None], alpha)
    method = methods[0] if methods[0] != "bca" else RATIO_METHOD
    ci = Interval(float(lo[0]), float(hi[0]), method)
    return RatioEstimate(ratio, ci, n_counted, int(theta.size - finite.size))


def decided_delta(
    ref: np.ndarray,
    arm: np.ndarray,
    ref_undecided: np.ndarray,
    arm_undecided: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    alpha: float,
) -> RatioEstimate:
    """The paired delta (arm minus reference) over the samples both arms decided, pooled over the suite.

    All arrays are (n_items, k), paired by item and sample index; undecided arrays are 1 where the reader
    could not settle the sample. The delta is the mean of arm - ref over the samples neither arm left
    undecided (each such sample weighs the same), with pooled_ratio's interval.
    """
    decided = (1.0 - np.asarray(ref_undecided, np.float64)) * (1.0 - np.asarray(arm_undecided, np.float64))
    diff = np.asarray(arm, np.float64) - np.asarray(ref, np.float64)
    return pooled_ratio((diff * decided).sum(axis=1), decided.sum(axis=1), n_boot, rng, alpha)
