"""The suite's verifiers (the project's one oracle): read the final answer of a text and judge it.

Reading the answer (read_answer, the one extraction helper):
- Thinking is stripped first: what follows the last `</think>` is read; a text whose last `<think>` is never
  closed has no answer (its reason says so).
- The prompt says where its answer is (protocol.answer, set by the prompt presets of conf/prompt/), and
  the rule reads only there, so what a base model writes after its answer (the next question, a second
  "Answer:") never decides its score:
  `first_answer`  the first `Answer:` line with an answer (right after a prompt that ends in `Answer:`)
  `last_boxed`    the last `\\boxed{}`
  `answer_is`     the first "The (final) answer is X" (GSM8K chain-of-thought and Minerva few-shot formats)
- Without a rule, plain prompts (which end in `Answer:`, the format the model was taught) read
  `first_answer`, and chat output:
- Chat output (tool calls and tool responses left out): the last `\\boxed{}`, else the last `####` line, else
  the last "the answer is ...", else the last `Answer:` line, else the verifier's last resort: the last
  number (numeric), the last `$...$` or `\\(...\\)` span then the last number (math), the last "(B)"
  (choice). A placeholder copied from the instruction (`...`, `\\boxed{...}`, `<answer>`, an empty box) is
  no answer, and the next rule is tried.

Judging (check): `numeric` reads the first number of the answer (signs, decimals, exponents, thousands commas;
units after it are ignored) and applies the tolerances; `exact` compares strings after collapsing whitespace
and casefolding; `math` asks math-verify whether answer and reference are equal (LaTeX, fractions, decimals,
intervals, sets; units stripped as math-verify does); `choice` reads a letter A-E ('(B)', 'B.', '\\boxed{B}');
`python` calls the user's `module:function` with the answer and the reference.

Time (scoring.timelimit): `math` and `python` judge each answer under a time limit (the verifier's
`timeout_s`, else the scorer's, 30 s by default); an answer that runs out of it scores 0 and its reason
says so. math-verify's own timers are off (its alarm would cancel this one, and it logs every prediction
that timed out, whole), and a verdict is reused for the same answer and reference. A `python` verifier that
exits (`sys.exit`) or raises KeyboardInterrupt is a VerifierError naming it, not the end of the scorer.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract.digest import file_sha256
from contract.suite import NumericVerifier, SuiteItem, Verifier
from contract.textformat import (
    ANSWER_TAG,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_RESPONSE_CLOSE,
    TOOL_RESPONSE_OPEN,
)
from scoring.timelimit import DEFAULT_TIMEOUT_S, AnswerTimeout, time_limit

# Bump whenever a built-in verifier or the answer reading can give another verdict; the EvalLog records it
# beside each verifier the suite uses.
BUILTIN_NAME = "reasoning-delta"
BUILTIN_VERSION = "2.2"

_BOXED = "\\boxed{"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
# Thousands groups must be exact (1,234,567) so that "3, 4" reads as 3, not 34.
_NUMBER = re.compile(
    r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+\u2212]?\.\d+(?:[eE][-+]?\d+)?"
)
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
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<!\\)\$(.+?)(?<!\\)\$", re.DOTALL)
# What an instruction shows where the answer goes; a model that copies it has given no answer.
_PLACEHOLDERS = frozenset(
    ["", "...", "\u2026", "\\ldots", "\\dots", "\\cdots", "<answer>", "[answer]", "answer", "your answer",
     "your final answer", "final answer", "<your answer>", "{...}"]
)  # fmt: skip


class VerifierError(ValueError):
    """A verifier that cannot judge an item (an unparsable reference, a user function that fails)."""


@dataclass(frozen=True)
class Reading:
    """The answer read from a text (None: none found) and, without one, why."""

    answer: str | None
    reason: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The score of one sample (0.0 or 1.0), the answer it was judged on (None: none) and why none (or why
    it scored 0: the verifier ran out of time, math-verify read something else); timed_out: the former."""

    score: float
    answer: str | None
    reason: str | None = None
    timed_out: bool = False


def boxed_contents(text: str) -> list[str]:
    """Contents of every balanced \\boxed{...} in text, in order, stripped."""
    out, start = [], text.find(_BOXED)
    while start != -1:
        depth, i = 1, start + len(_BOXED)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            out.append(text[start + len(_BOXED) : i - 1].strip())
        start = text.find(_BOXED, start + len(_BOXED))
    return out


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


