"""How large an effect a paired design detects (MDE) and how many items a planned one needs.

The minimum detectable effect is printed by the reports; the plan is `python -m analysis.commands.power`'s.
This is the one analysis module that imports scipy.stats, and only inside `paired_items_needed`, so the
reports, which never plan, do not pay its second of start-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

NO_VARIANCE = (
    "the paired differences have no variance (every sample scores the same in both logs), so no "
    "detectable effect or sample size can be estimated from them"
)


@dataclass(frozen=True)
class MDE:
    """Minimum detectable effect of a paired design with k samples per item (Miller 2024).

    mde is None, with reason, when the differences have no variance: 0 would claim any effect is visible.
    """

    mde: float | None
    n_items: int
    k: int
    alpha: float
    power: float
    between_item_var: float
    within_item_var: float | None
    by_k: dict[int, float]
    reason: str | None = None


def mde_paired(
    pre_scores: np.ndarray, post_scores: np.ndarray, alpha: float = 0.05, power: float = 0.8
) -> MDE:
    """Smallest mean difference detectable with the given power at this suite size.

    Var(mean d) = (between-item variance of the true differences + within-item variance / k) / n, with the
    within-item variance of the paired per-sample differences (this keeps common random numbers honest)
    and the between-item part as the observed variance of item differences minus that within part / k.
    """
    pre_scores = np.asarray(pre_scores, dtype=np.float64)
    post_scores = np.asarray(post_scores, dtype=np.float64)
    n, k = pre_scores.shape
    z = float(ndtri(1 - alpha / 2) + ndtri(power))
    diffs = post_scores - pre_scores
    observed = float(diffs.mean(axis=1).var(ddof=1)) if n > 1 else 0.0
    if k > 1:
        within: float | None = float(diffs.var(axis=1, ddof=1).mean())
        between = max(observed - within / k, 0.0)
    else:
        within, between = None, observed

    def at(kk: int) -> float:
        return z * math.sqrt((between + (within or 0.0) / kk) / n)

    if between + (within or 0.0) <= 0:
        return MDE(None, n, k, alpha, power, between, within, {}, NO_VARIANCE)
    by_k = {kk: at(kk) for kk in sorted({1, k, 2 * k, 4 * k})} if within is not None else {k: at(k)}
    return MDE(at(k), n, k, alpha, power, between, within, by_k)


@dataclass(frozen=True)
class PowerPlan:
    """Items needed for a paired comparison to detect mde, for each number of samples per item."""

    mde: float
    alpha: float
    power: float
    between_item_var: float  # of the true per-item differences
    within_item_var: float  # of one sample's paired difference
    rho: float | None  # correlation of the two arms' item means
    assumed: str | None  # what was assumed instead of measured
    items_by_k: dict[int, int]


def paired_items_needed(between: float, within: float, k: int, mde: float, alpha: float, power: float) -> int:
    """n = (z_{1-alpha/2} + z_power)^2 (between + within / k) / mde^2, rounded up (the paired z formula)."""
    from scipy import stats  # here, not at module level: scipy.stats costs a second on every report

    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    return max(2, math.ceil(z * z * (between + within / k) / (mde * mde) - 1e-9))


def item_variances(scores: np.ndarray) -> tuple[float, float]:
    """(between-item variance of the true item means, mean within-item variance of one sample) of one arm."""
    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    within = float(scores.var(axis=1, ddof=1).mean()) if k > 1 else 0.0
    observed = float(scores.mean(axis=1).var(ddof=1)) if n > 1 else 0.0
    return max(observed - within / k, 0.0), within


def power_plan(
    pilot: np.ndarray | None,
    post: np.ndarray | None,
    mde: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    ks: Sequence[int] = (1, 2, 4, 8, 16, 32),
    assumed_p: float = 0.5,
    assumed_rho: float = 0.5,
) -> PowerPlan:
    """Items needed per k for power at alpha, from a pilot arm (and its paired post arm) or assumptions.

    With a pilot and a post log the variances are those of the measured paired differences (their
    correlation is in them); with a pilot alone each arm is taken to have the pilot's variances and the
    two arms' item means correlation assumed_rho; with neither, every score p = assumed_p and the two
    arms' scores correlated assumed_rho. A ValueError when the differences have no variance.
    """
    if not mde > 0:
        raise ValueError(f"the minimum detectable effect must be > 0, got {mde}")
    rho: float | None = assumed_rho
    if pilot is None:
        # The textbook paired binary case: Var(d) = 2 p (1 - p) (1 - rho) per sample, all of it within items.
        between, within = 0.0, 2 * assumed_p * (1 - assumed_p) * (1 - assumed_rho)
        assumed: str | None = (
            f"no pilot: assumed score p = {assumed_p} and correlation rho = {assumed_rho} of the two "
            "arms' scores"
        )
    elif post is None:
        between_arm, within_arm = item_variances(pilot)
        between = 2 * between_arm * (1 - assumed_rho)
        # The two arms' samples are drawn independently: within variances add, the correlation is of items.
        within = 2 * within_arm
        assumed = f"no post log: assumed correlation rho = {assumed_rho} of the two arms' item means"
    else:
        pilot, post = np.asarray(pilot, np.float64), np.asarray(post, np.float64)
        if pilot.shape != post.shape:
            raise ValueError(f"pilot and post scores differ in shape: {pilot.shape} and {post.shape}")
        between, within = item_variances(post - pilot)
        a, b = pilot.mean(axis=1), post.mean(axis=1)
        rho = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else None
        assumed = None
    if between + within <= 0:
        raise ValueError(NO_VARIANCE)
    items = {int(k): paired_items_needed(between, within, int(k), mde, alpha, power) for k in ks}
    return PowerPlan(mde, alpha, power, between, within, rho, assumed, items)
