"""Accuracy at a token budget: the budget curve and the budget-stratified adjustment of a delta.

A sample that did not finish within B generated tokens counts as wrong on the curve; the adjustment
stratifies by generated tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.estimators.bootstrap_ci import bootstrap_mean_ci
from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import Statistic, bootstrap_distribution, percentile_interval
from analysis.estimators.signflip import small_suite_interval


def budget_grid(max_tokens: int, n: int = 8) -> list[int]:
    """n budgets from max_tokens / n up to max_tokens, evenly spaced (whole tokens, no repeats)."""
    return sorted({max(1, round(max_tokens * (i + 1) / n)) for i in range(n)})


@dataclass(frozen=True)
class BudgetPoint:
    """Both arms' accuracy at one token budget B and the paired delta with its interval."""

    budget: int
    ref: float
    arm: float
    delta: float
    ci: Interval


def budget_accuracy(scores: np.ndarray, tokens: np.ndarray, budgets: Sequence[int]) -> np.ndarray:
    """(n_items, len(budgets)) per-item accuracy when a sample longer than B tokens counts as wrong."""
    scores, tokens = np.asarray(scores, np.float64), np.asarray(tokens, np.float64)
    return np.stack([(scores * (tokens <= b)).mean(axis=1) for b in budgets], axis=1)


def budget_curve(
    ref_scores: np.ndarray,
    arm_scores: np.ndarray,
    ref_tokens: np.ndarray,
    arm_tokens: np.ndarray,
    budgets: Sequence[int],
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
) -> list[BudgetPoint]:
    """Accuracy of each arm when every sample that did not finish within B tokens counts as wrong.

    Unlike the stratified adjustment this conditions on nothing the treatment changed: the budget is an
    intervention on the protocol (what a run capped at B would have scored), so the paired deltas are
    causal contrasts at each B. Paired, item-level BCa per budget (bootstrap_mean_ci: the budgets share
    one draw of item resamples, or are drawn one by one where that is cheaper); method 'sign-flip', for
    small suites: small_suite_interval of each budget (n_boot sign vectors).
    """
    ref = budget_accuracy(ref_scores, ref_tokens, budgets)
    arm = budget_accuracy(arm_scores, arm_tokens, budgets)
    if method == "sign-flip":
        cis = [small_suite_interval(ref[:, j], arm[:, j], n_boot, rng, alpha) for j in range(arm.shape[1])]
    else:
        cis = bootstrap_mean_ci(arm - ref, n_boot, rng, alpha=alpha, method=method)
    return [
        BudgetPoint(
            int(b), float(ref[:, j].mean()), float(arm[:, j].mean()), float((arm - ref)[:, j].mean()), cis[j]
        )
        for j, b in enumerate(budgets)
    ]


@dataclass(frozen=True)
class BudgetAdjustment:
    """Arm-minus-reference delta with the generated-token budget held fixed by stratification."""

    delta: float | None
    ci: Interval | None
    edges: list[float]
    strata: list[dict]
    no_support: list[int]
    used_weight: float


def _budget_rows(y_ref, y_arm, b_ref, b_arm, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    y_ref, y_arm = np.asarray(y_ref, np.float64), np.asarray(y_arm, np.float64)
    b_ref, b_arm = np.asarray(b_ref, np.float64), np.asarray(b_arm, np.float64)
    edges = np.quantile(b_ref, np.linspace(0.0, 1.0, n_bins + 1))
    ref_bin = np.digitize(b_ref, edges[1:-1])
    arm_bin = np.digitize(b_arm, edges[1:-1])
    eye = np.eye(n_bins)
    return np.hstack([eye[ref_bin], eye[arm_bin], eye[arm_bin] * (y_arm - y_ref)[:, None]]), edges


def _budget_statistic(n_bins: int) -> Statistic:
    def stat(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        # One product for every contrast, then (b, contrasts, 3, bins): reference weight, arm count, sum of d.
        sums = (w @ rows).reshape(w.shape[0], -1, 3, n_bins)
        weight = sums[:, :, 0] / w.sum(axis=1)[:, None, None]
        n_arm, sum_d = sums[:, :, 1], sums[:, :, 2]
        ok = (weight > 0) & (n_arm > 0)
        mean_d = np.where(ok, sum_d / np.where(ok, n_arm, 1.0), 0.0)
        used = (weight * ok).sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(used > 0, (weight * mean_d * ok).sum(axis=2) / used, np.nan)

    return stat


def budget_adjusted_deltas(
    contrasts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 5,
) -> list[BudgetAdjustment]:
    """The budget-stratified adjustment for each (y_ref, y_arm, budget_ref, budget_arm), with bootstrap CIs.

    Strata are quantile bins of the reference arm's per-item budget; each item's difference falls in the
    stratum of the arm's budget; strata are weighted by the reference's share P_ref(z). A stratum with
    reference weight but no arm item has no support: it is dropped, reported, and the rest renormalised.
    All contrasts share one draw of item resamples.
    """
    if not contrasts:
        return []
    built = [_budget_rows(*c, n_bins) for c in contrasts]
    rows = np.hstack([r for r, _ in built])
    stat = _budget_statistic(n_bins)
    point = stat(np.ones((1, rows.shape[0])), rows)[0]
    theta_b = bootstrap_distribution(rows, stat, n_boot, rng)
    out = []
    for c, (r, edges) in enumerate(built):
        weight = r[:, :n_bins].mean(axis=0)
        n_arm = r[:, n_bins : 2 * n_bins].sum(axis=0)
        sum_d = r[:, 2 * n_bins :].sum(axis=0)
        strata = [
            {
                "stratum": z,
                "budget_range": [float(edges[z]), float(edges[z + 1])],
                "ref_weight": float(weight[z]),
                "n_arm_items": int(n_arm[z]),
                "mean_delta": float(sum_d[z] / n_arm[z]) if n_arm[z] else None,
                "supported": bool(weight[z] > 0 and n_arm[z] > 0),
            }
            for z in range(n_bins)
        ]
        no_support = [z for z in range(n_bins) if weight[z] > 0 and n_arm[z] == 0]
        used = float(sum(weight[z] for z in range(n_bins) if strata[z]["supported"]))
        col = theta_b[:, c]
        finite = col[np.isfinite(col)]
        ci = None
        if np.isfinite(point[c]) and finite.size:
            lo, hi = percentile_interval(finite[:, None], alpha)
            ci = Interval(float(lo[0]), float(hi[0]), "percentile")
        delta = float(point[c]) if np.isfinite(point[c]) else None
        out.append(BudgetAdjustment(delta, ci, [float(e) for e in edges], strata, no_support, used))
    return out
