"""One run of `python -m pipeline.run_arm` reads each of its input files once.

The run resolves its configuration into one object (pipeline.resolve) and every later step takes that
object: the arm file, params.yaml, the arm's pin file and the suite are each opened once by the run.
Counted at the functions that open files (builtins.open and io.open, which pathlib's read_text,
read_bytes and open call), not by trusting the code. Hydra's own composition of the command line
(which reads conf/) happens before the run and is not counted.
"""

from __future__ import annotations

import builtins
import io
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pipeline.run_arm as run_arm
from demo.tiny_models import arithmetic_items
from demo.worlds import make_world
from pipeline.config import CONF_DIR
from pipeline.engines import release_engine


def test_one_run_reads_its_arm_params_pins_and_suite_once_each(
    tmp_path: Path, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    monkeypatch.chdir(w.root)
    argv = ["run_arm", "arm=base", "engine=hf", "progress=false", f"params={w.params}", f"pins={w.pins}",
            f"out_dir={w.out_dir}"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    reads: Counter[Path] = Counter()
    counting = [False]
    real_open = io.open

    def counted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if counting[0] and isinstance(file, str | Path) and not any(c in mode for c in "wax+"):
            reads[Path(file).resolve()] += 1
        return real_open(file, mode, *args, **kwargs)

    task = run_arm._task

    def counted_task(cfg: Any) -> None:
        counting[0] = True
        try:
            task(cfg)
        finally:
            counting[0] = False

    monkeypatch.setattr(builtins, "open", counted_open)
    monkeypatch.setattr(io, "open", counted_open)
    monkeypatch.setattr(run_arm, "_task", counted_task)
    try:
        run_arm.main()
    finally:
        release_engine()
    assert (w.out_dir / "base.json").is_file()
    files = {
        "arm": CONF_DIR / "arm" / "base.yaml",
        "params": w.params,
        "pins": w.pins / "arms" / "base.json",
        "suite": w.suite,
    }
    counts = {name: reads[path.resolve()] for name, path in files.items()}
    assert counts == {"arm": 1, "params": 1, "pins": 1, "suite": 1}, counts
