"""The arm comparison rendered: its markdown, from the typed report, never a number of its own."""

from __future__ import annotations

from collections.abc import Callable

from analysis.rendering import contamination_text
from analysis.rendering import format_markdown as render_format
from analysis.rendering import undecided_markdown as render_undecided
from analysis.rendering.drawing import draw_here
from analysis.rendering.markdown_parts import (
    calibration_lines,
    items_link,
    prompting_lines,
    table,
    truncation_lines,
)
from analysis.rendering.markdown_text import (
    SIGNIFICANT,
    ci_percent,
    floor_notes,
    md,
    p_cell,
    significance_text,
)
from analysis.reports.number_text import interval, num, pvalue
from analysis.reports.report_files import report_json
from analysis.reports.report_models import ArmComparison, ArmContrast, Factorial


def _contrast_row(c: ArmContrast, fdr: float) -> list[str]:
    return [
        f"{md(c.arm)} vs {md(c.reference)}",
        md(c.attribution),
        num(c.naive_delta, "+.4f"),
        interval(c.ci95),
        num(c.adjusted_delta, "+.4f"),
        num(c.budget_confound, "+.4f"),
        num(c.cohens_dz, "+.3f"),
        num(c.mean_gen_tokens, ".1f"),
        f"{c.flips_fixed_b}/{c.flips_broke_c}",
        pvalue(c.mcnemar_p),
        p_cell(c.p_value, c.perm_n, c.perm_exact),
        pvalue(c.q_value),
        significance_text(c, fdr),
        md(c.claim),
        items_link(c.reference, c.arm),
    ]


def _contrast_header(pct: str) -> list[str]:
    return [
        "contrast", "attribution", "naive delta", f"{pct} CI", "adjusted", "confound", "d_z", "gen tokens",
        "b/c", "McNemar p", "p", "q", "significant", "claim", "browse",
    ]  # fmt: skip


def _opening_lines(r: ArmComparison) -> list[str]:
    """The title, the arms found, missing and left out, the base arm and how each arm was prompted."""
    return [
        "# Arm comparison: what caused the gain",
        "",
        f"Suite {md(r.suite)} (rev {md(r.suite_revision)}), {r.n_items} items, "
        f"{r.n_samples} samples per item, "
        f"logs from {md(r.logs_dir)}. Arms found: {', '.join(md(a) for a in r.arms_found)}."
        + (f" Not present: {', '.join(md(a) for a in r.arms_missing)}." if r.arms_missing else "")
        + "".join(f" **Not usable, left out: {md(u.arm)}** ({md(u.reason)})." for u in r.arms_unusable),
        "",
        f"{'Base' if r.base.arm == 'base' else md(r.base.arm)} mean score "
        f"{num(r.base.mean)}, "
        f"mean generated tokens {num(r.base.mean_gen_tokens, '.1f')}.",
        "",
        *prompting_lines(r.prompting),
    ]


def _contrast_lines(r: ArmComparison, pct: str) -> list[str]:
    """Every arm against the reference, the marginal contrasts, the ceiling's caveat and the forest plot."""
    fdr = r.settings.fdr
    header = _contrast_header(pct)
    if r.contrasts:
        mde = [
            "Minimum detectable effect (80% power): "
            + ", ".join(f"{md(c.arm)} {num(c.mde)}" for c in r.contrasts)
        ]
    else:
        mde = ["Only base is present: there is no contrast to report."]
    lines = [
        f"## Every arm against {md(r.base.arm)}",
        "",
        *mde,
        "",
        *table(header, [_contrast_row(c, fdr) for c in r.contrasts]),
        "",
    ]
    if r.marginal:
        lines += [
            "## Marginal parametric gain on top of an augmentation",
            "",
            *table(header, [_contrast_row(c, fdr) for c in r.marginal]),
            "",
        ]
    ceilings = [c.arm for c in r.contrasts if c.ceiling]
    if ceilings:
        lines += [
            f"**Ceiling:** {', '.join(md(c) for c in ceilings)} pulls every lever at once. Its delta is the "
            "system's ceiling, not evidence for any single cause; no parametric share is computed for it.",
            "",
        ]
    return [*lines, "![forest plot](arm_deltas.png)", ""]


def _family_lines(r: ArmComparison, pct: str) -> list[str]:
    """Each contrast's per-family rows (nothing without families)."""
    if not r.families:
        return []
    rows = [
        [
            f"{md(f.arm)} vs {md(f.reference)}",
            md(f.family),
            str(f.n_items),
            num(f.delta, "+.4f"),
            interval(f.ci95),
            p_cell(f.p_value, f.perm_n, f.perm_exact),
            pvalue(f.q_value),
            significance_text(f, r.settings.fdr),
            items_link(f.reference, f.arm, f.family),
        ]
        for f in r.families
    ]
    header = ["contrast", "family", "items", "delta", f"{pct} CI", "p", "q", "significant", "browse"]
    return ["## By item family", "", *table(header, rows), ""]


def _path_lines(r: ArmComparison) -> list[str]:
    """Each tool arm's samples by path verdict, with its tool calls counted (nothing without paths)."""
    if not r.paths:
        return []
    lines = ["## Tool-use paths (per sample)", ""]
    calls = {c.arm: c.tool_calls for c in r.contrasts}
    for arm in r.paths:
        n = calls.get(arm.arm)
        counted = (
            f"; {n.answered + n.failed} tool calls, {n.failed} failed, {n.restarts} server restarts"
            if n
            else ""
        )
        lines += [f"**{md(arm.arm)}** ({arm.n_samples} samples{counted})", ""]
        rows = [[md(v.path), str(v.count), num(v.share, ".3f"), num(v.accuracy, ".3f")] for v in arm.verdicts]
        lines += [*table(["path", "samples", "share", "accuracy"], rows), ""]
    return lines


