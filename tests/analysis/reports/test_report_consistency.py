"""One report says one thing one way: one interval per contrast, one p printed one way, one wording of a
verdict, the page's numbers as the tables print them, and no spread where one run has none."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from analysis.commands.compare_logs import main as compare_main
from analysis.estimators import paper_metrics as pm
from analysis.rendering.arms_report import arms_markdown
from analysis.rendering.trajectory_report import metrics_markdown
from analysis.reports import arm_comparison
from analysis.reports.report_models import ArmComparison, CheckpointMetrics, TrajectoryReport
from analysis.reports.settings import AnalysisSettings
from tests.helpers.evallogs import make_world, synthetic_scores, write_log

OLD_WORDINGS = (
    "no material shift",
    "no shift detected",
    "no parametric gain detected",
    "no detectable change",
)


def test_the_factorial_main_effect_is_its_contrast_row_with_one_interval(tmp_path: Path) -> None:
    folder = make_world(tmp_path / "logs", n_items=120, k=4)
    report = arm_comparison.build(str(folder), AnalysisSettings(n_boot=400, n_perm=400, seed=3))
    rows = {(c.reference, c.arm): c for c in report.contrasts}
    effects = {e.effect: e for e in report.factorial.effects}  # type: ignore[union-attr]
    for effect, arm in (("training", "trained"), ("retrieval", "+rag"), ("tools", "+tools")):
        row = rows[("base", arm)]
        assert effects[effect].ci95 == row.ci95 and effects[effect].ci95_method == row.ci95_method
        assert effects[effect].estimate == row.naive_delta
    # The interactions: the one method of every mean contrast, not a second (percentile) one.
    assert {e.ci95_method for e in effects.values() if e.estimate is not None} == {
        rows[("base", "trained")].ci95_method
    }
    text = arms_markdown(ArmComparison.model_validate(report.model_dump()))
    lo, hi = rows[("base", "trained")].ci95
    shown = f"[{lo:+.4f}, {hi:+.4f}]"
    # The contrast table's row and the factorial table's main effect (per-family rows are other contrasts).
    ci = r"(\[[-+]\d\.\d{4}, [-+]\d\.\d{4}\])"
    at = r"^\| (?:trained vs base \| parametric|training \| trained - base) \|.*?" + ci
    trained_intervals = re.findall(at, text, flags=re.M)
    assert trained_intervals == [shown, shown], trained_intervals


def _pair(folder: Path, lift: float, k: int) -> list[str]:
    rng = np.random.default_rng(4)
    base, logit = synthetic_scores(rng, 60, k)
    trained = synthetic_scores(rng, 60, k, lift=lift, base=logit)[0]
    folder.mkdir()
    trained_log = write_log(folder / "trained.json", trained, arm="trained", attribution="parametric")
    return [str(write_log(folder / "base.json", base, arm="base")), str(trained_log)]


def test_a_p_at_its_floor_reads_as_a_bound_in_the_claim_and_in_the_table(tmp_path: Path) -> None:
    logs = _pair(tmp_path / "logs", lift=3.0, k=4)
    out = tmp_path / "cmp"
    assert compare_main([*logs, "--out", str(out), "--n-boot", "400", "--n-perm", "400"]) == 0
    text = (out / "delta" / "delta_report.md").read_text() + (out / "index.md").read_text()
    floor = f"{2 / 401:.3g}"
    assert f"sign-flip p <= {floor}" in text and f"<=\u00a0{floor}" in text
    assert f"p {floor}" not in text and f"p: {floor}" not in text, "the floor printed as an exact p"
    assert "permutation p:" not in text


def test_a_verdict_that_is_not_significant_is_worded_one_way_and_in_the_tables_numbers(
    tmp_path: Path,
) -> None:
    logs = _pair(tmp_path / "logs", lift=0.0, k=1)
    out = tmp_path / "cmp"
    assert compare_main([*logs, "--out", str(out), "--n-boot", "400", "--n-perm", "400"]) == 0
    pages = [p.read_text() for p in (out / "index.md", out / "delta" / "delta_report.md",
                                      out / "arms" / "arm_comparison_report.md")]  # fmt: skip
    for text in pages:
        assert not [w for w in OLD_WORDINGS if w in text], [w for w in OLD_WORDINGS if w in text]
        assert not re.search(r"\bpoints\b", text)
    index = pages[0]
    assert "**Trained vs base: no detectable difference (" in index
    assert "| trained vs base (pass@k shape) | **no detectable difference**" in index
    assert "no detectable difference (no parametric gain)." in index
    sentence = index.split("**Trained vs base: no detectable difference (", 1)[1].split(")", 1)[0]
    assert re.fullmatch(r"[-+]\d\.\d{4} \\\[[-+]\d\.\d{4}, [-+]\d\.\d{4}\\\]", sentence), sentence


def test_the_spread_of_one_run_is_not_printed_as_zero() -> None:
    one_run = np.array([[1.0], [0.0], [1.0]])
    metrics = pm.arm_metrics(one_run, None).as_dict()
    assert metrics["avg_sd"] is None
    row = CheckpointMetrics.model_validate({**metrics, "arm": "base", "step": 0})
    report = TrajectoryReport.model_construct(metrics=[row])
    table = metrics_markdown(report)
    assert (
        "| base | 0 | 0.667 | n/a |" in table and "± 0.000" not in table.split("Bayes@1")[1].split("\n", 2)[2]
    )
