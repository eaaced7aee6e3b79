"""Reading a sample's final answer: the strict rules a prompt names, the parity reader, the lenient reader.

Every reader first strips thinking (what follows the last `</think>` is read; a text whose last `<think>` is
never closed has no answer) and tool calls and tool responses.

- **Strict rules** (`protocol.answer`, set by the prompt presets of conf/prompt/): the prompt says where its
  answer is and the rule reads only there, so what a base model writes after its answer (the next question, a
  second "Answer:") never decides its score:
  `first_answer`  the first `Answer:` line with an answer (right after a prompt that ends in `Answer:`)
  `last_boxed`    the last `\\boxed{}`
  `answer_is`     the first "The (final) answer is X" (GSM8K chain-of-thought and Minerva few-shot formats)
  A plain prompt without a rule (it ends in `Answer:`, the format the model was taught) reads `first_answer`.
- **The parity reader** (chat output without a rule): for `math` and `numeric` verifiers it reads a whole
  response as math-verify reads one (scoring.mathverify: several boxes of one answer, "The final answer is",
  sets, intervals, decimal commas, spaced thousands), in three steps: math-verify's anchored targets (a box,
  "final answer", "answer"); then a `####` line; then the final sentence when it states its answer ("... is
  0, achieved when $a = b = c$" reads 0, "There are 239 strings ... differ by at most 1." reads 239, where
  math-verify reads the condition or the last number); then math-verify's unanchored targets (the last
  LaTeX span or number). `exact` and `choice` verifiers read the last `\\boxed{}`, else `####`, else "the
  answer is", else `Answer:` (choice: else the last "(B)").
- **The lenient reader**: the report's reader's answer where it reads one, else the parity reader's. Both
  run on every sample; the reports compare a delta under each to tell a model that learned to write its
  answer where the reader looks from one that reasons better.

A placeholder copied from the instruction (`...`, `\\boxed{...}`, `<answer>`, an empty box) is no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from contract.suite import Verifier
from contract.textformat import (
    ANSWER_TAG,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_RESPONSE_CLOSE,
    TOOL_RESPONSE_OPEN,
)
from scoring import mathverify

_BOXED = "\\boxed{"
_BRACE_OR_BOX = re.compile(re.escape(_BOXED) + r"|[{}]")
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_TOOL_MARKUP = re.compile(
    "|".join(
        re.escape(a) + ".*?" + re.escape(b)
        for a, b in ((TOOL_CALL_OPEN, TOOL_CALL_CLOSE), (TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE))
    ),
    re.DOTALL,
)
_HASHES = re.compile(r"####[ \t]*(.*)")
# "The final answer is $28\%$. I hope it is correct." reads "$28\%$": the sentence ends at ". " or the line.
_ANSWER_IS = re.compile(r"\b(?i:the\s+(?:final\s+)?answer\s+is)\b[ \t]*:?[ \t]*(.*?)(?:\.(?=\s)|\.?$)", re.M)
_ANSWER_LINE = re.compile(r"\b(?i:answer)\**[ \t]*:[ \t]*(.*)")
_CHOICE_PAREN = re.compile(r"\(([A-E])\)")
# What an instruction shows where the answer goes; a model that copies it has given no answer.
_PLACEHOLDERS = frozenset(
    ["", "...", "\u2026", "\\ldots", "\\dots", "\\cdots", "<answer>", "[answer]", "answer", "your answer",
     "your final answer", "final answer", "<your answer>", "{...}"]
)  # fmt: skip

# The final sentence stating its answer: "... is X" or "There are X ...", X a LaTeX span or a number,
# followed by the sentence's end or by a condition ("when", "where", "achieved", ...), which is not read.
_SPAN = r"\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|(?<!\\)\$.+?(?<!\\)\$"
_NUM = r"[-\u2212]?(?:\d{1,3}(?:[ ,]\d{3})+(?!\d)|\d+)(?:[.,]\d+)?(?:\s*/\s*\d+)?%?"
# Where a final sentence goes on to a condition, which is not its answer ("..., achieved when $a = b$").
_CONDITION = re.compile(
    r"[,;]?\s+\b(?:when|whenever|where|if|for\s+(?:all|every|each|some|any)|with|since|because|achieved|"
    r"attained|obtained|occurring|occurs|given|provided|assuming|under)\b",
    re.I,
)
_STATED = re.compile(
    rf"(?:\b(?:is|are|was|were|equals|equal\s+to|becomes|gives|yields|totals?)\b|(?<![<>!=\\])=(?!=))\s*(?:exactly\s+|just\s+|"
    rf"only\s+|about\s+|approximately\s+)?(?P<ans>{_SPAN}|{_NUM})(?![\d]|[.,]\d|\s*[-+*/\u00d7\u00f7^=]\s*[\d(\\$])",
    re.DOTALL,
)
_THERE_ARE = re.compile(
    rf"\b(?i:there\s+(?:are|is|were|was|exist|exists))\s+(?:exactly\s+)?(?P<ans>{_SPAN}|{_NUM})\b"
)
# Between two boxes of one answer: separators, spacing, "and", "for part (a) and", "y_2 =" (normalised gap).
_GAP_MARKUP = re.compile(r"\\(?:quad|qquad|[,;:! ])|\\text\{([^{}]*)\}|\$|\\[()\[\]]|~|\*")
_MOVED_ON = re.compile(
    r"\b(?:wrong|not|no|incorrect|instead|actually|but|however|so|thus|therefore|hence|answer|correct|"
    r"mistake|wait|check|error|recheck|final)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\\$])|\n\s*\n")


class UnknownRule(ValueError):
    """A protocol.answer that names no rule of RULES."""


@dataclass(frozen=True)
class Reading:
    """The answer read from a text (None: none found) and, without one, why; parsed: math-verify's parse
    where the parity reader read the answer with it (the judge then uses it as it is); how: which rule."""

    answer: str | None
    reason: str | None = None
    parsed: tuple[Any, ...] | None = None
    how: str | None = None
    # Reading ran out of the verifier's time limit (math-verify reading adversarial LaTeX).
    timed_out: bool = False


def boxed_contents(text: str) -> list[str]:
    """Contents of every balanced \\boxed{...} in text, in order, stripped."""
    return [text[start + len(_BOXED) : end - 1].strip() for start, end in box_spans(text)]


def last_boxed(text: str) -> str | None:
    """Content of the last balanced \\boxed{...} in text, or None."""
    boxes = boxed_contents(text)
    return boxes[-1] if boxes else None


def first_answer_line(text: str) -> str | None:
    """What follows the first `Answer:` that has an answer on its line (placeholders skipped), or None."""
    pos = text.find(ANSWER_TAG)
    while pos != -1:
        rest = text[pos + len(ANSWER_TAG) :].split("\n", 1)[0].strip()
        if rest and not is_placeholder(rest):
            return _clean(rest)
        pos = text.find(ANSWER_TAG, pos + len(ANSWER_TAG))
    return None


def is_placeholder(candidate: str) -> bool:
    """Whether a candidate is only an instruction's placeholder ('...', '\\boxed{...}', '<answer>')."""
    s = candidate.strip().strip("*$").strip().rstrip(".").strip()
    boxes = boxed_contents(s)
    if len(boxes) == 1 and s.startswith(_BOXED) and s.endswith("}"):
        return is_placeholder(boxes[0])
    return s.casefold() in _PLACEHOLDERS


