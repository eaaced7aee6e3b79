"""Few-shot examples of a prompt (params.yaml protocol.fewshot): read, checked against the suite, pinned.

    {"id": "ex-1", "question": "...", "answer": "... The answer is 12."}     one JSON line per example

The first n examples of the file, in its order, are what the prompt template gets as `examples`; the file
is pinned by its sha256 (pipeline.pins) like the suite. An example whose id or question is also a suite item
would show the model the answer to the item it is scored on, so it is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from contract.digest import file_sha256
from contract.jsonl import JsonlError, iter_jsonl
from contract.protocol import FewShot
from contract.suite import SuiteItem
from pipeline.config import ConfigError


class Example(BaseModel):
    """One few-shot example: its id, the question and the worked answer the template shows."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    question: str
    answer: str


def load_examples(spec: FewShot, params_file: Path) -> list[Example]:
    """The first spec.n examples of spec.path; refuse a file that is unreadable, malformed or too short."""
    examples: list[Example] = []
    try:
        for n, raw in iter_jsonl(spec.path):
            try:
                examples.append(Example.model_validate(raw))
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(str(x) for x in err["loc"]) or "(line)"
                raise ConfigError(
                    f"{spec.path}:{n}: {field}: {err['msg']}; each line is {{id, question, answer}} (strings)"
                ) from None
    except JsonlError as e:
        raise ConfigError(f"{params_file}: protocol.fewshot.path: {e}") from None
    _check_distinct(examples[: spec.n], spec)
    if len(examples) < spec.n:
        raise ConfigError(
            f"{params_file}: protocol.fewshot.n = {spec.n}: {spec.path} holds {len(examples)} examples; "
            "lower n or add examples"
        )
    return examples[: spec.n]


def _check_distinct(examples: Sequence[Example], spec: FewShot) -> None:
    """Refuse two examples of one id, or of one question (with the same answer or two different ones)."""
    ids: dict[str, int] = {}
    questions: dict[str, Example] = {}
    for i, ex in enumerate(examples, 1):
        if ex.id in ids:
            raise ConfigError(
                f"{spec.path}: example {i}: id {ex.id!r} is also example {ids[ex.id]}'s; ids are unique"
            )
        ids[ex.id] = i
        q = " ".join(ex.question.split())
        if q in questions:
            other = questions[q]
            how = "with another answer" if other.answer != ex.answer else "again"
            raise ConfigError(
                f"{spec.path}: example {ex.id!r}: asks example {other.id!r}'s question {how}; keep one of "
                "them"
            )
        questions[q] = ex


def check_disjoint(examples: Sequence[Example], items: Sequence[SuiteItem], spec: FewShot) -> None:
    """Refuse examples whose id or question is an item of the suite (the model would be shown its answer)."""
    ids = {it.item_id for it in items}
    questions = {" ".join(it.question.split()) for it in items}
    for ex in examples:
        if ex.id in ids or " ".join(ex.question.split()) in questions:
            which = "id" if ex.id in ids else "question"
            raise ConfigError(
                f"{spec.path}: example {ex.id!r}: its {which} is also a suite item; few-shot examples must "
                "not be scored items: replace it"
            )


def fewshot_pin(spec: FewShot | None, params_file: Path) -> dict[str, object] | None:
    """The pin of protocol.fewshot (path, n, sha256 of the file), or None when unset."""
    if spec is None:
        return None
    if not Path(spec.path).is_file():
        raise ConfigError(f"{spec.path}: few-shot file not found ({params_file} protocol.fewshot.path)")
    return {"path": spec.path, "n": spec.n, "sha256": file_sha256(spec.path)}
