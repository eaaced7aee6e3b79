"""The trajectory report rendered: its markdown, from the typed report, never a number of its own."""

from __future__ import annotations

from collections.abc import Callable

from analysis.rendering import format_markdown as render_format
from analysis.rendering import undecided_markdown as render_undecided
from analysis.rendering.html_page import markdown_page
from analysis.rendering.markdown_parts import (
    prompting_lines,
    table,
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
from analysis.reports.report_models import TrajectoryReport, TrajectoryRow


def _trajectory_row(row: TrajectoryRow, fdr: float) -> list[str]:
    if row.ci95 is None:
        return [md(row.arm), md(row.model_name), num(row.mean_arm), "reference", "", "", "", ""]
    return [
        md(row.arm),
        md(row.model_name),
        num(row.mean_arm),
        num(row.delta, "+.4f"),
        interval(row.ci95),
        p_cell(row.p_value, row.perm_n, row.perm_exact),
        pvalue(row.q_value),
        significance_text(row, fdr),
    ]


def trajectory_markdown(r: TrajectoryReport) -> str:
    """The trajectory report as markdown: checkpoints over the reference, the placebo, the reward claim."""
    s = r.settings
    pct = ci_percent(s.alpha)
    lines = ["# Checkpoint trajectory", ""]
    if r.status != "done":
        return "\n".join([*lines, f"**{md(r.status.capitalize())}**: {md(r.detail)}.", ""])
    ref = r.trajectory[0].arm
    header = ["arm", "model", "mean", f"delta over {md(ref)}", f"{pct} CI", "p", "q", "significant"]
    lines += [
        f"Suite {md(r.suite)} (rev {md(r.suite_revision)}), {r.n_items} items, {r.n_samples} "
        f"samples per item, every arm at the matched protocol (checked). Checkpoints in training order: "
        + ", ".join(md(c) for c in r.checkpoints)
        + (f"; placebo: {md(r.placebo)}." if r.placebo else "; no placebo."),
        "",
        *prompting_lines(r.prompting),
        f"**Reward claim:** {md(r.reward_claim)}",
        "",
        "## Every checkpoint against the reference",
        "",
        *table(header, [_trajectory_row(row, s.fdr) for row in r.trajectory]),
        "",
    ]
    if r.placebo_delta is not None:
        rc = r.reward_contrast
        lines += [
            "## The placebo: the same trainer with a random reward",
            "",
            *table(header, [_trajectory_row(r.placebo_delta, s.fdr)]),
            "",
            *table(
                ["contrast", "delta", f"{pct} CI", "p", "q", "significant"],
                [
                    [
                        f"{md(rc.arm)} vs {md(rc.reference)}",
                        num(rc.delta, "+.4f"),
                        interval(rc.ci95),
                        p_cell(rc.p_value, rc.perm_n, rc.perm_exact),
                        pvalue(rc.q_value),
                        significance_text(rc, s.fdr),
                    ]
                ],
            ),
            "",
        ]
    lines += render_format.trajectory_lines(r, pct)
    lines += render_undecided.lines(r.undecided, pct)
    lines += [
        "![trajectory](trajectory.png)",
        "",
        # Without a placebo there is no reward claim, and the limits of one are not this page's.
        f"What the claim rests on and what it does not cover: {md(r.limits)}"
        if r.placebo
        else "What this rests on: one training run; the intervals cover the items and the evaluation's "
        "samples, not the spread between training runs (seeds), which only more runs would measure.",
        "",
    ]
    for note in r.notes:
        lines.append(f"Note: {md(note)}")
    lines += [
        "Deltas: paired over items (per-item means of k samples), item-level paired bootstrap CIs; p: "
        "two-sided sign-flip permutation test; q: "
        + (
            f"Benjamini-Hochberg over the report's {r.n_tests} contrasts; "
            if r.n_tests
            else "no contrast besides trained vs base, whose q is its Holm-adjusted p; "
        )
        + SIGNIFICANT.format(pct=pct)
        + f" (fdr {s.fdr}). Settings: {s.n_boot} "
        f"resamples, {s.n_perm} permutations, alpha {s.alpha}, seed {s.seed}.",
        "",
    ]
    return floor_notes("\n".join(lines), s.n_perm)


def metrics_markdown(report: TrajectoryReport) -> str:
    """The paper metrics of every checkpoint as a markdown table (empty when the report is short)."""
    rows = report.metrics
    if not rows:
        return ""
    k = rows[0].k
    lines = [
        "",
        "## Paper metrics by step",
        "",
        f"Over all {rows[0].n_items} items (analysis/estimators/paper_metrics.py; the benchmark table has "
        "them per family).",
        "",
        f"| arm | step | avg@{k} ± sd over runs | maj@{k} | pass@{k} | pass^{k} | Bayes@{k} ± sd |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        maj = "n/a" if r.maj is None else f"{r.maj:.3f}"
        step = "n/a" if r.step is None else str(r.step)
        lines.append(
            f"| {md(r.arm)} | {step} | {_with_sd(r.avg, r.avg_sd)} | {maj} | "
            f"{r.pass_at_k:.3f} | {r.pass_hat:.3f} | {r.bayes:.3f} ± {r.bayes_sd:.3f} |"
        )
    return "\n".join(lines) + "\n"


def _with_sd(value: float, sd: float | None) -> str:
    """'0.412 ± 0.013', or the value alone where the spread is undefined (one run)."""
    return f"{value:.3f}" if sd is None else f"{value:.3f} ± {sd:.3f}"


def outputs(
    report: TrajectoryReport, figure: Callable[[], bytes], metrics_figure: Callable[[], bytes]
) -> dict[str, bytes]:
    """The files of the trajectory report: its JSON, markdown, the HTML the report page links to, figures."""
    text = trajectory_markdown(report) + metrics_markdown(report)
    return {
        "trajectory_report.json": report_json(report),
        "trajectory_report.md": text.encode(),
        # The HTML rendering the report page links to.
        "trajectory_report.html": markdown_page(text, "Checkpoint trajectory").encode(),
        "trajectory.png": figure(),
        "trajectory_metrics.png": metrics_figure(),
    }
