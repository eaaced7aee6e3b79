"""The one atomic write of the project: a temporary file beside the target, synced, renamed over it."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(dest: str | Path, data: str | bytes) -> Path:
    """Write data to dest so that a reader (or a crash) sees the old file or the new, never half."""
    path = Path(dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    # The process id keeps two writers of the same file from sharing (and truncating) one temporary name.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
