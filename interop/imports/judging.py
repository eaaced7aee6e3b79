"""How each imported sample is judged: by the tool's own score, or by this project's verifier.

The verifier judges against the tool's reference or the suite item the document is matched with (by id, its
question checked, or by question).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contract.evallog import VerifierInfo
from contract.suite import CHOICE_LETTERS, SuiteItem
from interop.imports.tool_file import ImportRefusal, ItemDraft, ToolFile
from scoring import verifiers
from scoring.numbers import parse_number
from scoring.scorer import SCORER_NAME

# --verifier: a built-in verifier type judged against the tool's reference, or `suite`: each item's own
# verifier and answer from --suite.
VERIFIER_TYPES = ("exact", "numeric", "math", "choice", "suite")


def builtin_item(item_id: str, family: str | None, reference: Any, kind: str) -> SuiteItem:
    """A suite item that judges one imported document by a built-in verifier against the tool's reference.

    Raises ValueError (the caller names file and line) for a reference that verifier cannot judge against.
    """
    number = isinstance(reference, int | float) and not isinstance(reference, bool)
    if not number and not isinstance(reference, str):
        raise ValueError(f"the reference {reference!r:.60} is not an answer (a string or a number)")
    answer: Any = reference if number else str(reference)
    if kind == "numeric":
        value = reference if number else parse_number(reference)
        if value is None or not math.isfinite(value):
            raise ValueError(f"the reference {reference!r:.60} is not a number; choose another --verifier")
        answer = value
    if kind == "choice" and str(answer) not in CHOICE_LETTERS:
        raise ValueError(f"the reference {reference!r:.60} is not a choice letter; choose another --verifier")
    return SuiteItem(
        item_id=item_id,
        family=family or "(imported)",
        question="(imported)",
        answer=answer,
        verifier={"type": kind},
    )


def verifier_infos(items: Sequence[SuiteItem]) -> list[VerifierInfo]:
    seen: dict[tuple[str, str], VerifierInfo] = {}
    for it in items:
        name, version = verifiers.describe(it.verifier)
        seen.setdefault(
            (it.verifier.type, name), VerifierInfo(type=it.verifier.type, name=name, version=version)
        )
    return list(seen.values())


def suite_match(
    path: Path, key: str, draft: ItemDraft, suite: dict[str, SuiteItem], by_id: bool
) -> SuiteItem:
    """The suite item of one document: by its id (its question checked), else by its question."""
    if by_id:
        item = suite.get(key)
        if item is None:
            raise ImportRefusal(
                f"{path}: {draft.where}: item {key!r} is not an item of the suite; import the run of this "
                "suite, or name the documents' id field (--id-field doc.FIELD)"
            )
        if not _holds_question(draft, item.question):
            raise ImportRefusal(
                f"{path}: {draft.where}: item {key!r}: its document does not hold the suite's question "
                f"{item.question[:60]!r}; the run is of another version of the suite"
            )
        return item
    found = [it for it in suite.values() if it.question in draft.texts]
    if not found:
        # A tool that keeps only the rendered prompt (lighteval's query): the question inside it.
        found = [it for it in suite.values() if _holds_question(draft, it.question)]
    if len(found) != 1:
        what = "no suite item's question" if not found else f"{len(found)} suite items' questions"
        raise ImportRefusal(
            f"{path}: {draft.where}: the document (named by position) holds {what}; name the documents' "
            "id field (--id-field doc.FIELD) to align them with the suite"
        )
    return found[0]


def _holds_question(draft: ItemDraft, question: str) -> bool:
    return question in draft.texts or (draft.prompt is not None and question in draft.prompt)


def score_samples(
    file: ToolFile, key: str, draft: ItemDraft, verifier: str | None, item: SuiteItem | None
) -> list[dict[str, Any]]:
    """The draft's samples with score, answer and how each was scored."""
    out = []
    for j, s in enumerate(draft.samples):
        sample = {k: v for k, v in s.items() if k != "tool_score"}
        tool_score = s.get("tool_score")
        if verifier is None:
            if tool_score is None:
                raise ImportRefusal(
                    f"{file.path}: {draft.where}: samples[{j}]: no per-sample score in the file; judge each "
                    "with --verifier {exact,numeric,math,choice,suite}"
                )
            sample.update(score=tool_score, scored_by=f"{file.tool} {file.metric}")
        else:
            try:
                judge = (
                    item
                    if verifier == "suite"
                    else builtin_item(key, draft.family, draft.reference, verifier)
                )
            except ValueError as e:
                raise ImportRefusal(f"{file.path}: {draft.where}: {e}") from None
            if judge is None:
                raise ImportRefusal(
                    "--verifier suite: give the suite the items were drawn from (--suite FILE)"
                )
            try:
                verdict = verifiers.score(judge, s.get("text") or "", chat=True)
            except verifiers.VerifierError as e:
                raise ImportRefusal(f"{file.path}: {draft.where}: {e}") from None
            sample.update(
                score=verdict.score,
                verdict=verifiers.verdict_word(verdict),
                answer=verdict.answer,
                no_answer_reason=verdict.reason,
                scored_by=f"{SCORER_NAME} {judge.verifier.type} verifier",
                source_score=tool_score,
            )
        out.append(sample)
    return out
