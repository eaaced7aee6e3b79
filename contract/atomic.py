"""The atomic writes of the project: one file, or a set of files, replaced whole or not at all.

One file: a temporary file beside the target, synced, renamed over it; a set of files written the same way,
all temporary files first, so that a failure or a kill leaves the old set whole or the new set whole, never a
mix.

A set (a report's pages) is committed in three steps: every file written and synced under its temporary
name; a journal (`.set-journal.<pid>-<host>.tmp` in the folder that holds the set) naming each temporary
file and its target; the renames, with SIGINT, SIGTERM and SIGHUP held until the last is done, then the
journal removed. A kill before the journal leaves the old set (its temporary files are removed by the next
write); Ctrl-C or `kill` during the renames waits for them, so the new set stands; a SIGKILL or a power
cut during the renames leaves the journal, and the next write into that folder (or below it) finishes the
renames it names first: the set is then the new one whole, as the journal promised.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

# The temporary name of a write in progress: .<name>.<pid>-<host>.tmp beside the target (git and DVC
# ignore it); files of the older form .<name>.<pid>.tmp are read too.
_TMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)(?:-(?P<host>[0-9a-f]{8}))?\.tmp$")
# A temporary file of another machine (a folder on a shared file system), or of the older form that does
# not say its machine, is removed only when this old: its process id says nothing here.
STALE_AFTER_S = 3600.0
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
JOURNAL = "set-journal"
# Held during a set's renames: a kill by any of these then waits until the set is whole.
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _tmp_path(path: Path) -> Path:
    # The process id keeps two writers of the same file from sharing (and truncating) one temporary name;
    # the host tells this machine's dead writers (removed at once) from another machine's.
    return path.with_name(f".{path.name}.{os.getpid()}-{_HOST}.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a live process of another user
        return True
    return True


def _dead_writer(m: re.Match[str], p: Path) -> bool:
    """Whether the writer of a temporary file is gone: a dead process of this machine at once; of another
    machine (or of a name that does not say), only once the file is STALE_AFTER_S old."""
    pid = int(m["pid"])
    if m["host"] == _HOST:
        return pid != os.getpid() and not _alive(pid)
    if pid == os.getpid() or _alive(pid):
        return False
    try:
        return time.time() - p.stat().st_mtime > STALE_AFTER_S
    except OSError:
        return False


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Finish the sets a killed writer was renaming in folder (finish_interrupted_sets), then remove the
    temporary files killed writers left there; return the files removed."""
    finish_interrupted_sets(folder)
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for p in entries:
        m = _TMP.match(p.name)
        if m and _dead_writer(m, p):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def finish_interrupted_sets(folder: Path) -> list[Path]:
    """Complete the renames of every set whose writer died while renaming it (its journal in folder is
    left): each temporary file the journal names that is still there replaces its target. Returns the
    targets so replaced; the set is then the new one whole, and the journal is removed."""
    done: list[Path] = []
    try:
        journals = [p for p in folder.iterdir() if p.name.startswith(f".{JOURNAL}.")]
    except OSError:
        return done
    for journal in journals:
        m = _TMP.match(journal.name)
        if m is None or not _dead_writer(m, journal):
            continue
        try:
            renames = json.loads(journal.read_text(encoding="utf-8"))["renames"]
        except (OSError, ValueError, KeyError):
            continue  # written only whole (atomic_write): unreadable means not ours
        for tmp, dest in renames:
            if os.path.exists(tmp):
                os.replace(tmp, dest)
                done.append(Path(dest))
        journal.unlink(missing_ok=True)
    return done


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
    home = Path(os.path.commonpath([p.parent.absolute() for p in paths])) if paths else Path()
    # The set's own folders, and the folder above the one that holds them: a journal of a set that spans
    # them (the report page's, over reports/ and its subfolders) is finished before they are written.
    for folder in dict.fromkeys([home.parent, home, *(p.parent for p in paths)]):
        remove_stale_temporaries(folder)
    done: list[tuple[Path, Path]] = []
    journal = home / f".{JOURNAL}.{os.getpid()}-{_HOST}.tmp"
    try:
        for path, data in zip(paths, files.values(), strict=True):
            done.append((_write_tmp(path, _bytes(data)), path))
        if len(done) > 1:
            renames = [[str(tmp.absolute()), str(path.absolute())] for tmp, path in done]
            atomic_write(journal, json.dumps({"renames": renames}))
        with _signals_held():
            for tmp, path in done:
                os.replace(tmp, path)
            journal.unlink(missing_ok=True)
    except BaseException:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        journal.unlink(missing_ok=True)
        raise
    return paths


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held until the body ends (then delivered): a set's renames finish."""
    if threading.current_thread() is not threading.main_thread():
        # Only the main thread may set handlers; a mask holds the signals for this thread alone.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return
    # Handlers, not a mask: a signal sent to the process goes to any thread that does not block it (a
    # figure-drawing thread), and the default action there ends the whole process mid-rename.
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda sig, frame: caught.append(sig)) for sig in _HELD}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)
