"""A Hugging Face hub cache laid out as huggingface_hub writes it, holding a committed tiny checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

from demo.tiny_models import TINY_RECIPE
from demo.worlds import ROOT

CHECKPOINT = ROOT / "tests" / "checkpoints" / TINY_RECIPE


def fake_hub_cache(cache: Path, repo_id: str, sha: str, src: Path = CHECKPOINT) -> Path:
    """Put checkpoint src into a huggingface_hub cache at commit sha, as `hf download` lays it out."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / sha
    shutil.copytree(src, snapshot)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(sha)
    return snapshot
