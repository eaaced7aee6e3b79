"""The one sha256 helper pair of the project: of a file's bytes and of a text's UTF-8 bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 20


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks (checkpoints are large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
