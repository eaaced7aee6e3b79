"""Kept links of the finished generations files, where DVC never deletes: <out_dir>.work/kept/.

DVC tracks the generations folder as one output. When its cache cannot restore the folder (the cache lost,
one arm's file gone), `dvc checkout --force` deletes the whole folder, the intact arms included. So every
arm file the generate commands finish, and its provenance record, is also hard-linked (no second copy on
disk; a copy where the file system has no hard links) into <out_dir>.work/kept/, beside the partial shards
and finished parts, which live there too (pipeline.run_paths). Before an arm is checked, a missing
file is put back from its kept link; its seal and inputs (pipeline.staleness) still decide whether it is
reused, so a kept file never stands in for a stale one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pipeline.resolve import ResolvedRun
from pipeline.run_paths import RunPaths


def _link(src: Path, dest: Path) -> None:
    """dest becomes src's content, atomically: a hard link (or a copy) under a temporary name, renamed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        try:
            os.link(src, tmp)
        except OSError:  # a file system without hard links (or across devices): a copy keeps it as well
            shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def keep(paths: RunPaths, path: Path) -> None:
    """Link a finished file of the generations folder into kept/ (replacing an older link of it)."""
    if path.is_file():
        _link(path, paths.kept(path))


def restore(paths: RunPaths, path: Path) -> bool:
    """Put a missing file of the generations folder back from its kept link; True when it did."""
    src = paths.kept(path)
    if path.exists() or not src.is_file():
        return False
    _link(src, path)
    return True


def restore_arm(paths: RunPaths, say: Callable[[str], None] = print) -> None:
    """Put an arm's generations file and provenance record back from kept/ where they are missing."""
    for path in (paths.dest, paths.provenance):
        if restore(paths, path):
            kept = paths.kept(path)
            say(f"run_arm: {paths.arm}: put {path} back from {kept} (it was removed from the folder)")


def keep_arm(paths: RunPaths) -> None:
    """Keep an arm's finished generations file and its provenance record."""
    keep(paths, paths.dest)
    keep(paths, paths.provenance)


def run_kept(make: Callable[[ResolvedRun], Path], run: ResolvedRun) -> Path:
    """make(run) with the arm's kept files put back first and its finished files kept after."""
    restore_arm(run.paths)
    dest = make(run)
    if run.part is None:
        keep_arm(run.paths)
    return dest
