"""Inputs that pass for what they are not: a few-shot file with one id twice or one question with two
answers, a suite with one question under two ids; and a suite whose lines were only reordered, which asks
the same questions and so regenerates nothing. A part run's resume message names the part's own shard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from augment.tools.client import ToolServerError
from contract.protocol import FewShot
from contract.suite import SuiteError, load_suite
from demo.tiny_models import arithmetic_items
from demo.worlds import make_world
from pipeline.config import ConfigError, engine_config
from pipeline.engines import engines_started
from pipeline.fewshot import load_examples
from pipeline.generate import run
from pipeline.plan import plan_run
from pipeline.recorder import GenerationRecorder
from pipeline.resolve import resolve, tool_session
from pipeline.run_paths import RunPaths
from pipeline.settings import RunnerError


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (
            [
                {"id": "e1", "question": "1 + 1?", "answer": "2"},
                {"id": "e1", "question": "2 + 2?", "answer": "4"},
            ],
            "example 2: id 'e1' is also example 1's",
        ),
        (
            [
                {"id": "e1", "question": "1 + 1?", "answer": "2"},
                {"id": "e2", "question": "1  + 1?", "answer": "3"},
            ],
            "example 'e2': asks example 'e1''s question with another answer",
        ),
        (
            [
                {"id": "e1", "question": "1 + 1?", "answer": "2"},
                {"id": "e2", "question": "1 + 1?", "answer": "2"},
            ],
            "example 'e2': asks example 'e1''s question again",
        ),
    ],
)
def test_few_shot_examples_are_distinct(tmp_path: Path, rows: list[dict[str, object]], says: str) -> None:
    path = _jsonl(tmp_path / "shots.jsonl", rows)
    with pytest.raises(ConfigError, match=f"^{path}: ") as e:
        load_examples(FewShot(path=str(path), n=2), tmp_path / "params.yaml")
    assert says in str(e.value), e.value


def test_one_question_under_two_ids_is_refused(tmp_path: Path) -> None:
    rows = arithmetic_items(3)
    rows.append({**rows[1], "item_id": "copy-of-1"})
    path = _jsonl(tmp_path / "suite.jsonl", rows)
    with pytest.raises(SuiteError, match=rf"^{path}:4: question: item 'copy-of-1' asks what item "):
        load_suite(path)


def test_a_suite_reordered_line_by_line_regenerates_nothing(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    hf = engine_config("hf")
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(4), k=2, max_tokens=4)
    first = run(w.settings("base", engine=hf)).read_bytes()
    lines = w.suite.read_text().splitlines(keepends=True)
    w.suite.write_text("".join(reversed(lines)))
    w.repin()
    started = engines_started()
    again = run(w.settings("base", engine=hf))
    assert engines_started() == started and again.read_bytes() == first


def test_a_part_runs_resume_message_names_its_shard_and_part(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(2), k=1, max_tokens=4)
    run = resolve(w.settings("+tools", part="1/2"), matched_prompting=False)
    with pytest.raises(RunnerError) as e, tool_session(run):
        raise ToolServerError("the server died beyond its budget")
    message = str(e.value)
    assert "`python -m pipeline.run_arm arm=+tools part=1/2`" in message, message
    shard = RunPaths(w.out_dir, "+tools", (1, 2)).shard
    assert f"the finished samples are kept in {shard};" in message, message
    # The shard named is the one the part's run writes its samples to.
    recorder = GenerationRecorder(run, plan_run(run.prompting, []))
    recorder.close()
    assert recorder.shard.path == shard and shard.is_file()
