"""The benchmark table on the index page and in metrics.json, and its DVC stage on the GRPO world's
recorded logs (a clone of this repository, real DVC)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.commands import benchmark_table as benchmark_table_command
from analysis.rendering import index_page as report

ROOT = Path(__file__).resolve().parents[3]
WORLD = ROOT / "examples" / "smollm2-grpo"


def test_the_index_page_and_metrics_json_carry_the_tables_overall_numbers(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    for part in ("delta", "arms"):
        shutil.copytree(WORLD / "reports" / part, out / part)
    argv = [
        "--logs",
        str(WORLD / "evallogs"),
        "--out",
        str(out / "table"),
        "--params",
        str(WORLD / "params.yaml"),
    ]
    assert benchmark_table_command.main(argv) == 0
    table = json.loads((out / "table" / "benchmark_table.json").read_text())
    report.write(out / "delta", out / "arms", out, WORLD / "evallogs", out / "table")
    page = (out / "index.md").read_text()
    assert "## Benchmark table (all items)" in page and "(table/benchmark_table.tex)" in page
    assert "<h2>Benchmark table (all items)</h2>" in (out / "index.html").read_text()
    metrics = json.loads((out / "metrics.json").read_text())
    base = next(r for r in table["rows"] if r["arm"] == "base")["cells"]["all"]
    for key in ("avg", "avg_sd", "maj", "pass_at_k", "pass_hat", "bayes", "bayes_sd"):
        assert metrics["paper"][key]["base"] == pytest.approx(base[key])
    # Without a table folder the page and the metrics are as before.
    report.write(out / "delta", out / "arms", tmp_path / "plain", WORLD / "evallogs", tmp_path / "none")
    assert "paper" not in json.loads((tmp_path / "plain" / "metrics.json").read_text())


@pytest.mark.slow
def test_the_table_stage_reproduces_the_recorded_table_under_dvc(tmp_path: Path) -> None:
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    world = clone / "examples" / "smollm2-grpo"
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(clone)}

    def dvc(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=world, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # The table stage writes the table's md, csv, tex and json; the report stage renders its HTML page.
    recorded = {
        p.name: p.read_bytes() for p in (world / "reports" / "table").iterdir() if p.suffix != ".html"
    }
    for p in (world / "reports" / "table").iterdir():
        p.unlink()
    dvc("repro", "--single-item", "--force", "table")
    assert {p.name: p.read_bytes() for p in (world / "reports" / "table").iterdir()} == recorded
    assert "table" not in dvc("status", "table")


def test_the_grpo_worlds_swept_last_step_scores_as_its_named_twin() -> None:
    # grpo-step-48 (checkpoints/verifier/global_step_48/actor/huggingface, the sweep) holds trained's weights.
    trained = json.loads((WORLD / "evallogs" / "trained.json").read_text())
    swept = json.loads((WORLD / "evallogs" / "sweep" / "grpo-step-48.json").read_text())
    assert swept["arm"] == "grpo-step-48" and swept["model_name"].endswith("global_step_48/actor/huggingface")
    assert swept["pins"]["model"] == trained["pins"]["model"]
    assert [it["scores"] for it in swept["items"]] == [it["scores"] for it in trained["items"]]
    table = json.loads((WORLD / "reports" / "table" / "benchmark_table.json").read_text())
    assert [(r["arm"], r["step"]) for r in table["rows"]] == [
        ("base", 0), ("trained", None), ("placebo", None), ("grpo-step-12", 12), ("grpo-step-24", 24),
        ("grpo-step-48", 48),
    ]  # fmt: skip
