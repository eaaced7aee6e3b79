"""The arm comparison built: every arm paired with base, and each combination arm with its augmentation.

Each arm's claim follows from its attribution (conf/arm/<arm>.yaml), never from the size of its delta; the
ceiling arm is labelled and never decomposed. A tool arm whose tool server failed too often, or whose log does
not count its failed calls, is listed as not usable. The command is analysis.commands.arm_comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.estimators.budget import BudgetAdjustment
from analysis.reports import answering, calibration, truncation, undecided
from analysis.reports import contrasts as ct
from analysis.reports.align import ArmData, arm_arrays, arm_logs, check_matched, generated_by, item_order
from analysis.reports.arm_contrast import (
    ArmClaim,
    ContrastPiece,
    FormatCall,
    Pair,
    arm_contrast,
    budget_adjustments,
    decisions,
    family_sections,
)
from analysis.reports.arm_rows import (
    contrast_claim,
    contrast_row,
    factorial_section,
    interaction_reading,
    path_table,
    tool_call_problem,
)
from analysis.reports.contamination_split import Audit, with_split
from analysis.reports.contrast_values import Decision
from analysis.reports.design import CANONICAL_ARMS, DEFAULT_ATTRIBUTION, MARGINAL_CONTRASTS
from analysis.reports.prompting import prompt_line
from analysis.reports.refusal import Refusal
from analysis.reports.report_models import ArmComparison, BaseArm, Factorial, UnusableArm
from analysis.reports.settings import AnalysisSettings, settings_dict
from contract.evallog import EvalLog


class CeilingNotDecomposable(ValueError):
    """Asked for a parametric share of the ceiling arm, whose causes are entangled by design."""


def parametric_share(
    attribution: str, total_delta: float, marginal_delta: float | None = None
) -> float | None:
    """Share of an arm's gain over base that is parametric; an error for the ceiling arm.

    1 for the trained arm and 0 for a pure augmentation (by construction of the arms); for a mixed arm
    the marginal gain over its augmentation divided by its gain over base (None if either is missing).
    """
    if attribution == "ceiling":
        raise CeilingNotDecomposable(
            "the ceiling arm moves training, retrieval and tools at once; its delta has no parametric share"
        )
    if attribution == "parametric":
        return 1.0
    if attribution in ("lookup", "tool_access"):
        return 0.0
    if attribution == "mixed":
        if marginal_delta is None or total_delta == 0:
            return None
        return marginal_delta / total_delta
    raise ValueError(f"no parametric share is defined for attribution {attribution!r}")


def normalise_attribution(arm: str, recorded: str | None) -> str:
    """The arm's attribution: the log's own, else the default for a canonical arm name, else 'unknown'."""
    if recorded is None:
        return DEFAULT_ATTRIBUTION.get(arm, "unknown")
    value = recorded.strip().lower()
    return "ceiling" if "ceiling" in value else value


def discover(logs_dir: str | Path, arms: list[str] | None = None) -> dict[str, tuple[Path, EvalLog]]:
    """The EvalLogs of the folder by arm name, in canonical arm order; base is required.

    arms: read only <arm>.json of each (params.yaml `arms`, so a log left by an arm no longer run is not
    compared); None reads every *.json of the folder.
    """
    folder = Path(logs_dir)
    if not folder.is_dir():
        raise Refusal(f"{folder}: no such folder of EvalLogs; pass --logs FOLDER")
    if arms is not None:
        missing = [a for a in arms if not (folder / f"{a}.json").is_file()]
        if missing:
            raise Refusal(
                f"{folder / (missing[0] + '.json')}: no EvalLog of arm {missing[0]!r}, which the params "
                "file's arms lists; run its stages (dvc repro) or remove it from arms"
            )
    # The report reads scores, budgets, families and what the reader keeps of the samples (seeds, finish
    # reasons, path verdicts): every sample is validated, then dropped, and the logs are read side by side.
    found = arm_logs(folder, arms)
    if "base" not in found:
        raise Refusal(
            f"{folder}: no base arm (base.json or a log with arm 'base'); every arm is compared with base"
        )
    rank = {a: i for i, a in enumerate(CANONICAL_ARMS)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def usable_arms(
    found: dict[str, tuple[Path, EvalLog]], settings: AnalysisSettings, reference: str
) -> tuple[dict[str, tuple[Path, EvalLog]], list[UnusableArm]]:
    """The arms whose logs can stand for them, and the tool arms left out with the reason."""
    found = dict(found)
    unusable: list[UnusableArm] = []
    for arm, (path, log) in list(found.items()):
        why = tool_call_problem(arm, log, settings.max_failed_tool_calls)
        if why is None:
            continue
        if arm == reference:
            raise Refusal(f"{path}: the {reference} arm is not usable: {why}")
        counts = log.tool_calls.model_dump() if log.tool_calls else None
        unusable.append(UnusableArm(arm=arm, reason=why, tool_calls=counts))
        del found[arm]
    return found, unusable


def matched_protocol(
    found: dict[str, tuple[Path, EvalLog]], reference: str, allow: frozenset[str]
) -> dict[str, Any]:
    """The protocol every arm shares with the reference (align.check_matched refuses one that does not)."""
    base_path, base_log = found[reference]
    matched: dict[str, Any] = {}
    for arm, (path, log) in found.items():
        if arm != reference:
            # A parametric contrast of base with itself would report "no gain" instead of a mistake.
            parametric = normalise_attribution(arm, log.attribution) == "parametric"
            matched = check_matched(base_path, base_log, path, log, distinct_models=parametric, allow=allow)
    return matched or check_matched(base_path, base_log, base_path, base_log)


def attributions(found: dict[str, tuple[Path, EvalLog]], reference: str) -> dict[str, str]:
    """Each arm's attribution; against another reference than base: marginal where the design has it."""
    if reference != "base":
        return {arm: "marginal" if (arm, reference) in MARGINAL_CONTRASTS else "unknown" for arm in found}
    return {arm: normalise_attribution(arm, log.attribution) for arm, (_, log) in found.items()}


