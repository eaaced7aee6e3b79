"""The one place that calls math-verify: the readings of a response, an answer and a reference.

Its reading of a whole response, of one answer, of a reference, and its equality of two readings.

The extraction targets are those of Math-Verify's own test harness and of lighteval's math metrics:
LaTeX with `\\boxed{}` matched first (boxed_match_priority 0), then plain expressions and numbers. Within
them math-verify's priorities decide: a box or "The final answer is X. I hope it is correct" first, then
"final answer ... is X", then "answer: X" and "answer ... X", then any LaTeX span or number; among matches of
one priority the rightmost wins. math-verify's own timers are off (its SIGALRM would cancel the scorer's
time limit, scoring.timelimit) and so is its note saying so (the scorer's limit replaces it).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import Any

_LATEX_WORDS = re.compile(r"\\[A-Za-z]+(?:\{[^{}]*\})?")
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_PLAIN_NUMBER = re.compile(r"[-+]?\d[\d ,]*(?:\.\d+)?%?|[-+]?\.\d+")


class UnreadableReference(ValueError):
    """A reference answer math-verify cannot read as math (or reads only a part of)."""


class _NoTimerNote(logging.Filter):
    """Drops math-verify's note that its own timeout is off: the scorer's time limit replaces it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


@dataclass(frozen=True)
class _Api:
    parse: Any
    verify: Any
    targets: tuple[Any, ...]
    anchored: tuple[Any, ...]


@functools.cache
def _api() -> _Api:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_NoTimerNote())
    return _Api(
        parse=functools.partial(parse, parsing_timeout=None),
        verify=functools.partial(verify, timeout_seconds=None),
        targets=(LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()),
        anchored=(
            LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False),
            ExprExtractionConfig(try_extract_without_anchor=False),
        ),
    )


def has_math(parsed: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a parse holds a mathematical object (not only math-verify's fallback string)."""
    return any(not isinstance(x, str) for x in parsed)


def read_response(text: str, anchored_only: bool = False) -> tuple[tuple[Any, ...], str] | None:
    """math-verify's reading of a whole response: (its parse, the text it read), or None when it reads
    nothing. anchored_only: only a box, "final answer", "answer" (no bare LaTeX span or number)."""
    api = _api()
    parsed = api.parse(text, api.anchored if anchored_only else api.targets)
    if not parsed:
        return None
    written = next((x for x in parsed if isinstance(x, str)), None)
    return tuple(parsed), (written if written is not None else str(parsed[0])).strip()


_FULL_STOP = re.compile(r"(?<![.\\])\.\s*$")


def math_input(answer: str) -> str:
    """The answer as math-verify should read it: LaTeX math in `$...$`, prose ('36 pencils') as text."""
    if _UNESCAPED_DOLLAR.search(answer) or "\\(" in answer or "\\[" in answer:
        return answer
    if re.search(r"[A-Za-z]{2,}", _LATEX_WORDS.sub(" ", answer)):
        return answer
    # A sentence's full stop is not math: inside `$...$` math-verify reads '1 + 1.' as 1 (the '1.' it
    # ends on), not as 1 + 1.
    return f"${_FULL_STOP.sub('', answer)}$"


def parse_answer(answer: str) -> tuple[Any, ...]:
    """math-verify's parse of one answer already read from a text (written as LaTeX or as prose)."""
    return tuple(_api().parse(math_input(answer)))


def parse_written(written: str) -> tuple[Any, ...]:
    """math-verify's parse of a stated answer: a plain number as math-verify reads numbers ('1,22' is 1.22,
    '1 000' is 1000; dollars around it would make '1,22' the pair (1, 22)), anything else as parse_answer."""
    if _PLAIN_NUMBER.fullmatch(written.strip()):
        return tuple(_api().parse(written))
    return parse_answer(written)


@functools.lru_cache(maxsize=4096)
def parse_reference(reference: str) -> tuple[Any, ...]:
    """math-verify's parse of a suite's reference answer; UnreadableReference when it reads no math.

    A reference is read as LaTeX math first (suites write `\\frac{1}{2}`, `3\\sqrt{2}`, `(1,2)` without
    dollars, and read bare they lose their tail: `3\\sqrt{2}` would be 3), then as a whole text, as
    math-verify's own tests read their golds (`x = \\frac{1}{2}, x = ...`).
    """
    parsed = parse_written(reference)
    if not has_math(parsed):
        parsed = tuple(_api().parse(reference))
    if has_math(parsed):
        return parsed
    raise UnreadableReference(
        f"math-verify cannot read the reference {reference!r}; write it as LaTeX (e.g. \\frac{{1}}{{2}}), "
        "or freeze with --fallback-verifier exact"
    )


def equal(reference: tuple[Any, ...], answer: tuple[Any, ...], decimals: int | None = None) -> bool:
    """Whether math-verify finds two parses equal (strict; numbers to `decimals` places, default 6)."""
    rounding = {} if decimals is None else {"float_rounding": decimals}
    return bool(_api().verify(list(reference), list(answer), **rounding))


def has_variables(parsed: tuple[Any, ...]) -> bool:
    """Whether the first mathematical object of a parse holds a free variable ('x^5', '1/(abc)')."""
    import sympy

    first = next((x for x in parsed if not isinstance(x, str)), None)
    return isinstance(first, sympy.Basic) and bool(first.free_symbols)


def number_of(parsed: tuple[Any, ...]) -> float | None:
    """The value of the first parsed object that is a real number (1000,99 -> 1000.99) or an equation
    stating one, else None."""
    import sympy

    for x in parsed:
        # A stated equation ('f(0) = 2', 'a_1964 = -1', a chain '... = 70 + 99 + 70 = 239') states its
        # right-hand side.
        if isinstance(x, sympy.And):
            x = next((a.rhs for a in x.args if isinstance(a, sympy.Eq) and a.rhs.is_number), x)
        if isinstance(x, sympy.Eq) and x.rhs.is_number:
            x = x.rhs
        if isinstance(x, sympy.Basic) and x.is_number and x.is_real:
            try:
                return float(x)
            except (TypeError, ValueError):
                return None
    return None
