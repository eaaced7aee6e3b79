"""The plain-model world (examples/smollm2-plain/): real checkpoints without a chat template, end to end.

The checkpoints are the SmolLM2 world's (tests/conftest.py smollm2_checkpoints, built once a session by its
build.py) with their chat template removed, as `build.py --plain` does. The slow tests run
the world's own dvc.yaml in a fresh clone at a few items, k = 1, few tokens (both arms plain, one few-shot
template), and a copy of the base checkpoint that declares a 32k context on this CPU: an engine that cannot
start says so in one line, and the default settings then run it, its empty partial file no obstacle.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.jsonl import read_jsonl
from pipeline.run_paths import RunPaths
from tests.helpers.worlds import link_or_copy, world_env

ROOT = Path(__file__).resolve().parents[2]
WORLD = ROOT / "examples" / "smollm2-plain"
sys.path.insert(0, str(ROOT / "examples" / "smollm2"))
from build import strip_chat_template  # noqa: E402  (the world's own build script, not a package)


def _plain_copy(src: Path, dest: Path) -> Path:
    """src without its chat template (weights linked, the small files copied so the strip edits the copy)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        (link_or_copy if f.suffix == ".safetensors" else shutil.copy2)(str(f), str(dest / f.name))
    strip_chat_template(dest)
    return dest


@pytest.fixture(scope="module")
def plain_models(smollm2_checkpoints: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """models/ with base/ and trained/ as `build.py --plain` leaves them."""
    out = tmp_path_factory.mktemp("plain-models")
    for name in ("base", "trained"):
        _plain_copy(smollm2_checkpoints / name, out / name)
    return out


@pytest.mark.slow
def test_the_plain_world_runs_end_to_end_with_dvc(tmp_path: Path, plain_models: Path) -> None:
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    here = clone / "examples" / "smollm2-plain"
    for name in ("base", "trained"):
        assert not (plain_models / name / "chat_template.jinja").exists()
        shutil.copytree(plain_models / name, here / "models" / name, copy_function=link_or_copy)
    params = yaml.safe_load((here / "params.yaml").read_text())
    suite = [row for _, row in read_jsonl(here / params["suite"]["path"])]
    keep = [next(i for i in suite if i["family"] == f) for f in ("add", "mul")]
    (here / "ci.jsonl").write_text("".join(json.dumps(i) + "\n" for i in keep))
    params["suite"].update(path="ci.jsonl", name="plain-ci")
    params["protocol"].update(max_tokens=24)
    params["analysis"].update(n_boot=200, n_perm=200)
    (here / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    done = subprocess.run(
        [sys.executable, "-m", "dvc", "repro"],
        cwd=here,
        env=world_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "run_arms: done; 2 engines started" in out, out[-4000:]
    assert re.search(r"starting the vllm engine on models/base \(max_model_len 1024\)", out), out[-4000:]
    shots = [row for _, row in read_jsonl(here / "fewshot" / "gsm8k.jsonl")]
    for arm in ("base", "trained"):
        log = json.loads((here / "evallogs" / f"{arm}.json").read_text())
        assert log["scorer"]["settings"]["chat"] is False
        assert log["protocol"]["answer"] == "answer_is" and log["protocol"]["fewshot"]["n"] == 4
        assert log["pins"]["prompt_template"].startswith("sha256:") and log["pins"]["fewshot"].startswith(
            "sha256:"
        )
        for it, item in zip(log["items"], keep, strict=True):
            assert it["prompt"].startswith(
                f"Question: {shots[0]['question']}\nAnswer: {shots[0]['answer']}\n\n"
            )
            assert it["prompt"].endswith(f"Question: {item['question']}\nAnswer:")
    index = (here / "reports" / "delta" / "delta_report.md").read_text()
    sha = log["pins"]["prompt_template"].removeprefix("sha256:")[:12]
    assert f"template conf/prompt/gsm8k.jinja (sha256 {sha})" in index and "answer: answer_is" in index


@pytest.mark.slow
def test_a_32k_context_checkpoint_runs_on_this_cpu_with_default_engine_settings(
    tmp_path: Path, plain_models: Path
) -> None:
    from demo.worlds import make_world

    model = _plain_copy(plain_models / "base", tmp_path / "ctx32k")
    config = json.loads((model / "config.json").read_text())
    # SmolLM2 uses rotary positions: a copy that declares a 32k context is a fair stand-in for a 32k model,
    # whose KV cache at that length (1.41 GiB in float32) does not fit the CPU's 1 GiB.
    config["max_position_embeddings"] = 32768
    (model / "config.json").write_text(json.dumps(config, indent=2))
    item = {
        "item_id": "a",
        "family": "add",
        "question": "What is 2 + 3?",
        "answer": "5",
        "verifier": {"type": "math"},
    }
    w = make_world(
        tmp_path / "w", {"base": model}, [item], k=1, max_tokens=8, temperature=0.0, max_tool_calls=0
    )
    common = ["arm=base", f"params={w.params}", f"pins={w.pins}", f"out_dir={w.out_dir}", "progress=false"]

    def run_arm(*overrides: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pipeline.run_arm", *common, *overrides],
            env={k: v for k, v in world_env().items() if k != "VLLM_CPU_KVCACHE_SPACE"},
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    # vLLM refuses a setting of its own: one line with the cause, exit 2, no traceback.
    failed = run_arm("+engine.llm_kwargs.max_num_seqs=0")
    assert failed.returncode == 2, failed.stderr[-3000:]
    lines = [line for line in failed.stderr.splitlines() if line.startswith("run_arm:")]
    assert len(lines) == 1 and "Traceback" not in failed.stderr, failed.stderr[-3000:]
    assert "the vllm engine did not start on" in lines[0] and "greater than or equal to 1 (got 0)" in lines[0]
    assert (RunPaths(w.out_dir, "base").shard).is_file()  # a partial file of other settings, no sample

    ran = run_arm()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert (
        "held no samples of a run with other settings" in ran.stderr and "(max_model_len 1024)" in ran.stdout
    )
    gens = json.loads((w.out_dir / "base.json").read_text())
    assert gens["chat"] is False and gens["items"][0]["samples"][0]["gen_tokens"] >= 1
    assert not os.path.exists(RunPaths(w.out_dir, "base").shard)
