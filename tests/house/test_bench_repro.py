"""benchmarks.bench_repro's reading of a `dvc repro`: stage times stamped as DVC's lines arrive, arm times
from the provenance records."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchmarks.bench_repro import arm_times, run_timed


def test_each_stage_lasts_from_its_running_line_to_the_next(tmp_path: Path) -> None:
    script = (
        "import time\n"
        "print(\"Running stage 'index':\", flush=True); time.sleep(1.0)\n"
        "print(\"Running stage 'pin':\", flush=True); time.sleep(0.05)\n"
    )
    code, log, stages = run_timed([sys.executable, "-c", script], tmp_path, dict(os.environ))
    assert code == 0 and "Running stage 'pin'" in log
    assert list(stages) == ["index", "pin"]
    assert stages["index"] > 0.8 and stages["pin"] < 0.5


def test_arm_times_come_from_the_provenance_records(tmp_path: Path) -> None:
    for arm, start in (("base", 17.4), ("+rag", None)):
        record = {"arm": arm, "engine_start_s": start, "generate_s": 14.7}
        (tmp_path / f"{arm}.provenance.json").write_text(json.dumps(record))
    (tmp_path / "base.json").write_text("{}")
    assert arm_times(tmp_path) == {"+rag": (None, 14.7), "base": (17.4, 14.7)}
