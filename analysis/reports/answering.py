"""The FORMAT sections of every report: each arm's answered share and the lenient reader's view of a contrast.

Reads from a log what analysis.reports.format_effect estimates from (which samples the report's reader read an
answer from, the lenient reader's scores) and assembles the report parts: one row per arm (answered share,
accuracy among answered, mean under the lenient reader) and one part per contrast (the lenient delta, the
change in answered share, the FORMAT call). The delta report, the arm comparison and the trajectory call
the same functions with the same keys, so trained vs base carries one call wherever it is printed.
"""

from __future__ import annotations

import numpy as np

from analysis.estimators.estimate import interval_fields
from analysis.reports import format_effect as fe
from analysis.reports.contrasts import Primary
from analysis.reports.report_parts import AnsweredChange, ArmAnswering, FormatContrast
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog


def reader_arrays(log: EvalLog, order: list[str]) -> fe.ReaderArrays:
    """The answered flags and lenient scores of a log in the given item order (None where not recorded)."""
    by_id = {it.item_id: it for it in log.items}
    items = [by_id[i] for i in order]
    answers = [it.sample_answers() for it in items]
    answered = None
    if all(a is not None for a in answers):
        answered = np.array([[x is not None for x in a] for a in answers], np.float64)  # type: ignore[union-attr]
        answered = answered.reshape(len(items), log.n_samples)
    lenient = None
    if items and all(it.lenient_scores is not None for it in items):
        lenient = np.array([it.lenient_scores for it in items], np.float64).reshape(len(items), log.n_samples)
    return fe.ReaderArrays(answered, lenient)


def arm_row(
    arm: str, scores: np.ndarray, arrays: fe.ReaderArrays, settings: AnalysisSettings
) -> ArmAnswering:
    """One arm's answered share and accuracy among answered (each with its interval), lenient mean."""
    share, acc = None, None
    if arrays.answered is not None:
        # One key for every arm: an arm's interval is the same in every report, whatever the arm is named.
        share = fe.answered_share(arrays.answered, settings)
        acc = fe.accuracy_among_answered(scores, arrays.answered, settings)
    return ArmAnswering(
        arm=arm,
        answered_share=share.value if share is not None else None,
        **interval_fields(share.interval if share is not None else None, "answered_ci95"),
        accuracy_answered=acc.ratio if acc is not None else None,
        **interval_fields(acc.ci if acc is not None else None, "accuracy_answered_ci95"),
        n_answered=acc.n_counted if acc is not None else None,
        n_samples=int(np.asarray(scores).size),
        lenient_mean=None if arrays.lenient is None else float(arrays.lenient.mean()),
    )


def _change(ref: fe.ReaderArrays, arm: fe.ReaderArrays, settings: AnalysisSettings) -> AnsweredChange | None:
    if ref.answered is None or arm.answered is None:
        return None
    return fe.answered_change(ref.answered, arm.answered, settings)


def primary_part(
    primary: Primary, claim: str, ref: fe.ReaderArrays, arm: fe.ReaderArrays, settings: AnalysisSettings
) -> FormatContrast | None:
    """Trained vs base under the lenient reader (pass@1 and pass@K) and its FORMAT call; None unrecorded."""
    if ref.lenient is None or arm.lenient is None:
        return None
    lenient, top = fe.lenient_primary(ref.lenient, arm.lenient, settings)
    change = _change(ref, arm, settings)
    call, detail = fe.primary_call(claim, primary.stats.delta, lenient, top, change)
    return FormatContrast(
        lenient=lenient, lenient_top_k=top, answered_change=change, call=call, detail=detail
    )


def row_part(
    significant: bool, delta: float, ref: fe.ReaderArrays, arm: fe.ReaderArrays, settings: AnalysisSettings
) -> FormatContrast | None:
    """A Benjamini-Hochberg row under the lenient reader, at the unadjusted fdr; None when not recorded."""
    if ref.lenient is None or arm.lenient is None:
        return None
    lenient = fe.lenient_contrast(ref.lenient, arm.lenient, settings, settings.fdr)
    change = _change(ref, arm, settings)
    call = fe.row_call(bool(significant), delta, lenient)
    detail = (
        fe.row_claim(call, lenient, change)
        if call
        else f"No FORMAT call; {fe.contrast_text(lenient, 'the lenient delta')}; {fe.change_text(change)}."
    )
    return FormatContrast(
        lenient=lenient, lenient_top_k=None, answered_change=change, call=call, detail=detail
    )


def missing_lenient(arrays: dict[str, fe.ReaderArrays]) -> list[str]:
    """The arms whose logs lack the lenient reader's scores."""
    return [arm for arm, a in arrays.items() if a.lenient is None]


def not_recorded(missing: list[str], n_logs: int) -> str:
    """The one-line note of a report whose logs (missing: those of these arms, of n_logs) lack the lenient
    reader's scores."""
    where = "these logs" if len(missing) == n_logs else f"the log of {', '.join(missing)}"
    return (
        f"lenient reader not recorded in {where} (scored before EvalLog format 4, or "
        "imported without rescoring): the format effect is not separated from the reasoning effect and no "
        "FORMAT call is made; rescore the logs (dvc repro) to get it"
    )


def row_claim(part: FormatContrast) -> str | None:
    """An arm row's claim when its contrast is FORMAT (the part's call is set), else None."""
    return None if part.call is None else fe.row_claim(part.call, part.lenient, part.answered_change)
