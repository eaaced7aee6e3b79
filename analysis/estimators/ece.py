"""Expected calibration error with equal-width bins, its bootstrap interval and the paired ECE difference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.estimators.estimate import Estimate, Interval
from analysis.estimators.resampling import bootstrap_distribution, percentile_interval


def _ece_rows(confidence: np.ndarray, correct: np.ndarray, n_bins: int) -> np.ndarray:
    conf = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if np.any((conf < 0) | (conf > 1)):
        raise ValueError("confidence must lie in [0, 1]")
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    rows = np.zeros((conf.size, n_bins))
    rows[np.arange(conf.size), bins] = y - conf
    return rows


def _ece_statistic(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.abs(w @ rows).sum(axis=1, keepdims=True) / w.sum(axis=1, keepdims=True)


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """ECE with equal-width bins: sum over bins of (bin share) x |accuracy - mean confidence|."""
    rows = _ece_rows(confidence, correct, n_bins)
    return float(_ece_statistic(np.ones((1, rows.shape[0])), rows)[0, 0])


def ece_interval(
    confidence: np.ndarray,
    correct: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 10,
) -> Estimate:
    """ECE with a percentile bootstrap interval, items resampled (ECE is recomputed on each resample)."""
    rows = _ece_rows(confidence, correct, n_bins)
    est = float(_ece_statistic(np.ones((1, rows.shape[0])), rows)[0, 0])
    lo, hi = percentile_interval(bootstrap_distribution(rows, _ece_statistic, n_boot, rng), alpha)
    return Estimate(est, Interval(float(lo[0]), float(hi[0]), "percentile"))


@dataclass(frozen=True)
class EceDifference:
    """ECE(arm) - ECE(ref), its paired percentile interval and its two-sided bootstrap p."""

    delta: float
    ci: Interval
    p_value: float


def ece_difference_test(
    conf_ref: np.ndarray,
    correct_ref: np.ndarray,
    conf_arm: np.ndarray,
    correct_arm: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 10,
) -> EceDifference:
    """ECE(arm) - ECE(ref), its paired percentile interval and two-sided bootstrap p, from one draw.

    Each resample draws the same item indices for both arms. p is twice the share of resampled
    differences on the far side of zero (the estimate counted among them), capped at 1.
    """
    rows = np.hstack([_ece_rows(conf_ref, correct_ref, n_bins), _ece_rows(conf_arm, correct_arm, n_bins)])

    def diff(w: np.ndarray, r: np.ndarray) -> np.ndarray:
        return _ece_statistic(w, r[:, n_bins:]) - _ece_statistic(w, r[:, :n_bins])

    est = float(diff(np.ones((1, rows.shape[0])), rows)[0, 0])
    draws = bootstrap_distribution(rows, diff, n_boot, rng)
    lo, hi = percentile_interval(draws, alpha)
    # The estimate counts as one of the resamples, so p is never 0 (at least 2 / (n_boot + 1)).
    size = draws.shape[0] + 1
    p = min(1.0, 2.0 * min((int((draws <= 0).sum()) + 1) / size, (int((draws >= 0).sum()) + 1) / size))
    return EceDifference(est, Interval(float(lo[0]), float(hi[0]), "percentile (paired)"), p)
