"""The judge's report built: its audit per arm, and every contrast three ways, with its flags.

The three ways of a contrast: rule-decided, with the judge, judge-corrected; and the reasons a judge is kept
out of the headline.

A judge is unfit for an arm when its agreement with the rules on the arm's audit is under the floor
(params.yaml judge.agreement_floor), when it gave no verdict on a quarter or more of the audit, or when the
arm has no audit. A contrast's judge is flagged when it is unfit for either arm or when its sensitivity,
specificity or no-verdict share differ between the two arms beyond their intervals: such a judge would fold
its own preferences into the delta. A flagged contrast's headline is the rule-decided delta.

The audit's reference is the rules: where they are often wrong themselves (answers in words), a good judge
disagrees with them and looks unfit. Given people's labels (judge_labels' CSV), the judge is measured
against the people on every labelled sample it was asked about, and where at least MIN_PEOPLE such samples
exist that audit decides fitness and feeds the correction instead of the rules'. The report is a JudgeReport.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from analysis.estimators.bootstrap_ci import paired_bootstrap_ci
from analysis.estimators.judge_error import (
    NO_VERDICT,
    Agreement,
    JudgedArm,
    agreement,
    corrected_delta,
    differing_error,
)
from analysis.estimators.resampling import rng_for
from analysis.reports.report_parts import ReportModel, ReportSection, Unrounded
from contract.evallog import EvalLog
from contract.judge import rule_verdict

MAX_NO_VERDICT = 0.25
# Labelled samples the judge was asked about that make the people's audit the reference.
MIN_PEOPLE = 20
Labels = dict[tuple[str, str, int], int]
OUTCOME_NUMBER = {"equivalent": 1, "not_equivalent": 0, "no_verdict": NO_VERDICT}


@dataclass(frozen=True)
class ArmAudit:
    """One arm's judge audit and how much of the arm the judge decided."""

    arm: str
    samples: int
    cascade_asked: int
    judge_decided: int
    audit: Agreement
    reasons: list[str]
    # The judge against people's labels (None: no labels given), and which audit decided fitness.
    people: Agreement | None = None
    reference: str = "rules"


@dataclass(frozen=True)
class Delta:
    """One way of a contrast: the delta, its interval, and what it was computed on."""

    delta: float | None
    ci: tuple[float, float] | None
    on: str
    note: str | None = None


@dataclass
class Contrast:
    """A contrast three ways, which way is the headline, and why."""

    pre: str
    post: str
    rule_decided: Delta
    with_judge: Delta
    corrected: Delta
    headline: str = "with_judge"
    reasons: list[str] = field(default_factory=list)


class JudgeRate(ReportSection):
    """A proportion of the audit, its count, its trials and its Wilson interval (None: no trials)."""

    value: Unrounded | None
    k: int
    n: int
    ci: list[Unrounded] | None


class JudgeAgreement(ReportSection):
    """The judge against a reference (the rules, or people) on one arm's audit."""

    audited: int
    no_verdict: JudgeRate
    agreement: JudgeRate
    sensitivity: JudgeRate
    specificity: JudgeRate
    kappa: Unrounded | None
    kappa_ci: list[Unrounded] | None


class ArmAuditSection(ReportSection):
    """One arm's audit in the report (ArmAudit)."""

    arm: str
    samples: int
    cascade_asked: int
    judge_decided: int
    audit: JudgeAgreement
    reasons: list[str]
    people: JudgeAgreement | None
    reference: str


class DeltaWay(ReportSection):
    """One way of a contrast in the report (Delta)."""

    delta: Unrounded | None
    ci: list[Unrounded] | None
    on: str
    note: str | None


class JudgedContrast(ReportSection):
    """A contrast three ways in the report (Contrast), its headline way and why."""

    pre: str
    post: str
    rule_decided: DeltaWay
    with_judge: DeltaWay
    corrected: DeltaWay
    headline: str
    reasons: list[str]


class JudgeReport(ReportModel):
    """The judge's report; without a judge configured, none of its fields."""

    # The options it has always been written with: indented by 1, numbers as computed.
    json_options: ClassVar[dict[str, Any]] = {"indent": 1}

    judge: dict[str, Any] | None = None
    agreement_floor: Unrounded | None = None
    labels: bool | None = None
    alpha: Unrounded | None = None
    n_boot: int | None = None
    arms: dict[str, ArmAuditSection] | None = None
    contrasts: list[JudgedContrast] | None = None


class LabelAgreement(ReportSection):
    """Machine verdicts against people's labels: agreements, labels, their share and its Wilson interval."""

    agree: int
    n: int
    share: Unrounded | None
    ci: list[Unrounded] | None


