"""EvalLogs exported to Inspect's log format and read back with inspect-ai's own read_eval_log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.evallog import EvalLog
from interop.inspect_export import main as export_main

K = 3


def tool_arm_log(path: Path) -> EvalLog:
    """An EvalLog as the scorer writes one for a retrieval + tool arm: prompts, passages, tool calls."""
    items = []
    for i in range(4):
        samples = []
        for j in range(K):
            right = (i + j) % 2 == 0
            call = {
                "name": "orbit_period",
                "arguments": {"a_km": 7000 + i},
                "result": {"period_s": 5829.0 + i},
            }
            calls = [call] if j != 1 else []
            samples.append({
                "index": j, "seed": 100 * i + j, "score": float(right),
                "text": f"<tool_call>...</tool_call> Answer: {i if right else -1}",
                "answer": str(i if right else -1),
                "finish_reason": "stop" if j else "length", "prompt_tokens": 20 + i, "gen_tokens": 30 + j,
                "rounds": 2 if calls else 1, "tool_calls": calls or None,
                "path": ("clean" if right else "tool_result_ignored") if calls else "answer_without_tool",
            })  # fmt: skip
        items.append({
            "item_id": f"item-{i}", "family": ["lookup", "compute"][i % 2],
            "prompt": f"Passage.\n\nQ{i}?\nAnswer:",
            "retrieved": [{"doc_id": f"doc-{i}", "score": 3.5, "rank": 1}],
            "scores": [s["score"] for s in samples], "gen_tokens": [s["gen_tokens"] for s in samples],
            "samples": samples,
        })  # fmt: skip
    log = EvalLog.model_validate({
        "format_version": 3, "model_name": "demo-trained", "suite": "sda-mini", "suite_revision": "v1.0",
        "n_samples": K, "temperature": 1.0, "max_tokens": 128, "top_p": 1.0, "seed": 1234,
        "driver": "cpu", "measured_at": "not recorded in the log", "arm": "trained+rag+tools",
        "attribution": "ceiling", "scorer": {"name": "reasoning-delta", "version": "2.1"},
        "tool_calls": {"answered": 8, "failed": 0, "restarts": 0}, "items": items,
    })  # fmt: skip
    path.write_text(log.model_dump_json(exclude_none=True))
    return log


def minimal_log(path: Path) -> EvalLog:
    """The minimal EvalLog form: scores only, no samples, no prompts."""
    log = EvalLog.model_validate({
        "model_name": "m", "suite": "s", "suite_revision": "1", "n_samples": 2, "temperature": 0.0,
        "max_tokens": 8, "driver": "d", "measured_at": "2026-01-01T00:00:00+00:00",
        "items": [{"item_id": "a", "scores": [1.0, 0.0]}, {"item_id": "b", "scores": [0.5, 1.0]}],
    })  # fmt: skip
    path.write_text(log.model_dump_json(exclude_none=True))
    return log


def test_the_export_opens_with_read_eval_log_with_every_score_text_and_epoch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import read_eval_log

    ours = tool_arm_log(tmp_path / "ceiling.json")
    minimal = minimal_log(tmp_path / "plain.json")
    assert (
        export_main(
            [str(tmp_path / "ceiling.json"), str(tmp_path / "plain.json"), "--out", str(tmp_path / "x")]
        )
        == 0
    )
    theirs = read_eval_log(str(tmp_path / "x" / "trained+rag+tools.eval"))
    assert (
        theirs.status == "success" and theirs.eval.config.epochs == K and theirs.eval.model == "demo-trained"
    )
    assert (
        theirs.eval.model_generate_config.temperature == 1.0
        and theirs.eval.metadata["arm"] == "trained+rag+tools"
    )
    by_cell: dict[tuple[str, int], Any] = {(str(s.id), s.epoch): s for s in theirs.samples or []}
    assert len(by_cell) == len(ours.items) * K
    for it in ours.items:
        for s in it.samples or []:
            got = by_cell[(it.item_id, s.index + 1)]
            assert (
                got.scores["reasoning-delta"].value == s.score
                and got.scores["reasoning-delta"].answer == s.answer
            )
            assert got.output.completion == s.text and got.input == it.prompt
            assert got.output.usage.output_tokens == s.gen_tokens
            assert got.output.stop_reason == ("max_tokens" if s.finish_reason == "length" else "stop")
            assert got.metadata["path"] == s.path and got.metadata["seed"] == s.seed
            assert got.metadata["passages"] == [{"doc_id": it.retrieved[0].doc_id, "score": 3.5, "rank": 1}]
            calls = [m for m in got.messages if m.role == "tool"]
            assert [m.function for m in calls] == [c.name for c in s.tool_calls or []]
            assert [m.text for m in calls] == [str(c.result) for c in s.tool_calls or []]
    plain = read_eval_log(str(tmp_path / "x" / "plain.eval"))
    assert {(str(s.id), s.epoch): s.scores["score"].value for s in plain.samples or []} == {
        (it.item_id, j + 1): v for it in minimal.items for j, v in enumerate(it.scores)
    }
    assert "trained+rag+tools.eval (4 items x 3 epochs)" in capsys.readouterr().out


def test_two_logs_of_one_arm_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool_arm_log(tmp_path / "a.json")
    tool_arm_log(tmp_path / "b.json")
    assert (
        export_main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "x")]) == 2
    )
    assert "both hold arm 'trained+rag+tools'" in capsys.readouterr().err and not (tmp_path / "x").exists()
    (tmp_path / "bad.json").write_text("{}")
    assert export_main([str(tmp_path / "bad.json"), "--out", str(tmp_path / "x")]) == 2
    assert "bad.json: model_name: Field required" in capsys.readouterr().err
