"""The undecided section in markdown: per arm the unsettled share, per contrast its change and delta.

From analysis.reports.undecided: per arm the share of samples the reader could not settle, per contrast its
change and the delta on the samples both arms decided, beside the headline.

Printed only where the logs record verdicts (EvalLog format 5); otherwise the report carries one note line.
"""

from __future__ import annotations

from analysis.rendering.markdown_text import md, p_cell
from analysis.reports.number_text import interval, num
from analysis.reports.undecided import UndecidedContrast, UndecidedSection

HEADING = "## Undecided: answers the reader could not settle"
MEANING = (
    "A sample is undecided when no answer was read from it, or when its reference is judged only by the "
    "`exact` fallback and the words differ: the reader cannot tell a wrong answer from one it could not "
    "read. It scores 0, so the headline counts it as wrong; the delta on decided samples leaves out every "
    "sample either arm of the contrast left undecided (paired by item and sample; each weighs the same)."
)


def _label(c: UndecidedContrast) -> str:
    return f"{md(c.arm)} vs {md(c.reference)}"


def differ_line(c: UndecidedContrast) -> str:
    """The note on a contrast whose arms' undecided shares differ (the change's sign-flip test)."""
    ch = c.change
    return (
        f"**{_label(c)}: the undecided shares differ** ({num(ch.share_ref, '.3f')} vs "
        f"{num(ch.share_arm, '.3f')}, change {num(ch.delta, '+.4f')} {interval(ch.ci95)}, sign-flip p "
        f"{p_cell(ch.p_value, ch.perm_n, ch.perm_exact)}): the headline compares arms whose reader settled "
        "different shares of their samples; read the delta on decided samples beside it."
    )


def lines(section: UndecidedSection | None, pct: str) -> list[str]:
    """The undecided section of a report, or nothing when the logs record no verdicts."""
    if section is None:
        return []
    arms = [
        f"| {md(a.arm)} | {num(a.undecided_share, '.3f')} | {a.n_undecided} of {a.n_samples} |"
        for a in section.arms
    ]
    rows = [
        f"| {_label(c)} | {num(c.change.delta, '+.4f')} {interval(c.change.ci95)} | "
        f"{num(c.headline_delta, '+.4f')} | "
        f"{num(c.decided_delta, '+.4f', 'n/a (none decided)')} {interval(c.decided_ci95)} | "
        f"{c.n_decided} of {c.n_samples} |"
        for c in section.contrasts
    ]
    notes = [differ_line(c) for c in section.contrasts if c.shares_differ]
    method = "; ".join(sorted({c.decided_ci95_method or "none" for c in section.contrasts})) or "none"
    return [
        HEADING,
        "",
        MEANING,
        "",
        "| arm | undecided share | undecided samples |",
        "| --- | --- | --- |",
        *arms,
        "",
        f"| contrast | undecided share change ({pct} CI) | headline delta | delta on decided samples "
        f"({pct} CI) | samples both decided |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Intervals: the change, as the answered share's; the decided delta, {md(method)}.",
        "",
        *(
            notes
            or ["No contrast's undecided shares differ (sign-flip test at alpha, interval excluding 0)."]
        ),
        "",
    ]