def _first_real(candidates: list[str]) -> str | None:
    for c in candidates:
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


def is_placeholder(candidate: str) -> bool:
    """Whether a candidate is only an instruction's placeholder ('...', '\\boxed{...}', '<answer>')."""
    s = candidate.strip().strip("*$").strip().rstrip(".").strip()
    boxes = boxed_contents(s)
    if len(boxes) == 1 and s.startswith(_BOXED) and s.endswith("}"):
        return is_placeholder(boxes[0])
    return s.casefold() in _PLACEHOLDERS


def _clean(candidate: str) -> str:
    return candidate.strip().strip("*").strip()


def _last_real(candidates: list[str]) -> str | None:
    for c in reversed(candidates):
        if not is_placeholder(c):
            return _clean(c)
    return None


def _strip_thinking(text: str) -> tuple[str | None, str | None]:
    """The text after the thinking, or (None, why) when the thinking never ended."""
    opened, closed = text.rfind(_THINK_OPEN), text.rfind(_THINK_CLOSE)
    if opened > closed:
        return None, "the thinking (<think>) was never closed by </think>; no final answer was written"
    return (text[closed + len(_THINK_CLOSE) :] if closed != -1 else text), None


def _last_resort(text: str, verifier: Verifier | None) -> str | None:
    kind = "numeric" if verifier is None else verifier.type
    if kind == "math":
        spans = [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(text)]
        real = _last_real(spans)
        if real is not None:
            return real
    if kind in ("numeric", "math"):
        numbers = written_numbers(text)
        return numbers[-1] if numbers else None
    if kind == "choice":
        letters = _CHOICE_PAREN.findall(text)
        return f"({letters[-1]})" if letters else None
    return None


def read_answer(
    text: str, chat: bool = False, verifier: Verifier | None = None, rule: str | None = None
) -> Reading:
    """The final answer of scored text by the rules of the module docstring (rule: protocol.answer, None
    for the built-in reading), or why there is none."""
    body, reason = _strip_thinking(text)
    if body is None:
        return Reading(None, reason)
    body = _TOOL_MARKUP.sub("", body)
    if rule is None and not chat:
        rule = "first_answer"
    if rule is not None:
        if rule not in RULES:
            raise VerifierError(f"protocol.answer: {rule!r} is not a rule; known: {', '.join(RULES)}")
        read, missing = RULES[rule]
        answer = read(body)
        return Reading(answer) if answer is not None else Reading(None, missing)
    for found in (
        boxed_contents(body),
        _HASHES.findall(body),
        _ANSWER_IS.findall(body),
        _ANSWER_LINE.findall(body),
    ):
        answer = _last_real(found)
        if answer is not None:
            return Reading(answer)
    answer = _last_resort(body, verifier)
    if answer is not None:
        return Reading(answer)
    return Reading(None, "no \\boxed{}, '####', 'the answer is' or 'Answer:' with an answer, and no fallback")


def extract_answer(
    text: str, chat: bool = False, verifier: Verifier | None = None, rule: str | None = None
) -> str | None:
    """The final answer of scored text (read_answer without its reason)."""
    return read_answer(text, chat, verifier, rule).answer


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


_LATEX_WORDS = re.compile(r"\\[A-Za-z]+(?:\{[^{}]*\})?")
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


def _math_input(answer: str) -> str:
    """The answer as math-verify should read it: LaTeX math in `$...$`, prose ('36 pencils') as text."""
    if _UNESCAPED_DOLLAR.search(answer) or "\\(" in answer or "\\[" in answer:
        return answer
    if re.search(r"[A-Za-z]{2,}", _LATEX_WORDS.sub(" ", answer)):
        return answer
    return f"${answer}$"


