"""The suite's verifiers (the project's one oracle): read the final answer of a text and judge it.

Plain models end with an `Answer: ...` line (the last one counts); chat models put the final answer in
`\\boxed{...}` (the last one counts; without one the last `Answer:` line is used). A numeric verifier reads
the first number of the answer (signs, decimals, exponents and thousands commas; units after it are ignored);
an exact verifier compares strings after collapsing whitespace and casefolding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from contract.suite import NumericVerifier, SuiteItem
from contract.textformat import ANSWER_TAG

_BOXED = "\\boxed{"
# Thousands groups must be exact (1,234,567) so that "3, 4" reads as 3, not 34.
_NUMBER = re.compile(
    r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+\u2212]?\.\d+(?:[eE][-+]?\d+)?"
)


@dataclass(frozen=True)
class Verdict:
    """The score of one sample (0.0 or 1.0) and the answer string it was judged on (None: no answer found)."""

    score: float
    answer: str | None


def last_boxed(text: str) -> str | None:
    """Content of the last balanced \\boxed{...} in text, or None."""
    start = text.rfind(_BOXED)
    while start != -1:
        depth, i = 1, start + len(_BOXED)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[start + len(_BOXED) : i - 1].strip()
        start = text.rfind(_BOXED, 0, start)
    return None


def last_answer_line(text: str) -> str | None:
    """What follows the last `Answer:` on its line, stripped; None if there is none or it is empty."""
    pos = text.rfind(ANSWER_TAG)
    if pos == -1:
        return None
    rest = text[pos + len(ANSWER_TAG) :].split("\n", 1)[0].strip()
    return rest or None


def extract_answer(text: str, chat: bool = False) -> str | None:
    """The final answer of scored text: \\boxed{} first for chat models, else the last Answer: line."""
    if chat:
        boxed = last_boxed(text)
        if boxed:
            return boxed
    return last_answer_line(text)


def written_numbers(text: str) -> list[str]:
    """Every number in text as it is written, in order ('1,436.50 km or 3' -> ['1,436.50', '3'])."""
    return _NUMBER.findall(text)


def number_value(written: str) -> float | None:
    """The value of one number of written_numbers ('1,436.50' -> 1436.5), or None if it is not finite."""
    value = float(written.replace(",", "").replace("\u2212", "-"))
    return value if math.isfinite(value) else None


def parse_number(answer: str) -> float | None:
    """The first number in an answer string ('1,234.5 km' -> 1234.5), or None."""
    m = _NUMBER.search(answer)
    return None if m is None else number_value(m.group(0))


def _normalise(s: str) -> str:
    return " ".join(s.split()).casefold().rstrip(".")


def check(item: SuiteItem, answer: str | None) -> bool:
    """Whether an extracted answer is right for item under its verifier."""
    if answer is None:
        return False
    v = item.verifier
    if isinstance(v, NumericVerifier):
        got = parse_number(answer)
        if got is None:
            return False
        truth = float(item.answer)
        return abs(got - truth) <= max(v.rel_tol * abs(truth), v.abs_tol)
    return _normalise(answer) == _normalise(str(item.answer))


def score(item: SuiteItem, text: str, chat: bool = False) -> Verdict:
    """Extract the final answer from a sample's scored text and judge it against item."""
    answer = extract_answer(text, chat=chat)
    return Verdict(score=1.0 if check(item, answer) else 0.0, answer=answer)


def scored_text(prompt: str, generated: str) -> str:
    """The text the oracle reads: the generation, prefixed by `Answer:` when the prompt ended with it."""
    return (ANSWER_TAG if prompt.endswith(ANSWER_TAG) else "") + generated
