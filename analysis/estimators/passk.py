"""pass@k: the unbiased estimator per item and per k, its cluster bootstrap, the Beta-binomial fit.

The bootstrap resamples items with their k samples; the fit is of per-item success rates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import (
    bootstrap_distribution,
    percentile_interval,
    row_groups,
    weighted_means,
)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. 2021 from n samples with c correct, in its stable product form."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_table(n: int, k: int) -> np.ndarray:
    """pass@k for every c = 0..n at once (index by an item's correct count)."""
    terms = 1.0 - k / np.arange(n, 0, -1, dtype=np.float64)
    tail = np.concatenate([[1.0], np.cumprod(terms)])
    table = 1.0 - tail
    table[n - np.arange(n + 1) < k] = 1.0
    return table


def k_grid(n: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, and n itself."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return [*ks, n]


def correct_counts(scores: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Per item, how many of its samples count as correct (score >= threshold)."""
    return (np.asarray(scores) >= threshold).sum(axis=1)


def pass_at_k_items(scores: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """(n_items, len(ks)) per-item pass@k from an (n_items, n) score matrix."""
    scores = np.asarray(scores)
    n = scores.shape[1]
    c = correct_counts(scores)
    return np.stack([pass_at_k_table(n, k)[c] for k in ks], axis=1)


@dataclass(frozen=True)
class PassAtK:
    """pass@k curves of two arms on shared items, with cluster-bootstrap CIs for each k and the delta."""

    ks: list[int]
    ref: np.ndarray
    arm: np.ndarray
    delta: np.ndarray
    ref_ci: list[Interval]
    arm_ci: list[Interval]
    delta_ci: list[Interval]
    mean_delta: float  # mean score (not thresholded), from the same cluster resamples
    mean_delta_ci: Interval


def pass_at_k_bootstrap(
    ref_scores: np.ndarray,
    arm_scores: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    ks: Sequence[int] | None = None,
    compress: bool = True,
    mean_draws: np.ndarray | None = None,
) -> PassAtK:
    """pass@k of both arms for every k, and the mean score, resampling items with their k samples.

    Each drawn item brings all its k samples, so its summary (pass@k of each arm for each k, the mean score
    difference) is computed once (Field & Welsh 2007, as cluster_bootstrap). The pass@k summaries are
    functions of the correct counts and fall into few groups; with fractional scores the mean difference
    is distinct for every item, and drawn with them it would force an item-by-item draw on all columns.
    The intervals are per column and every pass@k delta comes from the pass@k columns, so then the pass@k
    part is resampled grouped and the mean difference on its own (same Generator, drawn after).
    mean_draws, when given, is the bootstrap distribution (n_boot,) or (n_boot, 1) of the mean difference
    from an item resample already drawn (the cluster bootstrap of a mean score is the item bootstrap of
    each item's mean difference): only the pass@k columns are drawn here.
    """
    ref_scores, arm_scores = np.asarray(ref_scores, np.float64), np.asarray(arm_scores, np.float64)
    n = ref_scores.shape[1]
    ks = list(ks or k_grid(n))
    passk = np.hstack([pass_at_k_items(ref_scores, ks), pass_at_k_items(arm_scores, ks)])
    mean_d = (arm_scores - ref_scores).mean(axis=1)[:, None]
    summaries = np.hstack([passk, mean_d])
    est = summaries.mean(axis=0)
    if mean_draws is not None:
        theta_b = np.hstack(
            [
                bootstrap_distribution(passk, weighted_means, n_boot, rng, compress=compress),
                np.asarray(mean_draws, np.float64).reshape(n_boot, 1),
            ]
        )
    elif compress and row_groups(summaries) is None and row_groups(passk) is not None:
        theta_b = np.hstack(
            [
                bootstrap_distribution(passk, weighted_means, n_boot, rng),
                bootstrap_distribution(mean_d, weighted_means, n_boot, rng),
            ]
        )
    else:
        theta_b = bootstrap_distribution(summaries, weighted_means, n_boot, rng, compress=compress)
    m = len(ks)
    theta_b = np.hstack([theta_b[:, : 2 * m], theta_b[:, m : 2 * m] - theta_b[:, :m], theta_b[:, 2 * m :]])
    lo, hi = percentile_interval(theta_b, alpha)
    cis = [Interval(float(a), float(b), "percentile (cluster)") for a, b in zip(lo, hi, strict=True)]
    ref_est, arm_est = est[:m], est[m : 2 * m]
    return PassAtK(
        ks,
        ref_est,
        arm_est,
        arm_est - ref_est,
        cis[:m],
        cis[m : 2 * m],
        cis[2 * m : 3 * m],
        float(est[2 * m]),
        cis[3 * m],
    )


def beta_binomial_moments(correct: np.ndarray, n: int) -> tuple[float, float] | None:
    """Beta(a, b) of per-item success rates fitted by the method of moments to correct counts of n samples.

    Var(c / n) = m (1 - m) (1 + (n - 1) rho) / n with rho = 1 / (a + b + 1); None when every item has the
    same count (no spread to fit) or n = 1 (the rates' spread is not identifiable from one sample).
    """
    x = np.asarray(correct, dtype=np.float64) / n
    m = float(x.mean())
    if n < 2 or not 0 < m < 1 or x.size < 2:
        return None
    s2 = float(x.var(ddof=1))
    rho = (s2 * n / (m * (1 - m)) - 1) / (n - 1)
    rho = min(max(rho, 1e-6), 1 - 1e-6)
    total = 1 / rho - 1
    return m * total, (1 - m) * total


def beta_binomial_pass_at_k(a: float, b: float, k: np.ndarray | int) -> np.ndarray:
    """pass@k of items whose rates are Beta(a, b): 1 - E[(1 - p)^k] = 1 - B(a, b + k) / B(a, b)."""
    from scipy.special import betaln

    k = np.asarray(k, dtype=np.float64)
    return 1.0 - np.exp(betaln(a, b + k) - betaln(a, b))


def subset_pass_at_k(p: PassAtK, ks: Sequence[int]) -> PassAtK:
    """The rows of a PassAtK at the given k (each one of its own)."""
    idx = [p.ks.index(k) for k in ks]
    return PassAtK(
        list(ks), p.ref[idx], p.arm[idx], p.delta[idx], [p.ref_ci[i] for i in idx],
        [p.arm_ci[i] for i in idx], [p.delta_ci[i] for i in idx], p.mean_delta, p.mean_delta_ci,
    )  # fmt: skip