def contrast_rows(
    found: dict[str, tuple[Path, EvalLog]],
    data: dict[str, ArmData],
    settings: AnalysisSettings,
    reference: str,
    primary: tuple[str, str],
) -> tuple[list[ContrastPiece], list[ContrastPiece]]:
    """Every arm against the reference, and each combination arm against its augmentation (marginal)."""
    attribution = attributions(found, reference)
    contrasts = [
        contrast_row(arm, reference, data, log, attribution[arm], settings, primary)
        for arm, (_, log) in found.items()
        if arm != reference
    ]
    marginal = [
        contrast_row(arm, aug, data, found[arm][1], "marginal", settings, primary, marginal=True)
        for arm, aug in MARGINAL_CONTRASTS
        if arm in found and aug in found and aug != reference
    ]
    return contrasts, marginal


def decide_claims(
    contrasts: list[ContrastPiece],
    marginal: list[ContrastPiece],
    verdicts: dict[Pair, Decision],
    budgets: dict[Pair, BudgetAdjustment | None],
    settings: AnalysisSettings,
    reference: str,
    factorial: Factorial | None = None,
) -> dict[Pair, ArmClaim]:
    """Each contrast's ceiling flag, parametric share and claim, from its attribution and its verdict (and for
    a marginal contrast, the factorial table's interaction reading)."""
    marginal_delta = {m.arm: m.stats.delta for m in marginal}
    out = {}
    for c in contrasts:
        attr, verdict = c.attribution, verdicts[c.key]
        share = None
        if attr in ("parametric", "lookup", "tool_access") or (attr == "mixed" and verdict.significant):
            share = parametric_share(attr, c.stats.delta, marginal_delta.get(c.arm))
        adj = budgets[c.key]
        adjusted = adj.ci if adj is not None else None
        claim = contrast_claim(attr, c, verdict, adjusted, settings, augmentation=reference)
        out[c.key] = ArmClaim(attr == "ceiling", share, claim)
    for m in marginal:
        interaction = interaction_reading(factorial, m.ref)
        claim = contrast_claim("marginal", m, verdicts[m.key], None, settings, m.ref, interaction)
        out[m.key] = ArmClaim(False, None, claim)
    return out


def format_calls(
    rows: list[ContrastPiece],
    verdicts: dict[Pair, Decision],
    claims: dict[Pair, ArmClaim],
    readers: dict[str, answering.fe.ReaderArrays],
    settings: AnalysisSettings,
) -> dict[Pair, FormatCall]:
    """Each contrast's FORMAT part under the lenient reader, and its claim where the format explains
    the shift.

    Trained vs base is decided as in the delta report (its primary contrast); no call changes the
    ceiling's claim.
    """
    out = {}
    for c in rows:
        ref_r, arm_r = readers[c.ref], readers[c.arm]
        if c.primary is not None:
            verdict = ct.claim(c.primary, settings).verdict
            part = answering.primary_part(c.primary, verdict, ref_r, arm_r, settings)
        else:
            part = answering.row_part(verdicts[c.key].significant, c.stats.delta, ref_r, arm_r, settings)
        keep = part is None or claims[c.key].ceiling
        out[c.key] = FormatCall(part, None if keep else answering.row_claim(part))
    return out


def base_part(reference: str, found: dict[str, tuple[Path, EvalLog]], data: ArmData) -> BaseArm:
    """The reference arm: its attribution, model, mean score and tokens, and when and how it was measured."""
    log = found[reference][1]
    return BaseArm(
        arm=reference,
        attribution=attributions(found, reference)[reference],
        model_name=log.model_name,
        mean=float(data.item_mean.mean()),
        mean_gen_tokens=float(data.budget.mean()) if data.budget is not None else None,
        measured_at=log.measured_at,
        driver=log.driver,
        generated_by=generated_by(log),
    )