class _NoTimerNote(logging.Filter):
    """Drops math-verify's note that its own timeout is off: the scorer's time limit replaces it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


@functools.cache
def _math_verify() -> tuple[Any, Any]:
    from math_verify import parse, verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_NoTimerNote())
    # Their own timers off (None): their SIGALRM would cancel the scorer's time limit (scoring.timelimit).
    return (
        functools.partial(parse, parsing_timeout=None),
        functools.partial(verify, timeout_seconds=None),
    )


@functools.lru_cache(maxsize=4096)
def _math_reference(reference: str) -> tuple[Any, ...]:
    parse, _ = _math_verify()
    parsed = parse(_math_input(reference))
    # Without a parse, math-verify keeps the raw string, and every sample would be compared as text.
    if all(isinstance(x, str) for x in parsed):
        raise VerifierError(
            f"answer: math-verify cannot read the reference {reference!r}; write it as LaTeX (e.g. "
            "\\frac{1}{2}) or use the exact verifier"
        )
    return tuple(parsed)


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else f"{text[: n // 2]}...{text[-n // 2 :]} ({len(text)} characters)"


# Verdicts of math_reading by (answer, reference): k samples that end in the same answer are judged once.
_MATH_VERDICTS: dict[tuple[str, str], tuple[bool, str | None]] = {}
# The time limits (answer, reference) ran out of: a sample that repeats the answer is not judged again.
_MATH_TIMEOUTS: dict[tuple[str, str], float] = {}


def math_reading(answer: str, reference: str) -> tuple[bool, str | None]:
    """Whether math-verify finds the answer equal to the reference, and when not what it read instead."""
    key = (answer, reference)
    if key not in _MATH_VERDICTS:
        parse, verify = _math_verify()
        gold, got = list(_math_reference(reference)), parse(_math_input(answer))
        if verify(gold, got):
            verdict: tuple[bool, str | None] = (True, None)
        elif not any(not isinstance(x, str) for x in got):
            verdict = (False, f"math-verify could not read the answer as math ({_clip(answer)})")
        else:
            read = next(x for x in got if not isinstance(x, str))
            verdict = (False, f"math-verify read the answer as {_clip(str(read))}, not the reference")
        if len(_MATH_VERDICTS) >= 65536:
            _MATH_VERDICTS.clear()
        _MATH_VERDICTS[key] = verdict
    return _MATH_VERDICTS[key]


def math_equal(answer: str, reference: str) -> bool:
    """Whether math-verify finds the answer equal to the reference (both read as LaTeX or text)."""
    return math_reading(answer, reference)[0]


_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}")
_CHOICE_START = re.compile(r"^\(?([A-E])\)?(?=[\s.,:;)]|$)")


def choice_letter(answer: str) -> str | None:
    """The option letter an answer names ('(B)', 'B', 'B. 42', '\\text{(B)}', 'option (C)'), or None."""
    s = _LATEX_TEXT.sub(r"\1", answer).replace("$", "").replace("*", "").strip()
    m = _CHOICE_START.match(s)
    if m:
        return m.group(1)
    letters = _CHOICE_PAREN.findall(s)
    return letters[-1] if letters else None


@functools.cache
def user_function(ref: str) -> Callable[..., Any]:
    """The user's verifier function named `module:function`, imported."""
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:
        raise VerifierError(
            f"verifier.function: cannot import module {module_name!r} of {ref!r} ({e}); put it on "
            "PYTHONPATH or fix the name"
        ) from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise VerifierError(f"verifier.function: {ref!r}: {module_name} has no {attr!r}; fix the name")
        obj = getattr(obj, part)
    if not callable(obj):
        raise VerifierError(f"verifier.function: {ref!r} is not a function; name a function")
    return obj


def _user_verdict(ref: str, answer: str, reference: str | float | int) -> bool:
    try:
        got = user_function(ref)(answer, reference)
    except VerifierError:
        raise
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise VerifierError(
            f"verifier {ref!r} raised {type(e).__name__}: {first} on the answer {_clip(answer)!r}; fix the "
            "function"
        ) from e
    except SystemExit as e:
        raise VerifierError(
            f"verifier {ref!r} called sys.exit({e.code!r}) on the answer {_clip(answer)!r}; a verifier must "
            "return True or False, never exit"
        ) from None
    except KeyboardInterrupt:
        raise VerifierError(
            f"verifier {ref!r} was interrupted (KeyboardInterrupt) on the answer {_clip(answer)!r}; scoring "
            "stopped, nothing was written"
        ) from None
    if not isinstance(got, bool):
        raise VerifierError(f"verifier {ref!r} returned {got!r} for {answer!r}; it must return True or False")
    return got


