"""CHAMP's hand-labelled responses as two arms' EvalLogs, for the judge stage's bench and tests.

The 158 responses of tests/data/answer_reading/champ_labels.jsonl (GPT-4 and GPT-4 Turbo on the same 79
numeric problems) become two arms, `gpt-4` and `gpt-4-turbo`, one sample per item: each scored by this
project's scorer (scoring.scorer.score_sample, the `numeric` verifier, as a chat sample), with the problem's
text from the champ-dataset package. The hand labels become a labels file of the labelling sheet's form
(analysis.commands.judge_labels), so the judge and the rules can be measured against people.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contract.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
CHAMP_LABELS = ROOT / "tests" / "data" / "answer_reading" / "champ_labels.jsonl"
CHAMP_TEXT_LABELS = ROOT / "tests" / "data" / "answer_reading" / "champ_text_labels.jsonl"
ARMS = {"GPT-4": "gpt-4", "GPT-4 Turbo": "gpt-4-turbo"}
TEXT_ARM = "champ-text"


def champ_rows(path: Path = CHAMP_LABELS) -> list[dict[str, Any]]:
    """The labelled responses, one dict a line."""
    return [row for _, row in read_jsonl(path)]


def champ_questions() -> dict[str, str]:
    """Problem id -> problem text, from the champ-dataset package's data file."""
    import champ_dataset

    data = Path(os.path.dirname(champ_dataset.__file__)) / "dataset_files" / "v0.json"
    problems = json.loads(data.read_text(encoding="utf-8"))["problems"]
    return {pid: p["_text"] for pid, p in problems.items()}


def text_verifier(item_id: str, reference: str) -> dict[str, Any]:
    """The verifier the suite freezer gives a reference: `math` where math-verify reads it whole, else the
    `exact` fallback (`suite freeze --fallback-verifier exact`)."""
    from contract.suite import SuiteItem
    from pipeline.freeze.outcome import FreezeError
    from pipeline.freeze.references import check_reference

    item = SuiteItem.model_validate(
        {
            "item_id": item_id,
            "family": "champ",
            "question": "-",
            "answer": reference,
            "verifier": {"type": "math"},
        }
    )
    try:
        check_reference(item_id, item)
    except FreezeError:
        return {"type": "exact", "fallback": True}
    return {"type": "math"}


def _log(model: str, rows: list[dict[str, Any]], questions: dict[str, str], arm: str | None = None) -> Any:
    from contract.evallog import EvalLog, ItemResult, undecided_of
    from contract.generations import GenItem, GenSample, prompt_sha256
    from contract.suite import SuiteItem
    from scoring.scorer import score_sample

    items = []
    for r in rows:
        q = questions[r["problem_id"]]
        item_id = r["problem_id"] if "setting" not in r else f"{r['problem_id']}|{r['model']}|{r['setting']}"
        verifier = {"type": "numeric"} if "setting" not in r else text_verifier(item_id, r["reference"])
        item = SuiteItem.model_validate(
            {"item_id": item_id, "family": "champ", "question": q, "answer": r["reference"],
             "verifier": verifier}
        )  # fmt: skip
        text = r["response"]
        sample = GenSample(index=0, seed=0, text=text, finish_reason="stop", prompt_tokens=0, gen_tokens=0)
        gen = GenItem(item_id=item_id, prompt=q, prompt_sha256=prompt_sha256(q), samples=[sample])
        rec = score_sample(item, gen, sample, chat=True, tool_arm=False)
        items.append(
            ItemResult(
                item_id=item_id, scores=[rec.score], family="champ", question=q,
                reference_answer=r["reference"], samples=[rec], undecided=undecided_of([rec]),
            )
        )  # fmt: skip
    from contract.evallog import FORMAT_VERSION
    from scoring.scorer import SCORER_NAME, SCORER_VERSION

    return EvalLog.model_validate(
        {"model_name": model, "suite": "champ-numeric", "suite_revision": "champ-dataset-1.0.0",
         "n_samples": 1, "temperature": 0.0, "max_tokens": 4096, "driver": "champ-dataset",
         "measured_at": "2024-01-01T00:00:00Z", "items": [i.model_dump() for i in items],
         "format_version": FORMAT_VERSION, "arm": arm or ARMS[model],
         "scorer": {"name": SCORER_NAME, "version": SCORER_VERSION, "settings": {"chat": True}}}
    )  # fmt: skip


def write_champ_world(out: Path) -> dict[str, Path]:
    """out/evallogs/<arm>.json for both arms and out/labels.csv (the hand labels); return the paths."""
    rows, questions = champ_rows(), champ_questions()
    (out / "evallogs").mkdir(parents=True, exist_ok=True)
    paths = {}
    for model, arm in ARMS.items():
        log = _log(model, [r for r in rows if r["model"] == model], questions)
        paths[arm] = out / "evallogs" / f"{arm}.json"
        paths[arm].write_text(log.model_dump_json(indent=1, exclude_none=True) + "\n")
    lines = ["arm,item_id,sample,label"]
    lines += [f"{ARMS[r['model']]},{r['problem_id']},0,{r['label']}" for r in rows]
    paths["labels"] = out / "labels.csv"
    paths["labels"].write_text("\n".join(lines) + "\n")
    return paths


def shown_labels(rows: list[dict[str, Any]], chars: int) -> dict[str, int]:
    """The hand label of each response's concluding part as the judge sees it (a perfect judge's table)."""
    from scoring.judge_prompt import concluding_part

    return {concluding_part(r["response"], chars): int(r["label"]) for r in rows}


def write_champ_text_world(out: Path, first: int | None = None) -> dict[str, Path]:
    """out/evallogs/champ-text.json (CHAMP's 230 hand-labelled responses to non-numeric answers, one arm, one
    item per response, the verifier the freezer would give each reference) and out/labels.csv; `first`:
    only the first rows."""
    rows = champ_rows(CHAMP_TEXT_LABELS)[:first]
    (out / "evallogs").mkdir(parents=True, exist_ok=True)
    log = _log("CHAMP responses", rows, champ_questions(), arm=TEXT_ARM)
    paths = {TEXT_ARM: out / "evallogs" / f"{TEXT_ARM}.json", "labels": out / "labels.csv"}
    paths[TEXT_ARM].write_text(log.model_dump_json(indent=1, exclude_none=True) + "\n")
    lines = ["arm,item_id,sample,label"]
    lines += [f'{TEXT_ARM},"{r["problem_id"]}|{r["model"]}|{r["setting"]}",0,{r["label"]}' for r in rows]
    paths["labels"].write_text("\n".join(lines) + "\n")
    return paths
