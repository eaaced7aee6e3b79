"""Answering separated from reasoning: answered share, accuracy among answered, the lenient delta, FORMAT.

Every log is scored by two readers of the same generations: the report's reader (the prompt's rule, else
the parity reader: `scores`) and a lenient reader (every reading rule, the verifier's fallbacks included:
`lenient_scores`). A model that learns to write its answer where the report's reader looks gains under
the report's reader and not under the lenient one. Per arm this module estimates

- the answered share: the share of samples from which the report's reader read an answer, the mean over
  items of each item's share of its k samples, with a percentile item-cluster bootstrap interval (items
  resampled with their k samples, as the reports' per-arm pass@k intervals; Wilson's score interval with
  one sample per item);
- the accuracy among answered: sum of scores of answered samples / number of answered samples, pooled over
  the suite (a ratio of two item means, so each answered sample weighs the same); its interval is the BCa
  interval of the same ratio recomputed on each item-cluster resample, the acceleration from the ratio's
  influence values (resamples in which no sample is answered are left out and counted; the percentile
  interval covered 0.89 to 0.96 in the simulated designs, BCa 0.91 to 0.99);

and per contrast (arm minus reference, paired over items)

- the lenient delta: the mean contrast of the lenient scores, with the headline's interval and test
  (BCa from 100 items, else the sign-flip inversion; the sign-flip test), drawn with the same keys as the
  contrast under the report's reader (common random numbers: identical scores give the identical interval
  and p, so two readers that agree never disagree by Monte Carlo luck); for trained vs base the claim's
  whole estimator, so also the lenient pass@K delta with pass@K's interval and test;
- the change in answered share: paired per-item shares, BCa from 100 items, below that Newcombe's paired
  interval when the per-item shares are 0/1 (k = 1) and the sign-flip inversion otherwise
  (signflip.small_suite_interval), with the sign-flip test; descriptive.

The FORMAT rule: a contrast is FORMAT when it is significant under the report's reader (its own rule: the
claim's Holm family for trained vs base, Benjamini-Hochberg for every other row) and the lenient reader
finds no significant change. Trained vs base: the lenient scores go through the claim's own estimator and
family (contrasts.primary_contrast: Holm over the pass@1 and pass@K sign-flip tests at alpha, each interval
excluding 0), and FORMAT needs neither significant. Same family, same level, same draws on both readers: two
readers that agree reach the same verdicts. Measured (benchmarks/bench_calibration.py --part format, 200
pairs a design): a pure format effect passed for reasoning in at most 0.055 of pairs (0.09 with each lenient
test at alpha unadjusted: two chances at alpha), a real gain was called FORMAT in at most 0.045 (24 items x
8; 0.02 unadjusted), none from 100 items x 8. Every other row (one test): the lenient sign-flip p at the
row's fdr, unadjusted (its Benjamini-Hochberg q would depend on the other rows), and its interval. The gain
(or loss) is then the model writing its answer where the reader looks (or no longer writing it there), not
answering right more (or less) often.

A significant decline that is format only is called "FORMAT (decline)", not REGRESSION: REGRESSION says the
model lost ground, which the lenient reader contradicts; the direction stays in the claim itself because
the claim is all that the index page, metrics.json and `dvc exp show` carry, and a downstream user of
this reader does lose those answers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from analysis.estimators.bootstrap_ci import bootstrap_mean_ci
from analysis.estimators.estimate import Estimate, Interval
from analysis.estimators.proportions import wilson_interval
from analysis.estimators.ratio import RATIO_METHOD as POOLED_RATIO_METHOD
from analysis.estimators.ratio import RatioEstimate, pooled_ratio
from analysis.estimators.resampling import rng_for
from analysis.estimators.signflip import sign_flip_test, small_suite_interval
from analysis.reports.contrasts import (
    BCA_MIN_ITEMS,
    delta_interval,
    mean_contrast,
    primary_contrast,
    significant,
)
from analysis.reports.number_text import p_bound
from analysis.reports.report_parts import AnsweredChange, LenientTopK, MeanContrast
from analysis.reports.settings import AnalysisSettings

FORMAT, FORMAT_DECLINE = "FORMAT", "FORMAT (decline)"
# The claims under the report's reader that say the score moved.
SHIFTS = frozenset({"EXPANSION", "SHARPENING", "REGRESSION", "UNDETERMINED"})
SHARE_METHOD = "percentile item-cluster bootstrap (items resampled with their k samples)"
RATIO_METHOD = (
    "BCa item-cluster bootstrap of the ratio (answered samples' scores / answered samples; acceleration from "
    "its influence values)"
)
LENIENT_READER = "the lenient reader (every reading rule, the verifier's fallbacks included)"


@dataclass(frozen=True)
class ReaderArrays:
    """One arm's samples as the two readers see them, in a shared item order."""

    answered: np.ndarray | None  # (n_items, k) 1.0 where the report's reader read an answer; None: unknown
    lenient: np.ndarray | None  # (n_items, k) the lenient reader's scores; None: not recorded


