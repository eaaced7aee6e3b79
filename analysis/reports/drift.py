"""Verifier drift built: what a change of scorer did to each arm's score and to every verdict of the reports.

Per arm the paired change of the score (after - before, the one rule of analysis.reports.contrasts), every
item whose majority verdict changed, and every verdict of the delta report and of the arm comparison that the
new scorer changes, as a DriftReport. The command, and the drift stage's record, is analysis.commands.drift.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from analysis.reports import arm_comparison, contrasts
from analysis.reports import delta as delta_report
from analysis.reports.align import arm_arrays, arm_logs, check_matched, item_order
from analysis.reports.refusal import Refusal
from analysis.reports.report_models import ArmComparison, DeltaReport
from analysis.reports.report_parts import MeanContrast, Real, ReportModel, ReportSection
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog


class Scorer(ReportSection):
    """The scorer a log records: name, version and each verifier as type:name=version."""

    name: str
    version: str
    verifiers: list[str]


class ItemVerdict(ReportSection):
    """One side of an item whose majority verdict changed: its mean score, verdict and answers read."""

    mean: Real
    right: bool
    answers: list[str | None]


class ItemChange(ReportSection):
    """An item whose majority verdict changed between the two scorers."""

    item_id: str
    reference_answer: str | None
    before: ItemVerdict
    after: ItemVerdict


class DriftArm(MeanContrast):
    """One arm's paired change of the score (after - before), Benjamini-Hochberg over the arms."""

    arm: str
    scorer_before: Scorer | None
    scorer_after: Scorer | None
    samples_rescored: int
    verdict_changes: list[ItemChange]


class VerdictChange(ReportSection):
    """A verdict of the delta report or the arm comparison that the new scorer changes."""

    verdict: str
    before: bool | str | None
    after: bool | str | None


class DriftSettings(ReportSection):
    """The analysis settings the drift report was computed with."""

    alpha: Real
    fdr: Real
    n_boot: int
    n_perm: int
    seed: int


class DriftReport(ReportModel):
    """The drift report; the drift stage's status fields (changed_arms, ...) where the stage wrote it, and
    only those (with `detail`) where it had no drift to report."""

    report: Literal["drift"]
    arms: list[DriftArm] | None = None
    arms_only_before: list[str] | None = None
    arms_only_after: list[str] | None = None
    verdicts_checked: int | None = None
    verdicts_changed: list[VerdictChange] | None = None
    verdicts_not_compared: str | None = None
    settings: DriftSettings | None = None
    changed_arms: list[str] | None = None
    missing_from_cache: list[str] | None = None
    detail: str | None = None


def scorer_of(log: EvalLog) -> dict[str, Any] | None:
    """The scorer a log records (name, version, verifiers), or None for a log without one."""
    if log.scorer is None:
        return None
    verifiers = sorted(f"{v.type}:{v.name}={v.version}" for v in log.scorer.verifiers or [])
    return {"name": log.scorer.name, "version": log.scorer.version, "verifiers": verifiers}


def read_folder(folder: Path, arms: list[str] | None) -> dict[str, tuple[Path, EvalLog]]:
    """The logs of a folder by arm (align.arm_logs refuses two of one arm), limited to arms if given."""
    found = arm_logs(folder, arms)
    if not found:
        raise Refusal(f"{folder}: no EvalLog (*.json) in this folder; give the folder that holds the logs")
    return found


def same_generations(bp: Path, before: EvalLog, ap: Path, after: EvalLog) -> None:
    """Refuse two logs that are not the same generations (protocol, items, seeds, model)."""
    # The scorer (and the suite file its verifiers read) is what a drift report compares.
    check_matched(bp, before, ap, after, allow=frozenset({"scorer"}))
    a, b = before.pins or {}, after.pins or {}
    if "model" in a and "model" in b and a["model"] != b["model"]:
        raise Refusal(
            f"{bp} vs {ap}: pins.model differs; a drift report compares one model's generations scored "
            "twice: pass the logs of the same generations"
        )


