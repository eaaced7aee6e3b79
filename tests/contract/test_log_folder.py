"""contract.log_folder: one reader of a folder of logs by arm, and its one rule for two logs of one arm,
which every command reading such a folder obeys (drift, the arm comparison, the item browser, the judge)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_logs import arm_log
from contract.log_folder import LogFolderError, read_arm_logs
from demo.worlds import ROOT


def write_log(folder: Path, name: str, arm: str | None, seed: int = 0) -> Path:
    """A small valid EvalLog at folder/<name>.json whose `arm` field is arm (None: no field)."""
    log = arm_log(arm or "base", 6, 2, False, np.zeros(6), seed).model_copy(update={"arm": arm})
    path = folder / f"{name}.json"
    path.write_text(log.model_dump_json(exclude_none=True))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """base.json and trained.json, each naming its arm."""
    write_log(tmp_path, "base", "base")
    write_log(tmp_path, "trained", "trained", seed=1)
    return tmp_path


def test_a_log_is_its_arm_field_else_its_stem(folder: Path) -> None:
    write_log(folder, "imported", None, seed=2)
    write_log(folder, "from-tool", "+rag", seed=3)
    found = read_arm_logs(folder)
    # In the order of the files' names.
    assert list(found) == ["base", "+rag", "imported", "trained"]
    assert found["+rag"][0] == folder / "from-tool.json" and found["imported"][1].arm is None
    assert found["base"][1].items[0].samples is None
    assert read_arm_logs(folder, ["base"], samples=True)["base"][1].items[0].samples


def test_arms_are_read_in_their_order_and_found_by_field_when_not_named_after_it(folder: Path) -> None:
    assert list(read_arm_logs(folder, ["trained", "base"])) == ["trained", "base"]
    write_log(folder, "from-tool", "+rag", seed=3)
    found = read_arm_logs(folder, ["base", "+rag", "+tools"])
    # An arm absent from the folder is left out: the caller words what it needed it for.
    assert list(found) == ["base", "+rag"] and found["+rag"][0].name == "from-tool.json"


def test_two_logs_of_one_arm_are_refused_naming_both_and_the_fix(folder: Path) -> None:
    write_log(folder, "trained-copy", "trained", seed=4)
    with pytest.raises(LogFolderError) as refused:
        read_arm_logs(folder)
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(
        f"{folder / 'trained-copy.json'} and {folder / 'trained.json'}: both hold arm 'trained'"
    )
    assert "keep one log per arm" in line and "--arm NAME" in line
    # The same rule where the arms asked for are not all named after their files.
    with pytest.raises(LogFolderError, match="both hold arm 'trained'"):
        read_arm_logs(folder, ["trained", "+rag"])


def test_a_stem_that_is_another_logs_arm_is_two_logs_of_one_arm(folder: Path) -> None:
    write_log(folder, "imported", None, seed=5)
    write_log(folder, "x", "imported", seed=6)
    with pytest.raises(LogFolderError, match="imported.json and .*x.json: both hold arm 'imported'"):
        read_arm_logs(folder)


def test_no_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LogFolderError, match="no such folder of EvalLogs"):
        read_arm_logs(tmp_path / "nope")


def test_drift_refuses_two_logs_of_one_arm_where_it_kept_the_last(folder: Path, tmp_path: Path) -> None:
    after = tmp_path / "after"
    after.mkdir()
    for arm in ("base", "trained"):
        (after / f"{arm}.json").write_bytes((folder / f"{arm}.json").read_bytes())
    write_log(folder, "zz-trained", "trained", seed=7)
    out = tmp_path / "out"
    cmd = ["-m", "analysis.commands.drift", "--before", str(folder), "--after", str(after), "--out", str(out)]
    res = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1
    assert (
        f"{folder / 'trained.json'} and {folder / 'zz-trained.json'}: both hold arm 'trained'" in res.stderr
    )
    assert not out.exists()


def test_a_log_named_after_an_arm_asked_for_must_hold_it(folder: Path) -> None:
    write_log(folder, "+rag", "+tools", seed=8)
    with pytest.raises(LogFolderError) as refused:
        read_arm_logs(folder, ["base", "+rag"])
    assert str(refused.value).startswith(
        f"{folder / '+rag.json'}: holds arm '+tools', not the '+rag' its name"
    )


def test_a_swept_checkpoints_log_is_found_in_the_sweep_folder(folder: Path) -> None:
    (folder / "sweep").mkdir()
    write_log(folder / "sweep", "run-step-2", "run-step-2", seed=9)
    found = read_arm_logs(folder, ["base", "run-step-2"])
    assert found["run-step-2"][0] == folder / "sweep" / "run-step-2.json"
    # A folder read whole is its own logs: the sweep's are read only when asked for.
    assert list(read_arm_logs(folder)) == ["base", "trained"]
