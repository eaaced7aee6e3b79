"""The SmolLM2 world (examples/smollm2/): a real instruct model through the whole pipeline with `dvc repro`.

The slow test takes the two checkpoints the world's build.py makes (tests/conftest.py smollm2_checkpoints:
built once a session, cached across sessions), then runs the world's own dvc.yaml in a fresh clone on a
reduced suite (one item of three families, k = 2, a short budget): two vLLM engines, chat prompts through the
model's template, the `math` verifier, the delta and arm reports.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.jsonl import read_jsonl
from tests.helpers.worlds import link_or_copy, world_env

ROOT = Path(__file__).resolve().parents[2]
WORLD = ROOT / "examples" / "smollm2"
sys.path.insert(0, str(WORLD))
import problems as world  # noqa: E402  (the world's own module, not a package of the project)


def test_the_training_problems_are_disjoint_from_the_suite() -> None:
    suite = [row for _, row in read_jsonl(world.SUITE_PATH)]
    questions = {item["question"] for item in suite}
    assert len(questions) == len(suite) and {i["verifier"]["type"] for i in suite} == {"math"}
    # What finetune.py sampled from, and what it kept: neither holds a suite question.
    train = world.problems(40, world.TRAIN_SEED, world.suite_questions())
    assert len(train) == 40 * len(world.FAMILIES)
    assert not questions & {p["question"] for p in train}
    kept = [row for _, row in read_jsonl(WORLD / "adapter" / "rft_samples.jsonl")]
    assert kept and not any(q in s["prompt"] for s in kept for q in questions)
    # The committed suite is the one its generator writes (frozen, not edited by hand).
    assert world.problems(len(suite) // len(world.FAMILIES), world.SUITE_SEED) == suite


@pytest.mark.slow
def test_the_world_runs_end_to_end_with_dvc(tmp_path: Path, smollm2_checkpoints: Path) -> None:
    checkpoints = smollm2_checkpoints
    for name in ("base", "trained"):
        config = json.loads((checkpoints / name / "config.json").read_text())
        assert config["architectures"] == ["LlamaForCausalLM"] and config["dtype"] == "float32"
        assert "quantization_config" not in config and (checkpoints / name / "chat_template.jinja").is_file()
    assert (checkpoints / "base" / "model.safetensors").read_bytes() != (
        checkpoints / "trained" / "model.safetensors"
    ).read_bytes()

    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    here = clone / "examples" / "smollm2"
    # The checkpoints as build.py leaves them, linked in (copied where the cache is on another filesystem).
    for name in ("base", "trained"):
        shutil.copytree(checkpoints / name, here / "models" / name, copy_function=link_or_copy)
    suite = [row for _, row in read_jsonl(here / "suite" / "smollm2-arith-v1.jsonl")]
    keep = [next(i for i in suite if i["family"] == f) for f in ("add", "mul", "fraction")]
    (here / "suite" / "ci.jsonl").write_text("".join(json.dumps(i) + "\n" for i in keep))
    params = yaml.safe_load((here / "params.yaml").read_text())
    params["suite"].update(path="suite/ci.jsonl", name="smollm2-ci")
    params["protocol"].update(k=2, max_tokens=24)
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
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert ran == {"pin", "generate", "score@base", "score@trained", "delta", "arms", "report"}, out[-4000:]
    assert "run_arms: done; 2 engines started" in out, out[-4000:]

    scores = {}
    for arm in ("base", "trained"):
        log = json.loads((here / "evallogs" / f"{arm}.json").read_text())
        assert [it["item_id"] for it in log["items"]] == [i["item_id"] for i in keep]
        assert [(v["type"], v["name"]) for v in log["scorer"]["verifiers"]] == [("math", "math-verify")]
        assert log["scorer"]["settings"]["chat"] is True
        for it in log["items"]:
            assert it["prompt"].startswith("<|im_start|>system") and it["prompt"].endswith(
                "<|im_start|>assistant\n"
            )
            assert len(it["scores"]) == 2 and all(0.0 <= s <= 1.0 for s in it["scores"])
        scores[arm] = [s for it in log["items"] for s in it["samples"]]
    assert all(s["gen_tokens"] <= 24 for ss in scores.values() for s in ss)
    # The adapter changed the model: the two arms' texts at the same seeds are not all the same.
    assert [s["text"] for s in scores["base"]] != [s["text"] for s in scores["trained"]]
    assert "smollm2-ci" in (here / "reports" / "index.md").read_text()
    assert json.loads((here / "reports" / "metrics.json").read_text())["delta"].keys() >= {"mean", "lo", "hi"}
