"""The typed reports: every committed report JSON reads into its model and writes back byte for byte (its
`version` key apart), reports in the first format (no `version`) included; a newer version is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from analysis.reports.benchmark_table import BenchmarkTable
from analysis.reports.drift import DriftReport
from analysis.reports.judge import JudgeReport, LabelsReport
from analysis.reports.refusal import Refusal
from analysis.reports.report_files import REPORT_VERSION, read_report, report_json
from analysis.reports.report_models import ArmComparison, BudgetStratum, DeltaReport, TrajectoryReport
from analysis.reports.report_parts import ReportModel

ROOT = Path(__file__).resolve().parents[3]
VERSION_1 = ROOT / "tests" / "data" / "reports_v1"
MODELS: dict[str, type[ReportModel]] = {
    "delta_report.json": DeltaReport,
    "arm_comparison_report.json": ArmComparison,
    "trajectory_report.json": TrajectoryReport,
    "drift_report.json": DriftReport,
    "benchmark_table.json": BenchmarkTable,
    "judge_report.json": JudgeReport,
    "labels_report.json": LabelsReport,
}
COMMITTED = sorted(p for name in MODELS for p in ROOT.glob(f"**/reports/*/{name}") if ".venv" not in p.parts)
OLD = sorted(VERSION_1.glob("*.json"))


def model_of(path: Path) -> type[ReportModel]:
    """The model of a report file, by its name (judge_report_labels.json is a judge report)."""
    return MODELS[next(name for name in MODELS if path.name.startswith(name.removesuffix(".json")))]


def without_version(text: bytes, model: type[ReportModel]) -> bytes:
    """A report's bytes with its `version` key (the first) taken out: a version 1 report's bytes."""
    data = json.loads(text)
    assert list(data)[0] == "version" and data["version"] == REPORT_VERSION
    return (
        json.dumps({k: v for k, v in data.items() if k != "version"}, **model.json_options) + "\n"
    ).encode()


def test_every_model_has_a_report_on_file_in_the_first_format() -> None:
    assert {model_of(p) for p in OLD} == set(MODELS.values())
    assert all("version" not in json.loads(p.read_bytes()) for p in OLD)


@pytest.mark.parametrize("path", [*COMMITTED, *OLD], ids=lambda p: str(p.relative_to(ROOT)))
def test_a_report_reads_into_its_model_and_writes_back_byte_for_byte_with_the_version_first(path):
    raw, model = path.read_bytes(), model_of(path)
    written = report_json(read_report(path, model))
    # A committed report written before the version key reads as version 1; after, as version 2.
    assert written == raw if "version" in json.loads(raw) else without_version(written, model) == raw


def test_a_report_written_with_the_version_reads_back_the_same(tmp_path: Path) -> None:
    for path in OLD:
        model = model_of(path)
        again = tmp_path / path.name
        again.write_bytes(report_json(read_report(path, model)))
        assert report_json(read_report(again, model)) == again.read_bytes()


@pytest.mark.parametrize("version", [REPORT_VERSION + 1, "2", 0, None])
def test_a_version_this_code_does_not_read_is_refused_naming_the_file_the_field_and_the_fix(
    tmp_path: Path, version: object
) -> None:
    data = {"version": version, **json.loads((VERSION_1 / "drift_report.json").read_text())}
    path = tmp_path / "drift_report.json"
    path.write_text(json.dumps(data))
    with pytest.raises(Refusal) as refused:
        read_report(path, DriftReport)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path}: version: {version!r}")
    assert "update reasoning-delta" in message


def test_a_report_of_another_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(Refusal, match=r"not a DeltaReport report \(report: "):
        read_report(VERSION_1 / "drift_report.json", DeltaReport)


def test_a_renamed_key_is_refused() -> None:
    path = ROOT / "reports" / "delta" / "delta_report.json"
    report = json.loads(path.read_text())
    report.pop("version", None)
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
