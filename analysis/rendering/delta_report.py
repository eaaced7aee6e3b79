"""The delta report rendered: its markdown and its files, from the typed report, never a number of its own.

The figures are drawn by analysis.rendering.figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
from analysis.reports.report_models import Crossover, DeltaReport, NoiseFloor, Verdict
from contract.protocol import LOG_FIELDS, MATCHED_LOG_FIELDS

# ---------------------------------------------------------------------------------------------------------
# Delta report


def _noise_rows(nf: NoiseFloor | None, pct: str) -> list[list[str]]:
    if nf is None:
        return [["noise floor (A/A)", "n/a: one sample per item, no halves to compare"]]
    return [
        [
            f"noise floor: pre against itself, {nf.half} vs {nf.half} of its samples per item "
            f"(A/A delta, {pct} CI)",
            f"{num(nf.delta, '+.4f')} {interval(nf.ci95)}",
        ],
        [
            f"A/A: items whose verdict flips between halves; false-positive rate of the {pct} CI over "
            f"{nf.n_splits} random splits{_fpr_resamples(nf)} (expected near alpha)",
            f"{num(nf.flip_share, '.3f')}; {num(nf.false_positive_rate, '.3f')}",
        ],
    ]


def _fpr_resamples(nf: NoiseFloor) -> str:
    """How many resamples each split's interval used, where the report records it."""
    return f", {nf.fpr_n_boot:,} resamples each" if nf.fpr_n_boot else ""


def _verdict_decision(v: Verdict, ci95: list[float | None]) -> dict[str, Any]:
    """The verdict as significance_text reads a contrast: its interval is the headline's, its q the Holm p."""
    return {"significant": v.significant, "negligible": v.negligible, "ci95": ci95, "q_value": v.p_holm,
            "decided_by": v.decided_by}  # fmt: skip


def _verdict_rows(r: DeltaReport, pct: str) -> list[list[str]]:
    """The headline's verdict: the one rule of analysis.reports.contrasts, as every report prints it."""
    v = r.verdict
    if v is None:
        return []
    rows = [
        [
            f"**verdict** (Holm-adjusted p <= alpha and the {pct} CI excludes 0; {md(v.decided_by)})",
            f"**{significance_text(_verdict_decision(v, r.delta_ci95), 0.0)}**, Holm p {pvalue(v.p_holm)}",
        ]
    ]
    if v.n_tests == 2:
        top = r.pass_at_k[-1]
        rows.append(
            [
                f"pass@{v.top_k}: sign-flip p of the per-item pass@{v.top_k} differences, Holm p, "
                "significant",
                f"{pvalue(v.top_k_perm_p)}, {pvalue(v.top_k_p_holm)}, "
                + ("yes" if v.top_k_significant else "no")
                + f" (CI {interval(top.delta_ci95)})",
            ]
        )
    rows.append(
        [
            "McNemar (below) and Cohen's d_z",
            "descriptive: the verdict rests on the sign-flip test and the interval above, never on them",
        ]
    )
    return rows


def _crossover_lines(c: Crossover | None, pct: str) -> list[str]:
    if c is None:
        return []
    return [
        f"**pass@k crossover:** {md(c.text)} (Each k's {pct} interval of the pass@k delta from the same "
        "draw as the table, pointwise: a description of the curves, not a tested claim.)",
        "",
    ]


def _sensitivity(r: DeltaReport) -> str:
    """The minimum detectable effect sentence, or why it is not estimable."""
    mde = r.mde
    if mde.mde is None:
        return f"**Minimum detectable effect: not estimable**: {md(mde.reason)}."
    return (
        f"**Minimum detectable effect: {num(mde.mde)}** ({mde.power:.0%} power, two-sided alpha "
        f"{mde.alpha}, {mde.n_items} items x {mde.k} samples; between-item variance of the "
        f"differences {num(mde.between_item_var, '.3g')}, within-item variance "
        f"{num(mde.within_item_var, '.3g')} / k). A smaller true delta is not reliably visible at this "
        "suite size."
    )


