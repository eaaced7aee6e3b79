"""The rows of the arm comparison: contrasts and claims, path verdicts, the factorial read-out.

Also whether a tool arm's log can stand for its tool access.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.estimators.effect_size import cohens_dz
from analysis.estimators.estimate import Interval, interval_fields
from analysis.estimators.factorial import (
    COMPLEMENTS,
    FACTORS,
    NO_INTERACTION,
    SUBSTITUTES,
    factorial_readout,
)
from analysis.estimators.mcnemar import majority_verdicts, mcnemar_from_verdicts
from analysis.estimators.power_planning import mde_paired
from analysis.estimators.resampling import rng_for
from analysis.reports import contrasts as ct
from analysis.reports.align import ArmData
from analysis.reports.arm_contrast import ContrastPiece
from analysis.reports.contrast_values import Decision
from analysis.reports.contrasts import mean_contrast, too_few_items
from analysis.reports.design import FACTORIAL_CELLS
from analysis.reports.report_models import Factorial, FactorialEffect, PathTable, PathVerdict
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog

PATH_VERDICTS = ["clean", "answer_without_tool", "tool_result_ignored", "tool_error", "no_answer"]


def contrast_claim(
    attribution: str,
    row: ContrastPiece,
    decision: Decision,
    adjusted: Interval | None,
    settings: AnalysisSettings,
    augmentation: str | None = None,
    interaction: str | None = None,
) -> str:
    """What a contrast claims, from its arm's attribution and its verdict (never from its size alone).
    adjusted: its budget-adjusted interval (None: no gen_tokens). interaction: for a marginal row, the
    factorial table's reading of training x its augmentation ('training x retrieval: no interaction
    detected'), the only test of complements or substitutes."""
    if attribution == "ceiling":
        return "CEILING only; three interventions at once, NOT attributable."
    if (why := too_few_items(row.stats.n_items, settings)) is not None:
        return why
    # A claim needs what the significant column needs (analysis.reports.contrasts' one rule), so the two
    # agree.
    gain = decision.significant and row.stats.delta > 0
    loss = decision.significant and row.stats.delta < 0
    if attribution == "marginal":
        # A gain on top of an augmentation is not an interaction: complements or substitutes is said only
        # by the interaction's own test (the factorial table), never by this row's verdict.
        said = f" ({interaction})" if interaction else ""
        if gain:
            return f"training adds a gain on top of {augmentation}{said}."
        if loss:
            return f"training costs accuracy on top of {augmentation}{said}."
        return f"{ct.NO_DIFFERENCE}: no marginal gain from training on top of {augmentation}{said}."
    effect = "gain" if gain else ("loss" if loss else ct.NO_DIFFERENCE)
    if attribution == "parametric":
        if gain and adjusted is not None and adjusted.lo > 0:
            return "parametric reasoning gain SURVIVES matched budget (no RAG, no tools)."
        if gain and adjusted is None:
            return "parametric gain (budget adjustment unavailable: no gen_tokens in the logs)."
        if gain:
            return "parametric gain does NOT survive adjustment."
        return (
            "training lowered the score (parametric loss)."
            if loss
            else f"{ct.NO_DIFFERENCE} (no parametric gain)."
        )
    if attribution == "lookup":
        return f"{effect}: retrieval/lookup grounding, NOT reasoning."
    if attribution == "tool_access":
        return f"{effect}: tool-access effect (lookup of ground truth), NOT reasoning."
    if attribution == "mixed":
        return f"{effect}: mixed effect (training plus an augmentation); see its marginal contrast."
    if attribution == "placebo":
        return f"{effect}: training with a random reward (placebo), NOT the reward's effect."
    return f"{effect}: attribution {attribution!r} has no causal reading; reported without a claim."


def contrast_row(
    arm: str,
    ref: str,
    data: dict[str, ArmData],
    log: EvalLog,
    attribution: str,
    settings: AnalysisSettings,
    primary_pair: tuple[str, str],
    marginal: bool = False,
) -> ContrastPiece:
    """One arm (its log) against a reference: delta with interval, test, effect size, flips, budgets, MDE."""
    ref_data, arm_data = data[ref], data[arm]
    whole = None
    if (ref, arm) == primary_pair:
        # The delta report's contrast: the same draws, interval, test and verdict (the claim's family).
        whole = ct.primary_contrast(ref_data.scores, arm_data.scores, settings)
    stats = (
        whole.stats if whole is not None else mean_contrast(ref_data.item_mean, arm_data.item_mean, settings)
    )
    return ContrastPiece(
        ref=ref,
        arm=arm,
        model_name=log.model_name,
        attribution=attribution,
        marginal=marginal,
        tool_calls=log.tool_calls,
        stats=stats,
        dz=cohens_dz(arm_data.item_mean - ref_data.item_mean, settings.alpha),
        flips=mcnemar_from_verdicts(
            majority_verdicts(ref_data.item_mean), majority_verdicts(arm_data.item_mean)
        ),
        gen_tokens=float(arm_data.budget.mean()) if arm_data.budget is not None else None,
        ref_gen_tokens=float(ref_data.budget.mean()) if ref_data.budget is not None else None,
        mde=mde_paired(ref_data.scores, arm_data.scores, settings.alpha).mde,
        primary=whole,
    )


