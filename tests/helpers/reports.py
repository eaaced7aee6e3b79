"""Reports built the way the commands build them: the delta report in process, the report set by the CLI."""

from __future__ import annotations

from pathlib import Path

from analysis.reports import delta
from analysis.reports.report_models import DeltaReport
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog
from tests.helpers.commands import run_cli
from tests.helpers.params import write_params

FAST = AnalysisSettings(n_boot=400, n_perm=400, seed=7)


def build_typed(pre: Path, post: Path, s: AnalysisSettings = FAST) -> DeltaReport:
    """The delta report of two log files, built in process."""
    return delta.build(str(pre), EvalLog.model_validate_json(pre.read_text()), str(post),
                       EvalLog.model_validate_json(post.read_text()), s)  # fmt: skip


def build(pre: Path, post: Path, s: AnalysisSettings = FAST) -> dict:
    """The report as plain data (its fields as assembled), as the tests below read it."""
    return build_typed(pre, post, s).model_dump()


def write_reports(tmp_path: Path, logs: Path) -> Path:
    """The delta and arm-comparison reports of a folder of logs, by their commands, under tmp_path/reports."""
    return write_reports_saying(tmp_path, logs)[0]


def write_reports_saying(tmp_path: Path, logs: Path) -> tuple[Path, str]:
    """write_reports, and what the arm comparison's command wrote to stderr (its warnings)."""
    params = write_params(tmp_path / "params.yaml", n_boot=300, n_perm=300)
    out = tmp_path / "reports"
    pre, post = str(logs / "base.json"), str(logs / "trained.json")
    done = run_cli(
        "analysis.commands.delta",
        "--pre",
        pre,
        "--post",
        post,
        "--out",
        str(out / "delta"),
        "--params",
        str(params),
    )
    assert done.returncode == 0, done.stderr
    done = run_cli(
        "analysis.commands.arm_comparison",
        "--logs",
        str(logs),
        "--out",
        str(out / "arms"),
        "--params",
        str(params),
    )
    assert done.returncode == 0, done.stderr
    return out, done.stderr
