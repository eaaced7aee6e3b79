"""Every analysis command refuses a path it cannot use (a folder for a file, a file for a folder, a symbolic
link loop, an output under /proc) in one line, exit 2, before any work: contract.files is their one check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from demo.worlds import ROOT

CASES = [
    (["analysis.commands.delta", "--pre", "{d}", "--post", "{d}", "--out", "{o}"], r"log {d}: is a folder"),
    (["analysis.commands.delta", "--pre", "{loop}", "--post", "{loop}", "--out", "{o}"],
     r"{loop}: a symbolic link"),
    (["analysis.commands.delta", "--pre", "{f}", "--post", "{f}", "--out", "{f}"], r"--out {f}: is a file"),
    (["analysis.commands.arm_comparison", "--logs", "{f}", "--out", "{o}"],
     r"{f}: no such folder of EvalLogs"),
    (["analysis.commands.arm_comparison", "--logs", "{d}", "--out", "/proc/x"],
     r"--out /proc/x: under /proc"),
    (["analysis.commands.trajectory", "--logs", "{d}", "--out", "{f}"],
     r"--out {f}: is a file; give a folder"),
    (["analysis.commands.index_page", "--delta", "{loopdir}", "--arms", "{d}", "--out", "{o}"],
     r"delta_report.json"),
    (["analysis.commands.index_page", "--delta", "{d}", "--arms", "{d}", "--out", "{f}"],
     r"--out {f}: is a file"),
    (["interop.inspect_export", "{d}", "--out", "{o}"], r"log {d}: is a folder; give a file"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), CASES)
def test_a_path_an_analysis_command_cannot_use_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    names = {"d": tmp_path / "d", "f": tmp_path / "f.json", "loop": tmp_path / "loop.json",
             "loopdir": tmp_path / "ld", "o": tmp_path / "out"}  # fmt: skip
    names["d"].mkdir()
    names["f"].write_text("{}")
    names["loop"].symlink_to(names["loop"])
    names["loopdir"].symlink_to(names["loopdir"])
    argv = [a.format(**names) for a in args]
    res = subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert message.format(**names) in res.stderr, res.stderr
    assert not names["o"].exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pipeline.run_arm", "arm=base", "out_dir={f}"], "run_arm: out_dir {f}: is a file; give a folder"),
        (["pipeline.score", "arm=base", "params={d}"], "score: params {d}: is a folder; give a file"),
        (["pipeline.pins", "--out", "{f}"], "pins: --out {f}: is a file; give a folder"),
    ],
)
def test_a_path_a_pipeline_command_cannot_use_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    names = {"d": tmp_path / "d", "f": tmp_path / "f.json"}
    names["d"].mkdir()
    names["f"].write_text("{}")
    argv = [a.format(**names) for a in args]
    res = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(message.format(**names)), res.stderr
