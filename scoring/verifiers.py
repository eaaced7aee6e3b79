"""The suite's verifiers (the project's one oracle): judge the answer a reader read from a text.

Reading the answer is scoring.reading (the strict rules a prompt names, the parity reader, the lenient
reader); score() reads with the report's reader and judges, score_both() also with the lenient one.

Judging (judge): `numeric` reads the first number of the answer (signs, decimals, exponents, thousands commas;
units after it are ignored; where the parity reader read the answer with math-verify, the number it read:
`1000,99` is 1000.99, `1 000` is 1000) and applies the tolerances; `exact` compares texts after
normalising them (LaTeX `\\text{}` and math delimiters removed, whitespace collapsed, case folded, a final
period dropped); `math` asks math-verify whether answer and reference are equal (LaTeX, fractions, decimals,
intervals, sets; units stripped as math-verify does; scoring.mathverify); `choice` reads a letter A-E ('(B)',
'B.', '\\boxed{B}'); `python` calls the user's `module:function` with the answer and the reference.

Time (scoring.timelimit): `math` and `python` judge each answer under a time limit (the verifier's
`timeout_s`, else the scorer's, 30 s by default); an answer that runs out of it scores 0 and its reason
says so. A verdict is reused for the same answer and reference. A `python` verifier that exits
(`sys.exit`) or raises KeyboardInterrupt is a VerifierError naming it, not the end of the scorer.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from contract.digest import file_sha256
from contract.suite import NumericVerifier, SuiteItem, Verifier
from contract.textformat import ANSWER_TAG
from scoring import conclusions, expressions, mathverify
from scoring.numbers import parse_number
from scoring.reading import Reading, UnknownRule, last_boxed, marked_lines, read_answer, read_lenient
from scoring.reference_forms import named_subject
from scoring.timelimit import DEFAULT_TIMEOUT_S, AnswerTimeout, time_limit, time_until

# Bump whenever a built-in verifier or the answer reading can give another verdict; the EvalLog records it
# beside each verifier the suite uses.
BUILTIN_NAME = "reasoning-delta"
BUILTIN_VERSION = "4.1"
# The longest text the readers read (characters; about 125,000 tokens of prose): math-verify and sympy
# hold several hundred bytes per character they parse (a 1,000,000-digit text peaked at 609 MB, 5 MB at
# 2.8 GB), and a time limit does not bound memory.
MAX_TEXT_CHARS = 500_000


class VerifierError(ValueError):
    """A verifier that cannot judge an item (an unparsable reference, a user function that fails)."""


@dataclass(frozen=True)
class Verdict:
    """The score of one sample (0.0 or 1.0), the answer it was judged on (None: none) and why none (or why
    it scored 0: the verifier ran out of time, math-verify read something else); timed_out: the former;
    read_by: the reader's rule that read the answer (scoring.reading.Reading.how)."""

    score: float
    answer: str | None
    reason: str | None = None
    timed_out: bool = False
    read_by: str | None = None
    # The reader could not settle the sample: no answer read, or an `exact` reference whose words the
    # answer does not match (the reader cannot tell a wrong answer from one written in other words).
    undecided: bool = False


def verdict_word(verdict: Verdict) -> str:
    """The sample's verdict as the EvalLog records it: 'right', 'wrong' or 'undecided'."""
    if verdict.score == 1.0:
        return "right"
    return "undecided" if verdict.undecided else "wrong"


_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\{([^{}]*)\}")
_MATH_DELIMITERS = re.compile(r"\$|\\\(|\\\)|\\\[|\\\]")


def normalise_text(s: str) -> str:
    """A text answer as `exact` compares it: LaTeX text commands and math delimiters removed, outer braces
    and whitespace collapsed, case folded, a final period dropped ('$\\text{Odd}$.' -> 'odd')."""
    s = _MATH_DELIMITERS.sub(" ", _LATEX_TEXT.sub(r"\1", s))
    s = " ".join(s.split()).strip()
    while s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    return s.casefold().rstrip(".").strip()


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else f"{text[: n // 2]}...{text[-n // 2 :]} ({len(text)} characters)"


# Verdicts of math_reading by (answer, reference): k samples that end in the same answer are judged once.
_MATH_VERDICTS: dict[tuple[str, str, bool, int | None], tuple[bool, str | None]] = {}
# The time limits (answer, reference) ran out of: a sample that repeats the answer is not judged again.
_MATH_TIMEOUTS: dict[tuple[str, str], float] = {}


def math_reading(
    answer: str, reference: str, parsed: tuple[Any, ...] | None = None, decimals: int | None = None
) -> tuple[bool, str | None]:
    """Whether math-verify finds the answer equal to the reference, and when not what it read instead.

    parsed: math-verify's parse of the answer where the parity reader read it with math-verify (it is what
    was read, in context); else the answer is parsed alone. decimals: the verifier's `decimals`.
    """
    key = (answer, reference, parsed is not None, decimals)
    if key not in _MATH_VERDICTS:
        try:
            gold = mathverify.parse_reference(reference)
        except mathverify.UnreadableReference as e:
            raise VerifierError(f"answer: {e}") from None
        got = parsed if parsed is not None else mathverify.parse_answer(answer)
        if mathverify.equal(gold, got, decimals) or expressions.plain_equal(
            answer, reference, gold, got, decimals
        ):
            verdict: tuple[bool, str | None] = (True, None)
        elif not mathverify.has_math(got):
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


