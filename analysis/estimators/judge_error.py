"""A model judge's error, measured against the rules on an audit sample, and carried into an accuracy.

Agreement, sensitivity and specificity (Altman & Bland 1994, "Diagnostic tests 1", BMJ 308:1552) with
Wilson intervals; Cohen's kappa (Cohen 1960) with its asymptotic interval (statsmodels' cohens_kappa); the
Rogan-Gladen correction of an apparent rate for a test's sensitivity and specificity (Rogan & Gladen 1978,
Am J Epidemiol 107:71), and an accuracy corrected with it, bootstrapped jointly over the items and the audit
so the interval carries the uncertainty of the judge's error rates as well as the items'.

Truth in the audit is the rules' verdict: "positive" is a sample the rules call right, the judge's positive
is "equivalent". A reply with no verdict counts against agreement (a judge that cannot answer is not
agreeing) and is left out of sensitivity, specificity and kappa, which compare verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from analysis.estimators.proportions import wilson_interval

# The judge's outcomes as numbers: equivalent 1, not equivalent 0, no verdict -1.
NO_VERDICT = -1
# Below this Youden index (sensitivity + specificity - 1) the Rogan-Gladen correction divides by a number
# too near zero for its result to mean anything: the corrected accuracy is not given.
MIN_YOUDEN = 0.1


@dataclass(frozen=True)
class Rate:
    """A proportion, its count, its trials and its Wilson interval (None: no trials)."""

    value: float | None
    k: int
    n: int
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Agreement:
    """A judge against the rules on one arm's audit sample."""

    audited: int
    no_verdict: Rate
    agreement: Rate
    sensitivity: Rate
    specificity: Rate
    kappa: float | None
    kappa_ci: tuple[float, float] | None


def rate(k: int, n: int, alpha: float = 0.05) -> Rate:
    """k of n, with its Wilson interval."""
    if n == 0:
        return Rate(None, 0, 0, None)
    return Rate(k / n, k, n, wilson_interval(k, n, alpha))


def cohens_kappa(table: np.ndarray, alpha: float = 0.05) -> tuple[float | None, tuple[float, float] | None]:
    """Cohen's kappa of a 2x2 table (rows: the rules, columns: the judge) and its asymptotic interval."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    table = np.asarray(table, dtype=float)
    n = table.sum()
    chance = float((table.sum(0) * table.sum(1)).sum() / n**2) if n else 1.0
    if n == 0 or chance >= 1.0:
        # One verdict only, from both: kappa is 0/0.
        return None, None
    res = sm_kappa(table)
    z = float(ndtri(1 - alpha / 2))
    half = z * float(res.std_kappa)
    return float(res.kappa), (max(-1.0, float(res.kappa) - half), min(1.0, float(res.kappa) + half))


def agreement(rule_right: np.ndarray, judge: np.ndarray, alpha: float = 0.05) -> Agreement:
    """The judge's agreement with the rules: rule_right 0/1 per audited sample, judge 1/0/-1 (NO_VERDICT)."""
    rule = np.asarray(rule_right, dtype=int)
    judge = np.asarray(judge, dtype=int)
    has = judge != NO_VERDICT
    table = np.array([[np.sum(has & (rule == r) & (judge == j)) for j in (1, 0)] for r in (1, 0)], dtype=int)
    kappa, kappa_ci = cohens_kappa(table, alpha)
    return Agreement(
        audited=len(rule),
        no_verdict=rate(int((~has).sum()), len(rule), alpha),
        agreement=rate(int(table[0, 0] + table[1, 1]), len(rule), alpha),
        sensitivity=rate(int(table[0, 0]), int(table[0].sum()), alpha),
        specificity=rate(int(table[1, 1]), int(table[1].sum()), alpha),
        kappa=kappa,
        kappa_ci=kappa_ci,
    )


