"""The checkpoint trajectory built: every checkpoint's paired delta over the reference, and the placebo's.

The contrast of the last checkpoint against a random-reward placebo says whether the reward, rather than
training as such, moved the score. Without a `trajectory` section, or with a checkpoint's log missing, the
report is a short one saying so. The command is analysis.commands.trajectory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.estimators import paper_metrics as pm
from analysis.estimators.estimate import excludes
from analysis.reports import answering, contrasts, undecided
from analysis.reports.align import ArmData, arm_arrays, arm_logs, check_matched, item_order
from analysis.reports.benchmark_table import answers_of
from analysis.reports.contrast_values import ContrastStats
from analysis.reports.contrasts import mean_contrast, too_few_items
from analysis.reports.number_text import p_bound
from analysis.reports.prompting import prompt_line
from analysis.reports.refusal import Refusal
from analysis.reports.report_models import TrajectoryReport
from analysis.reports.settings import (
    AnalysisSettings,
    checked,
    read_arm_list,
    read_section,
    read_swept,
    settings_dict,
)
from contract.evallog import EvalLog
from contract.log_folder import log_path
from contract.params import TrajectoryParams

NOT_CONFIGURED, ARMS_MISSING, DONE = "not configured", "arms missing", "done"
STEP_IN_NAME = re.compile(r"step[-_](\d+)$")
CONFIGURE = (
    "add to params.yaml `trajectory: {checkpoints: [base, <a checkpoint's plain arm>, ..., trained], "
    "placebo: <the random-reward run's plain arm>}` and those arms to `arms` (docs/worlds.md: The checkpoint "
    "trajectory)"
)


def swept_checkpoints(path: str | Path | None, logs_dir: str | Path) -> list[str] | None:
    """The checkpoints a params.yaml `sweep` makes: its base arm, then each swept arm with a log, in step
    order; None without a sweep."""
    swept = read_swept(path, logs_dir)
    return None if swept is None else [swept[0], *(a for a, _ in swept[1])]


def read_trajectory(
    path: str | Path | None, logs_dir: str | Path = "evallogs"
) -> tuple[list[str], str | None] | None:
    """params.yaml `trajectory` as (checkpoint arms, placebo arm or None); None when there is no section.

    With a `sweep`, `trajectory.checkpoints` may be left out (or the section too): the checkpoints are then
    the sweep's base and its swept arms in step order.
    """
    p = Path(path) if path is not None else Path("params.yaml")
    section = read_section(p, "trajectory")
    swept = swept_checkpoints(p, logs_dir)
    unnamed = section is None or (isinstance(section, dict) and "checkpoints" not in section)
    if swept is not None and unnamed:
        section = {**(section or {}), "checkpoints": swept}
    if section is None:
        return None
    if not isinstance(section, dict):
        raise Refusal(f"{p}: trajectory: must be a mapping with checkpoints and placebo; {CONFIGURE}")
    # Without a sweep the checkpoints are required: an absent list is checked as an empty one would be.
    t = checked(TrajectoryParams, {"checkpoints": None, **section}, p, "trajectory")
    assert t.checkpoints is not None  # TrajectoryParams refuses a given None
    return list(t.checkpoints), t.placebo


@dataclass(frozen=True)
class StepTest:
    """One contrast of the trajectory as computed: a checkpoint, or the placebo, against its reference."""

    ref: str
    arm: str
    model_name: str
    stats: ContrastStats
    # Trained vs base: the delta report's contrast, decided by Holm over the claim's family (else None).
    primary: contrasts.Primary | None


def _test(
    arm: str, ref: str, data: dict[str, ArmData], models: dict[str, str], settings: AnalysisSettings
) -> StepTest:
    """The contrast with the arm report's draws: a number carries the same interval on both pages."""
    if contrasts.is_primary(ref, arm):
        whole = contrasts.primary_contrast(data[ref].scores, data[arm].scores, settings)
        return StepTest(ref, arm, models[arm], whole.stats, whole)
    return StepTest(
        ref, arm, models[arm], mean_contrast(data[ref].item_mean, data[arm].item_mean, settings), None
    )


def _rows(tests: list[StepTest], readers: dict[str, Any], settings: AnalysisSettings) -> list[dict[str, Any]]:
    """The tests' report rows: Benjamini-Hochberg over all but the primary, then each FORMAT call."""
    by_bh = iter(contrasts.bh_decisions([t.stats for t in tests if t.primary is None], settings))
    rows = []
    for t in tests:
        decision = t.primary.decision if t.primary is not None else next(by_bh)
        row: dict[str, Any] = {"arm": t.arm, "reference": t.ref, "model_name": t.model_name}
        row.update({**t.stats.fields(), **decision.fields()})
        ref, arm = readers[t.ref], readers[t.arm]
        if t.primary is not None:
            claim = contrasts.claim(t.primary, settings)[0]
            part = answering.primary_part(t.primary, claim, ref, arm, settings)
        else:
            part = answering.row_part(decision.significant, t.stats.delta, ref, arm, settings)
        if part is not None:
            row["format"] = part
        rows.append(row)
    return rows


