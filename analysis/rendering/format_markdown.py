"""The FORMAT sections in markdown (analysis.reports.answering): answered shares, the lenient reader, FORMAT.

Printed only where the logs record the lenient reader's scores; otherwise a report carries one note line
(analysis.reports.answering.not_recorded) and renders as it did before.
"""

from __future__ import annotations

from analysis.rendering.markdown_text import md, p_cell, significance_text
from analysis.reports.format_effect import RATIO_METHOD, SHARE_METHOD
from analysis.reports.number_text import interval, num, pvalue
from analysis.reports.report_models import ArmComparison, DeltaReport, TrajectoryReport
from analysis.reports.report_parts import ArmAnswering, FormatContrast

HEADING = "## Format or reasoning: the answered share and the lenient reader"
READERS = (
    "Two readers of the same generations: the report's reader (the prompt's answer rule, else the parity "
    "reader) scores every other number of this report; the lenient reader reads with every rule, the "
    "verifier's fallbacks included. A sample is answered when the report's reader read an answer from it. "
    "A significant change under the report's reader that the lenient reader does not find is **FORMAT**: "
    "the model writes its answer where the reader looks (more or less often), it does not answer right "
    "more or less often. The lenient rows are decided as the report's reader's rows are: trained vs base "
    "by Holm over pass@1 and pass@K at alpha (the claim's family), every other row by its sign-flip p at "
    "the fdr (unadjusted) and its interval."
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def arm_lines(arms: list[ArmAnswering], pct: str) -> list[str]:
    """The per-arm table: answered share, accuracy among answered, mean under the lenient reader."""
    rows = [
        [
            md(a.arm),
            f"{num(a.answered_share, '.3f')} {interval(a.answered_ci95, '.3f')}",
            (
                f"{num(a.accuracy_answered, '.3f')} {interval(a.accuracy_answered_ci95, '.3f')}"
                if a.accuracy_answered is not None
                else "n/a (no answer read)"
            ),
            f"{a.n_answered if a.n_answered is not None else 'n/a'} of {a.n_samples}",
            num(a.lenient_mean, ".3f", "not recorded"),
        ]
        for a in arms
    ]
    header = ["arm", f"answered share ({pct} CI)", f"accuracy among answered ({pct} CI)", "answered samples",
              "mean under the lenient reader"]  # fmt: skip
    lines = [*_table(header, rows), ""]
    if any(a.answered_share is not None for a in arms):
        # The method the arms' intervals name (a constant share's is a point), else the usual one.
        share = _method([a.answered_ci95_method for a in arms], SHARE_METHOD)
        ratio = _method([a.accuracy_answered_ci95_method for a in arms], RATIO_METHOD)
        lines += [
            f"Intervals: answered share, {md(share)}; accuracy among answered (the answered samples' scores "
            f"over their number, pooled over the suite), {md(ratio)}.",
            "",
        ]
    return lines


def _method(methods: list[str | None], usual: str) -> str:
    named = sorted({m for m in methods if m and m != "point (constant)"})
    return "; ".join(named) if named else usual


def contrast_rows(label: str, f: FormatContrast) -> list[list[str]]:
    """The lenient rows of one contrast: pass@1 (and pass@K), the answered share's change."""
    lenient = f.lenient
    rows = [
        [
            f"{label}: lenient reader, mean score",
            num(lenient.delta, "+.4f"),
            interval(lenient.ci95),
            md(lenient.ci95_method or ""),
            p_cell(lenient.p_value, lenient.perm_n, bool(lenient.perm_exact)),
            _yes(bool(lenient.significant))
            + (f" (Holm p {pvalue(lenient.q_value)})" if lenient.q_value is not None else ""),
        ]
    ]
    if f.lenient_top_k is not None:
        t = f.lenient_top_k
        rows.append([f"{label}: lenient reader, pass@{t.k}", num(t.delta, "+.4f"), interval(t.ci95),
                     md(t.ci95_method), pvalue(t.p_value),
                     _yes(t.significant) + f" (Holm p {pvalue(t.p_holm)})"])  # fmt: skip
    c = f.answered_change
    if c is not None:
        p = p_cell(c.p_value, c.perm_n, c.perm_exact)
        rows.append([f"{label}: answered share", num(c.delta, "+.4f"), interval(c.ci95), md(c.ci95_method),
                     p, _yes(c.significant) + " (descriptive)"])  # fmt: skip
    return rows


CONTRAST_HEADER = ["contrast", "delta", "{pct} CI", "CI method", "sign-flip p", "significant"]


def contrast_table(rows: list[list[str]], pct: str) -> list[str]:
    """The table of lenient rows, under the shared header."""
    return [*_table([h.format(pct=pct) for h in CONTRAST_HEADER], rows), ""]


def call_line(label: str, f: FormatContrast) -> str:
    """The FORMAT call of one contrast, with its reason."""
    return f"**{md(label)}: {md(f.call or 'no FORMAT call')}.** {md(f.detail)}"


def delta_lines(r: DeltaReport, pct: str) -> list[str]:
    """The delta report's format section, or nothing when the lenient reader is not recorded."""
    f = r.format
    if f is None or f.contrast is None:
        return []
    label = f"{md(r.post_arm)} vs {md(r.pre_arm)}"
    headline = [
        f"{label}: report's reader, mean score (the headline)",
        num(r.delta_mean, "+.4f"),
        interval(r.delta_ci95),
        md(r.delta_ci95_method),
        p_cell(r.perm_p, r.perm_n, r.perm_exact),
        _yes(bool(r.verdict.significant)) + " (Holm, the verdict)" if r.verdict else "n/a",
    ]
    return [
        HEADING,
        "",
        READERS,
        "",
        *arm_lines(f.arms, pct),
        *contrast_table([headline, *contrast_rows(label, f.contrast)], pct),
        (
            f"**{label}: {md(f.contrast.call)}**, the claim above."
            if f.contrast.call
            else call_line(label, f.contrast)
        ),
        "",
    ]


def _strict_row(
    label: str, delta: float, ci: list | None, method: str | None, row: object, fdr: float
) -> list[str]:
    """A contrast under the report's reader, beside its lenient rows."""
    return [
        f"{label}: report's reader, mean score",
        num(delta, "+.4f"),
        interval(ci),
        md(method or ""),
        p_cell(row.p_value, row.perm_n, bool(row.perm_exact)),  # type: ignore[attr-defined]
        significance_text(row, fdr) + " (the report's verdict)",
    ]


def rows_lines(
    rows: list[tuple[str, list[str], FormatContrast]], arms: list[ArmAnswering], pct: str
) -> list[str]:
    """The format section of a report of several contrasts: arms, each contrast's readers, the calls."""
    table: list[list[str]] = []
    for label, strict, f in rows:
        table += [strict, *contrast_rows(label, f)]
    calls = [call_line(label, f) for label, _, f in rows if f.call]
    return [
        HEADING,
        "",
        READERS,
        "",
        *arm_lines(arms, pct),
        *contrast_table(table, pct),
        *(calls or ["No contrast is FORMAT."]),
        "",
    ]


def arms_lines(r: ArmComparison, pct: str) -> list[str]:
    """The arm comparison's format section, or nothing when the lenient reader is not recorded."""
    rows = []
    for c in [*r.contrasts, *r.marginal]:
        if c.format is None:
            continue
        label = f"{md(c.arm)} vs {md(c.reference)}"
        strict = _strict_row(label, c.naive_delta, c.ci95, c.ci95_method, c, r.settings.fdr)
        rows.append((label, strict, c.format))
    if not rows or not r.answering:
        return []
    return rows_lines(rows, r.answering, pct)


def trajectory_lines(r: TrajectoryReport, pct: str) -> list[str]:
    """The trajectory's format section, or nothing when the lenient reader is not recorded."""
    rows = []
    for row in [*(r.trajectory or [])[1:], r.placebo_delta, r.reward_contrast]:
        if row is None or row.format is None:
            continue
        label = f"{md(row.arm)} vs {md(row.reference)}"
        strict = _strict_row(label, row.delta, row.ci95, row.ci95_method, row, r.settings.fdr)
        rows.append((label, strict, row.format))
    if not rows or not r.answering:
        return []
    return rows_lines(rows, r.answering, pct)
