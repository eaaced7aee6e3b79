"""Content hashes of checkpoint folders: each file's sha256 (through a stat-keyed cache), the folder's hash.

A local checkpoint is pinned by sha256 over its sorted (relative path, file sha256) pairs, with the per-file
hashes kept so that drift names the file that changed. The stat-keyed cache (pipeline.pins `--hash-cache`,
default .pins-cache.json, not tracked) keeps the pin stage cheap enough to run on every `dvc repro` with
checkpoints of many gigabytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.digest import file_sha256
from contract.files import PathCheckError, input_file


class PinError(RuntimeError):
    """Inputs that are not pinned or drifted from their pins; the message names the file and the fix."""


DEFAULT_HASH_CACHE = Path(".pins-cache.json")
# A file modified this recently may be modified again within the same mtime tick without its stat
# changing (git's "racy" case): its hash is used but not kept, so the next pin reads it again.
_RACY_S = 2.0


class HashCache:
    """sha256 of files keyed by their stat (size, mtime, ctime, inode, device), kept in a JSON file.

    Hand-written: DVC's own hash cache is internal to DVC; this one is a few lines and has no schema to
    follow. A corrupt or missing cache file is an empty cache (it only saves time).
    """

    def __init__(self, path: Path | None, racy_s: float = _RACY_S) -> None:
        self.path = path
        self.racy_s = racy_s
        self.entries: dict[str, list[Any]] = {}
        self.hits = 0
        if path is not None and path.is_file():
            try:
                loaded = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                loaded = {}
            self.entries = loaded if isinstance(loaded, dict) else {}
        self._changed = False

    def sha256(self, file: Path) -> str:
        """The file's sha256: from the cache when its stat is unchanged, else read and kept."""
        key = str(file.resolve())
        st = file.stat()
        stat = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
        entry = self.entries.get(key)
        if isinstance(entry, list) and entry[:-1] == stat:
            self.hits += 1
            return str(entry[-1])
        sha = file_sha256(file)
        if time.time() - max(st.st_mtime, st.st_ctime) >= self.racy_s:
            self.entries[key] = [*stat, sha]
            self._changed = True
        return sha

    def save(self) -> None:
        """Write the cache back if anything was added (atomically: a killed pin leaves the old one)."""
        if self.path is not None and self._changed:
            atomic_write(self.path, json.dumps(self.entries, sort_keys=True) + "\n")
            self._changed = False


def dir_files(root: str | Path, cache: HashCache | None = None) -> dict[str, str]:
    """Relative path (posix) -> sha256 of every file under root, following symlinks (hub caches use them);
    PinError naming the link when one dangles or loops (a folder that links back to one above it)."""
    base = Path(root)
    out: dict[str, str] = {}
    # The real folders from root down to each folder walked: a link back to one of them is a loop, which
    # os.walk would follow until the path is too long.
    above: dict[str, tuple[Path, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        real = Path(dirpath).resolve()
        chain = above.pop(dirpath, ())
        if real in chain:
            raise PinError(
                f"{dirpath}: a symbolic link loop in the checkpoint {base} (it leads back to {real}); "
                "remove the link"
            )
        for d in dirnames:
            above[os.path.join(dirpath, d)] = (*chain, real)
        dirnames.sort()
        for name in filenames:
            full = Path(dirpath) / name
            try:
                input_file(full, "checkpoint file")
            except PathCheckError as e:
                raise PinError(f"{e} (in the checkpoint {base})") from None
            out[full.relative_to(base).as_posix()] = cache.sha256(full) if cache else file_sha256(full)
    return dict(sorted(out.items()))


def dir_hash(files: dict[str, str]) -> str:
    """Content hash of a directory: sha256 over its sorted 'relative path NUL file sha256 LF' lines."""
    h = hashlib.sha256()
    for rel, sha in sorted(files.items()):
        h.update(f"{rel}\0{sha}\n".encode())
    return h.hexdigest()