def reward_claim(row: dict[str, Any] | None, settings: AnalysisSettings) -> str:
    """What the last checkpoint vs the placebo says about the reward, decided by its interval."""
    if row is None:
        return (
            "no placebo configured: the trajectory shows what training did, but not whether the reward, "
            "rather than training as such (more steps on the model's own samples), moved the score."
        )
    if (why := too_few_items(row["n_items"], settings)) is not None:
        return why
    lo, hi = row["ci95"]
    gap = f"{row['arm']} - {row['reference']} = {row['delta']:+.4f}, CI [{lo:+.4f}, {hi:+.4f}]"
    call = row["format"].call if row.get("format") is not None else None
    if call is not None:
        # The two runs differ under the report's reader only: what the reward changed is the answer's form.
        lenient = row["format"].lenient
        what = (
            "the reward taught where to write the answer, not to answer right more often"
            if row["delta"] > 0
            else "the rewarded run writes its answer where the reader looks less often, it does not answer "
            "right less often"
        )
        return (
            f"{call}: {gap} under the report's reader, but the lenient reader finds no difference "
            f"({lenient.delta:+.4f}, sign-flip p "
            f"{p_bound(lenient.p_value, lenient.perm_n, lenient.perm_exact is not False)}): {what}."
        )
    # As in the other reports, a claim needs what the significant column needs: q <= fdr and the CI.
    if row["significant"] and lo > 0:
        return (
            f"the reward moved the score: {gap} lies above 0. The placebo ran the same trainer on the same "
            "problems for the same steps with a random reward, so what separates the two is the reward."
        )
    if row["significant"] and hi < 0:
        return f"the placebo scores higher than the rewarded run ({gap} below 0): the reward did not help."
    if excludes(*row["ci95"]):
        return (
            f"{gap} excludes 0, but q = {row['q_value']:.3g} > fdr {settings.fdr} among the report's "
            "contrasts: not significant, no claim about the reward."
        )
    return (
        f"no difference between the rewarded run and the placebo detected ({gap} includes 0): the gain over "
        "the reference cannot be credited to the reward rather than to training as such."
    )


LIMITS = (
    "The claim compares one rewarded run with one placebo run: the interval covers the items and the "
    "evaluation's samples, not the variation between training runs (seeds), which only more runs of each "
    "would measure. It holds for this suite, protocol and trainer; the placebo matches the trainer, the "
    "problems and the steps, not which completions were kept (that is the point) nor exactly how many. The "
    "placebo's own change over the reference, a gain or a loss, is what training without the reward does "
    "(format practice, drift from fine-tuning on wrong answers), so the rewarded run's lead over the placebo "
    "can exceed its gain over the reference."
)


def _short(status: str, detail: str, settings: AnalysisSettings, **extra: Any) -> TrajectoryReport:
    """The short report of a trajectory that is not configured or whose checkpoints have no logs."""
    return TrajectoryReport(
        report="trajectory", status=status, detail=detail, **extra, settings=settings_dict(settings)
    )


def absent_arms(wanted: list[str], params: str | Path | None, logs_dir: str | Path) -> list[str]:
    """The wanted arms without a log among the params file's arms (and the swept checkpoints)."""
    listed = read_arm_list(params)
    swept = swept_checkpoints(params, logs_dir) or []
    run = None if listed is None else [*listed, *swept]
    return [a for a in wanted if (run is not None and a not in run) or not log_path(logs_dir, a).is_file()]


def _reference_row(ref: str, model_name: str, data: ArmData, n_items: int) -> dict[str, Any]:
    """The reference checkpoint's row: its own mean, no delta."""
    mean = float(data.item_mean.mean())
    return {"arm": ref, "reference": ref, "model_name": model_name, "n_items": n_items,
            "mean_ref": mean, "mean_arm": mean, "delta": 0.0, "ci95": None}  # fmt: skip


def _notes(ref_log: EvalLog, n_items: int, configured_placebo: str | None, placebo: str | None) -> list[str]:
    """A small suite, greedy decoding, a configured placebo without a log."""
    notes = [n for n in [contrasts.small_suite_note(n_items)] if n]
    notes += [n for n in [contrasts.greedy_note(ref_log.temperature, ref_log.n_samples)] if n]
    if configured_placebo and placebo is None:
        notes.append(
            f"placebo arm {configured_placebo} has no log among the arms of the params file: no claim about "
            "the reward"
        )
    return notes