def _protocol_rows(mp: dict[str, Any]) -> list[list[str]]:
    """The matched protocol, one row per field both logs share."""
    rows = [[f, md(repr(mp[f]))] for f in MATCHED_LOG_FIELDS]
    rows += [[f, md(repr(mp[f]))] for f in ("suite", "suite_revision")]
    if mp.get("protocol"):
        # Said once: a protocol key the log carries at its top level too (k: n_samples) is in the rows above.
        rows += [
            [f"protocol.{k}", md(repr(v))]
            for k, v in mp["protocol"].items()
            if not (k in LOG_FIELDS and mp.get(LOG_FIELDS[k]) == v)
        ]
    rows.append(["items", f"{mp['n_items']} identical item ids"])
    return rows


def _opening_lines(r: DeltaReport) -> list[str]:
    """The title, the sensitivity, the claim, the suite and models, the prompting and the matched protocol."""
    return [
        "# Reasoning delta report",
        "",
        _sensitivity(r),
        "",
        f"**Claim: {md(r.claim)}.** {md(r.claim_detail)}",
        "",
        *contamination_text.verdict_line(r.contamination),
        f"Suite {md(r.suite)} (rev {md(r.suite_revision)}), {r.n_items} items, "
        f"{r.n_samples} samples per item. "
        f"pre = {md(r.pre_model)} ({md(r.pre_log)}), post = {md(r.post_model)} "
        f"({md(r.post_log)}). " + md(r.generated or f"Measured with driver {r.driver}, {r.measured_at}."),
        "",
        *prompting_lines(r.prompting),
        "## Matched protocol (checked, identical in both logs)",
        "",
        *table(["field", "value"], _protocol_rows(r.matched_protocol)),
    ]


def _headline_lines(r: DeltaReport, pct: str) -> list[str]:
    """The headline table: both means, the paired delta with its interval, test, verdict and effect size."""
    rows = [
        ["mean pre", num(r.mean_pre)],
        ["mean post", num(r.mean_post)],
        ["**delta (paired)**", f"**{num(r.delta_mean, '+.4f')}**"],
        [
            f"{pct} CI of the delta (item-level paired bootstrap, {md(r.delta_ci95_method)})",
            interval(r.delta_ci95),
        ],
        *_noise_rows(r.noise_floor, pct),
        [
            f"sign-flip permutation p ({'exact' if r.perm_exact else 'Monte Carlo'}, "
            f"{r.perm_n} sign vectors)",
            p_cell(r.perm_p, r.perm_n, r.perm_exact),
        ],
        *_verdict_rows(r, pct),
        [
            f"Cohen's d_z [noncentral-t {pct} CI]",
            f"{num(r.cohens_dz, '+.3f')} {interval(r.cohens_dz_ci95, '+.3f')}",
        ],
        ["pair correlation rho", num(r.pair_correlation_rho, ".3f")],
    ]
    return [
        "",
        "## Headline: mean score per sample",
        "",
        *table(["quantity", "value"], rows),
        "",
        "Each number carries one interval, its method named beside it: the mean delta (and pass@1, the "
        "same number with 0/1 scores) the item-level paired bootstrap above; the other pass@k values the "
        "cluster bootstrap, which resamples items with their k samples (Field & Welsh 2007: the top level "
        "only).",
        "",
    ]


def _flips_and_passk_lines(r: DeltaReport, pct: str) -> list[str]:
    """The items whose majority verdict flipped, and pass@k of both arms with the delta at each k."""
    passk_rows = [
        [
            str(row.k),
            f"{num(row.pre)} {interval(row.pre_ci95, '.4f')}",
            f"{num(row.post)} {interval(row.post_ci95, '.4f')}",
            num(row.delta, "+.4f"),
            interval(row.delta_ci95),
            md(row.delta_ci95_method),
        ]
        for row in r.pass_at_k
    ]
    return [
        "## Item-level flips (majority verdict: item mean >= 0.5)",
        "",
        f"- wrong -> right (b): {r.flips_wrong_to_right}",
        f"- right -> wrong (c): {r.flips_right_to_wrong}",
        f"- McNemar exact p = {pvalue(r.mcnemar_p)}; continuity-corrected chi2 = "
        f"{num(r.mcnemar_chi2, '.3f')}, p = {pvalue(r.mcnemar_chi2_p)}",
        f"- {items_link(r.pre_arm, r.post_arm)}: each with its question, prompts, samples and transcripts",
        "",
        f"## pass@k (unbiased estimator, {pct} CIs)",
        "",
        *table(["k", "pre", "post", "delta", f"delta {pct} CI", "delta CI method"], passk_rows),
        "",
        "![pass@k](passk_curve.png)",
        "",
        *_crossover_lines(r.crossover, pct),
    ]


