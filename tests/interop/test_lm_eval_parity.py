"""Parity with lm-evaluation-harness: one checkpoint, prompt and budget through lm-eval and the pipeline.

lm-eval itself runs (`lm_eval --model hf`, offline) on a local JSONL task over the suite file, greedy, with
the pipeline's plain prompt `Question: {q}\\nAnswer:` and its stop string; the pipeline runs the same
checkpoint on the real vLLM engine at temperature 0. Every text must be the same (the pipeline keeps the
stop string, lm-eval cuts it), the imported log must carry the suite's item ids, and the comparison of the
two logs, labelled a cross-tool parity check of one model, must have a delta of exactly 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis.commands.compare_logs import main as compare_main
from contract.evallog import load
from demo.tiny_models import arithmetic_items
from demo.worlds import make_world
from interop.imports.__main__ import main as imports_main
from pipeline.prompts import PLAIN_STOP

N_ITEMS, MAX_TOKENS = 8, 16

TASK = """task: parity_arith
dataset_path: json
dataset_kwargs:
  data_files:
    test: {suite}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: {until}
  do_sample: false
  max_gen_toks: {max_tokens}
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""


def start_lm_eval(checkpoint: Path, suite: Path, root: Path) -> subprocess.Popen[str]:
    """lm_eval on the suite as a local task (--include_path), offline, one request at a time (no padding)."""
    tasks = root / "tasks"
    tasks.mkdir()
    until = json.dumps(list(PLAIN_STOP))
    (tasks / "parity_arith.yaml").write_text(TASK.format(suite=suite, until=until, max_tokens=MAX_TOKENS))
    exe = shutil.which("lm_eval", path=str(Path(sys.executable).parent)) or "lm_eval"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(root / "hf"),
    }
    cmd = [
        exe, "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype=float32",
        "--tasks", "parity_arith", "--include_path", str(tasks), "--log_samples",
        "--output_path", str(root / "out"), "--device", "cpu", "--batch_size", "1",
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def texts_of(log: Any) -> dict[str, str]:
    """Per item, the text of its one sample."""
    return {it.item_id: it.samples[0].text for it in log.items}


@pytest.mark.slow
def test_lm_eval_and_the_pipeline_give_the_same_texts_and_a_delta_of_exactly_zero(
    tmp_path: Path, tiny_checkpoint: Path, vllm_engine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    items = arithmetic_items(N_ITEMS)
    w = make_world(
        tmp_path / "w", {"base": tiny_checkpoint}, items, k=1, max_tokens=MAX_TOKENS, temperature=0.0
    )
    harness = start_lm_eval(tiny_checkpoint, w.suite, tmp_path)
    try:
        ours = w.run_and_score("base", engine=vllm_engine)
        output, _ = harness.communicate(timeout=300)
    finally:
        harness.kill()
    assert harness.returncode == 0, output[-3000:]
    [samples] = list((tmp_path / "out").glob("*/samples_parity_arith_*.jsonl"))

    imported = tmp_path / "lm-eval.json"
    args = ["lm-eval", str(samples), "--suite", str(w.suite), "--verifier", "suite", "--top-p", "1.0",
            "--suite-name", "test-suite", "--suite-revision", "t1"]  # fmt: skip
    assert imports_main([*args, "--arm", "lm-eval", "--out", str(imported)]) == 0, capsys.readouterr().err
    theirs = load(imported)
    # Aligned with the suite by the documents' own item_id, in the suite's ids (not lm-eval's doc_id 0..n-1).
    assert [it.item_id for it in theirs.items] == sorted(it["item_id"] for it in items)
    assert theirs.model_name == ours.model_name and theirs.driver.startswith("lm-evaluation-harness 0.4")
    ours_texts, their_texts = texts_of(ours), texts_of(theirs)
    assert ours_texts.keys() == their_texts.keys()
    for item_id, text in ours_texts.items():
        # The pipeline keeps the stop string it stopped at; lm-eval cuts it.
        assert text.removesuffix(PLAIN_STOP[0]) == their_texts[item_id], item_id
    assert len(set(ours_texts.values())) > 1, (
        "a checkpoint that writes one text for every item proves nothing"
    )
    # The harness's own metric is kept beside the verifier's score of each sample.
    assert all(it.samples[0].source_score is not None for it in theirs.items)

    out = tmp_path / "cmp"
    rc = compare_main([str(w.logs_dir / "base.json"), str(imported), "--out", str(out), "--n-boot", "200",
                       "--n-perm", "200"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    report = json.loads((out / "delta/delta_report.json").read_text())
    assert (
        report["delta_mean"] == 0.0 and report["flips_wrong_to_right"] == report["flips_right_to_wrong"] == 0
    )
    assert report["claim"] == "ONE MODEL: a cross-tool parity check"
    assert "driver" in report["comparison"]["differs_in"]
    assert {it.item_id: it.scores for it in ours.items} == {it.item_id: it.scores for it in theirs.items}
