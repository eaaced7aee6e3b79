"""The judge stage with a real judge: SmolLM2-135M-Instruct served by vLLM's OpenAI-compatible server,
which the stage starts itself, on CHAMP's hand-labelled responses (slow: the checkpoints' build and
vLLM's start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.judge_champ import write_champ_world
from contract.evallog import load
from contract.judge import JudgeSettings
from pipeline import judge as stage
from tests.helpers.judging import ARMS, run_report


@pytest.fixture(scope="module")
def champ(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """CHAMP's 158 hand-labelled responses as two arms' EvalLogs."""
    return write_champ_world(tmp_path_factory.mktemp("champ"))


@pytest.mark.slow
def test_a_real_vllm_judge_is_audited(
    smollm2_checkpoints: Path, champ: dict[str, Path], tmp_path: Path
) -> None:
    cfg = JudgeSettings(
        model=str(smollm2_checkpoints / "base"), revision="smollm2-135m-instruct-test", audit_size=4,
        max_tokens=24, cache=str(tmp_path / "c.jsonl"), vllm={"max_model_len": 2048},
    )  # fmt: skip
    first = stage.run(champ["gpt-4"].parent, tmp_path / "judged", ARMS, cfg)
    assert first["calls"] == 8
    assert stage.run(champ["gpt-4"].parent, tmp_path / "judged", ARMS, cfg)["calls"] == 0
    replies = [
        s.judge.reply
        for it in load(tmp_path / "judged" / "gpt-4.json").items
        for s in it.samples or []
        if s.judge
    ]
    assert len(replies) == 4 and all(isinstance(r, str) and r for r in replies)
    report = run_report(champ, tmp_path / "judged", tmp_path / "report")
    assert report["arms"]["gpt-4"]["audit"]["audited"] == 4
    # A 135M model is no judge: the audit keeps it out of the headline (on every reply so far it wrote prose
    # instead of the verdict line).
    assert report["contrasts"][0]["headline"] == "rule_decided"