def build(
    logs_dir: str, settings: AnalysisSettings, arms: list[str] | None = None, audit: Audit | None = None
) -> ArmComparison:
    """The arm comparison report (a pure function of the logs and settings); audit: the seen/clean split."""
    return build_found(discover(logs_dir, arms), settings, str(logs_dir), audit=audit)


def build_found(
    found: dict[str, tuple[Path, EvalLog]],
    settings: AnalysisSettings,
    logs_dir: str,
    expected: bool = True,
    reference: str = "base",
    allow: frozenset[str] = frozenset(),
    primary: tuple[str, str] = (ct.PRIMARY_REFERENCE, ct.PRIMARY_ARM),
    audit: Audit | None = None,
) -> ArmComparison:
    """The arm comparison of logs already read, by arm name (base required), in the order to report them.

    expected=False: the logs are all there is (analysis.commands.compare_logs), so no arm of the design is
    reported missing. reference: the arm every other is compared with (compare_logs: the first log's own
    arm); against another arm than base a contrast is the marginal one where it is (trained+rag vs +rag),
    else it has no causal reading. allow: what the logs may differ in (align.check_matched), for logs of one
    model. primary: (reference, arm) of the contrast the delta report decides by the claim's family (Holm
    over pass@1 and pass@K), so that its row here carries that same verdict (compare_logs: its first two).
    """
    found, unusable = usable_arms(found, settings, reference)
    matched = matched_protocol(found, reference, allow)
    order = item_order(base_log := found[reference][1])
    data = {arm: arm_arrays(log, order) for arm, (_, log) in found.items()}
    notes: list[str] = [n for n in [ct.small_suite_note(len(order))] if n]
    notes += [n for n in [ct.greedy_note(base_log.temperature, base_log.n_samples)] if n]
    contrasts, marginal = contrast_rows(found, data, settings, reference, primary)
    all_rows = [*contrasts, *marginal]
    budgets, budget_note = budget_adjustments(all_rows, data, settings)
    notes += [n for n in [budget_note] if n]
    families = family_sections(all_rows, data, settings, data[reference].families)
    # The primary contrast (trained vs base) is decided by the claim's family, as in the delta report;
    # every other arm contrast is one Benjamini-Hochberg family (per-family rows: one family per contrast,
    # analysis.reports.contrasts.family_rows), so no row's verdict depends on which report prints it.
    verdicts = decisions(all_rows, settings)
    factorial = factorial_section(data, settings, contrasts)
    claims = decide_claims(contrasts, marginal, verdicts, budgets, settings, reference, factorial)
    # The same generations under the lenient reader: each row's change in answered share, its lenient
    # delta and FORMAT call.
    readers = {arm: answering.reader_arrays(log, order) for arm, (_, log) in found.items()}
    lenient_missing = answering.missing_lenient(readers)
    calls = format_calls(all_rows, verdicts, claims, readers, settings)
    if lenient_missing:
        notes.append(answering.not_recorded(lenient_missing, len(readers)))
    rows = {c.key: arm_contrast(c, budgets[c.key], verdicts[c.key], claims[c.key], calls[c.key])
            for c in all_rows}  # fmt: skip
    pairs = [c.key for c in all_rows]
    logs = {arm: log for arm, (_, log) in found.items()}
    extra = undecided.report_fields(logs, order, data, pairs, settings, notes)
    left_out = {u.arm for u in unusable}
    report = ArmComparison(
        report="arms",
        suite=base_log.suite,
        suite_revision=base_log.suite_revision,
        n_items=len(order),
        n_samples=base_log.n_samples,
        logs_dir=str(logs_dir),
        arms_found=list(found),
        arms_missing=[a for a in CANONICAL_ARMS if expected and a not in found and a not in left_out],
        arms_unusable=unusable,
        logs={arm: str(path) for arm, (path, _) in found.items()},
        matched_protocol=matched,
        prompting={arm: prompt_line(log) for arm, log in logs.items()},
        base=base_part(reference, found, data[reference]),
        contrasts=[rows[c.key] for c in contrasts],
        marginal=[rows[m.key] for m in marginal],
        families=families,
        paths=[t for arm, log in logs.items() if (t := path_table(arm, log)) is not None],
        factorial=factorial,
        calibration=calibration.section(logs, order, reference, settings),
        truncation=truncation.section(logs, base_log.max_tokens),
        answering=[answering.arm_row(arm, data[arm].scores, readers[arm], settings) for arm in found],
        lenient_missing=lenient_missing,
        **extra,
        n_tests=sum(1 for pair in pairs if pair != primary),
        n_family_tests=len(families),
        primary_in_report=primary in pairs,
        settings=settings_dict(settings),
        notes=notes,
    )
    return with_split(report, audit, order, data, pairs, settings)
