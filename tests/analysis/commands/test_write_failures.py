"""A write that fails (a full disk) or a writer that is killed: one line and exit 2, the previous files whole,
a report set never half old and half new, no temporary file left for long.

The full disk is real: each command runs under a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored), so
the operating system refuses its writes past the limit with an OSError, as a full disk does.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.rendering import index_page as report
from contract.atomic import STALE_AFTER_S, atomic_write, atomic_write_set
from demo.worlds import ROOT
from tests.helpers.evallogs import make_world
from tests.helpers.reports import write_reports
from tests.helpers.scoring import write_world


def _limited(limit: int):  # noqa: ANN202 - a preexec function
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _run(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        preexec_fn=_limited(limit), check=False,
    )  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str], says: str) -> None:
    err = done.stderr.strip()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in err and len(err.splitlines()) == 1 and says in err, err


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*.tmp")]


def test_a_report_that_cannot_be_written_leaves_the_previous_pages_all_old(tmp_path: Path) -> None:
    logs = make_world(tmp_path / "evallogs")
    reports = write_reports(tmp_path, logs)
    written = report.write(reports / "delta", reports / "arms", reports, logs)
    # Mark the previous set, so that a page the failed run replaced would show.
    old = {p: b"previous " + p.read_bytes() for p in written}
    for p, data in old.items():
        p.write_bytes(data)
    largest = max(written, key=lambda p: p.stat().st_size)
    assert largest.name == "items.html"  # written last: every other page would have been replaced before
    limit = largest.stat().st_size - 100
    done = _run(
        limit, "analysis.commands.index_page", "--delta", str(reports / "delta"), "--arms",
                                                              str(reports / "arms"),
        "--logs", str(logs), "--out", str(reports),
    )  # fmt: skip
    _one_line(done, "cannot write")
    assert {p: p.read_bytes() for p in written} == old
    assert not _temporaries(tmp_path)


def test_scoring_onto_a_full_disk_is_one_line_and_keeps_the_previous_log(tmp_path: Path) -> None:
    suite, gens, params = write_world(tmp_path)
    out = tmp_path / "evallogs" / "+tools.json"
    out.parent.mkdir()
    out.write_text("previous log")
    done = _run(
        2000, "pipeline.score", "--generations", str(gens), "--suite", str(suite), "--out", str(out),
        "--params", str(params),
    )  # fmt: skip
    _one_line(done, f"{out}: cannot write")
    assert out.read_text() == "previous log" and not _temporaries(tmp_path)


def test_an_inspect_export_onto_a_full_disk_is_one_line_and_leaves_no_half_file(tmp_path: Path) -> None:
    logs = make_world(tmp_path / "evallogs", arms_=["base", "trained"])
    out = tmp_path / "inspect"
    done = _run(5000, "interop.inspect_export", str(logs / "base.json"), "--out", str(out))
    _one_line(done, "base.eval: cannot write")
    assert not (out / "base.eval").exists() and not _temporaries(tmp_path)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_writers_temporary_file_is_removed_by_a_later_write_and_ignored_by_git(
    tmp_path: Path,
) -> None:
    dead, alive = _dead_pid(), os.getppid()
    long_ago = time.time() - STALE_AFTER_S - 60
    stale = tmp_path / f".index.html.{dead}.tmp"
    recent = tmp_path / f".items.html.{dead}.tmp"
    running = tmp_path / f".metrics.json.{alive}.tmp"
    for p in (stale, recent, running):
        p.write_text("half")
    os.utime(stale, (long_ago, long_ago))
    os.utime(running, (long_ago, long_ago))
    atomic_write(tmp_path / "index.md", "new")
    # Gone: its writer is dead and it is old. Kept: one that may be another machine's write in progress (on
    # a shared folder a process id says nothing), and one whose writer still runs.
    assert not stale.exists() and recent.exists() and running.exists()
    atomic_write_set({tmp_path / "a.md": "a", tmp_path / "sub" / "b.md": b"b"})
    assert (tmp_path / "a.md").read_text() == "a" and (tmp_path / "sub" / "b.md").read_text() == "b"
    for name in ("reports/.index.html.12345.tmp", "evallogs/.base.json.7.tmp"):
        assert subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT, check=False).returncode == 0, (
            name
        )


def test_a_set_whose_write_fails_leaves_no_file_of_it(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("old a")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a folder should be")
    with pytest.raises(OSError):
        atomic_write_set({tmp_path / "a.md": "new a", blocked / "b.md": "new b"})
    assert (tmp_path / "a.md").read_text() == "old a" and not _temporaries(tmp_path)


def test_the_delta_and_arm_comparison_onto_a_full_disk_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    logs = make_world(tmp_path / "evallogs", arms_=["base", "trained"])
    params = tmp_path / "params.yaml"
    params.write_text("analysis: {n_boot: 200, n_perm: 200}\n")
    out = tmp_path / "reports"
    done = _run(
        3000, "analysis.commands.delta", "--pre", str(logs / "base.json"), "--post",
                                                      str(logs / "trained.json"),
        "--out", str(out / "delta"), "--params", str(params),
    )  # fmt: skip
    _one_line(done, "cannot write")
    done = _run(
        3000,
        "analysis.commands.arm_comparison",
        "--logs",
        str(logs),
        "--out",
        str(out / "arms"),
        "--params",
        str(params),
    )
    _one_line(done, "cannot write")
    assert not [p for p in out.rglob("*") if p.is_file()], list(out.rglob("*"))