def describe(verifier: Verifier) -> tuple[str, str]:
    """What implements a verifier and its version ('math-verify', '0.9.0'), as the EvalLog records them."""
    if verifier.type == "math":
        try:
            return "math-verify", importlib.metadata.version("math-verify")
        except importlib.metadata.PackageNotFoundError:
            raise VerifierError(
                "verifier: math needs the math-verify package; install it with "
                "pip install 'math-verify[antlr4_9_3]' (or bash scripts/setup.sh)"
            ) from None
    if verifier.type == "python":
        user_function(verifier.function)
        module = importlib.import_module(verifier.function.partition(":")[0])
        version = getattr(module, "__version__", None)
        if isinstance(version, str):
            return verifier.function, version
        path = getattr(module, "__file__", None)
        if path is None:
            raise VerifierError(
                f"verifier.function: {verifier.function!r}: its module has neither __version__ nor a file; "
                "give it a __version__"
            )
        return verifier.function, f"sha256:{file_sha256(path)}"
    return BUILTIN_NAME, BUILTIN_VERSION


def check(item: SuiteItem, answer: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Whether an extracted answer is right for item under its verifier (AnswerTimeout past the limit)."""
    return judge(item, answer, timeout_s)[0]


def judge(
    item: SuiteItem, answer: str | None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[bool, str | None]:
    """(right, why not when the verifier can say) of an answer; `math` and `python` run under the time limit
    (the verifier's timeout_s, else timeout_s) and raise AnswerTimeout past it."""
    if answer is None:
        return False, None
    v = item.verifier
    if isinstance(v, NumericVerifier):
        got = parse_number(answer)
        if got is None:
            return False, None
        truth = float(item.answer)
        return abs(got - truth) <= max(v.rel_tol * abs(truth), v.abs_tol), None
    if v.type == "math":
        limit, key = v.timeout_s or timeout_s, (answer, str(item.answer))
        if _MATH_TIMEOUTS.get(key, 0.0) >= limit:
            raise AnswerTimeout(limit)  # the same answer ran out of this much time before: once is enough
        try:
            with time_limit(limit):
                return math_reading(*key)
        except VerifierError as e:
            raise VerifierError(f"item {item.item_id!r}: {e}") from e
        except AnswerTimeout:
            _MATH_TIMEOUTS[key] = limit
            raise
    if v.type == "choice":
        return choice_letter(answer) == str(item.answer), None
    if v.type == "python":
        try:
            with time_limit(v.timeout_s or timeout_s):
                return _user_verdict(v.function, answer, item.answer), None
        except VerifierError as e:
            raise VerifierError(f"item {item.item_id!r}: {e}") from e
    return _normalise(answer) == _normalise(str(item.answer)), None


def verifier_name(item: SuiteItem) -> str:
    """How a reason names an item's verifier: 'math-verify', 'python verifier mod:fn', 'numeric'."""
    v = item.verifier
    if v.type == "math":
        return "math-verify"
    if v.type == "python":
        return f"python verifier {v.function}"
    return v.type


def score(
    item: SuiteItem,
    text: str,
    chat: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rule: str | None = None,
) -> Verdict:
    """Read the final answer of a sample's scored text (by rule: protocol.answer) and judge it against item
    (0 when out of time)."""
    reading = read_answer(text, chat=chat, verifier=item.verifier, rule=rule)
    try:
        right, why = judge(item, reading.answer, timeout_s)
    except AnswerTimeout as e:
        own = getattr(item.verifier, "timeout_s", None)
        limit = "the verifier's timeout_s" if own else "conf/score.yaml verifier_timeout_s"
        return Verdict(
            0.0,
            reading.answer,
            f"{verifier_name(item)} {e} on this answer (the time limit: {limit}); scored 0",
            timed_out=True,
        )
    return Verdict(1.0 if right else 0.0, reading.answer, reading.reason or why)


def scored_text(prompt: str, generated: str) -> str:
    """The text the oracle reads: the generation, prefixed by `Answer:` when the prompt ended with it."""
    return (ANSWER_TAG if prompt.endswith(ANSWER_TAG) else "") + generated


def reference_answer(solution: str) -> str | None:
    """The answer a worked reference solution marks: its last \\boxed{} (MATH), else its last `####` line
    (GSM8K); None when it marks none (the suite freezer reads answers of solutions with this)."""
    boxed = last_boxed(solution)
    if boxed:
        return boxed
    marked = [m.strip() for m in _HASHES.findall(solution) if m.strip()]
    return marked[-1] if marked else None