_CHOICE_PAREN = re.compile(r"\(([A-E])\)")
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
    item: SuiteItem,
    answer: str | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    parsed: tuple[Any, ...] | None = None,
    deadline: float | None = None,
) -> tuple[bool, str | None]:
    """(right, why not when the verifier can say) of an answer; `math` and `python` run under the time limit
    (the verifier's timeout_s, else timeout_s; no later than deadline, where the sample's reading already
    spent part of it) and raise AnswerTimeout past it. parsed: math-verify's parse of the answer in its
    text, where the parity reader made one (math and numeric verifiers judge it)."""
    right, why = settle(item, answer, timeout_s, parsed, deadline)
    return bool(right), why


def settle(
    item: SuiteItem,
    answer: str | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    parsed: tuple[Any, ...] | None = None,
    deadline: float | None = None,
) -> tuple[bool | None, str | None]:
    """judge's verdict with the third one: True right, False wrong, None undecided (no answer, or an exact
    fallback's words that tell neither)."""
    if answer is None:
        return None, None
    v = item.verifier
    if isinstance(v, NumericVerifier):
        got = mathverify.number_of(parsed) if parsed is not None else None
        if got is None and parsed is not None and mathverify.has_variables(parsed):
            return False, "the answer read is an expression with variables, not a number"
        if got is None:
            got = parse_number(answer)
        if got is None:
            return False, None
        truth = float(item.answer)
        return abs(got - truth) <= max(v.rel_tol * abs(truth), v.abs_tol), None
    if v.type == "math":
        return _math_forms(item, answer, timeout_s, parsed, deadline)
    if v.type == "choice":
        return choice_letter(answer) == str(item.answer), None
    if v.type == "python":
        try:
            with _limited(v.timeout_s or timeout_s, deadline):
                return _user_verdict(v.function, answer, item.answer), None
        except VerifierError as e:
            raise VerifierError(f"item {item.item_id!r}: {e}") from e
    forms = item.alternatives or [str(item.answer)]
    if any(normalise_text(answer) == normalise_text(form) for form in forms):
        return True, None
    if not (v.type == "exact" and v.fallback):  # an exact verifier a suite chose: other words are wrong
        return False, None
    return _text_forms(item, answer, forms, timeout_s, deadline), None


def _math_verdict(
    item: SuiteItem, answer: str, form: str, timeout_s: float, parsed: Any, deadline: float | None
) -> tuple[bool, str | None]:
    """math_reading of one reference form under the item's time limit (no later than deadline)."""
    limit, key = getattr(item.verifier, "timeout_s", None) or timeout_s, (answer, form)
    allowed = limit if deadline is None else min(limit, deadline - time.monotonic())
    if _MATH_TIMEOUTS.get(key, 0.0) >= allowed:
        raise AnswerTimeout(limit)  # the same answer ran out of this much time before: once is enough
    try:
        with _limited(limit, deadline):
            return math_reading(*key, parsed, getattr(item.verifier, "decimals", None))
    except VerifierError as e:
        raise VerifierError(f"item {item.item_id!r}: {e}") from e
    except AnswerTimeout:
        _MATH_TIMEOUTS[key] = allowed
        raise


def _math_forms(
    item: SuiteItem, answer: str, timeout_s: float, parsed: Any, deadline: float | None
) -> tuple[bool | None, str | None]:
    """A math item: right when any reference form is (a form in words, a gloss, by the words it states)."""
    forms = item.alternatives or [str(item.answer)]
    first_why: str | None = None
    for n, form in enumerate(forms):
        if n > 0 and not expressions.is_expression(expressions.joined_values(form)):
            if conclusions.text_verdict(form, answer, item.question):
                return True, None
            continue
        right, why = _math_verdict(item, answer, form, timeout_s, parsed, deadline)
        if right:
            return True, None
        first_why = first_why or why
    return False, first_why


def _text_forms(
    item: SuiteItem, answer: str, forms: list[str], timeout_s: float, deadline: float | None
) -> bool | None:
    """An exact fallback's forms against an answer in words: a form that is an expression compared as math
    with the expression the answer states; a stance or a text form by what the conclusion states."""
    stated = answer if expressions.is_expression(answer) else expressions.stated_expression(answer)
    verdicts: list[bool | None] = []
    for form in forms:
        if stated is not None and expressions.is_expression(expressions.joined_values(form)):
            with contextlib.suppress(VerifierError):
                verdicts.append(_math_verdict(item, stated, form, timeout_s, None, deadline)[0])
                continue
        verdicts.append(conclusions.text_verdict(form, answer, item.question))
    if any(verdicts):
        return True
    return False if verdicts and all(x is False for x in verdicts) else None