class PpiEstimate(ReportSection):
    """A prediction-powered mean (analysis.estimators.ppi.PPIMean) and the labels-only one beside it."""

    estimate: Unrounded
    ci: list[Unrounded]
    labelled: int
    unlabelled: int
    classical: Unrounded
    classical_ci: list[Unrounded]
    method: str


class LabelledArm(ReportSection):
    """One arm against people's labels: the rules', the judge's and the final verdicts' agreement, and PPI."""

    labelled: int
    rules: LabelAgreement
    judge: LabelAgreement
    final: LabelAgreement
    ppi: PpiEstimate | None = None


class LabelsReport(ReportModel):
    """The labels' report (analysis.commands.judge_labels read): each arm against people, the PPI deltas."""

    json_options: ClassVar[dict[str, Any]] = {"indent": 1}

    arms: dict[str, LabelledArm]
    deltas: dict[str, PpiEstimate]


def judged_arm(rule_log: EvalLog, judged_log: EvalLog) -> JudgedArm:
    """The arrays the estimators read, from an arm's rule log and its judged log."""
    kept, judged, equivalent, a_rule, a_judge = [], [], [], [], []
    for it in judged_log.items:
        k_row, j_row, e_row = [], [], []
        for s in it.samples or []:
            rec = s.judge
            decided = rec is not None and rec.cascade and rec.rule != "right" and rec.verdict != "no_verdict"
            k_row.append(0.0 if decided else s.score)
            j_row.append(float(decided))
            e_row.append(float(decided and rec is not None and rec.verdict == "equivalent"))
            if rec is not None and rec.audit:
                a_rule.append(int(rec.rule == "right"))
                a_judge.append(OUTCOME_NUMBER[rec.verdict])
        kept.append(k_row)
        judged.append(j_row)
        equivalent.append(e_row)
    if [it.item_id for it in rule_log.items] != [it.item_id for it in judged_log.items]:
        raise ValueError("the judged log's items are not its rule log's; rerun the judge stage")
    return JudgedArm(
        np.array(kept), np.array(judged), np.array(equivalent), np.array(a_rule), np.array(a_judge)
    )


def read_labels(path: Path) -> Labels:
    """(arm, item_id, sample) -> 0/1 from a labels CSV; a bad row is refused naming its line and field."""
    labels = {}
    with path.open(newline="", encoding="utf-8") as f:
        for n, row in enumerate(csv.DictReader(f), 2):
            value = (row.get("label") or "").strip()
            if value == "":
                continue
            if value not in ("0", "1"):
                raise ValueError(f"{path}: line {n}: label: is {value!r}; write 1 (right) or 0 (wrong)")
            labels[(row["arm"], row["item_id"], int(row["sample"]))] = int(value)
    return labels


def people_pairs(arm: str, judged_log: EvalLog, labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    """(people's label, the judge's outcome) of every labelled sample the judge was asked about."""
    pairs = [
        (labels[(arm, it.item_id, s.index)], OUTCOME_NUMBER[s.judge.verdict])
        for it in judged_log.items
        for s in it.samples or []
        if s.judge is not None and (arm, it.item_id, s.index) in labels
    ]
    return np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int)


def arm_audit(
    arm: str, data: JudgedArm, floor: float, alpha: float, people: tuple[np.ndarray, np.ndarray] | None = None
) -> ArmAudit:
    """The audit of one arm, with the reasons the judge is unfit for it (none: fit): against people's
    labels where MIN_PEOPLE of them meet the judge's verdicts, else against the rules."""
    rules = agreement(data.audit_rule, data.audit_judge, alpha)
    by_people = None if people is None else agreement(*people, alpha)
    use_people = by_people is not None and by_people.audited >= MIN_PEOPLE
    audit = by_people if use_people and by_people is not None else rules
    who = "people" if use_people else "the rules"
    reasons = []
    if audit.audited == 0:
        reasons.append("no audit sample (no rule-decided sample, or judge.audit_size is 0)")
    elif audit.agreement.value is not None and audit.agreement.value < floor:
        lo, hi = audit.agreement.ci or (0.0, 0.0)
        reasons.append(
            f"agreement with {who} {audit.agreement.value:.3f} [{lo:.3f}, {hi:.3f}] is under the "
            f"floor {floor:g}"
        )
    if audit.no_verdict.value is not None and audit.no_verdict.value >= MAX_NO_VERDICT:
        reasons.append(f"no verdict on {audit.no_verdict.value:.0%} of the audit")
    cascade = int(data.judged.sum())
    reference = "people" if use_people else "rules"
    return ArmAudit(arm, data.kept.size, cascade, cascade, rules, reasons, by_people, reference)