def arm_changes(before: EvalLog, after: EvalLog, settings: AnalysisSettings) -> dict[str, Any]:
    """The paired change of one arm's score, and the items whose majority verdict changed."""
    order = item_order(before)
    b, a = arm_arrays(before, order), arm_arrays(after, order)
    row = contrasts.mean_contrast(b.item_mean, a.item_mean, settings, key="/drift").fields()
    by_before = {it.item_id: it for it in before.items}
    by_after = {it.item_id: it for it in after.items}
    changed = []
    for i, item_id in enumerate(order):
        was, now = b.item_mean[i] >= 0.5, a.item_mean[i] >= 0.5
        if was == now:
            continue
        changed.append(
            {
                "item_id": item_id,
                "reference_answer": by_after[item_id].reference_answer,
                "before": {"mean": float(b.item_mean[i]), "right": bool(was),
                           "answers": list(by_before[item_id].sample_answers() or [])},
                "after": {"mean": float(a.item_mean[i]), "right": bool(now),
                          "answers": list(by_after[item_id].sample_answers() or [])},
            }
        )  # fmt: skip
    samples = int((b.scores != a.scores).sum())
    return {**row, "samples_rescored": samples, "verdict_changes": changed}


def _verdicts_delta(r: DeltaReport) -> dict[str, Any]:
    out: dict[str, Any] = {"delta report: claim": r.claim}
    if r.verdict is not None:
        out["delta report: trained vs base significant"] = r.verdict.significant
    for f in r.families:
        out[f"delta report: family {f.family} significant"] = f.significant
    for d in r.calibration.deltas if r.calibration is not None else []:
        out[f"delta report: ECE {d.arm} vs {d.reference} significant"] = d.significant
    return out


def _verdicts_arms(r: ArmComparison) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in [*r.contrasts, *r.marginal]:
        name = f"arm comparison: {c.arm} vs {c.reference}"
        out[f"{name} significant"] = c.significant
        out[f"{name} claim"] = c.claim
    for f in r.families:
        out[f"arm comparison: {f.arm} vs {f.reference}, family {f.family} significant"] = f.significant
    for d in r.calibration.deltas if r.calibration is not None else []:
        out[f"arm comparison: ECE {d.arm} vs {d.reference} significant"] = d.significant
    return out


def report_verdicts(found: dict[str, tuple[Path, EvalLog]], settings: AnalysisSettings) -> dict[str, Any]:
    """Every verdict the delta report and the arm comparison print for these logs, by name."""
    out: dict[str, Any] = {}
    if "base" in found and "trained" in found:
        (bp, b), (tp, t) = found["base"], found["trained"]
        out.update(_verdicts_delta(delta_report.build(str(bp), b, str(tp), t, settings)))
    if "base" in found and len(found) > 1:
        out.update(_verdicts_arms(arm_comparison.build_found(found, settings, "drift", expected=False)))
    return out


def verdicts_or_reason(
    found: dict[str, tuple[Path, EvalLog]], settings: AnalysisSettings
) -> tuple[dict[str, Any] | None, str | None]:
    """report_verdicts, or None and the reason when the reports would refuse these logs: the arms of one
    folder scored by different scorers (some rescored, some not) are no measurement a report prints."""
    try:
        return report_verdicts(found, settings), None
    except Refusal as e:
        return None, str(e)


def build(
    before: dict[str, tuple[Path, EvalLog]],
    after: dict[str, tuple[Path, EvalLog]],
    settings: AnalysisSettings,
) -> dict[str, Any]:
    """The drift report as a JSON-ready dict: per-arm changes and the verdicts that change."""
    shared = [a for a in after if a in before]
    if not shared:
        raise Refusal("no arm has a log in both folders; pass the folders of the same arms' logs")
    rows = []
    for arm in shared:
        (bp, b), (ap, a) = before[arm], after[arm]
        same_generations(bp, b, ap, a)
        rows.append({"arm": arm, "scorer_before": scorer_of(b), "scorer_after": scorer_of(a),
                     **arm_changes(b, a, settings)})  # fmt: skip
    contrasts.decide_bh(rows, settings)
    old, why_old = verdicts_or_reason({k: before[k] for k in shared}, settings)
    new, why_new = verdicts_or_reason({k: after[k] for k in shared}, settings)
    changed = (
        [{"verdict": k, "before": old[k], "after": new.get(k)} for k in old if old[k] != new.get(k)]
        if old is not None and new is not None
        else None
    )
    return DriftReport.model_validate({
        "report": "drift",
        "arms": rows,
        "arms_only_before": sorted(set(before) - set(shared)),
        "arms_only_after": sorted(set(after) - set(shared)),
        "verdicts_checked": len(old) if old is not None and new is not None else 0,
        "verdicts_changed": changed,
        "verdicts_not_compared": None if changed is not None else why_old or why_new,
        "settings": {"alpha": settings.alpha, "fdr": settings.fdr, "n_boot": settings.n_boot,
                     "n_perm": settings.n_perm, "seed": settings.seed},
    })  # fmt: skip
