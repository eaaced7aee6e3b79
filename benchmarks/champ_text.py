"""CHAMP responses to non-numeric answers against their hand labels, scored as the user's path scores them.

Each labelled response (tests/data/answer_reading/champ_text_labels.jsonl) is the text of a chat sample
whose item is what `python -m pipeline.freeze --fallback-verifier exact` makes of the problem: the math
verifier where math-verify reads the reference (its forms recorded where the freezer finds several), else
the exact verifier as the fallback. Per kind of reference (expression, several, yesno, none, text): the
agreement with the labels, the recall on the responses labelled right, the false-right rate on those
labelled wrong, and the undecided samples. Then every response again against another problem's item (the
next problem, in id order, whose reference is a different answer from the response's own reference and
from the answer the response states by its hand label: answer_key tells "No such values" and "No integer
solutions", or "0 (none of the values)" and "0 (i.e., no real-valued zeros)", apart from nothing): every
right verdict there is a false right.

Runs with any checkout's scorer on PYTHONPATH (a scorer before EvalLog format 5 has no undecided verdict and
no reference forms), so that the reader before a change can be measured by the same code as after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
CHAMP_TEXT_LABELS = ROOT / "tests" / "data" / "answer_reading" / "champ_text_labels.jsonl"
KINDS = ("expression", "several", "yesno", "none", "text")


@dataclass(frozen=True)
class TextCase:
    """One response scored: its kind, its label (0/1), the scorer's verdict (0/1) and whether undecided."""

    id: str
    kind: str
    label: int
    got: int
    undecided: bool | None
    answer: str | None
    reference: str
    verifier: str


def answer_key(reference: str) -> str:
    """What a reference answers, for choosing another problem's reference that is a different answer: its
    main form (a gloss or an equivalent form left out), every "there is none" as one answer."""
    r = " ".join(reference.casefold().split())
    r = re.sub(r",?\s+or\s+(?:equivalently|an equivalent form such as|approximately)\s.*$", "", r)
    r = re.sub(r"\s*\((?=[^()]*[a-z]{3})[^()]*\)\s*$", "", r)
    none = ("not possible", "does not exist", "no such", "there are no", "is the only possible value")
    if re.match(r"^(?:no|none)\b", r) or any(p in r for p in none[:4]):
        return "none"
    return r.removesuffix(" " + none[4]) if r.endswith(none[4]) else r


def frozen_item(case_id: str, reference: str, question: str) -> Any:
    """The suite item the freezer makes of one problem with --fallback-verifier exact."""
    from pydantic import ValidationError

    from contract.suite import SuiteItem
    from pipeline.freeze import references
    from pipeline.freeze.outcome import FreezeError, UnreadableReference

    base = {"item_id": case_id, "family": "champ-text", "question": question, "answer": reference}
    item = SuiteItem.model_validate({**base, "verifier": {"type": "math"}})
    item = getattr(references, "with_forms", lambda it: it)(item)
    try:
        references.check_reference(case_id, item)
        return item
    except (UnreadableReference, FreezeError):
        kept = item.model_dump(exclude_none=True)
        try:
            return SuiteItem.model_validate({**kept, "verifier": {"type": "exact", "fallback": True}})
        except ValidationError:  # a scorer before the fallback was marked
            return SuiteItem.model_validate({**kept, "verifier": {"type": "exact"}})


def _scored(case_id: str, kind: str, label: int, item: Any, text: str) -> TextCase:
    from scoring import verifiers

    verdict = verifiers.score(item, text, chat=True)
    return TextCase(case_id, kind, label, int(verdict.score), getattr(verdict, "undecided", None),
                    verdict.answer, str(item.answer), item.verifier.type)  # fmt: skip


def score_champ_text(path: Path = CHAMP_TEXT_LABELS) -> tuple[list[TextCase], list[TextCase]]:
    """(each response against its own problem's item, each against another problem's item)."""
    cases = [row for _, row in read_jsonl(path)]
    problems = sorted({(c["problem_id"], c["reference"], c["problem"]) for c in cases})
    items = {pid: frozen_item(pid, ref, question) for pid, ref, question in problems}
    own, other = [], []
    for c in cases:
        case_id = f"{c['problem_id']}::{c['model']}::{c['setting']}"
        own.append(_scored(case_id, c["kind"], int(c["label"]), items[c["problem_id"]], c["response"]))
        at = next(i for i, p in enumerate(problems) if p[0] == c["problem_id"])
        # A different answer from the response's own reference and from what the response states (its hand
        # label's stated_answer): a wrong response that states "there are no solutions", or "0", against
        # a problem whose answer is that, states the other reference's answer, and a reader that calls it
        # right is reading it correctly; only a right verdict on an answer the response does not state is
        # a false right.
        stated = {answer_key(c["reference"]), answer_key(c.get("stated_answer") or c["reference"])}
        j = next(
            (at + d) % len(problems)
            for d in range(1, len(problems))
            if answer_key(problems[(at + d) % len(problems)][1]) not in stated
        )
        other.append(
            _scored(f"{case_id} vs {problems[j][0]}", c["kind"], 0, items[problems[j][0]], c["response"])
        )
    return own, other


def _row(name: str, rs: list[TextCase]) -> str:
    right = [r for r in rs if r.label == 1]
    wrong = [r for r in rs if r.label == 0]
    agree = sum(r.got == r.label for r in rs)
    recall = sum(r.got for r in right)
    false_right = sum(r.got for r in wrong)
    undecided = "n/a" if any(r.undecided is None for r in rs) else str(sum(bool(r.undecided) for r in rs))
    return (
        f"{name:<11} {len(rs):>5} {agree:>4} {agree / len(rs):>6.1%} {recall:>4}/{len(right):<4} "
        f"{recall / max(len(right), 1):>6.1%} {false_right:>4}/{len(wrong):<4} "
        f"{false_right / max(len(wrong), 1):>6.1%} {undecided:>9}"
    )


def table(own: list[TextCase], other: list[TextCase]) -> str:
    """Per kind: agreement, recall on right, false right on wrong, undecided; then the swapped ones."""
    head = (
        f"{'kind':<11} {'cases':>5} {'agree':>11} {'recall (right)':>16} {'false right':>18} {'undecided':>9}"
    )
    lines = ["CHAMP non-numeric, own reference", head]
    for kind in (*KINDS, "all"):
        rs = [r for r in own if kind in (r.kind, "all")]
        if rs:
            lines.append(_row(kind, rs))
    lines += ["", "Against another problem's reference (every right verdict is a false right)"]
    for kind in (*KINDS, "all"):
        rs = [r for r in other if kind in (r.kind, "all")]
        if rs:
            n = sum(r.got for r in rs)
            lines.append(f"{kind:<11} {n:>4}/{len(rs):<4} {n / len(rs):>6.1%}")
    return "\n".join(lines)


def listing(cases: list[TextCase], wrong_only: bool = True) -> str:
    """The cases whose verdict differs from the label (or every case), one line each."""
    return "\n".join(
        f"- {r.id} [{r.kind}, {r.verifier}]: label {r.label}, scorer {r.got}"
        + (" (undecided)" if r.undecided else "")
        + f"; read {(r.answer or '')[:80]!r}; reference {r.reference[:50]!r}"
        for r in cases
        if not wrong_only or r.got != r.label
    )
