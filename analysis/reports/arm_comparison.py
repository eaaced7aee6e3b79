"""The arm comparison built: every arm paired with base, and each combination arm with its augmentation.

Each arm's claim follows from its attribution (conf/arm/<arm>.yaml), never from the size of its delta; the
ceiling arm is labelled and never decomposed. A tool arm whose tool server failed too often, or whose log does
not count its failed calls, is listed as not usable. The command is analysis.commands.arm_comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.estimators.budget import budget_adjusted_deltas
from analysis.estimators.effect_size import cohens_dz
from analysis.estimators.factorial import factorial_readout
from analysis.estimators.mcnemar import majority_verdicts, mcnemar_from_verdicts
from analysis.estimators.power_planning import mde_paired
from analysis.estimators.resampling import rng_for
from analysis.reports import answering, calibration, truncation
from analysis.reports import contrasts as ct
from analysis.reports.align import (
    ArmData,
    Refusal,
    Settings,
    arm_arrays,
    check_matched,
    generated_by,
    item_order,
    load_logs,
    settings_dict,
)
from analysis.reports.contrasts import family_rows, mean_contrast, too_few_items
from analysis.reports.design import CANONICAL_ARMS, DEFAULT_ATTRIBUTION, FACTORIAL_CELLS, MARGINAL_CONTRASTS
from analysis.reports.prompting import prompt_line
from contract.evallog import EvalLog

PATH_VERDICTS = ["clean", "answer_without_tool", "tool_result_ignored", "tool_error", "no_answer"]


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
    found: dict[str, tuple[Path, EvalLog]] = {}
    if arms is not None:
        missing = [a for a in arms if not (folder / f"{a}.json").is_file()]
        if missing:
            raise Refusal(
                f"{folder / (missing[0] + '.json')}: no EvalLog of arm {missing[0]!r}, which the params "
                "file's arms lists; run its stages (dvc repro) or remove it from arms"
            )
    paths = sorted(folder.glob("*.json")) if arms is None else [folder / f"{a}.json" for a in arms]
    # The report reads scores, budgets, families and what the reader keeps of the samples (seeds, finish
    # reasons, path verdicts): every sample is validated, then dropped, and the logs are read side by side.
    for path, log in zip(paths, load_logs(paths, samples=False), strict=True):
        arm = log.arm or path.stem
        if arm in found:
            raise Refusal(f"{found[arm][0]} and {path}: both hold arm {arm!r}; keep one log per arm")
        found[arm] = (path, log)
    if "base" not in found:
        raise Refusal(
            f"{folder}: no base arm (base.json or a log with arm 'base'); every arm is compared with base"
        )
    rank = {a: i for i, a in enumerate(CANONICAL_ARMS)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def _claim(attribution: str, row: dict[str, Any], settings: Settings, augmentation: str | None = None) -> str:
    if attribution == "ceiling":
        return "CEILING only; three interventions at once, NOT attributable."
    if (why := too_few_items(row["n_items"], settings)) is not None:
        return why
    # A claim needs what the significant column needs (analysis.reports.contrasts' one rule), so the two
    # agree.
    gain = row["significant"] and row["naive_delta"] > 0
    loss = row["significant"] and row["naive_delta"] < 0
    if attribution == "marginal":
        if gain:
            return f"training adds a gain on top of {augmentation} (complements)."
        if loss:
            return f"training costs accuracy on top of {augmentation}."
        return (
            f"no marginal gain from training on top of {augmentation} detected (substitutes, or too small)."
        )
    effect = "gain" if gain else ("loss" if loss else "no detectable change")
    if attribution == "parametric":
        adj = row["adjusted_ci95"]
        if gain and adj is not None and adj[0] > 0:
            return "parametric reasoning gain SURVIVES matched budget (no RAG, no tools)."
        if gain and adj is None:
            return "parametric gain (budget adjustment unavailable: no gen_tokens in the logs)."
        if gain:
            return "parametric gain does NOT survive adjustment."
        return "training lowered the score (parametric loss)." if loss else "no parametric gain detected."
    if attribution == "lookup":
        return f"{effect}: retrieval/lookup grounding, NOT reasoning."
    if attribution == "tool_access":
        return f"{effect}: tool-access effect (lookup of ground truth), NOT reasoning."
    if attribution == "mixed":
        return f"{effect}: mixed effect (training plus an augmentation); see its marginal contrast."
    if attribution == "placebo":
        return f"{effect}: training with a random reward (placebo), NOT the reward's effect."
    return f"{effect}: attribution {attribution!r} has no causal reading; reported without a claim."


def _contrast(
    arm: str,
    ref: str,
    data: dict[str, ArmData],
    models: dict[str, str],
    settings: Settings,
    primary_pair: tuple[str, str],
) -> dict[str, Any]:
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


def factorial_section(data: dict[str, ArmData], settings: Settings) -> dict[str, Any] | None:
    """The factorial read-out of the arms present; None unless at least one interaction is estimable."""
    arm_of = {cell: arm for arm, cell in FACTORIAL_CELLS.items() if arm in data}
    cells = {cell: data[arm].scores for cell, arm in arm_of.items()}
    effects = factorial_readout(
        cells, settings.n_boot, rng_for(settings.seed, "factorial"), alpha=settings.alpha
    )
    if not any(e.order > 1 and e.estimate is not None for e in effects):
        return None
    name_of = {cell: arm for arm, cell in FACTORIAL_CELLS.items()}
    n_items = next(iter(cells.values())).shape[0]
    too_few = too_few_items(n_items, settings)
    rows = []
    for e in effects:
        reading = e.reading
        if reading is not None and too_few is not None:
            reading = too_few
        rows.append({
            "effect": e.name,
            "order": e.order,
            "cells": {name_of[c]: coef for c, coef in e.coefficients.items()},
            "estimate": e.estimate,
            "ci95": e.ci.as_list() if e.ci else None,
            "ci95_method": e.ci.method if e.ci else None,
            "reading": reading,
            "missing_arms": [name_of[c] for c in e.missing],
        })  # fmt: skip
    return {
        "cells": {arm: list(cell) for arm, cell in FACTORIAL_CELLS.items() if arm in data},
        "effects": rows,
    }


def tool_call_problem(arm: str, log: EvalLog, max_failed: float) -> str | None:
    """Why an arm's log cannot stand for its tool access (failed tool calls), or None when it can."""
    counts = log.tool_calls
    if counts is None:
        if any(it.records_tool_calls() for it in log.items):
            if log.scorer is not None and "imported_from" in log.scorer.settings:
                return (
                    "its log records tool calls but not how many failed (imported before the importer "
                    "counted them); import it again (python -m pipeline.imports)"
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


def build(logs_dir: str, settings: Settings, arms: list[str] | None = None) -> dict[str, Any]:
    """The arm comparison report as a JSON-ready dict (a pure function of the logs and the settings)."""
    return build_found(discover(logs_dir, arms), settings, str(logs_dir))


def build_found(
    found: dict[str, tuple[Path, EvalLog]],
    settings: Settings,
    logs_dir: str,
    expected: bool = True,
    reference: str = "base",
    allow: frozenset[str] = frozenset(),
    primary: tuple[str, str] = (ct.PRIMARY_REFERENCE, ct.PRIMARY_ARM),
) -> dict[str, Any]:
    """The arm comparison of logs already read, by arm name (base required), in the order to report them.

    expected=False: the logs are all there is (analysis.commands.compare_logs), so no arm of the design is
    reported missing.
    reference: the arm every other is compared with (analysis.commands.compare_logs: the first log's own
    arm); against
    another arm than base a contrast is the marginal one where it is (trained+rag vs +rag), else it has no
    causal reading. allow: what the logs may differ in (align.check_matched), for logs of one model.
    primary: (reference, arm) of the contrast the delta report decides by the claim's family (Holm over
    pass@1 and pass@K), so that its row here carries that same verdict (analysis.commands.compare_logs: its
    first two logs).
    """
    found = dict(found)
    unusable: list[dict[str, Any]] = []
    for arm, (path, log) in list(found.items()):
        why = tool_call_problem(arm, log, settings.max_failed_tool_calls)
        if why is None:
            continue
        if arm == reference:
            raise Refusal(f"{path}: the {reference} arm is not usable: {why}")
        unusable.append({
            "arm": arm,
            "reason": why,
            "tool_calls": log.tool_calls.model_dump() if log.tool_calls else None,
        })  # fmt: skip
        del found[arm]
    base_path, base_log = found[reference]
    matched: dict[str, Any] = {}
    for arm, (path, log) in found.items():
        if arm != reference:
            # A parametric contrast of base with itself would report "no gain" instead of a mistake.
            parametric = normalise_attribution(arm, log.attribution) == "parametric"
            matched = check_matched(base_path, base_log, path, log, distinct_models=parametric, allow=allow)
    if not matched:
        matched = check_matched(base_path, base_log, base_path, base_log)
    order = item_order(base_log)
    data = {arm: arm_arrays(log, order) for arm, (_, log) in found.items()}
    models = {arm: log.model_name for arm, (_, log) in found.items()}
    attribution = {arm: normalise_attribution(arm, log.attribution) for arm, (_, log) in found.items()}
    if reference != "base":
        attribution = {
            arm: "marginal" if (arm, reference) in MARGINAL_CONTRASTS else "unknown" for arm in found
        }
    notes: list[str] = [n for n in [ct.small_suite_note(len(order))] if n]
    notes += [n for n in [ct.greedy_note(base_log.temperature, base_log.n_samples)] if n]

    contrasts = [
        _contrast(arm, reference, data, models, settings, primary) for arm in found if arm != reference
    ]
    for c in contrasts:
        c["attribution"] = attribution[c["arm"]]
        counts = found[c["arm"]][1].tool_calls
        c["tool_calls"] = counts.model_dump() if counts is not None else None
    marginal = []
    for arm, aug in MARGINAL_CONTRASTS:
        if arm in found and aug in found and aug != reference:
            row = _contrast(arm, aug, data, models, settings, primary)
            row["attribution"] = "marginal"
            marginal.append(row)

    all_rows = [*contrasts, *marginal]
    with_budget = [
        c for c in all_rows if data[c["arm"]].budget is not None and data[c["reference"]].budget is not None
    ]
    missing_budget = sorted(
        {a for c in all_rows for a in (c["arm"], c["reference"]) if data[a].budget is None}
    )
    if missing_budget:
        notes.append(
            "no gen_tokens on every item of "
            + ", ".join(missing_budget)
            + ": the budget adjustment of contrasts "
            "involving them is null"
        )
    adjustments = budget_adjusted_deltas(
        [
            (
                data[c["reference"]].item_mean,
                data[c["arm"]].item_mean,
                data[c["reference"]].budget,
                data[c["arm"]].budget,
            )
            for c in with_budget
        ],
        settings.n_boot,
        rng_for(settings.seed, "budget"),
        alpha=settings.alpha,
    )
    by_contrast = {(c["arm"], c["reference"]): adj for c, adj in zip(with_budget, adjustments, strict=True)}
    for c in all_rows:
        adj = by_contrast.get((c["arm"], c["reference"]))
        c["adjusted_delta"] = adj.delta if adj else None
        c["adjusted_ci95"] = adj.ci.as_list() if adj and adj.ci else None
        c["budget_confound"] = c["naive_delta"] - adj.delta if adj and adj.delta is not None else None
        c["budget_strata"] = adj.strata if adj else None
        c["budget_no_support"] = adj.no_support if adj else []

    families = []
    for c in all_rows:
        rows = family_rows(data[c["reference"]], data[c["arm"]], settings, data[reference].families)
        families += [{"arm": c["arm"], "reference": c["reference"], **row} for row in rows]

    # The primary contrast (trained vs base) is decided by the claim's family, as in the delta report;
    # every other arm contrast is one Benjamini-Hochberg family (per-family rows: one family per contrast,
    # analysis.reports.contrasts.family_rows), so no row's verdict depends on which report prints it.
    ct.decide_bh([c for c in all_rows if "significant" not in c], settings, delta_key="naive_delta")

    marginal_delta = {m["arm"]: m["naive_delta"] for m in marginal}
    for c in contrasts:
        attr = c["attribution"]
        c["ceiling"] = attr == "ceiling"
        share = None
        if attr in ("parametric", "lookup", "tool_access") or (attr == "mixed" and c["significant"]):
            share = parametric_share(attr, c["naive_delta"], marginal_delta.get(c["arm"]))
        c["parametric_share"] = share
        c["claim"] = _claim(attr, c, settings, augmentation=reference)
    for m in marginal:
        m["ceiling"] = False
        m["parametric_share"] = None
        m["claim"] = _claim("marginal", m, settings, augmentation=m["reference"])

    # The same generations under the lenient reader: each row's change in answered share, its lenient
    # delta and FORMAT call; trained vs base decided as in the delta report.
    readers = {arm: answering.reader_arrays(log, order) for arm, (_, log) in found.items()}
    lenient_missing = answering.missing_lenient(readers)
    for c in all_rows:
        whole = c.pop("_primary")
        ref_r, arm_r = readers[c["reference"]], readers[c["arm"]]
        if whole is not None:
            claim = ct.claim(whole, settings)[0]
            part = answering.primary_part(whole, claim, ref_r, arm_r, settings)
        else:
            part = answering.row_part(c, "naive_delta", ref_r, arm_r, settings)
        if part is None:
            continue
        c["format"] = part
        if part["call"] is not None and not c["ceiling"]:
            c["claim"] = answering.row_claim(part)
    if lenient_missing:
        notes.append(answering.not_recorded(lenient_missing, len(readers)))
    answering_rows = [answering.arm_row(arm, data[arm].scores, readers[arm], settings) for arm in found]

    paths = [t for arm, (_, log) in found.items() if (t := path_table(arm, log)) is not None]
    calib = calibration.section({arm: log for arm, (_, log) in found.items()}, order, reference, settings)
    factorial = factorial_section(data, settings)
    base_data = data[reference]
    return {
        "report": "arms",
        "suite": base_log.suite,
        "suite_revision": base_log.suite_revision,
        "n_items": len(order),
        "n_samples": base_log.n_samples,
        "logs_dir": str(logs_dir),
        "arms_found": list(found),
        "arms_missing": [
            a for a in CANONICAL_ARMS if expected and a not in found and a not in {u["arm"] for u in unusable}
        ],
        "arms_unusable": unusable,
        "logs": {arm: str(path) for arm, (path, _) in found.items()},
        "matched_protocol": matched,
        "prompting": {arm: prompt_line(log) for arm, (_, log) in found.items()},
        "base": {
            "arm": reference,
            "attribution": attribution[reference],
            "model_name": models[reference],
            "mean": float(base_data.item_mean.mean()),
            "mean_gen_tokens": float(base_data.budget.mean()) if base_data.budget is not None else None,
            "measured_at": base_log.measured_at,
            "driver": base_log.driver,
            "generated_by": generated_by(base_log),
        },
        "contrasts": contrasts,
        "marginal": marginal,
        "families": families,
        "paths": paths,
        "factorial": factorial,
        "calibration": calib,
        "truncation": truncation.section({arm: log for arm, (_, log) in found.items()}, base_log.max_tokens),
        "answering": answering_rows,
        "lenient_missing": lenient_missing,
        "n_tests": sum(1 for c in all_rows if (c["reference"], c["arm"]) != primary),
        "n_family_tests": len(families),
        "primary_in_report": any((c["reference"], c["arm"]) == primary for c in all_rows),
        "settings": settings_dict(settings),
        "notes": notes,
    }