def verifier_name(item: SuiteItem) -> str:
    """How a reason names an item's verifier: 'math-verify', 'python verifier mod:fn', 'numeric'."""
    v = item.verifier
    if v.type == "math":
        return "math-verify"
    if v.type == "python":
        return f"python verifier {v.function}"
    return v.type


def _limited(seconds: float, deadline: float | None) -> AbstractContextManager[None]:
    """The time limit of one step: its own seconds, or what is left of a limit shared up to deadline."""
    return time_limit(seconds) if deadline is None else time_until(deadline, seconds)


def verdict_of(
    item: SuiteItem, reading: Reading, timeout_s: float = DEFAULT_TIMEOUT_S, deadline: float | None = None,
    text: str | None = None,
) -> Verdict:  # fmt: skip
    """The verdict on one reading of a sample (0 when the verifier runs out of time, or past deadline);
    text: the sample's, whose conclusion must name what the reference's value is of, where it names it."""
    own = getattr(item.verifier, "timeout_s", None)
    limit = "the verifier's timeout_s" if own else "conf/score.yaml verifier_timeout_s"
    if reading.timed_out:
        why = f"{verifier_name(item)} {reading.reason} (the time limit: {limit}); scored 0"
        return Verdict(0.0, None, why, timed_out=True, undecided=True)
    try:
        settled, why = settle(item, reading.answer, timeout_s, reading.parsed, deadline)
    except AnswerTimeout as e:
        why = f"{verifier_name(item)} {e} on this answer (the time limit: {limit}); scored 0"
        return Verdict(0.0, reading.answer, why, timed_out=True, undecided=True)
    subject = named_subject(str(item.answer))
    if settled and text is not None and subject and not conclusions.subject_stated(subject, text):
        settled, why = None, f"the value read is not stated as the {subject}, which the reference names"
    return Verdict(
        1.0 if settled else 0.0,
        reading.answer,
        reading.reason or why,
        read_by=reading.how,
        undecided=settled is None,
    )


def score(
    item: SuiteItem,
    text: str,
    chat: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rule: str | None = None,
) -> Verdict:
    """Read the final answer of a sample's scored text with the report's reader (rule: protocol.answer)
    and judge it against item (0 when out of time)."""
    return score_both(item, text, chat, timeout_s, rule)[0]


def score_both(
    item: SuiteItem,
    text: str,
    chat: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rule: str | None = None,
) -> tuple[Verdict, Verdict]:
    """The verdicts of the report's reader and of the lenient reader (scoring.reading) on one text; the
    second is the first wherever the report's reader read an answer. Both readers and both judgements
    share one time limit (the verifier's): a sample never takes more than it. A text longer than
    MAX_TEXT_CHARS is not read (math-verify's memory grows with what it parses)."""
    if len(text) > MAX_TEXT_CHARS:
        why = (
            f"the text is {len(text):,} characters, over the reader's limit of {MAX_TEXT_CHARS:,}: not read; "
            "scored 0"
        )
        return (no := Verdict(0.0, None, why, undecided=True)), no
    limit = getattr(item.verifier, "timeout_s", None) or timeout_s
    deadline = time.monotonic() + limit
    try:
        strict = _read_in_time(
            lambda: read_answer(text, chat=chat, verifier=item.verifier, rule=rule), limit, deadline
        )
    except UnknownRule as e:
        raise VerifierError(str(e)) from None
    first = verdict_of(item, strict, timeout_s, deadline, text)
    lenient = _read_in_time(lambda: read_lenient(text, strict, item.verifier), limit, deadline)
    return first, (first if lenient is strict else verdict_of(item, lenient, timeout_s, deadline, text))


def _read_in_time(read: Callable[[], Reading], limit: float, deadline: float) -> Reading:
    """A reading under what is left of the sample's time limit: math-verify reads whole responses, and
    adversarial LaTeX can keep its parser busy; a reading out of time reads no answer, and its reason says
    so."""
    try:
        with time_until(deadline, limit):
            return read()
    except AnswerTimeout as e:
        return Reading(None, f"{e} reading the answer", timed_out=True)


def scored_text(prompt: str, generated: str) -> str:
    """The text the oracle reads: the generation, prefixed by `Answer:` when the prompt ended with it."""
    return (ANSWER_TAG if prompt.endswith(ANSWER_TAG) else "") + generated


def reference_answer(solution: str) -> str | None:
    """The answer a worked reference solution marks: its last \\boxed{} (MATH), else its last `####` line
    (GSM8K); None when it marks none (the suite freezer reads answers of solutions with this)."""
    boxed = last_boxed(solution)
    if boxed:
        return boxed
    marked = [m.strip() for m in marked_lines(solution) if m.strip()]
    return marked[-1] if marked else None