def rogan_gladen(apparent: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an apparent one: (apparent + spec - 1) / (sens + spec - 1), clipped to [0, 1];
    None where the Youden index is under MIN_YOUDEN."""
    youden = sensitivity + specificity - 1.0
    if youden < MIN_YOUDEN:
        return None
    return float(min(1.0, max(0.0, (apparent + specificity - 1.0) / youden)))


def _intervals_apart(a: Rate, b: Rate) -> bool:
    return a.ci is not None and b.ci is not None and (a.ci[1] < b.ci[0] or b.ci[1] < a.ci[0])


def differing_error(a: Agreement, b: Agreement) -> list[str]:
    """The error rates whose intervals do not overlap between two arms' audits (a judge that errs
    differently on the two arms of a contrast manufactures a delta)."""
    return [
        name
        for name in ("sensitivity", "specificity", "no_verdict")
        if _intervals_apart(getattr(a, name), getattr(b, name))
    ]


@dataclass(frozen=True)
class JudgedArm:
    """One arm's samples as the correction reads them, per item (n_items, k) 0/1 arrays, and its audit."""

    # Final score of the samples whose verdict the judge did not decide (the rules', or no verdict: 0).
    kept: np.ndarray
    # Samples the judge decided (the cascade asked, a verdict came), and those it called equivalent.
    judged: np.ndarray
    equivalent: np.ndarray
    audit_rule: np.ndarray
    audit_judge: np.ndarray


def corrected_accuracy(
    kept: np.ndarray,
    judged: np.ndarray,
    equivalent: np.ndarray,
    sensitivity: float | None,
    specificity: float | None,
) -> float | None:
    """The arm's accuracy with its judged samples' equivalent count corrected by Rogan-Gladen; None when
    the judge's error rates are unknown or its Youden index is too small."""
    m = float(judged.sum())
    total = kept.size
    if m == 0:
        return float(kept.sum() / total)
    if sensitivity is None or specificity is None:
        return None
    true_rate = rogan_gladen(float(equivalent.sum()) / m, sensitivity, specificity)
    if true_rate is None:
        return None
    return float((kept.sum() + true_rate * m) / total)


def _audit_rates(rule: np.ndarray, judge: np.ndarray) -> tuple[float | None, float | None]:
    has = judge != NO_VERDICT
    pos, neg = has & (rule == 1), has & (rule == 0)
    sens = float((judge[pos] == 1).mean()) if pos.any() else None
    spec = float((judge[neg] == 0).mean()) if neg.any() else None
    return sens, spec


def _arm_corrected(arm: JudgedArm) -> float | None:
    sens, spec = _audit_rates(arm.audit_rule, arm.audit_judge)
    return corrected_accuracy(arm.kept, arm.judged, arm.equivalent, sens, spec)


def _resampled_corrected(arm: JudgedArm, items: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The corrected accuracy of each resample (NaN where undefined): `items` holds each resample's item
    counts, the audit is resampled here; every sum is a matrix product, no loop over resamples."""
    n_boot = len(items)
    kept, judged, equivalent = (items @ x.sum(1) for x in (arm.kept, arm.judged, arm.equivalent))
    m = len(arm.audit_rule)
    counts = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot) if m else np.zeros((n_boot, 0))
    has = arm.audit_judge != NO_VERDICT
    pos, neg = has & (arm.audit_rule == 1), has & (arm.audit_rule == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = (counts @ (pos & (arm.audit_judge == 1))) / (counts @ pos)
        spec = (counts @ (neg & (arm.audit_judge == 0))) / (counts @ neg)
        youden = sens + spec - 1.0
        true_rate = np.clip((equivalent / judged + spec - 1.0) / youden, 0.0, 1.0)
        fixed = np.where(judged > 0, true_rate * judged, 0.0)
        bad = (judged > 0) & ~(youden >= MIN_YOUDEN)
    total = arm.kept.size
    return np.where(bad, np.nan, (kept + fixed) / total)


def corrected_delta(
    pre: JudgedArm, post: JudgedArm, n_boot: int, rng: np.random.Generator, alpha: float = 0.05
) -> tuple[float | None, tuple[float, float] | None, float]:
    """post - pre in Rogan-Gladen-corrected accuracy, its percentile interval from a bootstrap that
    resamples the items (paired) and each arm's audit together, and the share of resamples where the
    correction was undefined (those are left out; a large share means the interval is not to be trusted)."""
    a, b = _arm_corrected(pre), _arm_corrected(post)
    if a is None or b is None:
        return None, None, 1.0
    n = pre.kept.shape[0]
    items = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)
    deltas = _resampled_corrected(post, items, rng) - _resampled_corrected(pre, items, rng)
    deltas = deltas[np.isfinite(deltas)]
    undefined = 1.0 - len(deltas) / n_boot
    if not len(deltas):
        return b - a, None, undefined
    lo, hi = np.quantile(deltas, [alpha / 2, 1 - alpha / 2])
    return b - a, (float(lo), float(hi)), undefined
