"""Format separated from reasoning in every report, on constructed logs scored by two readers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.rendering.arms_report import arms_markdown
from analysis.rendering.delta_report import delta_markdown
from analysis.reports import arm_comparison, delta, trajectory
from analysis.reports.report_models import ArmComparison, DeltaReport
from analysis.reports.settings import AnalysisSettings
from tests.helpers.commands import run_cli
from tests.helpers.evallogs import write_log
from tests.helpers.params import write_params
from tests.helpers.params import write_trajectory_params as trajectory_params

FAST = AnalysisSettings(n_boot=400, n_perm=400, seed=11)
N, K = 80, 4


def _samples(answered: np.ndarray, scores: np.ndarray) -> list[list[dict]]:
    return [
        [
            {"index": j, "seed": 100 * i + j, "score": float(scores[i, j]),
             **({"answer": "7"} if answered[i, j] else {"no_answer_reason": "not in the expected form"})}
            for j in range(scores.shape[1])
        ]
        for i in range(scores.shape[0])
    ]  # fmt: skip


def arm_log(path: Path, right: np.ndarray, answered: np.ndarray, lenient: bool = True) -> Path:
    """A log of one arm: the report's reader scores a sample right when it is right and read; the lenient
    reader when it is right (lenient=False: a log scored before the lenient reader was recorded)."""
    strict = right * answered
    write_log(path, strict, samples=_samples(answered, strict), arm=path.stem, format_version=4)
    if lenient:
        raw = json.loads(path.read_text())
        for it, row in zip(raw["items"], right, strict=True):
            it["lenient_scores"] = row.tolist()
        path.write_text(json.dumps(raw))
    return path


def world(folder: Path, kind: str, lenient: bool = True) -> Path:
    """base and trained (and a step between) of one of the kinds: format, gain, decline."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(8)
    p = rng.beta(2, 2, N)
    right = (rng.random((N, K)) < p[:, None]).astype(float)
    everything, nothing = np.ones((N, K)), np.zeros((N, K))
    if kind == "format":
        # Trained gives exactly base's answers; only trained writes them where the report's reader looks.
        arms = {"base": (right, nothing), "trained": (right, everything)}
    elif kind == "decline":
        arms = {"base": (right, everything), "trained": (right, nothing)}
    else:
        better = (rng.random((N, K)) < np.clip(p + 0.35, 0, 1)[:, None]).astype(float)
        arms = {"base": (right, everything), "trained": (better, everything)}
    # A checkpoint that changed nothing yet: base's own samples.
    arms["step-100"] = arms["base"]
    for arm, (r, a) in arms.items():
        arm_log(folder / f"{arm}.json", r, a, lenient)
    return folder


def delta_of(folder: Path) -> dict:
    pre, post = folder / "base.json", folder / "trained.json"
    return delta.build(str(pre), *_load([pre]), str(post), *_load([post]), FAST).model_dump()


def _load(paths: list[Path]) -> list:
    from analysis.reports.align import load_logs

    return load_logs(paths, samples=False)


def test_the_same_answers_in_the_readers_form_are_format_in_every_report(tmp_path):
    logs = world(tmp_path / "logs", "format")
    r = delta_of(logs)
    assert r["claim"] == "FORMAT"
    f = r["format"]
    assert f["contrast"]["call"] == "FORMAT" and not f["contrast"]["lenient"]["significant"]
    assert f["contrast"]["lenient"]["delta"] == 0.0 and f["contrast"]["lenient_top_k"]["delta"] == 0.0
    assert [a["answered_share"] for a in f["arms"]] == [0.0, 1.0]
    assert f["arms"][0]["accuracy_answered"] is None
    # Trained's accuracy among answered is its accuracy: every sample is answered.
    assert f["arms"][1]["accuracy_answered"] == pytest.approx(r["mean_post"])
    assert f["contrast"]["answered_change"]["delta"] == 1.0
    # The report's reader alone would claim a gain, and the verdict on its delta still stands.
    assert r["verdict"]["significant"] and "EXPANSION under it alone" in r["claim_detail"]
    text = delta_markdown(DeltaReport.model_validate(r))
    assert "**Claim: FORMAT.**" in text and "## Format or reasoning" in text

    arms = arm_comparison.build(str(logs), FAST, ["base", "step-100", "trained"]).model_dump()
    row = next(c for c in arms["contrasts"] if c["arm"] == "trained")
    assert row["format"]["call"] == "FORMAT" and row["claim"].startswith("FORMAT:")
    assert row["format"]["lenient"] == f["contrast"]["lenient"]
    step = next(c for c in arms["contrasts"] if c["arm"] == "step-100")
    assert step["format"]["call"] is None and not step["claim"].startswith("FORMAT")
    assert "## Format or reasoning" in arms_markdown(ArmComparison.model_validate(arms))

    section = "trajectory: {checkpoints: [base, step-100, trained], placebo: null}"
    p = trajectory_params(tmp_path / "params.yaml", ["base", "step-100", "trained"], section)
    t = trajectory.build(str(logs), FAST, p).model_dump()
    last = t["trajectory"][-1]
    assert last["arm"] == "trained" and last["format"]["call"] == "FORMAT"
    assert last["format"]["lenient"] == f["contrast"]["lenient"]


