"""Bootstrap intervals of means: BCa, bootstrap-t and percentile, item-level and cluster.

A cluster is an item with its k samples; the draws come from analysis.estimators.resampling."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr, ndtri

from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import (
    as_rows,
    bootstrap_distribution,
    distinct_rows,
    grouped_draws,
    percentile_interval,
    row_groups,
    weighted_means,
)


def _mean_acceleration(x: np.ndarray) -> np.ndarray:
    """Jackknife acceleration of a column mean, in closed form (leave-one-out means are linear)."""
    u = x - x.mean(axis=0)
    u2 = u * u  # u**3 calls pow() per element: ten times slower than two products
    num = (u2 * u).sum(axis=0)
    den = u2.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = num / (6.0 * den**1.5)
    return np.where(den > 0, a, 0.0)


def bca_interval_means(
    x: np.ndarray, theta_b: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """BCa interval per column for column means (Efron & Tibshirani 14.3); degenerate cases fall back.

    Constant data gives the point interval; where the bias correction is infinite (the estimate lies
    outside every resample) the percentile interval is returned and labelled so, never NaN.
    """
    x = as_rows(x)
    theta_hat = x.mean(axis=0)
    big_b = theta_b.shape[0]
    share = ((theta_b < theta_hat).sum(axis=0) + (theta_b <= theta_hat).sum(axis=0)) / (2 * big_b)
    z0 = ndtri(share)
    a = _mean_acceleration(x)
    z_lo, z_hi = ndtri(alpha / 2), ndtri(1 - alpha / 2)
    p_lo, p_hi = percentile_interval(theta_b, alpha)
    lo, hi, methods = np.empty_like(theta_hat), np.empty_like(theta_hat), []
    for j in range(theta_hat.size):
        if np.all(theta_b[:, j] == theta_hat[j]):
            lo[j] = hi[j] = theta_hat[j]
            methods.append("point (constant)")
            continue
        q = [ndtr(z0[j] + (z0[j] + z) / (1 - a[j] * (z0[j] + z))) for z in (z_lo, z_hi)]
        if not np.all(np.isfinite(q)):
            lo[j], hi[j] = p_lo[j], p_hi[j]
            methods.append("percentile (BCa undefined)")
            continue
        lo[j], hi[j] = np.quantile(theta_b[:, j], q)
        methods.append("bca")
    return lo, hi, methods


def studentized_interval_means(
    x: np.ndarray, theta_b: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Bootstrap-t interval per column mean (Efron & Tibshirani 12.5), from draws of [means, mean squares].

    theta_b is (B, 2m): each resample's column means, then its means of squares, so each resample's
    standard error comes from the same draw. A resample with no spread has t = 0 when its mean is the
    estimate, else an infinite t; the interval is clipped to the range of the data, where the mean lies.
    Constant data gives the point interval.
    """
    x = as_rows(x)
    n, m = x.shape
    est = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(m)
    mean_b, sq_b = theta_b[:, :m], theta_b[:, m:]
    var_b = np.maximum(sq_b - mean_b**2, 0.0) * (n / max(n - 1, 1))
    se_b = np.sqrt(var_b / n)
    diff = mean_b - est
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se_b > 0, diff / np.where(se_b > 0, se_b, 1.0), np.sign(diff) * np.inf)
    t = np.nan_to_num(t, nan=0.0, posinf=1e12, neginf=-1e12)
    t_lo, t_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2], axis=0)
    lo = np.clip(est - t_hi * se, x.min(axis=0), x.max(axis=0))
    hi = np.clip(est - t_lo * se, x.min(axis=0), x.max(axis=0))
    methods = []
    for j in range(m):
        if se[j] == 0:
            lo[j] = hi[j] = est[j]
            methods.append("point (constant)")
        else:
            methods.append("studentized")
    return np.atleast_1d(lo), np.atleast_1d(hi), methods


def bootstrap_mean_ci(
    x: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
    batch: int | None = None,
    compress: bool = True,
) -> list[Interval]:
    """Bootstrap CI of the mean of each column of x (n,) or (n, m); 'bca', 'studentized' or 'percentile'."""
    rows = as_rows(x)
    theta_b = None
    compress_columns = compress and method != "studentized"
    # Each interval reads its own column only, so a few columns that group on their own (0/1 scores at
    # a few token budgets) may be drawn one by one, grouped, when their rows together do not group: a
    # multinomial draw per distinct value costs about what 9 item-by-item draws do.
    if compress_columns and 1 < rows.shape[1] <= 32 and row_groups(rows) is None:
        columns = [distinct_rows(rows[:, [j]]) for j in range(rows.shape[1])]
        if 9 * sum(len(c[1]) for c in columns) < len(rows):
            theta_b = np.hstack([grouped_draws(*c, weighted_means, n_boot, rng, batch) for c in columns])
    if theta_b is None and method != "studentized":
        theta_b = bootstrap_distribution(rows, weighted_means, n_boot, rng, batch=batch, compress=compress)
    if method == "studentized":
        # Means and mean squares from one draw: the t of each resample needs its own standard error.
        theta_b = bootstrap_distribution(
            np.hstack([rows, rows * rows]), weighted_means, n_boot, rng, batch=batch, compress=compress
        )
        lo, hi, methods = studentized_interval_means(rows, theta_b, alpha)
    elif method == "bca":
        lo, hi, methods = bca_interval_means(rows, theta_b, alpha)
    elif method == "percentile":
        lo, hi = percentile_interval(theta_b, alpha)
        methods = ["percentile"] * rows.shape[1]
    else:
        raise ValueError(f"method must be 'bca', 'studentized' or 'percentile', not {method!r}")
    return [Interval(float(a), float(b), m) for a, b, m in zip(lo, hi, methods, strict=True)]


def paired_bootstrap_ci(
    pre: np.ndarray,
    post: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
    compress: bool = True,
) -> Interval:
    """CI of mean(post - pre) over shared items, resampling pairs (never the two arms independently)."""
    d = np.asarray(post, dtype=np.float64) - np.asarray(pre, dtype=np.float64)
    return bootstrap_mean_ci(d, n_boot, rng, alpha=alpha, method=method, compress=compress)[0]


def cluster_bootstrap(
    clusters: np.ndarray,
    per_cluster: Callable[[np.ndarray], np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
    *,
    batch: int | None = None,
    compress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster bootstrap of a mean over items of a per-item summary: (estimate (m,), distribution (B, m)).

    clusters is (n_items, k, ...): each item with its k samples. Only the top level is resampled (Field &
    Welsh 2007): a drawn item brings all its k samples, so its summary is unchanged and computed once.
    """
    summaries = as_rows(per_cluster(np.asarray(clusters)))
    theta_b = bootstrap_distribution(summaries, weighted_means, n_boot, rng, batch=batch, compress=compress)
    return summaries.mean(axis=0), theta_b
