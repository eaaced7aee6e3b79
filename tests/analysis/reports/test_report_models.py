"""The typed reports: every committed report JSON reads into its model and writes back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from analysis.reports.report_models import ArmComparison, BudgetStratum, DeltaReport, TrajectoryReport
from analysis.reports.report_parts import report_json

ROOT = Path(__file__).resolve().parents[3]
MODELS = {
    "delta_report.json": DeltaReport,
    "arm_comparison_report.json": ArmComparison,
    "trajectory_report.json": TrajectoryReport,
}
COMMITTED = sorted(p for name in MODELS for p in ROOT.glob(f"**/reports/*/{name}") if ".venv" not in p.parts)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_committed_report_reads_into_its_model_and_writes_back_byte_for_byte(path: Path) -> None:
    raw = path.read_bytes()
    assert report_json(MODELS[path.name].model_validate(json.loads(raw))) == raw


def test_a_renamed_key_is_refused() -> None:
    path = ROOT / "reports" / "delta" / "delta_report.json"
    report = json.loads(path.read_text())
    report["delta_average"] = report.pop("delta_mean")
    with pytest.raises(ValidationError, match="delta_average"):
        DeltaReport.model_validate(report)


def test_numbers_keep_their_type_and_are_written_as_the_dict_writer_wrote_them() -> None:
    row = {
        "stratum": np.int64(1),
        "budget_range": [np.float64(0.1234567890123), 64],
        "ref_weight": float("nan"),
        "n_arm_items": 3,
        "mean_delta": None,
        "supported": np.bool_(True),
    }
    part = BudgetStratum.model_validate(row)
    assert part.budget_range[0] == 0.1234567890123 and part.stratum == 1
    assert part.model_dump(mode="json") == {
        "stratum": 1, "budget_range": [0.123456789, 64], "ref_weight": None, "n_arm_items": 3,
        "mean_delta": None, "supported": True,
    }  # fmt: skip
