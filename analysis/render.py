"""Markdown renderings of the typed reports (analysis.report_models), never a number of their own.

The figures are drawn by analysis.figures.

Every contrast row links to the item browser (analysis.item_browser, written by the report stage one folder
up), opened on the items that flipped between the row's two arms.
"""

from __future__ import annotations

from typing import Any

from analysis import render_format
from analysis.mdtext import SIGNIFICANT, ci_percent, items_href, md, p_text, significance_text
from analysis.numbers import interval, num, pvalue
from analysis.report_models import (
    ArmComparison,
    ArmContrast,
    Calibration,
    Crossover,
    DeltaReport,
    Factorial,
    NoiseFloor,
    TrajectoryReport,
    TrajectoryRow,
    Truncation,
    Verdict,
)
from contract.protocol import MATCHED_LOG_FIELDS


def _items_link(ref: str, arm: str, family: str | None = None) -> str:
    """A markdown link to the item browser on the items that flipped from ref to arm."""
    return f"[flipped items]({items_href(ref, arm, family)})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


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


def truncation_lines(t: Truncation | None, curve: str) -> list[str]:
    """The section on samples that ended at the budget (analysis.truncation), or nothing without one."""
    if not t or all(a.samples is None for a in t.arms):
        return []
    lines = ["## Samples that ended at the budget", ""]
    lines += _table(
        ["arm", "samples", f"ended at the budget (finish reason {t.finish_reason})", "share"],
        [
            [md(a.arm), str(a.samples if a.samples is not None else "-"),
             str(a.at_budget if a.at_budget is not None else "not recorded"), num(a.share, ".1%")]
            for a in t.arms
        ],
    )  # fmt: skip
    gap = t.share_gap
    lines += [
        "",
        f"Every arm had the same budget of {t.max_tokens} generated tokens (max_tokens): a sample ending "
        "there was cut off, and it scores as wrong unless its answer came before the cut (one cut inside its "
        "thinking has no answer). A gap between arms in this share is a budget effect inside the accuracy "
        "delta: one arm writes or thinks longer, which is not the same as reasoning worse"
        + (f" (here the shares differ by up to {gap:.1%})" if gap else "")
        + f"; {curve} shows the delta at smaller budgets.",
        "",
    ]
    return lines


def _prompting_lines(prompting: dict[str, str] | None) -> list[str]:
    """One line naming how each arm was prompted (format, template sha256, few-shot pin), then a blank."""
    if not prompting:
        return []
    return ["Prompts: " + "; ".join(f"{md(arm)}: {md(line)}" for arm, line in prompting.items()) + ".", ""]


def _verdict_decision(v: Verdict, ci95: list[float | None]) -> dict[str, Any]:
    """The verdict as significance_text reads a contrast: its interval is the headline's, its q the Holm p."""
    return {"significant": v.significant, "negligible": v.negligible, "ci95": ci95, "q_value": v.p_holm,
            "decided_by": v.decided_by}  # fmt: skip


def _verdict_rows(r: DeltaReport, pct: str) -> list[list[str]]:
    """The headline's verdict: the one rule of analysis.contrasts, as every report prints it."""
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


def calibration_lines(c: Calibration | None, pct: str, figure: str) -> list[str]:
    """The calibration section (analysis.calibration): ECE per arm, each arm's ECE delta, the diagram."""
    if c is None:
        return [
            "## Calibration (ECE)",
            "",
            "Not available: the logs record no sample's answer, so no item has a majority answer to be "
            "confident in.",
            "",
        ]
    lines = [
        "## Calibration (ECE)",
        "",
        f"Confidence of an item's answer: the {md(c.confidence)}; right when those samples scored right. "
        f"ECE over {c.n_bins} equal-width bins, its {pct} interval a percentile bootstrap of items (ECE "
        "is recomputed on each resample, not averaged); each delta a paired bootstrap (the same item "
        "indices for both arms), significant when its bootstrap p <= alpha and its interval excludes 0, "
        f"negligible below {c.min_effect}.",
        "",
        *_table(
            ["arm", "ECE", f"{pct} CI", "mean confidence", "accuracy of the majority answer"],
            [
                [
                    md(a.arm),
                    num(a.ece),
                    interval(a.ci95, ".4f"),
                    num(a.mean_confidence),
                    num(a.accuracy),
                ]
                for a in c.arms
            ],
        ),  # fmt: skip
        "",
    ]
    if c.deltas:
        lines += _table(
            ["contrast", "ECE delta", f"{pct} CI (paired)", "bootstrap p", "significant"],
            [
                [
                    f"{md(d.arm)} vs {md(d.reference)}",
                    num(d.delta, "+.4f"),
                    interval(d.ci95),
                    pvalue(d.p_value),
                    ("yes (negligible)" if d.negligible else "yes") if d.significant else "no",
                ]
                for d in c.deltas
            ],
        )
        lines.append("")
    if c.arms_without_answers:
        lines += [f"No answers recorded for {', '.join(md(a) for a in c.arms_without_answers)}.", ""]
    lines += [f"![reliability diagram]({figure})", ""]
    return lines


