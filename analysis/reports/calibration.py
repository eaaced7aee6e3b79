"""Calibration of the majority answer: a confidence per item from its k samples, ECE per arm and its delta.

An item's answer is the majority of its k samples' answers (ties: the answer read first); its confidence is
the share of the k samples that give it, or, when every sample of every arm records its mean token
log-probability, the same share with each sample weighed by exp(that mean); it is right when those samples
scored right (mean score >= 0.5). ECE (equal-width bins) is not a mean over items, so it is bootstrapped
as a statistic: each resample draws the same item indices for both arms and computes the ECE of each and
their difference
(analysis.estimators.ece.ece_difference_test). A change is significant when its bootstrap p <= alpha and its
interval excludes 0 (the one rule of analysis.reports.contrasts), and negligible below ECE_MIN_EFFECT.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from analysis.estimators.ece import ece_difference_test, ece_interval
from analysis.estimators.resampling import rng_for
from analysis.reports.contrasts import significant
from analysis.reports.report_parts import Calibration, CalibrationArm, CalibrationDelta, ReliabilityBin
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog

ECE_MIN_EFFECT = 0.01  # a calibration error change smaller than one point is negligible
N_BINS = 10


def majority_confidence(answers: list[str | None], scores: list[float]) -> tuple[float, float]:
    """(confidence, right) of the majority answer of one item's samples (None counts as no answer)."""
    counts = Counter(answers)
    top = max(counts.values())
    answer = next(a for a in answers if counts[a] == top)
    right = (
        answer is not None
        and float(np.mean([s for a, s in zip(answers, scores, strict=True) if a == answer])) >= 0.5
    )
    return top / len(answers), float(right)


def weighted_confidence(
    answers: list[str | None], scores: list[float], mean_logprobs: list[float]
) -> tuple[float, float]:
    """(confidence, right) of the majority answer, its confidence weighed by token log-probabilities.

    Each sample counts exp(its mean token log-probability) (the geometric mean of its tokens'
    probabilities) instead of 1; the confidence is the majority answer's sum divided by k. With k = 1 it
    is the one sample's per-token probability; when every token was certain it is the vote share.
    """
    _, right = majority_confidence(answers, scores)
    counts = Counter(answers)
    top = max(counts.values())
    answer = next(a for a in answers if counts[a] == top)
    weight = sum(math.exp(w) for a, w in zip(answers, mean_logprobs, strict=True) if a == answer)
    return weight / len(answers), right


def has_logprobs(log: EvalLog) -> bool:
    """True when every sample of the log records its mean token log-probability."""
    return all(it.sample_mean_logprobs() is not None for it in log.items)


def item_confidence(
    log: EvalLog, order: list[str], logprobs: bool = False
) -> tuple[np.ndarray, np.ndarray] | None:
    """(confidence, right) per item in the given order; None when the log records no sample's answer.

    The same as majority_confidence item by item (weighted_confidence with logprobs), computed for all
    items at once: answers coded as integers, each sample's answer counted within its item by one
    (n, k, k) comparison.
    """
    by_id = {it.item_id: it for it in log.items}
    answers = [by_id[i].sample_answers() for i in order]
    if any(a is None for a in answers):
        return None
    flat = [x for a in answers for x in a]  # type: ignore[union-attr]
    if flat.count(None) == len(flat):
        return None
    codes: dict[str | None, int] = {None: 0}
    n, k = len(order), log.n_samples
    coded = np.array([codes.setdefault(x, len(codes)) for x in flat], dtype=np.int64).reshape(n, k)
    scores = np.array([by_id[i].scores for i in order], dtype=np.float64).reshape(n, k)
    same = coded[:, :, None] == coded[:, None, :]
    counts = same.sum(axis=2)
    top = counts.max(axis=1)
    # The first sample whose answer is a majority one: ties go to the answer read first.
    first = np.argmax(counts == top[:, None], axis=1)
    rows = np.arange(n)
    mine = same[rows, first]
    right = ((scores * mine).sum(axis=1) / mine.sum(axis=1) >= 0.5) & (coded[rows, first] != 0)
    if logprobs:
        weights = np.exp(np.array([by_id[i].sample_mean_logprobs() for i in order], np.float64))
        return (weights * mine).sum(axis=1) / k, right.astype(np.float64)
    return top / k, right.astype(np.float64)


def reliability(conf: np.ndarray, right: np.ndarray, n_bins: int = N_BINS) -> list[ReliabilityBin]:
    """Per equal-width bin: items, mean confidence and accuracy (the reliability diagram's points)."""
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    rows = []
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            rows.append(
                ReliabilityBin(
                    bin=[b / n_bins, (b + 1) / n_bins],
                    items=int(mask.sum()),
                    confidence=float(conf[mask].mean()),
                    accuracy=float(right[mask].mean()),
                )
            )
    return rows


def section(
    arms: dict[str, EvalLog], order: list[str], ref: str, settings: AnalysisSettings
) -> Calibration | None:
    """ECE per arm with its interval and each arm's ECE minus the reference's (paired); None: no answers."""
    # One kind of confidence for every arm, or their ECEs would not be comparable: log-probability weights
    # only when every arm's every sample records them.
    weighted = all(has_logprobs(log) for log in arms.values())
    data = {arm: item_confidence(log, order, weighted) for arm, log in arms.items()}
    missing = sorted(arm for arm, v in data.items() if v is None)
    if data.get(ref) is None:
        return None
    k = next(iter(arms.values())).n_samples
    rows, deltas = [], []
    for arm, value in data.items():
        if value is None:
            continue
        conf, right = value
        ece = ece_interval(conf, right, settings.n_boot, rng_for(settings.seed, f"ece/{arm}"),
                           alpha=settings.alpha, n_bins=N_BINS)  # fmt: skip
        rows.append(
            CalibrationArm(
                arm=arm,
                **ece.fields("ece"),
                mean_confidence=float(conf.mean()),
                accuracy=float(right.mean()),
                reliability=reliability(conf, right),
            )
        )
        if arm == ref:
            continue
        rc, rr = data[ref]  # type: ignore[misc]
        rng = rng_for(settings.seed, f"ece-delta/{arm}")
        change = ece_difference_test(
            rc, rr, conf, right, settings.n_boot, rng, alpha=settings.alpha, n_bins=N_BINS
        )
        sig = significant(change.p_value, change.ci, settings.alpha)
        deltas.append(
            CalibrationDelta(
                arm=arm,
                reference=ref,
                delta=change.delta,
                **change.ci.fields(),
                p_value=change.p_value,
                significant=sig,
                negligible=bool(sig and abs(change.delta) < ECE_MIN_EFFECT),
            )
        )
    return Calibration(
        confidence=(
            "sum over its majority answer's samples of exp(mean token log-probability), divided by k"
            if weighted
            else "share of an item's k samples that give its majority answer"
            + (" (k = 1: every confidence is 1, so ECE is the error rate)" if k == 1 else "")
        ),
        n_bins=N_BINS,
        min_effect=ECE_MIN_EFFECT,
        arms=rows,
        deltas=deltas,
        arms_without_answers=missing,
    )
