"""The benchmark table built: one row per arm (or checkpoint), one column per family of the suite.

Each cell is one of the numbers RLVR papers print (analysis.estimators.paper_metrics); each arm's paired
deltas against the reference arm come with their intervals. The table is a BenchmarkTable;
analysis.rendering.benchmark_table_text writes it as markdown, CSV and LaTeX; the command is
analysis.commands.benchmark_table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np

from analysis.estimators import paper_metrics as pm
from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import rng_for
from analysis.estimators.signflip import small_suite_interval
from analysis.reports.align import arm_arrays, arm_logs, check_matched, item_order
from analysis.reports.contrasts import BCA_MIN_ITEMS, NO_FAMILY, delta_interval, mean_contrast
from analysis.reports.refusal import Refusal
from analysis.reports.report_parts import Bounds, MeanContrast, PaperMetrics, Real, ReportModel, ReportSection
from analysis.reports.settings import AnalysisSettings, read_arm_list, read_swept
from contract.evallog import EvalLog

ALL = "all"
EXIT_REFUSED = 2
# (key, label in markdown, label in LaTeX, the ArmMetrics field, its spread field or None); k is the log's.
METRICS: list[tuple[str, str, str, str, str | None]] = [
    ("avg", "avg@{k} ± sd over {k} runs", r"avg@{k} $\pm$ sd", "avg", "avg_sd"),
    ("maj", "maj@{k}", "maj@{k}", "maj", None),
    ("pass_at_k", "pass@{k}", "pass@{k}", "pass_at_k", None),
    ("pass_hat", "pass^{k} (all {k} right)", r"pass\textasciicircum{{}}{k}", "pass_hat", None),
    ("bayes", "Bayes@{k} ± posterior sd", r"Bayes@{k} $\pm$ sd", "bayes", "bayes_sd"),
]


class MetricDelta(MeanContrast):
    """A metric's paired delta of an arm against the reference (avg@k's with the sd over runs)."""

    run_sd: Real | None = None


class BayesDelta(ReportSection):
    """The posterior of the arm's Bayes@N minus the reference's, with its normal credible interval."""

    delta: Real
    sd: Real
    ci95: Bounds
    ci95_method: str


class ArmDeltas(ReportSection):
    """One arm's paired deltas against the reference, metric by metric (maj@k: where answers are recorded)."""

    arm: str
    reference: str
    avg: MetricDelta
    maj: MetricDelta | None = None
    pass_hat: MetricDelta
    bayes: BayesDelta


class TableRow(ReportSection):
    """One arm's (or checkpoint's) paper metrics per family and over all items (`all`)."""

    arm: str
    model_name: str
    step: int | None
    cells: dict[str, PaperMetrics]


class TableSettings(ReportSection):
    """The analysis settings the table's intervals were computed with."""

    alpha: Real
    n_boot: int
    n_perm: int


class BenchmarkTable(ReportModel):
    """The benchmark table: rows of paper metrics per family, each arm's deltas against the reference."""

    report: Literal["benchmark_table"]
    suite: str
    suite_revision: str
    n_items: int
    k: int
    reference: str
    families: list[str]
    family_items: dict[str, int]
    rows: list[TableRow]
    deltas: list[ArmDeltas]
    settings: TableSettings
    definitions: str | None


def answers_of(log: EvalLog, order: list[str]) -> list[tuple[str | None, ...]] | None:
    """Each item's sample answers in the given order, or None when the log does not record them all."""
    by_id = {it.item_id: it for it in log.items}
    answers = [by_id[i].sample_answers() for i in order]
    return None if any(a is None for a in answers) else answers  # type: ignore[return-value]


def family_index(families: list[str | None]) -> dict[str, np.ndarray]:
    """Item indices of each family (sorted by name) and of `all`."""
    labels = [NO_FAMILY if f is None else f for f in families]
    groups = {name: np.flatnonzero(np.array(labels, dtype=object) == name) for name in sorted(set(labels))}
    return {**(groups if len(groups) > 1 or NO_FAMILY not in groups else {}), ALL: np.arange(len(labels))}


def arm_cells(log: EvalLog, order: list[str]) -> dict[str, dict[str, Any]]:
    """One arm's metrics per family and overall."""
    data = arm_arrays(log, order)
    answers = answers_of(log, order)
    cells = {}
    for fam, idx in family_index(data.families).items():
        sub = None if answers is None else [answers[i] for i in idx]
        cells[fam] = pm.arm_metrics(data.scores[idx], sub).as_dict()
    return cells