def test_a_real_gain_with_the_same_format_is_not_format(tmp_path):
    r = delta_of(world(tmp_path / "logs", "gain"))
    assert r["claim"] in ("EXPANSION", "SHARPENING")
    c = r["format"]["contrast"]
    assert c["call"] is None and c["lenient"]["significant"]
    assert c["lenient"]["delta"] == pytest.approx(r["delta_mean"]) and c["answered_change"]["delta"] == 0.0
    assert "Not a format effect alone" in c["detail"]


def test_a_decline_that_is_format_only_is_format_decline_not_regression(tmp_path):
    r = delta_of(world(tmp_path / "logs", "decline"))
    assert r["claim"] == "FORMAT (decline)"
    assert "REGRESSION under it alone" in r["claim_detail"]


def test_logs_without_the_lenient_reader_render_as_before_plus_one_note(tmp_path):
    logs = world(tmp_path / "logs", "format", lenient=False)
    r = delta_of(logs)
    assert r["claim"] == "EXPANSION" and r["format"]["contrast"] is None
    assert r["format"]["lenient_missing"] == ["base", "trained"]
    text = delta_markdown(DeltaReport.model_validate(r))
    notes = [line for line in text.splitlines() if "lenient reader not recorded" in line]
    assert len(notes) == 1 and "no FORMAT call" in notes[0]
    # Without the format part and its note, the markdown is what it was: nothing else moved.
    before = {k: v for k, v in r.items() if k != "format"}
    before["notes"] = [n for n in r["notes"] if "lenient reader" not in n]
    assert delta_markdown(DeltaReport.model_validate(before)) == text.replace(notes[0] + "\n", "")

    arms = arm_comparison.build(str(logs), FAST, ["base", "trained"]).model_dump()
    assert all("format" not in c for c in arms["contrasts"])
    text = arms_markdown(ArmComparison.model_validate(arms))
    assert sum("lenient reader not recorded" in line for line in text.splitlines()) == 1
    assert "## Format or reasoning" not in text


def test_the_index_page_and_metrics_carry_the_lenient_delta_and_answered_shares(tmp_path):
    logs = world(tmp_path / "logs", "format")
    for stray in ("step-100.json",):
        (logs / stray).unlink()
    params = write_params(tmp_path / "params.yaml", n_boot=300, n_perm=300)
    out = tmp_path / "reports"
    for args in (
        ("analysis.commands.delta", "--pre", str(logs / "base.json"), "--post", str(logs / "trained.json"),
         "--out", str(out / "delta"), "--params", str(params)),
        ("analysis.commands.arm_comparison", "--logs", str(logs), "--out", str(out / "arms"), "--params",
         str(params)),
        ("analysis.commands.index_page", "--delta", str(out / "delta"), "--arms", str(out / "arms"),
         "--logs", str(logs),
         "--out", str(out)),
    ):  # fmt: skip
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["claim"] == "FORMAT" and m["answered"] == {"base": 0.0, "trained": 1.0}
    assert m["lenient"]["mean"] == 0.0 and m["lenient"]["significant"] is False
    index = (out / "index.md").read_text()
    assert "**FORMAT**" in index and "Under the lenient reader" in index
    assert "<b>FORMAT</b>" in (out / "index.html").read_text()