def _closing_lines(r: ArmComparison, pct: str) -> list[str]:
    """Budget strata without support, the notes, and how every p, q, interval and verdict was made."""
    s = r.settings
    lines = [
        f"Budget strata without support for {md(c.arm)} vs {md(c.reference)}: "
        f"{md(', '.join(str(z) for z in c.budget_no_support))} (dropped; weights renormalised)."
        for c in [*r.contrasts, *r.marginal]
        if c.budget_no_support
    ]
    lines += [f"Note: {md(note)}" for note in r.notes]
    return [
        *lines,
        "",
        f"p: two-sided sign-flip permutation test; q: Benjamini-Hochberg over the {r.n_tests} arm "
        f"contrasts (against {md(r.base.arm)} and marginal"
        + (", trained vs base excepted" if r.primary_in_report else "")
        + "), and over the per-family rows of each contrast as a family of their own"
        + (
            "; trained vs base is decided as in the delta report (its q is the Holm-adjusted p over "
            "pass@1 and pass@K, at alpha: the claim's family), so both reports print one verdict"
            if r.primary_in_report
            else ""
        )
        + "; "
        + SIGNIFICANT.format(pct=pct)
        + f" (fdr {s.fdr}); negligible: significant but |delta| < {s.min_effect}. CIs: item-level "
        "paired bootstrap; adjusted: budget-stratified, descriptive only (it conditions on generated tokens, "
        "which the arm itself changes; the delta report's budget curve is the causal view). Settings: "
        f"{s.n_boot} resamples, "
        f"{s.n_perm} permutations, alpha {s.alpha}, seed {s.seed}.",
        "",
    ]


def arms_markdown(r: ArmComparison) -> str:
    """The arm comparison as markdown: every arm vs base, marginal contrasts, families, tool paths."""
    pct = ci_percent(r.settings.alpha)
    lines = [
        *_opening_lines(r),
        *_contrast_lines(r, pct),
        *contamination_text.arms_lines(r.contamination, pct),
        *(_factorial_lines(r.factorial, pct) if r.factorial else []),
        *_family_lines(r, pct),
        *_path_lines(r),
        *render_format.arms_lines(r, pct),
        *render_undecided.lines(r.undecided, pct),
        *(calibration_lines(r.calibration, pct, "arm_reliability.png") if r.has("calibration") else []),
        *truncation_lines(r.truncation, "the delta report's token budget curve"),
        *_closing_lines(r, pct),
    ]
    return floor_notes("\n".join(lines), r.settings.n_perm)


def _signed_cells(cells: dict[str, int]) -> str:
    """'trained+rag - trained - +rag + base': an effect's signed cells, in the estimator's order."""
    text = ""
    for i, (arm, coef) in enumerate(cells.items()):
        sign = ("- " if coef < 0 else "") if i == 0 else ("- " if coef < 0 else "+ ")
        text += ("" if i == 0 else " ") + sign + md(arm)
    return text


def _factorial_lines(f: Factorial, pct: str) -> list[str]:
    rows = []
    for e in f.effects:
        if e.estimate is None:
            value, ci = "not estimable", f"needs {', '.join(md(a) for a in e.missing_arms)}"
        else:
            value, ci = num(e.estimate, "+.4f"), interval(e.ci95)
        rows.append([md(e.effect), _signed_cells(e.cells), value, ci, md(e.reading or "")])
    return [
        "## Factorial read-out: training x retrieval x tools",
        "",
        "The arms are cells of a 2 x 2 x 2 design: "
        + ", ".join(f"{md(arm)} = ({', '.join(str(v) for v in cell)})" for arm, cell in f.cells.items())
        + " (training, retrieval, tools; 1 = on). Each effect is a paired contrast over items of the "
        "per-item means of k samples, the signed sum of the cells shown, with the interval of every mean "
        "contrast of the reports (item-level BCa from 100 items, else the sign-flip inversion); a main "
        "effect is its arm's row above, with that row's interval.",
        "",
        *table(["effect", "cells", "estimate", f"{pct} CI", "reading"], rows),
        "",
        "A main effect is its factor's arm minus base, the other two factors off. A two-way interaction "
        "A x B is (A+B - B) - (A - base): how much more (or less) A gains when B is on, the third factor "
        "off; training x retrieval is (trained+rag - +rag) - (trained - base). **complements**: the interval "
        "lies above 0, together they gain more than the sum of their separate gains; **substitutes**: below "
        "0, together they gain less (one does part of the other's work); otherwise **no interaction "
        "detected**, which is not evidence of additivity. Decided by the interval, never by a threshold. The "
        "three-way term (the change of an interaction when the third factor is switched on) needs all eight "
        "cells, the ceiling trained+rag+tools and +rag+tools (the base model with both) among them. The "
        "ceiling's delta over base is never decomposed into shares: where factors interact, no part of it "
        "belongs to any one of them.",
        "",
    ]


def outputs(
    report: ArmComparison,
    figure: Callable[[], bytes] | None = None,
    reliability: Callable[[], bytes] | None = None,
) -> dict[str, bytes]:
    """The files of an arm comparison: its JSON, markdown, forest plot and reliability diagram.

    figure, reliability: the forest plot and the diagram already under way (Drawing.submit), else each is
    drawn here.
    """
    figure = figure or (lambda: draw_here("forest_figure", report))
    diagram = reliability or (lambda: draw_here("reliability_figure", report))
    return {
        "arm_comparison_report.json": report_json(report),
        "arm_comparison_report.md": arms_markdown(report).encode(),
        "arm_deltas.png": figure(),
        "arm_reliability.png": diagram(),
    }
