"""Whether a reference answer is one its verifier reads, checked when the suite is frozen.

math-verify must parse it, find it equal to itself and read it whole (not one of several numbers written in
it); a numeric answer must be a number."""

from __future__ import annotations

import re

from contract.suite import SuiteItem, is_finite_number
from pipeline.freeze.outcome import FreezeError, UnreadableReference
from scoring import mathverify, reference_forms, verifiers
from scoring.expressions import is_expression, is_prose
from scoring.numbers import number_value, written_numbers
from scoring.timelimit import AnswerTimeout

# Words (not LaTeX commands) or separators: what lets a reference hold more than one answer.
_SEPARATED = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}|[,;=]")


def with_forms(item: SuiteItem) -> SuiteItem:
    """A math item with the forms its reference may be stated in (scoring.reference_forms), each form that
    is an expression one math-verify reads; the item as it is where the reference has only its own form."""
    if item.verifier.type != "math" or not isinstance(item.answer, str) or item.alternatives is not None:
        return item
    forms = reference_forms.alternatives(item.answer)
    if forms is None:
        return item
    kept = [forms[0]] + [f for f in forms[1:] if not is_expression(f) or _readable(f)]
    return item.model_copy(update={"alternatives": kept})


def _readable(form: str) -> bool:
    try:
        mathverify.parse_reference(form)
    except mathverify.UnreadableReference:
        return False
    return True


def check_reference(where: str, item: SuiteItem) -> None:
    """Refuse a reference answer its verifier cannot read: math-verify must parse it, find it equal to
    itself and read it whole (UnreadableReference); a numeric answer must read as a finite number (so it
    fails at freeze, not at scoring)."""
    if item.verifier.type not in ("math", "numeric"):
        return
    if item.alternatives is not None:
        # The main form is what the verifier must read whole; the others only add ways to be right.
        item = item.model_copy(update={"answer": item.alternatives[0], "alternatives": None})
    if item.verifier.type == "numeric" and not is_finite_number(item.answer):
        return  # load_suite names it (a numeric verifier needs a finite number)
    error = UnreadableReference if item.verifier.type == "math" else FreezeError
    try:
        same = verifiers.check(item, str(item.answer))
    except verifiers.VerifierError as e:
        raise error(f"{where}: {str(e).removeprefix(f'item {item.item_id!r}: ')}") from None
    except AnswerTimeout as e:
        raise error(
            f"{where}: answer: math-verify {e} reading {str(item.answer)[:60]!r}; simplify the reference"
        ) from None
    if not same:
        raise error(
            f"{where}: answer: the {item.verifier.type} verifier does not find {item.answer!r} equal to "
            "itself; write it as LaTeX (e.g. \\frac{1}{2}) or use the exact verifier"
        )
    if item.verifier.type == "math" and is_prose(str(item.answer)):
        raise UnreadableReference(
            f"{where}: answer: the reference {str(item.answer)[:60]!r} is a sentence; math-verify would read "
            "one number of it; use the exact verifier (its words are read as a conclusion)"
        )
    part = read_in_part(item) if item.verifier.type == "math" else None
    if part is not None:
        raise UnreadableReference(
            f"{where}: answer: math-verify reads only part of the reference {str(item.answer)[:60]!r}: the "
            f"answer {part!r} alone is judged right; write it as one LaTeX answer or use the exact verifier"
        )


def read_in_part(item: SuiteItem) -> str | None:
    """A number written in a math reference that the verifier alone judges equal to the whole reference
    while another number written in it decides nothing ('376 and 625' read as 625: '377 and 625' is 625 too;
    'sum_(k=1)^n 1/k' read as 1): half an answer would score. None when there is none, when every number
    counts ('\\frac{81}{9}' is 9, but '\\frac{82}{9}' is not), or when the reference ends by restating itself
    as that number ('C(10, 5), or equivalently 252')."""
    reference = str(item.answer)
    written = written_numbers(reference)
    # Only a reference with words or separators can hold more than one answer (math-verify keeps one).
    if len(written) < 2 or not _SEPARATED.search(reference):
        return None
    spans, at = [], 0
    for number in written:
        start = reference.index(number, at)
        spans.append((start, start + len(number), number))
        at = start + len(number)
    for number in dict.fromkeys(written):
        if re.search(rf"\bequivalently\s+{re.escape(number)}\s*\.?\s*$", reference):
            continue
        if not _judged_right(item, reference, number):
            continue
        for start, end, other in spans:
            changed = reference[:start] + _another(other) + reference[end:]
            if _judged_right(item, changed, number):
                return number
    return None


def _judged_right(item: SuiteItem, reference: str, answer: str) -> bool:
    """Whether the item's verifier judges answer right against this reference (out of time: no)."""
    try:
        return verifiers.check(item.model_copy(update={"answer": reference}), answer)
    except (AnswerTimeout, verifiers.VerifierError):
        return False


def _another(written: str) -> str:
    """Another number than the written one (its value plus one), to see whether the reference reads it."""
    value = number_value(written)
    if value is None:
        return written + "1"
    return str(int(value) + 1) if value.is_integer() and abs(value) < 2**53 else repr(value + 1)
