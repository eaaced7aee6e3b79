"""The verifier drift report rendered as markdown."""

from __future__ import annotations

from analysis.rendering.markdown_text import md, p_text, significance_text
from analysis.reports.drift import DriftReport, Scorer
from analysis.reports.number_text import interval, pvalue, signed


def _scorer_text(s: Scorer | None) -> str:
    return "not recorded" if s is None else f"{s.name} {s.version} ({', '.join(s.verifiers) or '-'})"


def markdown(r: DriftReport) -> str:
    """The drift report (a whole one, as analysis.reports.drift.build makes it) as markdown."""
    if r.arms is None or r.settings is None:
        raise ValueError("a drift report without arms has only its detail to print")
    fdr = r.settings.fdr
    lines = ["# Verifier drift: the same generations, scored twice", ""]
    lines += ["| arm | scorer before | scorer after | samples rescored | score change (after - before) | "
              "95% CI | p | q | significant | verdicts changed |", "|" + " --- |" * 10]  # fmt: skip
    for a in r.arms:
        lines.append(
            f"| {md(a.arm)} | {md(_scorer_text(a.scorer_before))} | "
            f"{md(_scorer_text(a.scorer_after))} | {a.samples_rescored} | {signed(a.delta)} | "
            f"{interval(a.ci95)} | "
            f"{p_text(a.p_value, a.perm_n, a.perm_exact)} | {pvalue(a.q_value, 3)} | "
            f"{significance_text(a, fdr)} | {len(a.verdict_changes)} |"
        )
    lines += [
        "",
        "Score change: paired over items (per-item means of k samples), with the interval and sign-flip "
        "test every report uses (analysis.reports.contrasts), Benjamini-Hochberg over the arms.",
        "",
    ]
    if r.verdicts_changed is None:
        lines += ["## Report verdicts that change", "",
                  f"Not compared: the reports refuse these logs ({md(r.verdicts_not_compared)}). "
                  "Rescore every arm with the new scorer (dvc repro) to see them.", ""]  # fmt: skip
        return "\n".join(lines)
    lines += [f"## Report verdicts that change ({len(r.verdicts_changed)} of {r.verdicts_checked})", ""]
    if r.verdicts_changed:
        lines += ["| verdict | before | after |", "| --- | --- | --- |"]
        lines += [f"| {md(v.verdict)} | {md(v.before)} | {md(v.after)} |" for v in r.verdicts_changed]
    else:
        lines.append("None: every verdict of the delta report and the arm comparison stays as it was.")
    lines.append("")
    for a in r.arms:
        if not a.verdict_changes:
            continue
        lines += [f"## {md(a.arm)}: items whose verdict changed", "",
                  "| item | reference | before: mean, answers read | after: mean, answers read |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for c in a.verdict_changes:
            b, n = c.before, c.after
            lines.append(
                f"| {md(c.item_id)} | {md(c.reference_answer)} | {b.mean:.3f}: "
                f"{md(', '.join(str(x) for x in b.answers))} | {n.mean:.3f}: "
                f"{md(', '.join(str(x) for x in n.answers))} |"
            )
        lines.append("")
    return "\n".join(lines)