def _budget_lines(r: DeltaReport, pct: str) -> list[str]:
    """Both arms' accuracy at each token budget (nothing when the logs do not record tokens)."""
    if not r.budget_curve:
        return []
    rows = [
        [str(p.budget), num(p.pre), num(p.post), num(p.delta, "+.4f"), interval(p.ci95)]
        for p in r.budget_curve
    ]
    return [
        "## Token budget curve",
        "",
        "Accuracy when every sample that did not finish within B generated tokens counts as wrong "
        f"(what a run capped at B would score); delta post - pre with its {pct} CI (item-level paired "
        "bootstrap).",
        "",
        *table(["budget B", "pre", "post", "delta", f"{pct} CI"], rows),
        "",
    ]


def _family_lines(r: DeltaReport, pct: str) -> list[str]:
    """Each item family's delta with its interval, test and verdict (nothing without families)."""
    if not r.families:
        return []
    rows = [
        [
            md(f.family),
            str(f.n_items),
            num(f.mean_pre),
            num(f.mean_post),
            num(f.delta, "+.4f"),
            interval(f.ci95),
            p_cell(f.p_value, f.perm_n, f.perm_exact),
            pvalue(f.q_value),
            significance_text(f, r.settings.fdr),
            items_link(r.pre_arm, r.post_arm, f.family),
        ]
        for f in r.families
    ]
    header = ["family", "items", "pre", "post", "delta", f"{pct} CI", "p", "q (BH)", "significant", "browse"]
    return [
        "## By item family",
        "",
        *table(header, rows),
        "",
        f"q: Benjamini-Hochberg over the {len(r.families)} family contrasts; "
        + SIGNIFICANT.format(pct=pct)
        + ".",
        "",
    ]


def delta_markdown(r: DeltaReport) -> str:
    """The delta report as markdown: sensitivity first, then claim, protocol, headline, flips, pass@k."""
    s = r.settings
    pct = ci_percent(s.alpha)
    lines = [
        *_opening_lines(r),
        *_headline_lines(r, pct),
        *contamination_text.split_lines(r.contamination, pct, s.fdr),
        *render_format.delta_lines(r, pct),
        *render_undecided.lines(r.undecided, pct),
        *_flips_and_passk_lines(r, pct),
        *_budget_lines(r, pct),
        *_family_lines(r, pct),
        *calibration_lines(r.calibration, pct, "reliability.png"),
        *truncation_lines(r.truncation, "the token budget curve above"),
        *[f"Note: {md(note)}" for note in r.notes],
        f"Settings: {s.n_boot} bootstrap resamples, {s.n_perm} sign-flip permutations, "
        f"alpha {s.alpha}, seed {s.seed}.",
        "",
    ]
    return floor_notes("\n".join(lines), s.n_perm)


def outputs(
    report: DeltaReport,
    figure: Callable[[], bytes] | None = None,
    reliability: Callable[[], bytes] | None = None,
) -> dict[str, bytes]:
    """The files of a delta report: delta_report.json and its renderings (markdown, pass@k figure, diagram).

    figure, reliability: the pass@k figure and the reliability diagram already under way (Drawing.submit),
    else each is drawn here.
    """
    figure = figure or (lambda: draw_here("passk_figure", report))
    diagram = reliability or (lambda: draw_here("reliability_figure", report))
    return {
        "delta_report.json": report_json(report),
        "delta_report.md": delta_markdown(report).encode(),
        "passk_curve.png": figure(),
        "reliability.png": diagram(),
    }
