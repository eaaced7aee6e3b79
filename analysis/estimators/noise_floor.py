"""The A/A noise floor: one arm against itself, half of each item's samples against the other half."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.estimators.bootstrap_ci import bootstrap_mean_ci
from analysis.estimators.estimate import Interval
from analysis.estimators.signflip import BYTE_BITS, sign_flip_interval, sign_flip_test


@dataclass(frozen=True)
class NoiseFloor:
    """One arm against itself: half of each item's samples against the other half (no new generation)."""

    delta: float  # one seeded split: mean of half B minus mean of half A
    ci: Interval  # the report's own interval of that delta
    flip_share: float  # items whose majority verdict (half mean >= 0.5) differs between the halves
    false_positive_rate: float  # share of random splits whose interval excludes 0 (near alpha if honest)
    n_splits: int
    half: int  # samples per item in each half
    alpha: float
    fpr_n_boot: int  # resamples behind each split's interval in the false-positive rate


def split_halves(k: int, n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per item, two disjoint halves of its sample indices (k // 2 each), drawn by a seeded shuffle."""
    order = rng.permuted(np.tile(np.arange(k), (n_items, 1)), axis=1)
    return order[:, : k // 2], order[:, k // 2 : 2 * (k // 2)]


_HALF_TABLE_MAX = 50_000  # largest number of half-splits of k samples listed in a table (k <= 18)


def half_deltas(scores: np.ndarray, n_splits: int, rng: np.random.Generator) -> np.ndarray:
    """(n_items, n_splits) A/A deltas: per split and item, mean of one random half minus the other's.

    Every split of every item is uniform over the ordered pairs of disjoint halves (k // 2 samples each),
    as split_halves draws them. For an even k with few splits (C(k, k/2) <= 50,000: k <= 18) each is
    drawn as one integer naming a half in a table of them, instead of a shuffle of k samples per item
    and split (ten times the time at 10,000 items x 16 samples x 200 splits).
    """
    n, k = scores.shape
    h = k // 2
    if k % 2 == 0 and math.comb(k, h) <= _HALF_TABLE_MAX:
        every = np.arange(1 << k, dtype=np.uint32)
        bits = every[((every[:, None] >> np.arange(k, dtype=np.uint32)) & 1).sum(axis=1) == h]
        mask = bits[rng.integers(0, bits.size, (n_splits, n))]
        # Half B is the named half, half A the rest: B - A = 2 * sum(B) - total.
        if hasattr(np, "bitwise_count") and np.isin(scores, (0.0, 1.0)).all():
            # 0/1 scores: sum(B) counts the right samples in the half, the bits both masks share.
            right = (scores.astype(np.uint32) << np.arange(k, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
            sum_b = np.bitwise_count(mask & right).astype(np.float64)
        else:
            # sum(B) read byte by byte of the mask from each item's sums over the 256 subsets of 8 samples
            # (one product per byte, one lookup per split and item, not k passes over them all).
            sum_b = np.zeros((n_splits, n))
            items = np.arange(n)
            for first in range(0, k, 8):
                part = scores[:, first : first + 8]
                sums = part @ BYTE_BITS[:, : part.shape[1]].T  # (n, 256)
                sum_b += sums[items, (mask >> first) & 255]
        return ((2.0 * sum_b - scores.sum(axis=1)) / h).T
    rows = np.arange(n)[:, None]
    out = np.empty((n, n_splits))
    for j in range(n_splits):
        a, b = split_halves(k, n, rng)
        out[:, j] = scores[rows, b].mean(axis=1) - scores[rows, a].mean(axis=1)
    return out


def aa_noise_floor(
    scores: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_splits: int = 200,
    fpr_boot: int = 1_000,
    method: str = "bca",
) -> NoiseFloor | None:
    """The A/A delta of one arm with its CI, the verdict flips, and the interval's rate of false alarms.

    Every split's delta is a difference of two halves of the same model's samples, so its true value is 0:
    the share of splits whose interval (item-level paired BCa, as the headline) excludes 0 estimates the
    interval's false-positive rate. The reported split's interval uses n_boot resamples; the n_splits
    others, which only count false alarms, min(n_boot, fpr_boot) each from one shared draw (a rate from
    200 splits is known to about +-0.015 either way; more resamples per split would not sharpen it, and
    at 10,000 items they were most of a report's time). None when k < 2.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    if k < 2:
        return None
    rows = np.arange(n)[:, None]
    a, b = split_halves(k, n, rng)
    half_a, half_b = scores[rows, a].mean(axis=1), scores[rows, b].mean(axis=1)
    flip_share = float(np.mean((half_a >= 0.5) != (half_b >= 0.5)))
    fpr_n_boot = min(n_boot, fpr_boot)
    if method == "sign-flip":
        # The inverted test's interval excludes 0 exactly where the test rejects: the false alarms are
        # the splits whose sign-flip test rejects, all splits tested at once.
        ci = sign_flip_interval(half_b - half_a, n_boot, rng, alpha)
        p = sign_flip_test(half_deltas(scores, n_splits, rng), fpr_n_boot, rng).p
        false_alarms = int((p <= alpha).sum())
    else:
        ci = bootstrap_mean_ci(half_b - half_a, n_boot, rng, alpha=alpha, method=method)[0]
        cis = bootstrap_mean_ci(
            half_deltas(scores, n_splits, rng), fpr_n_boot, rng, alpha=alpha, method=method
        )
        false_alarms = sum(c.excludes_zero() for c in cis)
    return NoiseFloor(
        float((half_b - half_a).mean()), ci, flip_share, false_alarms / n_splits, n_splits, k // 2, alpha,
        fpr_n_boot,
    )  # fmt: skip
