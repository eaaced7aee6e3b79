"""The judge's report as markdown: the judge, its audit per arm, every contrast three ways."""

from __future__ import annotations

from analysis.reports.judge import ArmAuditSection, JudgedContrast, JudgeRate, JudgeReport

WAYS = {
    "rule_decided": "rule-decided",
    "with_judge": "with the judge",
    "corrected": "judge-corrected",
}


def _num(x: float | None, signed: bool = False) -> str:
    return "-" if x is None else (f"{x:+.3f}" if signed else f"{x:.3f}")


def _ci(ci: list[float] | None, signed: bool = False) -> str:
    return "-" if ci is None else f"[{_num(ci[0], signed)}, {_num(ci[1], signed)}]"


def _rate(r: JudgeRate) -> str:
    return "-" if r.value is None else f"{r.value:.3f} {_ci(r.ci)} ({r.k}/{r.n})"


def audit_table(arms: dict[str, ArmAuditSection], key: str = "audit") -> list[str]:
    """One row per arm: the audit's size, agreement, sensitivity, specificity, kappa, no verdict, judged."""
    lines = [
        "| arm | audited | agreement | sensitivity | specificity | kappa | no verdict | judge decided "
        "| fit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, a in arms.items():
        au = a.audit if key == "audit" else a.people
        if au is None:
            continue
        kappa = "-" if au.kappa is None else f"{au.kappa:.3f} {_ci(au.kappa_ci)}"
        lines.append(
            f"| {arm} | {au.audited} | {_rate(au.agreement)} | {_rate(au.sensitivity)} | "
            f"{_rate(au.specificity)} | {kappa} | {_rate(au.no_verdict)} | "
            f"{a.judge_decided}/{a.samples} | "
            f"{'-' if a.reference != key.replace('audit', 'rules') else 'no' if a.reasons else 'yes'} |"
        )
    return lines


def people_part(report: JudgeReport) -> list[str]:
    """The judge against people's labels, where labels were given."""
    if not report.labels:
        return []
    return [
        "## Audit: the judge against people's labels",
        "",
        "On every labelled sample the judge was asked about, people's labels as the reference. Where an arm "
        "has at least 20 such samples this audit, not the rules', decides whether the judge is fit (the "
        "`fit` column says it in the table that decided) and gives the correction its error rates: rules "
        "that are often wrong themselves make a good judge look unfit.",
        "",
        *audit_table(report.arms or {}, "people"),
        "",
    ]


def contrast_lines(c: JudgedContrast) -> list[str]:
    """A contrast's three ways, its headline and the reasons."""
    head = WAYS[c.headline]
    lines = [f"### {c.post} - {c.pre}", "", f"Headline: **{head}** delta.", ""]
    lines += ["| way | delta | interval | on |", "|---|---|---|---|"]
    for key, name in WAYS.items():
        d = getattr(c, key)
        on = d.on + (f"; {d.note}" if d.note else "")
        mark = " (headline)" if key == c.headline else ""
        lines.append(f"| {name}{mark} | {_num(d.delta, True)} | {_ci(d.ci, True)} | {on} |")
    if c.reasons:
        lines += ["", "The judge is kept out of this headline:", ""]
        lines += [f"- {r}" for r in c.reasons]
    return lines + [""]


def judge_markdown(report: JudgeReport) -> str:
    """The whole report (one with a judge)."""
    j = report.judge or {}
    lines = ["# Model judge: audit and contrasts", ""]
    lines.append(
        f"Judge: `{j.get('model')}` revision `{j.get('revision')}`, template `{j.get('template')}` "
        f"(sha256 {str(j.get('template_sha256'))[:12]}), asked where the rules said: {j.get('ask')}; "
        f"audit of {j.get('audit_size')} rule-decided samples per arm; agreement floor "
        f"{report.agreement_floor:g}; intervals at {1 - (report.alpha or 0.0):.0%}."
    )
    lines += [
        "",
        "## Audit: the judge against the rules on samples the rules decided",
        "",
        "Sensitivity: the share of samples the rules call right that the judge calls equivalent; "
        "specificity: of those the rules call wrong, the share it calls not equivalent. Agreement counts a "
        "reply with no verdict as disagreeing. The audit measures the judge where the rules can check it; "
        "the samples it decides are the ones the rules could not, which may be harder.",
        "",
        *audit_table(report.arms or {}),
        "",
        *people_part(report),
        "## Contrasts, three ways",
        "",
        "Rule-decided: on the samples the rules decided in both arms. With the judge: every sample, the "
        "judge's verdicts where the rules left room. Judge-corrected: the judged samples' equivalent count "
        "corrected for each arm's audited sensitivity and specificity (Rogan-Gladen), bootstrapped over the "
        "items and the audits together.",
        "",
    ]
    for c in report.contrasts or []:
        lines += contrast_lines(c)
    if not report.contrasts:
        lines.append("One arm: no contrast.")
    return "\n".join(lines).rstrip() + "\n"