def _clean(candidate: str) -> str:
    return candidate.strip().strip("*").strip()


def _first_real(candidates: list[str]) -> str | None:
    for c in candidates:
        if not is_placeholder(c):
            return _clean(c)
    return None


def _last_real(candidates: list[str]) -> str | None:
    for c in reversed(candidates):
        if not is_placeholder(c):
            return _clean(c)
    return None


# Each rule of protocol.answer: what it reads, and what it says when there is nothing to read.
RULES = {
    "first_answer": (first_answer_line, "no 'Answer:' line with an answer"),
    "last_boxed": (lambda body: _last_real(boxed_contents(body)), "no \\boxed{} with an answer"),
    "answer_is": (lambda body: _first_real(_ANSWER_IS.findall(body)), "no 'The answer is' with an answer"),
}
RULE_TEXT = {
    "first_answer": "the first 'Answer:' line with an answer",
    "last_boxed": "the last \\boxed{}",
    "answer_is": "the first 'The (final) answer is'",
}
PARITY_TEXT = (
    "math and numeric: math-verify's reading of the whole response (a box or 'final answer', then "
    "'answer'), then '####', then a final sentence that states its answer, then math-verify's last LaTeX "
    "span or number; exact and choice: last \\boxed{}, '####', 'the answer is', 'Answer:'"
)
LENIENT_TEXT = "the report's reader's answer, else the parity reader's"