def _crossover_lines(c: Crossover | None, pct: str) -> list[str]:
    if c is None:
        return []
    return [
        f"**pass@k crossover:** {md(c.text)} (Each k's {pct} interval of the pass@k delta from the same "
        "draw as the table, pointwise: a description of the curves, not a tested claim.)",
        "",
    ]


def delta_markdown(r: DeltaReport) -> str:
    """The delta report as markdown: sensitivity first, then claim, protocol, headline, flips, pass@k."""
    mde = r.mde
    within = mde.within_item_var
    s = r.settings
    pct = ci_percent(s.alpha)
    sensitivity = (
        f"**Minimum detectable effect: {num(mde.mde)}** ({mde.power:.0%} power, two-sided alpha "
        f"{mde.alpha}, {mde.n_items} items x {mde.k} samples; between-item variance of the "
        f"differences {num(mde.between_item_var, '.3g')}, within-item variance "
        f"{num(within, '.3g')} / k). A smaller true delta is not reliably visible at this suite size."
        if mde.mde is not None
        else f"**Minimum detectable effect: not estimable**: {md(mde.reason)}."
    )
    lines = [
        "# Reasoning delta report",
        "",
        sensitivity,
        "",
        f"**Claim: {md(r.claim)}.** {md(r.claim_detail)}",
        "",
        f"Suite {md(r.suite)} (rev {md(r.suite_revision)}), {r.n_items} items, "
        f"{r.n_samples} samples per item. "
        f"pre = {md(r.pre_model)} ({md(r.pre_log)}), post = {md(r.post_model)} "
        f"({md(r.post_log)}). " + md(r.generated or f"Measured with driver {r.driver}, {r.measured_at}."),
        "",
        *_prompting_lines(r.prompting),
        "## Matched protocol (checked, identical in both logs)",
        "",
    ]
    mp = r.matched_protocol
    proto_rows = [[f, md(repr(mp[f]))] for f in MATCHED_LOG_FIELDS]
    proto_rows += [[f, md(repr(mp[f]))] for f in ("suite", "suite_revision")]
    if mp.get("protocol"):
        proto_rows += [[f"protocol.{k}", md(repr(v))] for k, v in mp["protocol"].items()]
    proto_rows.append(["items", f"{mp['n_items']} identical item ids"])
    lines += _table(["field", "value"], proto_rows)
    lines += [
        "",
        "## Headline: mean score per sample",
        "",
        *_table(
            ["quantity", "value"],
            [
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
                    p_text(r.perm_p, r.perm_n, r.perm_exact),
                ],
                *_verdict_rows(r, pct),
                [
                    f"Cohen's d_z [noncentral-t {pct} CI]",
                    f"{num(r.cohens_dz, '+.3f')} {interval(r.cohens_dz_ci95, '+.3f')}",
                ],
                ["pair correlation rho", num(r.pair_correlation_rho, ".3f")],
            ],
        ),
        "",
        "Each number carries one interval, its method named beside it: the mean delta (and pass@1, the "
        "same number with 0/1 scores) the item-level paired bootstrap above; the other pass@k values the "
        "cluster bootstrap, which resamples items with their k samples (Field & Welsh 2007: the top level "
        "only).",
        "",
        *render_format.delta_lines(r, pct),
        "## Item-level flips (majority verdict: item mean >= 0.5)",
        "",
        f"- wrong -> right (b): {r.flips_wrong_to_right}",
        f"- right -> wrong (c): {r.flips_right_to_wrong}",
        f"- McNemar exact p = {pvalue(r.mcnemar_p)}; continuity-corrected chi2 = "
        f"{num(r.mcnemar_chi2, '.3f')}, p = {pvalue(r.mcnemar_chi2_p)}",
        f"- {_items_link(r.pre_arm, r.post_arm)}: each with its question, prompts, samples and transcripts",
        "",
        f"## pass@k (unbiased estimator, {pct} CIs)",
        "",
        *_table(
            ["k", "pre", "post", "delta", f"delta {pct} CI", "delta CI method"],
            [
                [
                    str(row.k),
                    f"{num(row.pre)} {interval(row.pre_ci95, '.4f')}",
                    f"{num(row.post)} {interval(row.post_ci95, '.4f')}",
                    num(row.delta, "+.4f"),
                    interval(row.delta_ci95),
                    md(row.delta_ci95_method),
                ]
                for row in r.pass_at_k
            ],
        ),
        "",
        "![pass@k](passk_curve.png)",
        "",
        *_crossover_lines(r.crossover, pct),
    ]
    if r.budget_curve:
        lines += [
            "## Token budget curve",
            "",
            "Accuracy when every sample that did not finish within B generated tokens counts as wrong "
            f"(what a run capped at B would score); delta post - pre with its {pct} CI (item-level paired "
            "bootstrap).",
            "",
            *_table(
                ["budget B", "pre", "post", "delta", f"{pct} CI"],
                [
                    [
                        str(p.budget),
                        num(p.pre),
                        num(p.post),
                        num(p.delta, "+.4f"),
                        interval(p.ci95),
                    ]
                    for p in r.budget_curve
                ],
            ),
            "",
        ]
    if r.families:
        lines += ["## By item family", ""]
        lines += _table(
            ["family", "items", "pre", "post", "delta", f"{pct} CI", "p", "q (BH)", "significant", "browse"],
            [
                [
                    md(f.family),
                    str(f.n_items),
                    num(f.mean_pre),
                    num(f.mean_post),
                    num(f.delta, "+.4f"),
                    interval(f.ci95),
                    p_text(f.p_value, f.perm_n, f.perm_exact),
                    pvalue(f.q_value),
                    significance_text(f, s.fdr),
                    _items_link(r.pre_arm, r.post_arm, f.family),
                ]
                for f in r.families
            ],
        )
        lines += [
            "",
            f"q: Benjamini-Hochberg over the {len(r.families)} family contrasts; "
            + SIGNIFICANT.format(pct=pct)
            + ".",
            "",
        ]
    lines += calibration_lines(r.calibration, pct, "reliability.png")
    lines += truncation_lines(r.truncation, "the token budget curve above")
    for note in r.notes:
        lines.append(f"Note: {md(note)}")
    lines += [
        f"Settings: {s.n_boot} bootstrap resamples, {s.n_perm} sign-flip permutations, "
        f"alpha {s.alpha}, seed {s.seed}.",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Arm comparison


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
        p_text(c.p_value, c.perm_n, c.perm_exact),
        pvalue(c.q_value),
        significance_text(c, fdr),
        md(c.claim),
        _items_link(c.reference, c.arm),
    ]


