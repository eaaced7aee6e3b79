"""The oracle: answer extraction (Answer: lines, \\boxed{}), numeric tolerance and exact matching."""

from __future__ import annotations

import json

import pytest

from contract.suite import SuiteError, SuiteItem, load_suite
from pipeline.prompts import build_prompt
from scoring.verifiers import extract_answer, parse_number, score, scored_text


def _num(answer: float, rel: float = 0.0, abs_: float = 0.0) -> SuiteItem:
    return SuiteItem(
        item_id="n",
        family="f",
        question="q",
        answer=answer,
        verifier={"type": "numeric", "rel_tol": rel, "abs_tol": abs_},
    )


def _exact(answer: str) -> SuiteItem:
    return SuiteItem(item_id="e", family="f", question="q", answer=answer, verifier={"type": "exact"})


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Answer: 92.4 min\n", 92.4),
        ("Answer: 1,234.5 km", 1234.5),
        ("Answer: -7\n", -7.0),
        ("Answer: \u22123.5 km/s", -3.5),
        ("Answer: 6.1e3 m", 6100.0),
        ("Answer: about 42", 42.0),
        ("Answer: .5", 0.5),
        ("Answer: 3, 4", 3.0),
    ],
)
def test_numeric_answers_are_parsed_from_the_answer_line(text: str, want: float) -> None:
    assert parse_number(extract_answer(text)) == pytest.approx(want)


def test_the_last_answer_line_counts() -> None:
    text = "Answer: 5\nQuestion: what else?\nAnswer: 7\n"
    assert extract_answer(text) == "7"
    assert score(_num(7), text).score == 1.0
    assert score(_num(5), text).score == 0.0


def test_chat_models_use_the_last_boxed_answer_with_nested_braces() -> None:
    text = "so \\boxed{1} is wrong, the answer is \\boxed{\\frac{3}{4} = 0.75}"
    assert extract_answer(text, chat=True) == "\\frac{3}{4} = 0.75"
    assert extract_answer("no box here\nAnswer: 9", chat=True) == "9"
    assert extract_answer("\\boxed{12}", chat=False) is None


def test_numeric_tolerances_are_relative_to_the_reference_or_absolute() -> None:
    assert score(_num(100.0, rel=0.01), "Answer: 100.9").score == 1.0
    assert score(_num(100.0, rel=0.01), "Answer: 101.1").score == 0.0
    assert score(_num(0.0, abs_=0.05), "Answer: 0.04").score == 1.0
    assert score(_num(0.0, abs_=0.05), "Answer: -0.06").score == 0.0
    assert score(_num(68), "Answer: 68\n").score == 1.0
    assert score(_num(68), "Answer: 68.01\n").score == 0.0


def test_no_answer_or_no_number_scores_zero_and_records_what_was_seen() -> None:
    v = score(_num(1.0, abs_=10), "I think it is 1")
    assert (v.score, v.answer) == (0.0, None)
    v = score(_num(1.0, abs_=10), "Answer: unknown")
    assert (v.score, v.answer) == (0.0, "unknown")


def test_exact_answers_ignore_case_and_spacing() -> None:
    assert score(_exact("SDA-17"), "Answer:  sda-17.\n").score == 1.0
    assert score(_exact("Low  Earth orbit"), "Answer: low earth ORBIT").score == 1.0
    assert score(_exact("SDA-17"), "Answer: SDA-71").score == 0.0


def test_scored_text_prefixes_answer_only_for_prompts_that_end_with_it() -> None:
    plain = build_prompt("What is 2 + 2?")
    assert scored_text(plain, " 4\n") == "Answer: 4\n"
    tools = build_prompt("What is 2 + 2?", tools=["orbital_period"])
    assert scored_text(tools, "Answer: 4\n") == "Answer: 4\n"


def test_suite_loading_names_file_line_and_field(tmp_path) -> None:
    good = {"item_id": "a", "family": "f", "question": "q?", "answer": 1.5, "verifier": {"type": "numeric"}}
    p = tmp_path / "suite.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps({**good, "item_id": "b", "answer": "x"}) + "\n")
    with pytest.raises(SuiteError, match=r"suite.jsonl:2: item 'b': answer: a numeric verifier needs a fin"):
        load_suite(p)
    p.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(SuiteError, match=r"suite.jsonl:2: item_id: 'a' already used on line 1"):
        load_suite(p)
    p.write_text(json.dumps({**good, "verifier": {"type": "fuzzy"}}) + "\n")
    with pytest.raises(SuiteError, match=r"suite.jsonl:1: verifier"):
        load_suite(p)
    p.write_text(json.dumps(good) + "\n\n")
    assert [it.item_id for it in load_suite(p)] == ["a"]


@pytest.mark.parametrize("answer", ["NaN", "inf", "-Infinity", float("nan")])
def test_a_numeric_answer_no_sample_can_match_is_refused(tmp_path, answer) -> None:
    """float() reads 'NaN' and 'inf'; an item with such an answer could never pass."""
    good = {"item_id": "a", "family": "f", "question": "q?", "answer": 1.5, "verifier": {"type": "numeric"}}
    p = tmp_path / "suite.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps({**good, "item_id": "b", "answer": answer}) + "\n")
    with pytest.raises(SuiteError, match=r"suite.jsonl:2: item 'b': answer: a numeric verifier needs a fin"):
        load_suite(p)


def test_a_boolean_answer_is_refused(tmp_path) -> None:
    """JSON true would be read as the answer 1."""
    item = {"item_id": "a", "family": "f", "question": "q?", "answer": True, "verifier": {"type": "exact"}}
    p = tmp_path / "suite.jsonl"
    p.write_text(json.dumps(item) + "\n")
    with pytest.raises(SuiteError, match=r"suite.jsonl:1: answer: True is not an answer"):
        load_suite(p)
