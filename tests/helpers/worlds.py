"""What a world's commands need from a test: this interpreter and checkout, the SmolLM2 build's key, links."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from demo.worlds import ROOT


def smollm2_build_key() -> str:
    """A key of the SmolLM2 world's build script and adapter: a new one of either is a new build."""
    import hashlib

    world = ROOT / "examples" / "smollm2"
    h = hashlib.sha256((world / "build.py").read_bytes())
    for f in sorted((world / "adapter").iterdir()):
        if f.name.startswith("adapter_"):
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def world_env() -> dict[str, str]:
    """A world's commands call `python`: this interpreter's, with this checkout's code first (a venv's)."""
    import sys

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return env


def link_or_copy(src: str, dst: str) -> None:
    """A hard link of src at dst (a checkpoint's weights are not copied), a copy across filesystems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