def _contrast_header(pct: str) -> list[str]:
    return [
        "contrast", "attribution", "naive delta", f"{pct} CI", "adjusted", "confound", "d_z", "gen tokens",
        "b/c", "McNemar p", "p", "q", "significant", "claim", "browse",
    ]  # fmt: skip


def arms_markdown(r: ArmComparison) -> str:
    """The arm comparison as markdown: every arm vs base, marginal contrasts, families, tool paths."""
    s = r.settings
    pct = ci_percent(s.alpha)
    header = _contrast_header(pct)
    lines = [
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
        *_prompting_lines(r.prompting),
        f"## Every arm against {md(r.base.arm)}",
        "",
        *(
            [
                "Minimum detectable effect (80% power): "
                + ", ".join(f"{md(c.arm)} {num(c.mde)}" for c in r.contrasts)
            ]
            if r.contrasts
            else ["Only base is present: there is no contrast to report."]
        ),
        "",
        *_table(header, [_contrast_row(c, s.fdr) for c in r.contrasts]),
        "",
    ]
    if r.marginal:
        lines += [
            "## Marginal parametric gain on top of an augmentation",
            "",
            *_table(header, [_contrast_row(c, s.fdr) for c in r.marginal]),
            "",
        ]
    ceilings = [c.arm for c in r.contrasts if c.ceiling]
    if ceilings:
        lines += [
            f"**Ceiling:** {', '.join(md(c) for c in ceilings)} pulls every lever at once. Its delta is the "
            "system's ceiling, not evidence for any single cause; no parametric share is computed for it.",
            "",
        ]
    lines += ["![forest plot](arm_deltas.png)", ""]
    if r.factorial:
        lines += _factorial_lines(r.factorial, pct)
    if r.families:
        lines += ["## By item family", ""]
        lines += _table(
            ["contrast", "family", "items", "delta", f"{pct} CI", "p", "q", "significant", "browse"],
            [
                [
                    f"{md(f.arm)} vs {md(f.reference)}",
                    md(f.family),
                    str(f.n_items),
                    num(f.delta, "+.4f"),
                    interval(f.ci95),
                    p_text(f.p_value, f.perm_n, f.perm_exact),
                    pvalue(f.q_value),
                    significance_text(f, s.fdr),
                    _items_link(f.reference, f.arm, f.family),
                ]
                for f in r.families
            ],
        )
        lines.append("")
    if r.paths:
        lines += ["## Tool-use paths (per sample)", ""]
        calls = {c.arm: c.tool_calls for c in r.contrasts}
        for arm in r.paths:
            n = calls.get(arm.arm)
            counted = (
                f"; {n.answered + n.failed} tool calls, {n.failed} failed, {n.restarts} server restarts"
                if n
                else ""
            )
            lines += [f"**{md(arm.arm)}** ({arm.n_samples} samples{counted})", ""]
            lines += _table(
                ["path", "samples", "share", "accuracy"],
                [
                    [md(v.path), str(v.count), num(v.share, ".3f"), num(v.accuracy, ".3f")]
                    for v in arm.verdicts
                ],
            )
            lines.append("")
    lines += render_format.arms_lines(r, pct)
    if r.has("calibration"):
        lines += calibration_lines(r.calibration, pct, "arm_reliability.png")
    lines += truncation_lines(r.truncation, "the delta report's token budget curve")
    budget = [c for c in [*r.contrasts, *r.marginal] if c.budget_no_support]
    for c in budget:
        lines.append(
            f"Budget strata without support for {md(c.arm)} vs {md(c.reference)}: "
            f"{md(', '.join(str(z) for z in c.budget_no_support))} (dropped; weights renormalised)."
        )
    for note in r.notes:
        lines.append(f"Note: {md(note)}")
    lines += [
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
    return "\n".join(lines)


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
        "per-item means of k samples, the signed sum of the cells shown; its interval a percentile cluster "
        "bootstrap (items resampled with the k samples of every cell).",
        "",
        *_table(["effect", "cells", "estimate", f"{pct} CI", "reading"], rows),
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


# ---------------------------------------------------------------------------------------------------------
# Checkpoint trajectory


def _trajectory_row(row: TrajectoryRow, fdr: float) -> list[str]:
    if row.ci95 is None:
        return [md(row.arm), md(row.model_name), num(row.mean_arm), "reference", "", "", "", ""]
    return [
        md(row.arm),
        md(row.model_name),
        num(row.mean_arm),
        num(row.delta, "+.4f"),
        interval(row.ci95),
        p_text(row.p_value, row.perm_n, row.perm_exact),
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
        *_prompting_lines(r.prompting),
        f"**Reward claim:** {md(r.reward_claim)}",
        "",
        "## Every checkpoint against the reference",
        "",
        *_table(header, [_trajectory_row(row, s.fdr) for row in r.trajectory]),
        "",
    ]
    if r.placebo_delta is not None:
        rc = r.reward_contrast
        lines += [
            "## The placebo: the same trainer with a random reward",
            "",
            *_table(header, [_trajectory_row(r.placebo_delta, s.fdr)]),
            "",
            *_table(
                ["contrast", "delta", f"{pct} CI", "p", "q", "significant"],
                [
                    [
                        f"{md(rc.arm)} vs {md(rc.reference)}",
                        num(rc.delta, "+.4f"),
                        interval(rc.ci95),
                        p_text(rc.p_value, rc.perm_n, rc.perm_exact),
                        pvalue(rc.q_value),
                        significance_text(rc, s.fdr),
                    ]
                ],
            ),
            "",
        ]
    lines += render_format.trajectory_lines(r, pct)
    lines += [
        "![trajectory](trajectory.png)",
        "",
        f"What the claim rests on and what it does not cover: {md(r.limits)}",
        "",
    ]
    for note in r.notes:
        lines.append(f"Note: {md(note)}")
    lines += [
        f"Deltas: paired over items (per-item means of k samples), item-level paired bootstrap CIs; p: "
        f"two-sided sign-flip permutation test; q: Benjamini-Hochberg over the report's {r.n_tests} "
        f"contrasts; " + SIGNIFICANT.format(pct=pct) + f" (fdr {s.fdr}). Settings: {s.n_boot} "
        f"resamples, {s.n_perm} permutations, alpha {s.alpha}, seed {s.seed}.",
        "",
    ]
    return "\n".join(lines)
