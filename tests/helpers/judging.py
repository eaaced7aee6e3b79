"""The judge's report on CHAMP's two hand-labelled arms, as the judge tests run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.commands import judge_report

ARMS = ["gpt-4", "gpt-4-turbo"]


def run_report(champ: dict[str, Path], judged: Path, out: Path) -> dict[str, Any]:
    """The judge report command on CHAMP's two arms and a judged folder: its JSON."""
    logs = champ["gpt-4"].parent
    argv = ["--logs", str(logs), "--judged", str(judged), "--out", str(out), "--arms", *ARMS]
    assert judge_report.main([*argv, "--params", str(out / "none.yaml")]) == 0
    return json.loads((out / "judge_report.json").read_text())
