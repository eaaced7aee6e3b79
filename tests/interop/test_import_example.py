"""The shipped import example runs as its README says: the lm-eval and Inspect files made by those tools
import, compare, and give the numbers the README expects, with the page to open first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "import"


def readme_commands() -> list[str]:
    """The README's commands, continuation lines joined, in order."""
    text = (EXAMPLE / "README.md").read_text()
    joined = re.sub(r"\\\n\s+", "", text)
    return [line.strip() for line in joined.splitlines() if line.startswith("    python -m ")]


@pytest.mark.slow
def test_the_readme_commands_import_and_compare_the_shipped_logs(tmp_path: Path) -> None:
    commands = readme_commands()
    assert len(commands) == 6, commands
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        # The README writes under byo/ in the repository root; here under tmp_path.
        done = subprocess.run(
            ["bash", "-c", command.replace("byo/", f"{tmp_path}/")],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    for name, pre, post, ci in (
        ("report", 6, 5, "[-0.1818, +0.1000]"),
        ("inspect-report", 2, 1, "[-0.1111, +0.0000]"),
    ):
        report = json.loads((tmp_path / name / "delta" / "delta_report.json").read_text())
        assert (round(report["mean_pre"] * 24), round(report["mean_post"] * 24)) == (pre, post)
        assert report["claim"] == "no detectable difference"
        lo, hi = report["delta_ci95"]
        assert f"[{lo:+.4f}, {hi:+.4f}]" == ci
        # The page to open first, and the pages it links, are there.
        index = (tmp_path / name / "index.html").read_text()
        for href in re.findall(r'href="([^"#]+)', index):
            assert (tmp_path / name / href).is_file(), href
    readme = (EXAMPLE / "README.md").read_text()
    assert "-0.0417" in readme and "[-0.1818, +0.1000]" in readme and "[-0.1111, +0.0000]" in readme


def test_the_shipped_files_are_the_tools_own() -> None:
    [lm_base] = (EXAMPLE / "lm-eval" / "base").glob("*/samples_sda_mini_*.jsonl")
    first = json.loads(lm_base.read_text().splitlines()[0])
    assert {"doc", "resps", "filtered_resps", "doc_hash"} <= set(first)
    results = json.loads(next(lm_base.parent.glob("results_*.json")).read_text())
    assert results["lm_eval_version"].startswith("0.4")
    from inspect_ai.log import read_eval_log

    for model in ("base", "trained"):
        [path] = (EXAMPLE / "inspect" / model).glob("*.eval")
        log = read_eval_log(str(path), header_only=True)
        assert log.status == "success" and log.eval.model == f"mockllm/demo-{model}"
