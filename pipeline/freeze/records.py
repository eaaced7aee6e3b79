"""One record of the dataset as a suite item: its fields mapped, its answer read, its verifier chosen.

The record is one of the file given as SRC; its fields are mapped by --field, its answer read from a worked
solution by --answer-from, and its verifier is its own, else --verifier, else math."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from contract.jsonl import JsonlError, jsonl_lines, parse_jsonl_line, read_jsonl_text
from contract.suite import SuiteItem, Verifier, is_finite_number
from pipeline.field_map import parse_field_map
from pipeline.freeze.outcome import FreezeError
from scoring.numbers import number_value, written_numbers
from scoring.reading import boxed_contents
from scoring.verifiers import reference_answer

TARGETS = ("item_id", "family", "question", "answer", "tool")
REQUIRED = ("question", "answer")
VERIFIERS = ("math", "numeric", "exact", "choice")
_VERIFIER: TypeAdapter[Any] = TypeAdapter(Verifier)


def parse_fields(pairs: Sequence[str]) -> dict[str, str]:
    """--field TARGET=SOURCE pairs as {target: source}; refuse an unknown target or a malformed pair."""
    try:
        return parse_field_map(pairs, TARGETS, "suite field", "question=problem")
    except ValueError as e:
        raise FreezeError(str(e)) from None


def verifier_spec(name: str | None, rel_tol: float, abs_tol: float) -> dict[str, Any] | None:
    """The suite's verifier object for --verifier (numeric takes the tolerances; python:module:function);
    None when --verifier was not given."""
    if name is None:
        return None
    if name.startswith("python:"):
        return {"type": "python", "function": name.removeprefix("python:")}
    if name not in VERIFIERS:
        raise FreezeError(f"--verifier {name!r}: one of {', '.join(VERIFIERS)} or python:module:function")
    if name == "numeric":
        return {"type": "numeric", "rel_tol": rel_tol, "abs_tol": abs_tol}
    return {"type": name}


def read_source(src: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) of every record of a JSONL file or a JSON list (where: 'SRC:line', 'SRC item n');
    a JSONL line that is not JSON comes as (where, FreezeError), so that every such line is named."""
    try:
        text = read_jsonl_text(src)
    except JsonlError as e:
        raise FreezeError(str(e)) from None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise FreezeError(f"{src}:{e.lineno}: not JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise FreezeError(f"{src}: JSON nested too deeply to read") from None
        for n, rec in enumerate(records, 1):
            yield f"{src} item {n} of the list", rec
        return
    for n, line in jsonl_lines(text):
        try:
            yield f"{src}:{n}", parse_jsonl_line(src, n, line)
        except JsonlError as e:
            yield f"{src}:{n}", FreezeError(str(e))


def _source_field(where: str, rec: dict[str, Any], target: str, name: str, option: str = "") -> Any:
    """The record's field `name` (its name for suite field target); FreezeError naming it if missing."""
    if name not in rec:
        option = option or f"--field {target}=FIELD"
        raise FreezeError(
            f"{where}: field {name!r} (for {target}) is missing; its fields: {', '.join(sorted(rec))}; "
            f"name another with {option}"
        )
    return rec[name]


def freeze_item(
    where: str,
    position: int,
    rec: Any,
    fields: dict[str, str],
    answer_from: str | None,
    verifier: dict[str, Any] | None,
    family: str,
    name: str,
) -> SuiteItem:
    """One source record as a validated suite item; FreezeError naming where and the field otherwise.

    verifier: --verifier's object, or None when it was not given (a record's own verifier, else math). The
    reference is not checked here: check_reference does that (the caller decides what an unreadable one gets).
    """
    if not isinstance(rec, dict):
        raise FreezeError(f"{where}: not a JSON object but {type(rec).__name__}")
    item: dict[str, Any] = {"verifier": record_verifier(where, rec, verifier)}
    for target in TARGETS:
        field_name = fields.get(target, target)
        if target == "answer" and answer_from is not None:
            item["answer"] = solution_answer(where, rec, answer_from)
        elif target in fields or target in REQUIRED or rec.get(field_name) is not None:
            item[target] = _source_field(where, rec, target, field_name)
    item.setdefault("item_id", f"{name}-{position:05d}")
    item.setdefault("family", family)
    for target in ("item_id", "family"):
        if isinstance(item[target], int) and not isinstance(item[target], bool):
            item[target] = str(item[target])  # ids and families written as numbers name the same thing
    if item["verifier"].get("type") == "numeric" and isinstance(item.get("answer"), str):
        item["answer"] = _numeric_answer(item["answer"])
    try:
        frozen = SuiteItem.model_validate(item)
    except ValidationError as e:
        err = e.errors()[0]
        target = str(err["loc"][0]) if err["loc"] else "item"
        mapped = f" (source field {fields.get(target, answer_from if target == 'answer' else target)!r})"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise FreezeError(f"{where}: {target}{mapped if target in TARGETS else ''}: {msg}") from None
    return frozen


def record_verifier(where: str, rec: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    """The verifier an item gets: the record's own (kept whole), else --verifier, else math."""
    own = rec.get("verifier")
    if own is None:
        return given if given is not None else {"type": "math"}
    if not isinstance(own, dict):
        raise FreezeError(f'{where}: verifier: is {own!r}, not a verifier object such as {{"type": "math"}}')
    if given is not None and _as_verifier(own) != _as_verifier(given):
        raise FreezeError(
            f"{where}: verifier: the record's own {json.dumps(own, sort_keys=True)} differs from "
            f"--verifier's {json.dumps(given, sort_keys=True)}; drop --verifier to keep each record's own, "
            "or remove the records' verifier fields to give them all --verifier"
        )
    return own


def _as_verifier(spec: dict[str, Any]) -> Any:
    """A verifier object with its defaults filled in (so {"type": "numeric"} equals its tolerances 0)."""
    try:
        return _VERIFIER.validate_python(spec)
    except ValidationError:
        return spec  # the suite item's own validation names what is wrong with it


def solution_answer(where: str, rec: dict[str, Any], answer_from: str) -> str:
    """The answer a worked solution marks; FreezeError when it marks none or its last box never closes."""
    solution = str(_source_field(where, rec, "answer", answer_from, "--answer-from FIELD"))
    boxes = boxed_contents(solution)
    opened = solution.count("\\boxed{")
    if opened != len(boxes):
        at = solution.rfind("\\boxed{")
        raise FreezeError(
            f"{where}: field {answer_from!r}: {opened - len(boxes)} \\boxed{{ never closed (the last at "
            f"character {at}: {solution[at : at + 30]!r}); balance its braces in the source"
        )
    answer = reference_answer(solution)
    if answer is None:
        raise FreezeError(
            f"{where}: field {answer_from!r}: no \\boxed{{}} and no '####' line to read the answer of"
        )
    return answer


def _numeric_answer(answer: str) -> str:
    """A string answer that is one number as the numeric verifier reads it ('1,234') written plainly
    ('1234'), as a suite stores it; any other string as it is (the suite reader judges it)."""
    written = written_numbers(answer)
    if is_finite_number(answer) or written != [answer.strip()]:
        return answer
    value = number_value(written[0])
    if value is None:
        return answer
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
