"""A report set killed at any point of its write is the old set whole or the new set whole; a killed
writer's temporary files are removed by the next write. The kills are real (SIGTERM, SIGKILL) and land
between renames, which the child slows down (as a slow file system does)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contract.atomic import atomic_write_set, finish_interrupted_sets
from demo.worlds import ROOT

# The child slows each rename of a set's file (and each fsync of a temporary file) and says so on stdout,
# so the parent can kill it between two renames; then it runs the command given.
SLOW = r"""
import os, sys, time
real_replace, real_fsync = os.replace, os.fsync
def replace(a, b):
    if not str(b).endswith(".tmp"):  # a set's file, not the journal's own atomic write
        print("rename", flush=True); time.sleep(0.15)
    real_replace(a, b)
def fsync(fd):
    print("fsync", flush=True); time.sleep(0.05); real_fsync(fd)
os.replace, os.fsync = replace, fsync
"""
SET = """
from pathlib import Path
from contract.atomic import atomic_write_set
folder, tag = Path(sys.argv[1]), sys.argv[2]
atomic_write_set({folder / name: tag for name in NAMES})
"""
NAMES = ["index.md", "index.html", "items.html", "metrics.json", "plots/arm_deltas.json", "delta/page.html"]


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-c", SLOW + code, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _kill_at(child: subprocess.Popen[str], marker: str, n: int, sig: int) -> None:
    """Kill the child when it says `marker` the n-th time (it then sleeps before that step)."""
    seen = 0
    assert child.stdout is not None
    for line in child.stdout:
        seen += line.strip() == marker
        if seen == n:
            child.send_signal(sig)
            break
    child.wait(timeout=60)


def _contents(folder: Path) -> set[str]:
    return {(folder / name).read_text() for name in NAMES}


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*") if p.is_file()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_a_set_killed_between_any_two_renames_is_old_or_new_whole(tmp_path: Path, sig: int) -> None:
    folder = tmp_path / "reports"
    atomic_write_set({folder / name: "old" for name in NAMES})
    for n in range(1, len(NAMES) + 1):
        tag = f"new{n}"
        _kill_at(_child(SET.replace("NAMES", repr(NAMES)), str(folder), tag), "rename", n, sig)
        if sig != signal.SIGKILL:
            # The renames hold the signal until the last is done: the new set stands, nothing is left.
            assert _contents(folder) == {tag} and not _leftovers(folder), (n, _contents(folder))
        else:
            # Nothing can hold SIGKILL: its journal is left, and a reader or the next write finishes
            # the renames it names.
            assert finish_interrupted_sets(folder) or _contents(folder) == {tag}
            assert _contents(folder) == {tag} and not _leftovers(folder), (n, _contents(folder))
        atomic_write_set({folder / name: "old" for name in NAMES})


def test_a_set_killed_before_its_renames_is_the_old_set_and_its_temporaries_go_at_the_next_write(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "reports"
    atomic_write_set({folder / name: "old" for name in NAMES})
    _kill_at(_child(SET.replace("NAMES", repr(NAMES)), str(folder), "new"), "fsync", 3, signal.SIGKILL)
    assert _contents(folder) == {"old"}
    assert _leftovers(folder), "the kill left no temporary file: it came too late to test this"
    # A clean rerun: the dead writer's temporary files go at once (not an hour later).
    atomic_write_set({folder / name: "rerun" for name in NAMES})
    assert _contents(folder) == {"rerun"} and not _leftovers(folder)


@pytest.mark.slow
def test_the_report_page_killed_between_renames_leaves_one_whole_set(tmp_path: Path) -> None:
    from tests.helpers.evallogs import make_world
    from tests.helpers.reports import write_reports

    logs = make_world(tmp_path / "evallogs", arms_=["base", "trained", "+rag"])
    reports = write_reports(tmp_path, logs)
    args = ["--delta", str(reports / "delta"), "--arms", str(reports / "arms"), "--logs", str(logs),
            "--out", str(reports)]  # fmt: skip
    page = "from analysis.commands.index_page import main\nsys.exit(main(sys.argv[1:]))\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clean = subprocess.run([sys.executable, "-m", "analysis.commands.index_page", *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert clean.returncode == 0, clean.stderr
    written = [p for p in reports.rglob("*.html")] + [reports / "index.md"]
    new = {p: p.read_bytes() for p in written}
    for p in written:
        p.write_bytes(b"old " + new[p])
    _kill_at(_child(page, *args), "rename", 2, signal.SIGTERM)
    assert {p: p.read_bytes() for p in written} == new and not _leftovers(reports)
    for p in written:
        p.write_bytes(b"old " + new[p])
    _kill_at(_child(page, *args), "rename", 2, signal.SIGKILL)
    mixed = {p.read_bytes().startswith(b"old ") for p in written}
    assert mixed == {True, False}, "the kill did not land between renames"
    # The next reader of the set (the page itself, rerun) finds the journal and finishes the set first.
    assert finish_interrupted_sets(reports)
    assert {p: p.read_bytes() for p in written} == new and not _leftovers(reports)
