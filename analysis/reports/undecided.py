"""The undecided section of every report: samples the reader could not settle, kept apart from wrong ones.

An undecided sample (EvalLog format 5: `ItemResult.undecided`) is one from which no answer was read, or
whose reference only the `exact` fallback judges and whose words do not match: the reader cannot tell a
wrong answer from one it could not read. It scores 0, so the headline counts it as wrong; this part shows
how much of each arm that is and what the contrast is without it:

- per arm, the undecided share (the undecided samples over all samples);
- per contrast (arm minus reference, paired over items and sample indices), the change in undecided share
  with its interval and sign-flip test (format_effect.answered_change, the answered share's estimator), and
  the delta on the samples both arms decided (analysis.estimators.ratio.decided_delta: each such sample
  weighs the same; BCa item-cluster interval of the ratio), beside the headline delta;
- a note on every contrast whose undecided shares differ: the change's sign-flip test at alpha with an
  interval that excludes 0 (the answered share's rule); the headline then compares arms whose reader
  settled different shares of their samples.

Logs scored before format 5 record no verdicts: the report then says so in one note and leaves this part out.
"""

from __future__ import annotations

import numpy as np

from analysis.estimators.estimate import interval_fields
from analysis.estimators.ratio import decided_delta
from analysis.estimators.resampling import rng_for
from analysis.reports import format_effect as fe
from analysis.reports.align import ArmData
from analysis.reports.report_parts import AnsweredChange, Bounds, Real, ReportSection
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog

# The first EvalLog format that records which samples are undecided.
UNDECIDED_FORMAT = 5


class ArmUndecided(ReportSection):
    """One arm's undecided samples and their share."""

    arm: str
    undecided_share: Real
    n_undecided: int
    n_samples: int


class UndecidedContrast(ReportSection):
    """A contrast's change in undecided share, and its delta on the samples both arms decided."""

    reference: str
    arm: str
    change: AnsweredChange
    headline_delta: Real
    decided_delta: Real | None
    decided_ci95: Bounds | None
    decided_ci95_method: str | None
    n_decided: int
    n_samples: int
    shares_differ: bool


class UndecidedSection(ReportSection):
    """Each arm's undecided share and each contrast's change and decided delta (None: not recorded)."""

    arms: list[ArmUndecided]
    contrasts: list[UndecidedContrast]


def undecided_matrix(log: EvalLog, order: list[str]) -> np.ndarray | None:
    """(n_items, k) 1.0 where a sample is undecided, in the given item order; None before format 5."""
    if log.format_version < UNDECIDED_FORMAT:
        return None
    by_id = {it.item_id: it for it in log.items}
    rows = [by_id[i].undecided or [False] * log.n_samples for i in order]
    return np.array(rows, np.float64).reshape(len(order), log.n_samples)


def not_recorded(arms: list[str], n_logs: int) -> str:
    """The note of a report whose logs (those of these arms, of n_logs) record no undecided samples."""
    where = "these logs" if len(arms) == n_logs else f"the log of {', '.join(arms)}"
    return (
        f"undecided samples not recorded in {where} (scored before EvalLog format 5): "
        "an unread answer counts as wrong and is not shown apart; rescore the logs (dvc repro) to see it"
    )


def undecided_contrast(
    ref: str,
    arm: str,
    scores: dict[str, np.ndarray],
    flags: dict[str, np.ndarray],
    settings: AnalysisSettings,
) -> UndecidedContrast:
    """One contrast's change in undecided share, its note, and the delta on the samples both arms decided;
    scores and flags (n_items, k) by arm."""
    # One key whatever the arms are named: a contrast's interval is the same in every report.
    key = "/undecided"
    change = fe.answered_change(flags[ref], flags[arm], settings, key=key)
    est = decided_delta(
        scores[ref], scores[arm], flags[ref], flags[arm], settings.n_boot,
        rng_for(settings.seed, f"decided{key}"), settings.alpha,
    )  # fmt: skip
    return UndecidedContrast(
        reference=ref,
        arm=arm,
        change=change,
        headline_delta=float(scores[arm].mean() - scores[ref].mean()),
        decided_delta=est.ratio,
        **interval_fields(est.ci, "decided_ci95"),
        n_decided=est.n_counted,
        n_samples=int(scores[ref].size),
        shares_differ=bool(change.significant),
    )


def section(
    logs: dict[str, EvalLog],
    order: list[str],
    scores: dict[str, np.ndarray],
    pairs: list[tuple[str, str]],
    settings: AnalysisSettings,
) -> tuple[UndecidedSection | None, str | None]:
    """The undecided part over these arms and contrasts (reference, arm), or None and the note saying why."""
    flags = {arm: undecided_matrix(log, order) for arm, log in logs.items()}
    missing = [arm for arm, f in flags.items() if f is None]
    if missing:
        return None, not_recorded(missing, len(flags))
    known: dict[str, np.ndarray] = {a: f for a, f in flags.items() if f is not None}
    arms = [
        ArmUndecided(
            arm=arm,
            undecided_share=float(f.mean()) if f.size else 0.0,
            n_undecided=int(f.sum()),
            n_samples=int(f.size),
        )
        for arm, f in known.items()
    ]
    rows = [undecided_contrast(r, a, scores, known, settings) for r, a in pairs]
    return UndecidedSection(arms=arms, contrasts=rows), None


def report_fields(
    logs: dict[str, EvalLog],
    order: list[str],
    data: dict[str, ArmData],
    pairs: list[tuple[str, str]],
    settings: AnalysisSettings,
    notes: list[str],
) -> dict[str, UndecidedSection]:
    """The report's `undecided` keyword for these contrasts, each (ref, arm); empty where not recorded, the
    note then appended to notes."""
    scores = {arm: d.scores for arm, d in data.items()}
    part, note = section(logs, order, scores, pairs, settings)
    if note is not None:
        notes.append(note)
    return {} if part is None else {"undecided": part}