def build(logs_dir: str, settings: AnalysisSettings, params: str | Path | None) -> TrajectoryReport:
    """The trajectory report, or a short one when it is not configured or arms miss."""
    config = read_trajectory(params, logs_dir)
    if config is None:
        return _short(NOT_CONFIGURED, f"no trajectory section in the params file; {CONFIGURE}.", settings)
    checkpoints, placebo = config
    folder = Path(logs_dir)
    absent = absent_arms([*checkpoints, *([placebo] if placebo else [])], params, folder)
    if [a for a in absent if a in checkpoints]:
        detail = (
            f"no log of {', '.join(absent)} in {folder} among the arms of the params file; add them to "
            "`arms` (each a conf/arm file naming its model) and run dvc repro"
        )
        return _short(
            ARMS_MISSING, detail, settings, checkpoints=checkpoints, placebo=placebo, missing=absent
        )
    if placebo in absent:
        placebo = None
    present = [*checkpoints, *([placebo] if placebo else [])]
    # Side by side on the spare CPUs; every sample validated, then dropped. Each is there (absent_arms).
    logs = arm_logs(folder, present)
    ref = checkpoints[0]
    ref_path, ref_log = logs[ref]
    matched: dict[str, Any] = {}
    for arm in present[1:]:
        matched = check_matched(ref_path, ref_log, logs[arm][0], logs[arm][1], distinct_models=True)
    order = item_order(ref_log)
    data = {a: arm_arrays(log, order) for a, (_, log) in logs.items()}
    models = {a: log.model_name for a, (_, log) in logs.items()}
    tests = [_test(a, ref, data, models, settings) for a in checkpoints[1:]]
    if placebo:
        tests += [
            _test(placebo, ref, data, models, settings),
            _test(checkpoints[-1], placebo, data, models, settings),
        ]
    readers = {a: answering.reader_arrays(log, order) for a, (_, log) in logs.items()}
    decided = _rows(tests, readers, settings)
    rows = [_reference_row(ref, models[ref], data[ref], len(order)), *decided[: len(checkpoints) - 1]]
    placebo_row, versus = (decided[-2], decided[-1]) if placebo else (None, None)
    lenient_missing = answering.missing_lenient(readers)
    notes = _notes(ref_log, len(order), config[1], placebo)
    if lenient_missing:
        notes.append(answering.not_recorded(lenient_missing, len(readers)))
    extra = undecided.report_fields(
        {a: g for a, (_, g) in logs.items()},
        order,
        data,
        [(t.ref, t.arm) for t in tests],
        settings,
        notes,
    )
    return TrajectoryReport(
        report="trajectory",
        status=DONE,
        suite=ref_log.suite,
        suite_revision=ref_log.suite_revision,
        n_items=len(order),
        n_samples=ref_log.n_samples,
        checkpoints=checkpoints,
        placebo=placebo,
        logs={a: str(p) for a, (p, _) in logs.items()},
        matched_protocol=matched,
        prompting={a: prompt_line(log) for a, (_, log) in logs.items()},
        trajectory=rows,
        placebo_delta=placebo_row,
        reward_contrast=versus,
        reward_claim=reward_claim(versus, settings),
        answering=[answering.arm_row(a, data[a].scores, readers[a], settings) for a in logs],
        metrics=metrics_by_step(checkpoints, {a: log for a, (_, log) in logs.items()}, order),
        lenient_missing=lenient_missing,
        **extra,
        limits=LIMITS,
        n_tests=sum(1 for t in tests if not contrasts.is_primary(t.ref, t.arm)),
        settings=settings_dict(settings),
        notes=notes,
    )


def metrics_by_step(checkpoints: list[str], logs: dict[str, Any], order: list[str]) -> list[dict[str, Any]]:
    """Each checkpoint's paper metrics over all items (analysis.estimators.paper_metrics) and its training
    step: the
    number its name ends in (a swept arm's `<name>-step-12`, `step-12`), the reference at 0, else None."""
    rows = []
    for i, arm in enumerate(checkpoints):
        log = logs[arm]
        scores = arm_arrays(log, order).scores
        m = STEP_IN_NAME.search(arm)
        step = 0 if i == 0 else (int(m.group(1)) if m else None)
        rows.append({"arm": arm, "step": step, **pm.arm_metrics(scores, answers_of(log, order)).as_dict()})
    return rows
