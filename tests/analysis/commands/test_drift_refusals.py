"""The drift command on folders it cannot compare: one line, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from demo.worlds import ROOT


def test_an_empty_before_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    empty, out = tmp_path / "empty", tmp_path / "out"
    empty.mkdir()
    after = tmp_path / "after"
    after.mkdir()
    (after / "base.json").write_text("{}")
    cmd = ["-m", "analysis.commands.drift", "--before", str(empty), "--after", str(after), "--out", str(out)]
    res = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 2, res.stderr
    assert (
        res.stderr.strip()
        == f"drift: {empty}: no EvalLog (*.json) in this folder; give the folder that holds the logs"
    )
    assert not out.exists()
