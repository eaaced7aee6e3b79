"""The rows of the arm comparison: contrasts and claims, path verdicts, the factorial read-out.

Also whether a tool arm's log can stand for its tool access.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.estimators.effect_size import cohens_dz
from analysis.estimators.estimate import Interval
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
from analysis.reports.contrasts import mean_contrast, too_few_items
from analysis.reports.design import FACTORIAL_CELLS
from analysis.reports.settings import Settings
from contract.evallog import EvalLog

PATH_VERDICTS = ["clean", "answer_without_tool", "tool_result_ignored", "tool_error", "no_answer"]


def contrast_claim(
    attribution: str,
    row: dict[str, Any],
    settings: Settings,
    augmentation: str | None = None,
    interaction: str | None = None,
) -> str:
    """What a contrast row claims, from its arm's attribution and its verdict (never from its size alone).
    interaction: for a marginal row, the factorial table's reading of training x its augmentation
    ('training x retrieval: no interaction detected'), the only test of complements or substitutes."""
    if attribution == "ceiling":
        return "CEILING only; three interventions at once, NOT attributable."
    if (why := too_few_items(row["n_items"], settings)) is not None:
        return why
    # A claim needs what the significant column needs (analysis.reports.contrasts' one rule), so the two
    # agree.
    gain = row["significant"] and row["naive_delta"] > 0
    loss = row["significant"] and row["naive_delta"] < 0
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
        adj = row["adjusted_ci95"]
        if gain and adj is not None and adj[0] > 0:
            return "parametric reasoning gain SURVIVES matched budget (no RAG, no tools)."
        if gain and adj is None:
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
    models: dict[str, str],
    settings: Settings,
    primary_pair: tuple[str, str],
) -> dict[str, Any]:
    """One arm against a reference: its delta with interval, test, effect size, flips, budgets and MDE."""
    a, r = data[arm], data[ref]
    primary = None
    whole = None
    if (ref, arm) == primary_pair:
        # The delta report's contrast: the same draws, interval, test and verdict (the claim's family).
        whole = ct.primary_contrast(r.scores, a.scores, settings)
        primary = whole.mean
    base = primary or mean_contrast(r.item_mean, a.item_mean, settings)
    d = a.item_mean - r.item_mean
    dz = cohens_dz(d, settings.alpha)
    flips = mcnemar_from_verdicts(majority_verdicts(r.item_mean), majority_verdicts(a.item_mean))
    return {
        "arm": arm,
        "reference": ref,
        "model_name": models[arm],
        "n_items": base["n_items"],
        "mean_ref": base["mean_ref"],
        "mean_arm": base["mean_arm"],
        "naive_delta": base["delta"],
        "ci95": base["ci95"],
        "ci95_method": base["ci95_method"],
        "cohens_dz": dz.dz if dz else None,
        "cohens_dz_ci95": [dz.lo, dz.hi] if dz else None,
        "mean_gen_tokens": float(a.budget.mean()) if a.budget is not None else None,
        "ref_mean_gen_tokens": float(r.budget.mean()) if r.budget is not None else None,
        "flips_fixed_b": flips.b,
        "flips_broke_c": flips.c,
        "mcnemar_p": flips.exact_p,
        "mcnemar_chi2": flips.chi2,
        "p_value": base["p_value"],
        "perm_exact": base["perm_exact"],
        "perm_n": base["perm_n"],
        "mde": mde_paired(r.scores, a.scores, settings.alpha).mde,
        **(
            {k: primary[k] for k in ("q_value", "significant", "negligible", "decided_by")} if primary else {}
        ),
        # Popped by build_found: the primary contrast whole, for its FORMAT call (the delta report's).
        "_primary": whole,
    }


def path_table(arm: str, log: EvalLog) -> dict[str, Any] | None:
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
        rows.append({
            "path": name,
            "count": count,
            "share": count / v.size,
            "accuracy": float(sc[mask].mean()) if count else None,
        })  # fmt: skip
    return {"arm": arm, "n_samples": int(v.size), "verdicts": rows}


def factorial_section(
    data: dict[str, ArmData], settings: Settings, rows: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The factorial read-out of the arms present; None unless at least one interaction is estimable.

    Every effect is a mean contrast with the reports' one interval method (ct.delta_interval); a main
    effect that is also a contrast row of the report (trained - base) is that row, its interval the row's,
    so one contrast never shows two intervals on one page."""
    arm_of = {cell: arm for arm, cell in FACTORIAL_CELLS.items() if arm in data}
    cells = {cell: data[arm].scores for cell, arm in arm_of.items()}
    by_pair = {(r["reference"], r["arm"]): r for r in rows or []}

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
        ci = (
            [row["ci95"], row["ci95_method"]]
            if row
            else [e.ci.as_list(), e.ci.method]
            if e.ci
            else [None, None]
        )
        out.append({
            "effect": e.name,
            "order": e.order,
            "cells": {name_of[c]: coef for c, coef in e.coefficients.items()},
            "estimate": row["naive_delta"] if row else e.estimate,
            "ci95": ci[0],
            "ci95_method": ci[1],
            "reading": reading,
            "missing_arms": [name_of[c] for c in e.missing],
        })  # fmt: skip
    return {
        "cells": {arm: list(cell) for arm, cell in FACTORIAL_CELLS.items() if arm in data},
        "effects": out,
    }


def interaction_reading(factorial: dict[str, Any] | None, augmentation: str) -> str | None:
    """The factorial table's verdict on training x the one factor an augmentation arm switches on
    ('training x retrieval: no interaction detected'), or None where the table has none."""
    cell = FACTORIAL_CELLS.get(augmentation)
    if factorial is None or cell is None or cell[0] != 0 or sum(cell) != 1:
        return None
    name = f"{FACTORS[0]} x {FACTORS[cell.index(1)]}"
    row = next((e for e in factorial["effects"] if e["effect"] == name), None)
    if row is None or row["reading"] not in (COMPLEMENTS, SUBSTITUTES, NO_INTERACTION):
        return None
    return f"{name}: {row['reading']}"


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