def strip_markup(text: str) -> tuple[str | None, str | None]:
    """The text a reader reads (thinking and tool markup removed), or (None, why) if thinking never ended."""
    opened, closed = text.rfind(_THINK_OPEN), text.rfind(_THINK_CLOSE)
    if opened > closed:
        return None, "the thinking (<think>) was never closed by </think>; no final answer was written"
    body = text[closed + len(_THINK_CLOSE) :] if closed != -1 else text
    return _TOOL_MARKUP.sub("", body), None


def marked_lines(text: str) -> list[str]:
    """What follows each `####` (GSM8K's answer mark), in order."""
    return _HASHES.findall(text)


def final_statement(body: str) -> str | None:
    """The answer the last sentence states ('... is 0, achieved when ...' -> '0'), or None."""
    tail = body.rstrip()
    if not tail:
        return None
    sentences = _SENTENCE_END.split(tail)
    last = sentences[-1].strip()
    # Only prose states an answer; a closing formula ('$-34x-45y+20z-100=0$') is read by math-verify whole.
    if len(re.findall(r"[A-Za-z]{2,}", _strip_math(tail))) < 3:
        return None
    # A closing line that is only a box or a formula belongs to the sentence before it.
    if len(sentences) > 1 and not re.search(r"[A-Za-z]{3,}", _strip_math(last)):
        last = sentences[-2].strip() + " " + last
    found = _THERE_ARE.search(last)
    condition = _CONDITION.search(last)
    head = last[: condition.start()] if condition is not None else last
    stated = [m.group("ans") for m in _STATED.finditer(head)]
    if found is not None:
        return _unwrap(found.group("ans"))
    return _unwrap(stated[-1]) if stated else None


def _strip_math(s: str) -> str:
    return re.sub(_SPAN, " ", s, flags=re.DOTALL)


def _unwrap(span: str) -> str:
    s = span.strip()
    for a, b in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if s.startswith(a) and s.endswith(b) and len(s) >= len(a) + len(b):
            return s[len(a) : len(s) - len(b)].strip()
    return s


