"""Sharded generation on a local Ray cluster: two vLLM workers give the generations of one, byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world
from pipeline.generate import run

pytestmark = pytest.mark.slow


def test_two_ray_workers_give_the_generations_of_one_worker(
    tmp_path: Path, tiny_checkpoint: Path, vllm_engine
) -> None:
    w = make_world(tmp_path / "w", {"base": tiny_checkpoint}, arithmetic_items(24), k=4, max_tokens=16)
    one = run(w.settings("base", out_dir=tmp_path / "one"), engine=vllm_engine)
    two = tmp_path / "two"
    res = subprocess.run(
        [sys.executable, "-m", "pipeline.ray_run", "--arm", "base", "--workers", "2",
         f"params={w.params}", f"pins={w.pins}", f"out_dir={two}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": ""},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "ray_run: base: 2 parts in" in res.stdout, res.stdout
    assert "run_arm: base: merged 2 parts, 96 samples" in res.stdout, res.stdout
    assert (two / "base.json").read_bytes() == one.read_bytes()
    # Each worker ran one part on its own engine replica, in its own process.
    assert res.stdout.count("starting the vllm engine") == 2, res.stdout
