"""Checkpoints the tests build once: the committed tiny ones, else built and kept in pytest's cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from demo.tiny_models import COMMITTED_CHECKPOINTS


def cache_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory kept across sessions (pytest's cache) if the cache plugin is on, else a tmp dir."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)


def committed_or_cached(
    name: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, build: Any
) -> Path:
    """tests/checkpoints/<name> when committed, else the checkpoint build makes, cached across sessions."""
    committed = COMMITTED_CHECKPOINTS / name
    if (committed / "config.json").is_file() and (committed / "model.safetensors").is_file():
        return committed
    return cached_checkpoint(cache_dir(request, tmp_path_factory, f"tiny-{name}"), build)


def cached_checkpoint(base: Path, build: Any) -> Path:
    """base/ckpt, built once (in a private dir renamed at the end: a killed build leaves no half)."""
    final = base / "ckpt"
    # The marker, not config.json: a world's build (examples/smollm2) holds its checkpoints in subfolders.
    if (final / ".complete").is_file() or (final / "config.json").is_file():
        return final
    work = base / f"build-{os.getpid()}"
    build(work)
    (work / ".complete").write_text("")
    try:
        os.replace(work, final)
    except OSError:
        # Another worker's build of the same key got there first: both are the same build, keep theirs.
        if not (final / ".complete").is_file():
            raise
        shutil.rmtree(work)
    return final
