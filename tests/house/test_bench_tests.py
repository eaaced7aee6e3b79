"""benchmarks.bench_tests' clock: each test's CPU time, its subprocesses' included, one line per test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.bench_tests import report

ROOT = Path(__file__).resolve().parents[2]


def test_the_clock_counts_a_tests_subprocesses_and_names_its_group(tmp_path: Path, capsys) -> None:
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys\n"
        "def test_burns_in_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(i * i for i in range(3_000_000))'], check=True)\n"
        "def test_idle():\n"
        "    pass\n"
    )
    out = tmp_path / "clock"
    out.mkdir()
    # Under pytest-xdist this test's own worker name is in the environment; the child is no worker.
    parent = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env = {**parent, "BENCH_TESTS_OUT": str(out), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.pytest_cpu_clock", "-p", "no:cacheprovider",
         "-o", "addopts=", str(tmp_path / "test_burn.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (out / "main.jsonl").read_text().splitlines()]
    assert [r["id"].split("::")[1] for r in records] == ["test_burns_in_a_child", "test_idle"]
    burn, idle = records
    assert burn["group"] == idle["group"] == "test_burn"
    assert burn["children_cpu"] > 0.05 and idle["children_cpu"] == 0.0
    report([{**r, "worker": "main"} for r in records], wall=2.0, cpu=1.0, top=1)
    printed = capsys.readouterr().out
    assert "test_burn" in printed and "main " in printed and "test_burns_in_a_child" in printed
