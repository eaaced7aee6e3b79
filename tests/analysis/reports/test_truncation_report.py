"""The reports say per arm how many samples ended at the budget (finish reason `length`) and why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.commands import arm_comparison as arm_comparison_command
from analysis.commands import delta as delta_command
from analysis.reports import arm_comparison
from analysis.reports.settings import AnalysisSettings
from tests.helpers.evallogs import write_log
from tests.helpers.params import write_params

FAST = AnalysisSettings(n_boot=300, n_perm=300, seed=3)
N_ITEMS, K = 24, 4


def log_with_cuts(path: Path, arm: str, cut: int, model: str, lift: float = 0.0) -> Path:
    """An arm's log whose first `cut` samples (in item order) ended at the budget and scored 0."""
    rng = np.random.default_rng(len(arm))
    scores = (rng.random((N_ITEMS, K)) < 0.4 + lift).astype(float)
    samples, n = [], 0
    for i in range(N_ITEMS):
        row = []
        for j in range(K):
            at_budget = n < cut
            n += 1
            if at_budget:
                scores[i, j] = 0.0
            row.append({"index": j, "seed": 100 + j, "score": float(scores[i, j]),
                        "finish_reason": "length" if at_budget else "stop",
                        "gen_tokens": 64 if at_budget else 20})  # fmt: skip
        samples.append(row)
    gen = [[s["gen_tokens"] for s in row] for row in samples]
    return write_log(path, scores, samples=samples, gen_tokens=gen, arm=arm, model_name=model)


def test_the_delta_report_counts_each_arms_samples_at_the_budget(tmp_path: Path) -> None:
    pre = log_with_cuts(tmp_path / "base.json", "base", 3, "m0")
    post = log_with_cuts(tmp_path / "trained.json", "trained", 30, "m1", lift=0.2)
    out = tmp_path / "delta"
    # The command reads logs without keeping their samples (contract.logreader): the counts survive that.
    assert delta_command.main(["--pre", str(pre), "--post", str(post), "--out", str(out), "--params",
                       str(write_params(tmp_path / "p.yaml"))]) == 0  # fmt: skip
    report = json.loads((out / "delta_report.json").read_text())
    t = report["truncation"]
    assert t["max_tokens"] == 64 and t["finish_reason"] == "length"
    assert [(a["arm"], a["samples"], a["at_budget"]) for a in t["arms"]] == [("pre", 96, 3), ("post", 96, 30)]
    assert abs(t["share_gap"] - 27 / 96) < 1e-12
    text = (out / "delta_report.md").read_text()
    assert "## Samples that ended at the budget" in text
    assert "| post | 96 | 30 | 31.2% |" in text and "| pre | 96 | 3 | 3.1% |" in text
    assert "is a budget effect" in text and "differ by up to 28.1%" in text


def test_the_arm_comparison_counts_every_arm_and_says_when_logs_do_not_record_it(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log_with_cuts(folder / "base.json", "base", 0, "m0")
    log_with_cuts(folder / "trained.json", "trained", 8, "m1")
    # A log without samples (the minimal form) has no finish reasons: reported as not recorded, not as 0.
    write_log(folder / "+rag.json", (np.random.default_rng(1).random((N_ITEMS, K)) < 0.5).astype(float),
              arm="+rag", model_name="m0")  # fmt: skip
    report = arm_comparison.build(str(folder), FAST).model_dump()
    rows = {a["arm"]: a for a in report["truncation"]["arms"]}
    assert (rows["base"]["at_budget"], rows["trained"]["at_budget"]) == (0, 8)
    assert rows["+rag"]["samples"] is None and rows["+rag"]["share"] is None
    out = tmp_path / "out"
    assert arm_comparison_command.main(["--logs", str(folder), "--out", str(out), "--params",
                      str(write_params(tmp_path / "p.yaml"))]) == 0  # fmt: skip
    text = (out / "arm_comparison_report.md").read_text()
    assert "| trained | 96 | 8 | 8.3% |" in text and "| +rag | - | not recorded | n/a |" in text
    assert "the delta report's token budget curve shows the delta at smaller budgets" in text