def _decided_means(log: EvalLog) -> tuple[np.ndarray, np.ndarray]:
    """Per item the mean rule score of its rule-decided samples, and whether it has any."""
    means, has = [], []
    for it in log.items:
        vals = [s.score for s in it.samples or [] if rule_verdict(s) != "undecided"]
        means.append(float(np.mean(vals)) if vals else 0.0)
        has.append(bool(vals))
    return np.array(means), np.array(has)


def contrast(
    pre: tuple[str, EvalLog, JudgedArm], post: tuple[str, EvalLog, JudgedArm], n_boot: int, seed: int,
    alpha: float,
) -> Contrast:  # fmt: skip
    """One contrast (post - pre) three ways, on the items both arms share in order."""
    (a_name, a_log, a_data), (b_name, b_log, b_data) = pre, post
    if [i.item_id for i in a_log.items] != [i.item_id for i in b_log.items]:
        raise ValueError(f"{a_name} and {b_name} do not hold the same items in the same order")
    rng = rng_for(seed, f"judge|{a_name}|{b_name}")
    (ma, ha), (mb, hb) = _decided_means(a_log), _decided_means(b_log)
    both = ha & hb
    rule = Delta(None, None, f"{int(both.sum())} items decided by the rules in both arms")
    if both.sum() >= 2:
        ci = paired_bootstrap_ci(ma[both], mb[both], n_boot, rng, alpha=alpha)
        rule = Delta(float((mb[both] - ma[both]).mean()), (ci.lo, ci.hi), rule.on)
    fa = a_data.kept + a_data.equivalent
    fb = b_data.kept + b_data.equivalent
    ci = paired_bootstrap_ci(fa.mean(1), fb.mean(1), n_boot, rng, alpha=alpha)
    judged = Delta(float((fb - fa).mean()), (ci.lo, ci.hi), f"all {len(fa)} items, the judge's verdicts")
    d, dci, undefined = corrected_delta(a_data, b_data, n_boot, rng, alpha)
    note = None
    if d is None:
        note = "the judge's audit leaves its error rates unknown or its Youden index under 0.1"
    elif undefined > 0:
        note = f"the correction was undefined in {undefined:.1%} of resamples (left out)"
    corrected = Delta(d, dci, "all items, judged verdicts Rogan-Gladen corrected by each arm's audit", note)
    return Contrast(a_name, b_name, rule, judged, corrected)


def flag(c: Contrast, audits: dict[str, ArmAudit]) -> Contrast:
    """Set the contrast's headline: the judge's unless it is unfit for an arm or errs differently."""
    for arm in (c.pre, c.post):
        c.reasons += [f"{arm}: {r}" for r in audits[arm].reasons]
    pre, post = audits[c.pre], audits[c.post]
    both_people = pre.reference == post.reference == "people" and pre.people and post.people
    apart = (
        differing_error(pre.people, post.people) if both_people else differing_error(pre.audit, post.audit)
    )
    c.reasons += [
        f"the judge's {name} differs between {c.pre} and {c.post} beyond their intervals" for name in apart
    ]
    c.headline = "rule_decided" if c.reasons else "with_judge"
    return c


def judge_report(
    logs: dict[str, tuple[EvalLog, EvalLog]], reference: str, floor: float, n_boot: int, seed: int,
    alpha: float, labels: Labels | None = None,
) -> JudgeReport:  # fmt: skip
    """The report: the judge, each arm's audit, each arm's contrast with the reference."""
    data = {arm: judged_arm(rule, judged) for arm, (rule, judged) in logs.items()}
    people = {arm: people_pairs(arm, j, labels) for arm, (_, j) in logs.items()} if labels else {}
    audits = {arm: arm_audit(arm, d, floor, alpha, people.get(arm)) for arm, d in data.items()}
    # The correction reads the audit that decided fitness: the people's where it did.
    data = {
        arm: replace(d, audit_rule=people[arm][0], audit_judge=people[arm][1])
        if audits[arm].reference == "people" else d
        for arm, d in data.items()
    }  # fmt: skip
    ref = (reference, logs[reference][0], data[reference])
    contrasts = [
        flag(contrast(ref, (arm, log, data[arm]), n_boot, seed, alpha), audits)
        for arm, (log, _) in logs.items()
        if arm != reference
    ]
    first = next(iter(logs.values()))[1]
    judge = first.scorer.settings.get("judge") if first.scorer is not None else None
    return JudgeReport.model_validate({
        "judge": judge,
        "agreement_floor": floor,
        "labels": labels is not None,
        "alpha": alpha,
        "n_boot": n_boot,
        "arms": {arm: asdict(a) for arm, a in audits.items()},
        "contrasts": [asdict(c) for c in contrasts],
    })  # fmt: skip
