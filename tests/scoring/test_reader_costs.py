"""What reading one answer may cost: one time limit per sample, time linear in the text, a length cap."""

from __future__ import annotations

import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from contract.suite import SuiteItem
from scoring.reading import box_spans
from scoring.verifiers import MAX_TEXT_CHARS, score_both
from tests.helpers.scoring import SLOW_LATEX

MATH = SuiteItem.model_validate(
    {"item_id": "m", "family": "f", "question": "q?", "answer": "\\frac{1}{2}", "verifier": {"type": "math"}}
)


def quadratic_box_spans(text: str) -> list[tuple[int, int]]:
    """The reference: from each box, count braces to its closing one."""
    out, start = [], text.find("\\boxed{")
    while start != -1:
        depth, i = 1, start + len("\\boxed{")
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            out.append((start, i))
        start = text.find("\\boxed{", start + len("\\boxed{"))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["\\boxed{", "{", "}", "x", " ", "\\boxed", "1"]), max_size=40))
def test_box_spans_finds_the_boxes_the_per_box_scan_finds(parts: list[str]) -> None:
    text = "".join(parts)
    assert box_spans(text) == quadratic_box_spans(text)


def test_box_spans_of_many_unclosed_boxes_is_linear() -> None:
    text = "\\boxed{1} " + "\\boxed{" * 10_000 + " \\boxed{2}"
    assert box_spans(text) == [(0, 9), (len(text) - 9, len(text))]
    random.seed(0)
    nested = "".join(random.choice(["\\boxed{", "{", "}", "a"]) for _ in range(2_000))
    assert box_spans(nested) == quadratic_box_spans(nested)


def test_ten_thousand_unclosed_boxes_are_read_within_the_limit() -> None:
    # The per-box scan took over 30 s on this text (each reader then ran out of its limit).
    strict, lenient = score_both(MATH, "\\boxed{" * 10_000, chat=True, timeout_s=10)
    assert not strict.timed_out and not lenient.timed_out, strict.reason


def test_the_strict_and_lenient_readers_share_one_time_limit_per_sample() -> None:
    t0 = time.monotonic()
    strict, lenient = score_both(MATH, f"\\boxed{{{SLOW_LATEX}}}", chat=True, timeout_s=1.0)
    took = time.monotonic() - t0
    assert strict.timed_out and lenient.timed_out
    assert "took longer than 1 s" in (lenient.reason or ""), lenient.reason
    # Each reader had the whole second before: two seconds and more.
    assert took < 1.6, took


def test_a_text_over_the_length_cap_is_not_parsed_and_says_why() -> None:
    t0 = time.monotonic()
    strict, lenient = score_both(MATH, "1" * (MAX_TEXT_CHARS + 1), chat=True)
    assert time.monotonic() - t0 < 0.5
    assert strict == lenient and strict.score == 0.0 and strict.answer is None
    assert strict.reason == (
        f"the text is {MAX_TEXT_CHARS + 1:,} characters, over the reader's limit of {MAX_TEXT_CHARS:,}: "
        "not read; scored 0"
    )
    at_cap = score_both(MATH, "\\boxed{1/2} " + "x" * (MAX_TEXT_CHARS - 12), chat=True)[0]
    assert at_cap.score == 1.0, at_cap.reason
