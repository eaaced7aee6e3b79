"""The atomic writes of the project: a temporary file beside the target, synced, renamed over it; and a set
of files written the same way, all temporary files first, so that a failure leaves the old set whole."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path

# The temporary name of a write in progress: .<name>.<pid>.tmp beside the target (git and DVC ignore it).
_TMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
# A temporary file is removed only when its process is gone and it is this old: a process id is of this
# machine, and a folder on a shared file system may hold another machine's write in progress.
STALE_AFTER_S = 3600.0


def _tmp_path(path: Path) -> Path:
    # The process id keeps two writers of the same file from sharing (and truncating) one temporary name.
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a live process of another user
        return True
    return True


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files a killed writer left in folder (their process is gone); return them."""
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for p in entries:
        m = _TMP.match(p.name)
        if not m or int(m["pid"]) == os.getpid() or _alive(int(m["pid"])):
            continue
        try:
            old = time.time() - p.stat().st_mtime > STALE_AFTER_S
        except OSError:
            continue
        if old:
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def _write_tmp(path: Path, payload: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def atomic_write(dest: str | Path, data: str | bytes) -> Path:
    """Write data to dest so that a reader (or a crash) sees the old file or the new, never half."""
    path = Path(dest)
    remove_stale_temporaries(path.parent)
    tmp = _write_tmp(path, _bytes(data))
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def atomic_write_set(files: Mapping[str | Path, str | bytes]) -> list[Path]:
    """Write a set of files (a report's pages) so that a failure leaves the old set, never a mix.

    Every file is written and synced under its temporary name first; only when all are on disk are they
    renamed over the old ones, one rename each (no data is written then, so a full disk cannot stop it half
    way). A write that fails removes every temporary file of the set and raises.
    """
    paths = [Path(p) for p in files]
    for folder in dict.fromkeys(p.parent for p in paths):
        remove_stale_temporaries(folder)
    done: list[tuple[Path, Path]] = []
    try:
        for path, data in zip(paths, files.values(), strict=True):
            done.append((_write_tmp(path, _bytes(data)), path))
        for tmp, path in done:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        raise
    return paths