def box_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every balanced \\boxed{...} in text, in order."""
    # One pass with a stack of open braces (a box's own brace marked by its start): a scan from each
    # box to its closing brace is quadratic in a text of many unclosed boxes.
    out, stack = [], []
    for m in _BRACE_OR_BOX.finditer(text):
        if m.group() == "}":
            if stack and (start := stack.pop()) is not None:
                out.append((start, m.end()))
        else:
            stack.append(m.start() if m.group() == _BOXED else None)
    return sorted(out)


def _one_answer_gap(gap: str) -> bool:
    """Whether the text between two boxes joins them into one answer ('}, \\boxed{', '} \\quad
    \\text{and} \\quad \\boxed{') rather than moves on from the first ('} is wrong, so \\boxed{')."""
    words = _GAP_MARKUP.sub(lambda m: f" {m.group(1) or ''} ", gap).split()
    return len(words) <= 6 and len(gap) <= 80 and not _MOVED_ON.search(" ".join(words))


def from_last_boxes(body: str) -> str:
    """body from its last run of boxes on: boxes joined only by ',', 'and', 'or' make one answer
    (`\\boxed{(1, 2)}, \\boxed{(2, 1)}`), a box the text has moved on from does not ('\\boxed{1} is
    wrong, the answer is \\boxed{2}', which math-verify reads as the set {1, 2})."""
    spans = box_spans(body)
    if len(spans) < 2:
        return body
    first = len(spans) - 1
    while first > 0 and _one_answer_gap(body[spans[first - 1][1] : spans[first][0]]):
        first -= 1
    return body[spans[first][0] :] if first > 0 else body


def without_placeholders(body: str) -> str:
    """body without the instruction a model copied: each placeholder box (`\\boxed{...}`, `\\boxed{}`)
    with the words before it in its sentence ("Give the final answer as"), and each `Answer:` placeholder;
    math-verify would otherwise read the number after "answer" in the copied instruction."""
    cuts, real_end = [], 0
    for start, end in box_spans(body):
        if not is_placeholder(body[start:end]):
            real_end = end
            continue
        before = max(body.rfind(". ", 0, start) + 1, body.rfind("\n", 0, start) + 1, real_end)
        cuts.append((before, end))
    for m in _ANSWER_LINE.finditer(body):
        if is_placeholder(m.group(1)):
            cuts.append(m.span())
    kept, at = [], 0
    for start, end in sorted(cuts):
        if start > at:
            kept.append(body[at:start])
        at = max(at, end)
    return " ".join([*kept, body[at:]])


def _math_reading(body: str) -> Reading | None:
    """The parity reader's steps for math and numeric verifiers."""
    body = without_placeholders(body)
    anchored = mathverify.read_response(from_last_boxes(body), anchored_only=True)
    # A box math-verify cannot parse (`\\boxed{28 pct}`) is still its answer: math-verify compares its text.
    if anchored is not None and (mathverify.has_math(anchored[0]) or _BOXED in body):
        return Reading(anchored[1], parsed=anchored[0], how="math-verify")
    hashes = _last_real(_HASHES.findall(body))
    if hashes is not None:
        return Reading(hashes, how="####")
    stated = final_statement(body)
    if stated is not None and not is_placeholder(stated):
        # Read as math-verify reads a number or formula ('1000,99' is 1000.99), where it can.
        parsed = mathverify.parse_written(stated)
        return Reading(stated, parsed=parsed if mathverify.has_math(parsed) else None, how="final sentence")
    anywhere = mathverify.read_response(body)
    if anywhere is not None and mathverify.has_math(anywhere[0]):
        return Reading(anywhere[1], parsed=anywhere[0], how="math-verify")
    found = anchored or anywhere
    return None if found is None else Reading(found[1], parsed=found[0], how="math-verify")


def _text_reading(body: str, kind: str) -> Reading | None:
    """The parity reader's steps for exact and choice verifiers."""
    for found, how in (
        (boxed_contents(body), "last \\boxed{}"),
        (_HASHES.findall(body), "####"),
        (_ANSWER_IS.findall(body), "the answer is"),
        (_ANSWER_LINE.findall(body), "Answer:"),
    ):
        answer = _last_real(found)
        if answer is not None:
            return Reading(answer, how=how)
    if kind == "choice":
        letters = _CHOICE_PAREN.findall(body)
        if letters:
            return Reading(f"({letters[-1]})", how="last (letter)")
    return None


def parity_reading(body: str, verifier: Verifier | None) -> Reading:
    """The parity reader on a stripped body (see the module docstring)."""
    kind = "numeric" if verifier is None else verifier.type
    found = _math_reading(body) if kind in ("math", "numeric") else _text_reading(body, kind)
    if found is not None:
        return found
    return Reading(None, "no \\boxed{}, 'final answer', 'answer', '####', stated answer or number was read")


def read_answer(
    text: str, chat: bool = False, verifier: Verifier | None = None, rule: str | None = None
) -> Reading:
    """The report's reader: rule (protocol.answer) where given, `first_answer` for a plain prompt, else the
    parity reader; or why there is no answer."""
    body, reason = strip_markup(text)
    if body is None:
        return Reading(None, reason)
    if rule is None and not chat:
        rule = "first_answer"
    if rule is None:
        return parity_reading(body, verifier)
    if rule not in RULES:
        raise UnknownRule(f"protocol.answer: {rule!r} is not a rule; known: {', '.join(RULES)}")
    read, missing = RULES[rule]
    answer = read(body)
    return Reading(answer, how=rule) if answer is not None else Reading(None, missing)


def extract_answer(
    text: str, chat: bool = False, verifier: Verifier | None = None, rule: str | None = None
) -> str | None:
    """The final answer the report's reader reads (read_answer without its reason)."""
    return read_answer(text, chat, verifier, rule).answer


def read_lenient(text: str, strict: Reading, verifier: Verifier | None = None) -> Reading:
    """The lenient reader: the strict reading where it read an answer, else the parity reader's."""
    if strict.answer is not None:
        return strict
    body, reason = strip_markup(text)
    if body is None:
        return Reading(None, reason)
    return parity_reading(body, verifier)