def metric_interval(ref: np.ndarray, arm: np.ndarray, settings: AnalysisSettings, key: str) -> Interval:
    """The paired interval of mean(arm - ref) the project gives a per-item metric: BCa from BCA_MIN_ITEMS
    items; below, Newcombe's paired score interval where both arms' values are 0/1 (maj@k, pass^k at
    k = n), else the sign-flip inversion (the pass@K rule of analysis.reports.contrasts)."""
    if ref.size >= BCA_MIN_ITEMS:
        return delta_interval(arm - ref, settings, key)
    return small_suite_interval(
        ref, arm, settings.n_perm, rng_for(settings.seed, f"perm-ci{key}"), settings.alpha
    )


def metric_contrast(ref: np.ndarray, arm: np.ndarray, settings: AnalysisSettings, key: str) -> dict[str, Any]:
    """mean_contrast's row (delta, sign-flip p) with metric_interval's interval."""
    row = mean_contrast(ref, arm, settings, key).fields()
    ci = metric_interval(ref, arm, settings, key)
    return {**row, "ci95": ci.as_list(), "ci95_method": ci.method}


def deltas(
    ref: EvalLog, arm: EvalLog, order: list[str], settings: AnalysisSettings, key: str
) -> dict[str, Any]:
    """Each metric's paired delta of arm minus ref over all items, with its interval (paper_metrics)."""
    a, b = arm_arrays(ref, order).scores, arm_arrays(arm, order).scores
    k = a.shape[1]
    out: dict[str, Any] = {}
    avg = metric_contrast(a.mean(axis=1), b.mean(axis=1), settings, key=f"/table/avg{key}")
    runs = pm.per_run_accuracy(b) - pm.per_run_accuracy(a)
    out["avg"] = {**avg, "run_sd": float(runs.std(ddof=1)) if runs.size > 1 else None}
    ans_a, ans_b = answers_of(ref, order), answers_of(arm, order)
    if ans_a is not None and ans_b is not None:
        out["maj"] = metric_contrast(pm.maj_at_k_items(ans_a, a), pm.maj_at_k_items(ans_b, b), settings,
                                   key=f"/table/maj{key}")  # fmt: skip
    out["pass_hat"] = metric_contrast(pm.pass_hat_k_items(a, k), pm.pass_hat_k_items(b, k), settings,
                                    key=f"/table/passhat{key}")  # fmt: skip
    out["bayes"] = pm.bayes_delta(a, b, settings.alpha).fields()
    return out


def arms_to_table(params: str | Path | None, logs_dir: str | Path) -> tuple[list[str], dict[str, int]]:
    """The arms the table asks for (params `arms`, then the swept checkpoints), and the swept steps."""
    listed = read_arm_list(params) or sorted(p.stem for p in Path(logs_dir).glob("*.json"))
    swept = read_swept(params, logs_dir)
    steps = {a: s for a, s in swept[1]} if swept else {}
    if swept:
        steps[swept[0]] = 0
    return list(dict.fromkeys([*listed, *steps])), steps


def build(logs_dir: str | Path, settings: AnalysisSettings, params: str | Path | None) -> BenchmarkTable:
    """The benchmark table; a Refusal when no arm has a log or two logs are not matched."""
    wanted, steps = arms_to_table(params, logs_dir)
    found = arm_logs(logs_dir, wanted)
    if not found:
        raise Refusal(f"{logs_dir}: no EvalLog of any arm of the params file; run dvc repro")
    arms = list(found)
    logs = {a: log for a, (_, log) in found.items()}
    ref = "base" if "base" in logs else arms[0]
    for arm, (path, log) in found.items():
        if arm != ref:
            check_matched(found[ref][0], logs[ref], path, log)
    order = item_order(logs[ref])
    rows = [
        {"arm": a, "model_name": logs[a].model_name, "step": steps.get(a), "cells": arm_cells(logs[a], order)}
        for a in arms
    ]
    compared = [
        # One key per metric, not per arm: every arm's contrast draws the same item resamples, so two
        # arms with the same logs (a swept checkpoint and its named twin) print the same intervals.
        {"arm": a, "reference": ref, **deltas(logs[ref], logs[a], order, settings, "")}
        for a in arms
        if a != ref
    ]
    families = list(rows[0]["cells"])
    return BenchmarkTable.model_validate(
        {
            "report": "benchmark_table",
            "suite": logs[ref].suite,
            "suite_revision": logs[ref].suite_revision,
            "n_items": len(order),
            "k": logs[ref].n_samples,
            "reference": ref,
            "families": families,
            "family_items": {f: rows[0]["cells"][f]["n_items"] for f in families},
            "rows": rows,
            "deltas": compared,
            "settings": {"alpha": settings.alpha, "n_boot": settings.n_boot, "n_perm": settings.n_perm},
            "definitions": pm.DEFINITIONS,
        }
    )