def answered_share(answered: np.ndarray, settings: AnalysisSettings, key: str = "") -> Estimate:
    """The share of samples with an answer read, with a percentile item-cluster bootstrap interval (one
    sample per item: Wilson's score interval, which covers where the percentile interval of 0/1 values at a
    few dozen items does not)."""
    items = np.asarray(answered, np.float64).mean(axis=1)
    if np.asarray(answered).shape[1] == 1:
        lo, hi = wilson_interval(int(items.sum()), items.size, settings.alpha)
        return Estimate(float(items.mean()), Interval(lo, hi, "Wilson score"))
    ci = bootstrap_mean_ci(
        items, settings.n_boot, rng_for(settings.seed, f"answered{key}"), alpha=settings.alpha,
        method="percentile",
    )[0]  # fmt: skip
    ci = dataclasses.replace(ci, method="point (constant)" if ci.lo == ci.hi else SHARE_METHOD)
    return Estimate(float(items.mean()), ci)


def accuracy_among_answered(
    scores: np.ndarray, answered: np.ndarray, settings: AnalysisSettings, key: str = ""
) -> RatioEstimate:
    """Accuracy among the samples with an answer read (a ratio), with its item-cluster bootstrap interval.

    None for the accuracy and interval when no sample has an answer; n_counted: the answered samples;
    `empty_resamples` counts the resamples without an answered sample, which the interval leaves out.
    """
    scores, answered = np.asarray(scores, np.float64), np.asarray(answered, np.float64)
    est = pooled_ratio(
        (scores * answered).sum(axis=1),
        answered.sum(axis=1),
        settings.n_boot,
        rng_for(settings.seed, f"answered-accuracy{key}"),
        settings.alpha,
    )
    if est.ci is None or est.ci.method != POOLED_RATIO_METHOD:
        return est
    return dataclasses.replace(est, ci=dataclasses.replace(est.ci, method=RATIO_METHOD))


def paired_share_interval(
    ref: np.ndarray, arm: np.ndarray, settings: AnalysisSettings, key: str = ""
) -> Interval:
    """The interval of mean(arm - ref) of per-item shares: BCa from 100 items, else small_suite_interval."""
    if ref.size >= BCA_MIN_ITEMS:
        return delta_interval(arm - ref, settings, key)
    return small_suite_interval(
        ref, arm, settings.n_perm, rng_for(settings.seed, f"perm-ci{key}"), settings.alpha
    )


def answered_change(
    ref_answered: np.ndarray, arm_answered: np.ndarray, settings: AnalysisSettings, key: str = "/answered"
) -> AnsweredChange:
    """The paired change in answered share (arm minus reference), its interval and sign-flip test."""
    ref = np.asarray(ref_answered, np.float64).mean(axis=1)
    arm = np.asarray(arm_answered, np.float64).mean(axis=1)
    d = arm - ref
    ci = paired_share_interval(ref, arm, settings, key)
    flip = sign_flip_test(d, settings.n_perm, rng_for(settings.seed, f"perm{key}"))
    p = float(flip.p[0])
    return AnsweredChange(
        share_ref=float(ref.mean()),
        share_arm=float(arm.mean()),
        delta=float(d.mean()),
        **ci.fields(),
        p_value=p,
        perm_exact=flip.exact,
        perm_n=flip.n_perm,
        significant=significant(p, ci, settings.alpha),
    )


def lenient_contrast(
    ref_lenient: np.ndarray, arm_lenient: np.ndarray, settings: AnalysisSettings, level: float, key: str = ""
) -> MeanContrast:
    """The lenient reader's mean contrast, drawn as the report reader's contrast of the same key, decided
    at the unadjusted level (p <= level and the interval excludes 0)."""
    ref = np.asarray(ref_lenient, np.float64).mean(axis=1)
    arm = np.asarray(arm_lenient, np.float64).mean(axis=1)
    stats = mean_contrast(ref, arm, settings, key=key)
    decided = {"significant": significant(stats.p_value, stats.ci, level)}
    decided["decided_by"] = f"sign-flip test at {level}, unadjusted"
    return MeanContrast.model_validate({**stats.fields(), **decided})


