"""Two parts of the index page taken from the reports as they are: the undecided samples and the judge.

The undecided part: each arm's undecided share and, per contrast, its change and the delta on the samples
both arms decided (analysis.reports.undecided; the arm comparison's, which holds every contrast, else the
delta report's), or the reports' note where the logs do not record them. The judge part: a link to the
judge's report where the judge stage ran with a judge, and one line saying whether its verdicts are in
the headline and, where not, why (analysis.reports.judge). Nothing is computed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.reports.judge import JudgeReport
from analysis.reports.report_files import read_report
from analysis.reports.report_models import ArmComparison, DeltaReport
from analysis.reports.undecided import UndecidedSection

# Where the judge report stage writes (analysis.commands.judge_report), under the index page's folder.
JUDGE_JSON = Path("judge") / "judge_report.json"
JUDGE_MD = Path("judge") / "judge_report.md"
JUDGE_HTML = "judge/judge_report.html"


def undecided_section(delta: DeltaReport, arms: ArmComparison) -> UndecidedSection | None:
    """The reports' undecided part: the arm comparison's (every arm), else the delta report's."""
    return arms.undecided if arms.undecided is not None else delta.undecided


def undecided_note(delta: DeltaReport, arms: ArmComparison) -> str | None:
    """The reports' note where the logs record no undecided samples (None where they do)."""
    notes = [n for n in [*arms.notes, *delta.notes] if n.startswith("undecided samples not recorded")]
    return notes[0] if notes else None


def undecided_metrics(part: UndecidedSection) -> dict[str, Any]:
    """metrics.json's undecided numbers: each arm's share; per contrast (arm-reference) the share's change
    and the delta on the samples both arms decided (None: no sample decided by both)."""
    return {
        "share": {a.arm: a.undecided_share for a in part.arms},
        "contrasts": {
            f"{c.arm}-{c.reference}": {
                "change": c.change.delta,
                "decided_delta": c.decided_delta,
                "differ": c.shares_differ,
            }
            for c in part.contrasts
        },
    }


def judge_summary(out: Path | None) -> dict[str, Any] | None:
    """The judge's link and one line on the page, or None where no judge ran (no report, or none set)."""
    if out is None or not (out / JUDGE_JSON).is_file():
        return None
    report = read_report(out / JUDGE_JSON, JudgeReport)
    if not report.judge:
        return None
    model = report.judge.get("model") or "the judge"
    flagged = [(f"{c.post} vs {c.pre}", c.reasons) for c in report.contrasts or []
               if c.headline != "with_judge"]  # fmt: skip
    if not flagged:
        line = f"{model}: fit on every arm's audit; its verdicts are in the judged contrasts' headline"
    else:
        contrast, reasons = flagged[0]
        why = reasons[0] if reasons else "see its report"
        more = (
            f" (and {len(flagged) - 1} more contrast{'s' if len(flagged) > 2 else ''})"
            if len(flagged) > 1
            else ""
        )
        line = f"{model}: flagged, its verdicts kept out of the headline: {contrast}: {why}{more}"
    return {"href": JUDGE_HTML, "md_href": str(JUDGE_MD), "line": line}