def path_table(arm: str, log: EvalLog) -> PathTable | None:
    """Share and accuracy of each path verdict over an arm's samples; None when no sample carries one."""
    verdicts, scores = [], []
    for it in log.items:
        # Samples' scores are the item's (the log's validator checks them), kept when samples are dropped.
        paths = it.sample_paths() or (None,) * len(it.scores)
        verdicts.extend(p if p is not None else "(not evaluated)" for p in paths)
        scores.extend(it.scores)
    if not any(v != "(not evaluated)" for v in verdicts):
        return None
    v, sc = np.array(verdicts, dtype=object), np.array(scores, dtype=np.float64)
    names = PATH_VERDICTS + sorted(set(verdicts) - set(PATH_VERDICTS))
    rows = []
    for name in names:
        mask = v == name
        count = int(mask.sum())
        accuracy = float(sc[mask].mean()) if count else None
        rows.append(PathVerdict(path=name, count=count, share=count / v.size, accuracy=accuracy))
    return PathTable(arm=arm, n_samples=int(v.size), verdicts=rows)


def factorial_section(
    data: dict[str, ArmData], settings: AnalysisSettings, rows: Sequence[ContrastPiece] = ()
) -> Factorial | None:
    """The factorial read-out of the arms present; None unless at least one interaction is estimable.

    Every effect is a mean contrast with the reports' one interval method (ct.delta_interval); a main
    effect that is also a contrast row of the report (trained - base) is that row, its interval the row's,
    so one contrast never shows two intervals on one page."""
    arm_of = {cell: arm for arm, cell in FACTORIAL_CELLS.items() if arm in data}
    cells = {cell: data[arm].scores for cell, arm in arm_of.items()}
    by_pair = {r.key: r.stats for r in rows}

    def interval(name: str, values: np.ndarray) -> Interval:
        return ct.delta_interval(values, settings, f"/factorial/{name}")

    effects = factorial_readout(
        cells, settings.n_boot, rng_for(settings.seed, "factorial"), alpha=settings.alpha, interval=interval
    )
    if not any(e.order > 1 and e.estimate is not None for e in effects):
        return None
    name_of = {cell: arm for arm, cell in FACTORIAL_CELLS.items()}
    n_items = next(iter(cells.values())).shape[0]
    too_few = too_few_items(n_items, settings)
    out = []
    for e in effects:
        reading = e.reading
        if reading is not None and too_few is not None:
            reading = too_few
        plus = [name_of[c] for c, coef in e.coefficients.items() if coef > 0]
        minus = [name_of[c] for c, coef in e.coefficients.items() if coef < 0]
        row = by_pair.get((minus[0], plus[0])) if e.order == 1 and e.estimate is not None else None
        ci = row.ci if row is not None else e.ci
        out.append(FactorialEffect(
            effect=e.name,
            order=e.order,
            cells={name_of[c]: coef for c, coef in e.coefficients.items()},
            estimate=row.delta if row is not None else e.estimate,
            **interval_fields(ci),
            reading=reading,
            missing_arms=[name_of[c] for c in e.missing],
        ))  # fmt: skip
    return Factorial(
        cells={arm: list(cell) for arm, cell in FACTORIAL_CELLS.items() if arm in data}, effects=out
    )


def interaction_reading(factorial: Factorial | None, augmentation: str) -> str | None:
    """The factorial table's verdict on training x the one factor an augmentation arm switches on
    ('training x retrieval: no interaction detected'), or None where the table has none."""
    cell = FACTORIAL_CELLS.get(augmentation)
    if factorial is None or cell is None or cell[0] != 0 or sum(cell) != 1:
        return None
    name = f"{FACTORS[0]} x {FACTORS[cell.index(1)]}"
    row = next((e for e in factorial.effects if e.effect == name), None)
    if row is None or row.reading not in (COMPLEMENTS, SUBSTITUTES, NO_INTERACTION):
        return None
    return f"{name}: {row.reading}"


def tool_call_problem(arm: str, log: EvalLog, max_failed: float) -> str | None:
    """Why an arm's log cannot stand for its tool access (failed tool calls), or None when it can."""
    counts = log.tool_calls
    if counts is None:
        if any(it.records_tool_calls() for it in log.items):
            if log.scorer is not None and "imported_from" in log.scorer.settings:
                return (
                    "its log records tool calls but not how many failed (imported before the importer "
                    "counted them); import it again (python -m interop.imports)"
                )
            return (
                f"its log records tool calls but not how many failed (format_version {log.format_version}, "
                "older than 3, or a log from elsewhere); regenerate and rescore it (dvc repro)"
            )
        return None
    if counts.failed_share <= max_failed:
        return None
    return (
        f"{counts.failed} of {counts.answered + counts.failed} tool calls failed ({counts.failed_share:.1%}: "
        f"the tool server did not answer them; {counts.restarts} server restarts), more than params.yaml "
        f"analysis.max_failed_tool_calls = {max_failed}; its delta would measure the broken server, not tool "
        f"access: regenerate it (python -m pipeline.run_arm arm={arm} fresh=true, then dvc repro)"
    )