def lenient_primary(
    ref_lenient: np.ndarray, arm_lenient: np.ndarray, settings: AnalysisSettings
) -> tuple[MeanContrast, LenientTopK | None]:
    """Trained vs base under the lenient reader, estimated and decided as under the report's reader.

    analysis.reports.contrasts.primary_contrast on the lenient scores: the same draws, intervals, tests and
    Holm family over pass@1 and pass@K at alpha. Returns the pass@1 contrast (mean_contrast's fields with
    q_value, significant, negligible, decided_by) and the pass@K part (None with one sample per item).
    """
    p = primary_contrast(ref_lenient, arm_lenient, settings)
    mean = MeanContrast.model_validate({**p.stats.fields(), **p.decision.fields()})
    if p.n_tests == 1:
        return mean, None
    return mean, LenientTopK(
        k=p.top_k,
        pre=float(p.passk.ref[-1]),
        post=float(p.passk.arm[-1]),
        delta=float(p.passk.delta[-1]),
        **p.passk.delta_ci[-1].fields(),
        p_value=p.top_p,
        p_holm=p.top_p_holm,
        significant=p.top_significant,
    )


def format_call(strict_shift: int, lenient_shift: bool) -> str | None:
    """FORMAT for a significant gain the lenient reader does not find, FORMAT (decline) for a loss, else None.

    strict_shift: +1 (a significant gain under the report's reader), -1 (a significant loss), 0 (neither).
    """
    if strict_shift == 0 or lenient_shift:
        return None
    return FORMAT if strict_shift > 0 else FORMAT_DECLINE


def contrast_text(row: MeanContrast | LenientTopK, what: str) -> str:
    lo, hi = row.ci95
    # A pass@K row records no permutation count: its p is quoted as it stands.
    perm_n, exact = (row.perm_n, row.perm_exact) if isinstance(row, MeanContrast) else (None, True)
    p = p_bound(row.p_value, perm_n, exact if exact is not None else True)
    return f"{what} {row.delta:+.4f} (CI [{lo:+.4f}, {hi:+.4f}], sign-flip p {p})"


def change_text(change: AnsweredChange | None) -> str:
    """The sentence part on the answered share: both shares and the paired change with its interval."""
    if change is None:
        return "the answered share is unknown (the logs record no answers)"
    lo, hi = change.ci95
    return (
        f"the share of samples with an answer read went from {change.share_ref:.3f} to "
        f"{change.share_arm:.3f} ({change.delta:+.4f}, CI [{lo:+.4f}, {hi:+.4f}])"
    )


def primary_call(
    claim: str,
    strict_delta: float,
    lenient: MeanContrast,
    top: LenientTopK | None,
    change: AnsweredChange | None,
) -> tuple[str | None, str]:
    """The FORMAT call on trained vs base and its sentence, from the claim under the report's reader.

    A shift the claim's family finds (EXPANSION, SHARPENING, REGRESSION, UNDETERMINED) is FORMAT when
    neither the lenient pass@1 nor the lenient pass@K delta is significant.
    """
    lenient_shift = bool(lenient.significant or (top is not None and top.significant))
    shift = 0
    if claim in SHIFTS:
        shift = -1 if claim == "REGRESSION" or (claim == "UNDETERMINED" and strict_delta < 0) else 1
    call = format_call(shift, lenient_shift)
    seen = contrast_text(lenient, f"under {LENIENT_READER} pass@1")
    if top is not None:
        seen += " and " + contrast_text(top, f"pass@{top.k}")
    if call is None and shift == 0:
        return (
            None,
            f"No FORMAT call: the report's reader finds no shift ({claim}); {seen}; {change_text(change)}.",
        )
    if call is None:
        return None, (
            f"Not a format effect alone: {seen}, a change the lenient reader finds too; "
            f"{change_text(change)}."
        )
    moved = "rose" if call == FORMAT else "fell"
    return call, (
        f"The score under the report's reader {moved} ({claim} under it alone), but {seen}: no significant "
        f"change; {change_text(change)}. The "
        + ("gain" if call == FORMAT else "loss")
        + " is the model writing its answer where the report's reader looks"
        + ("" if call == FORMAT else " less often")
        + ", not answering right "
        + ("more" if call == FORMAT else "less")
        + " often."
    )


def row_call(strict_significant: bool, strict_delta: float, lenient: MeanContrast) -> str | None:
    """The FORMAT call on a row decided by its own rule (an arm row, a trajectory row)."""
    shift = 0 if not strict_significant else (1 if strict_delta > 0 else -1)
    return format_call(shift, bool(lenient.significant))


def row_claim(call: str, lenient: MeanContrast, change: AnsweredChange | None) -> str:
    """An arm row's claim when its change is FORMAT: what the reader saw, and what the lenient reader saw."""
    moved = "gain" if call == FORMAT else "loss"
    return (
        f"{call}: a {moved} under the report's reader only; "
        f"{contrast_text(lenient, 'the lenient delta')} is not significant, and {change_text(change)}: "
        "the arm writes its answer where the reader looks "
        + ("more" if call == FORMAT else "less")
        + " often, NOT a change in answering right."
    )
