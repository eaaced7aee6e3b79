"""The oracle: answer extraction (Answer: lines, \\boxed{}, chat fallbacks, placeholders, thinking) and the
verifiers (numeric tolerance, exact, math through math-verify, choice letters, a user's function)."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from contract.digest import file_sha256
from contract.evallog import load
from contract.suite import SuiteError, SuiteItem, load_suite
from pipeline.prompts import build_prompt
from scoring.numbers import parse_number
from scoring.reading import extract_answer
from scoring.verifiers import BUILTIN_VERSION, VerifierError, describe, score, scored_text
from tests.helpers.scoring import CHAT, chat_world, score_cli


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


def test_the_first_answer_line_counts_not_what_follows_it() -> None:
    # A plain model that goes on past its answer (a next question, another "Answer:") is scored by its answer.
    text = "Answer: 5\nQuestion: what else?\nAnswer: 7\n"
    assert extract_answer(text) == "5"
    assert score(_num(5), text).score == 1.0
    assert score(_num(7), text).score == 0.0


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


# --- Verifiers for real answer formats: math (math-verify), choice, exact, a user's function ---------------


def _item(answer: str | float | int, verifier: dict[str, Any], item_id: str = "i") -> SuiteItem:
    return SuiteItem(item_id=item_id, family="f", question="q", answer=answer, verifier=verifier)


def _math(answer: str | float | int) -> SuiteItem:
    return _item(answer, {"type": "math"})


@pytest.mark.parametrize(
    "sample", ["\\boxed{\\dfrac{1}{2}}", "\\boxed{0.5}", "\\boxed{\\frac12}", "$\\frac{1}{2}$"]
)
def test_math_verifier_reads_a_half_written_any_way(sample: str) -> None:
    """MATH-style answers once scored 0 against the reference \\frac{1}{2}."""
    assert score(_math("\\frac{1}{2}"), f"Simplify: so the result is {sample}", chat=True).score == 1.0


@pytest.mark.parametrize(
    ("reference", "sample", "right"),
    [
        # From math-verify's README: a set written as a union equals the set.
        ("{1,3} \\cup {2,4}", "The answer is $\\{1,2,3,4\\}$.", True),
        # From math-verify's tests/test_all.py (test_latex_notation, test_number_extraction,
        # test_simple_fraction_notation, test_sets_handling).
        ("1/3", "\\boxed{\\dfrac{1}{3}}", True),
        ("\\sqrt{3}", "\\boxed{\\sqrt3}", True),
        ("1/3", "The answer is $\\frac{1}{3} \\textbf{meters}$.", True),
        ("1/3", "The answer is $k = \\frac{1}{3}$.", True),
        ("7425000", "#### 7,425,000", True),
        ("-10/9", "\\boxed{-\\frac{10}{9}}", True),
        ("[0,1)", "\\boxed{[0,1)}", True),
        ("(0,9)", "\\boxed{[0,9)}", False),
        # MATH-style pairs.
        ("\\frac{3}{4}", "\\boxed{\\tfrac{3}{4}}", True),
        ("\\frac{3}{4}", "\\boxed{0.75}", True),
        ("\\frac{3}{4}", "\\boxed{\\frac{4}{3}}", False),
        ("2\\sqrt{3}", "\\boxed{\\sqrt{12}}", True),
        ("2\\sqrt{3}", "\\boxed{3\\sqrt{2}}", False),
        ("\\frac{\\pi}{2}", "\\boxed{\\pi/2}", True),
        ("\\frac{\\pi}{2}", "\\boxed{\\pi}", False),
        ("(-\\infty, 3]", "\\boxed{(-\\infty,3]}", True),
        ("(-\\infty, 3]", "\\boxed{(-\\infty,3)}", False),
        ("-7", "\\boxed{-7}", True),
        ("-7", "\\boxed{7}", False),
        ("1000", "\\boxed{1,000}", True),
        (1000, "\\boxed{1{,}000}", True),
        ("5", "\\boxed{5 \\text{ cm}}", True),
        ("x^2+1", "\\boxed{1+x^2}", True),
        ("36", "The answer is 36 pencils.", True),
    ],
)
def test_math_verifier_on_published_and_math_style_pairs(reference: str, sample: str, right: bool) -> None:
    assert score(_math(reference), sample, chat=True).score == (1.0 if right else 0.0)


def test_a_math_reference_math_verify_cannot_read_is_refused_naming_the_item() -> None:
    with pytest.raises(VerifierError, match=r"item 'i': answer: math-verify cannot read the reference"):
        score(_math("\\frac{"), "\\boxed{1}", chat=True)


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("Comparing the options, \\boxed{B}", "B"),
        ("\\boxed{\\text{(B)}}", "B"),
        ("So the right choice is clear.\nAnswer: B", "B"),
        ("Answer: (B) 42 km", "B"),
        ("The answer is B.", "B"),
        ("Only one option fits: (B).", "B"),
        ("(A) is too small and (C) too large; \\boxed{D}", "D"),
    ],
)
def test_choice_verifier_reads_the_letter(text: str, letter: str) -> None:
    for ref in "ABCDE":
        assert score(_item(ref, {"type": "choice"}), text, chat=True).score == (1.0 if ref == letter else 0.0)


def test_choice_reads_the_plain_answer_line_and_not_an_article() -> None:
    item = _item("A", {"type": "choice"})
    assert score(item, "Answer: A\n").score == 1.0
    assert score(item, "Answer: All of them\n").score == 0.0


@pytest.mark.parametrize("answer", ["F", "AB", "", "b"])
def test_a_choice_answer_that_is_not_one_letter_a_to_e_is_refused(tmp_path, answer: str) -> None:
    item = {"item_id": "m", "family": "f", "question": "q?", "answer": answer, "verifier": {"type": "choice"}}
    p = tmp_path / "suite.jsonl"
    p.write_text(json.dumps(item) + "\n")
    with pytest.raises(
        SuiteError, match=r"suite.jsonl:1: item 'm': answer: a choice verifier needs one lett"
    ):
        load_suite(p)


def test_exact_verifier_reads_chat_answers() -> None:
    item = _exact("SDA-17")
    assert score(item, f"{CHAT}\nThe satellite is \\boxed{{SDA-17}}", chat=True).score == 1.0
    assert score(item, "**Answer:** sda-17", chat=True).score == 1.0
    # exact has no last resort: a bare mention is no answer.
    assert score(item, "It might be SDA-17 or SDA-18", chat=True).answer is None


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (f"{CHAT}\nShe sold 48 / 2 = 24 in May, 48 + 24 = 72 clips... no: 74.\n#### 74", "74"),
        (f"{CHAT}\n12 pencils in each of 3 boxes: 12 * 3 = 36.\nSo, there are 36 pencils in total.", "36"),
        (f"{CHAT}\nThe answer is 74.", "74"),
        ("She has 74 apples.\n**Answer:** 74", "74"),
        ("\\boxed{...} is where it goes. #### 74", "74"),
        ("The answer is \\boxed{...}.\nAnswer: 74", "74"),
        ("\\boxed{} \\boxed{<answer>} Answer: ...\nSo 74 in all.", "74"),
        ("First \\boxed{74}, then the format: \\boxed{...}", "74"),
        ("<think>Maybe \\boxed{70}? No.</think>The total is 74.\n#### 74", "74"),
        ("The tool says so.</think>\n#### 74", "74"),
    ],
)
def test_chat_answers_fall_back_past_copied_placeholders(text: str, want: str) -> None:
    """A copied `\\boxed{...}` once read as the answer '...', so right answers such as '#### 74' scored 0."""
    v = score(_num(float(want)), text, chat=True)
    assert (v.score, v.answer) == (1.0, want)


@pytest.mark.parametrize(
    "text",
    [
        CHAT,
        "\\boxed{...}",
        "Answer: \\boxed{}",
        "Answer: <answer>",
        "The answer is \\boxed{\\ldots}.",
        "Answer: ...",
    ],
)
def test_a_placeholder_copied_from_the_instruction_is_never_an_answer(text: str) -> None:
    for chat in (True, False):
        v = score(_exact("..."), text, chat=chat)
        assert (v.score, v.answer) == (0.0, None)
        assert extract_answer(text, chat=chat, verifier=_num(1.0).verifier) is None


def test_an_unclosed_think_is_no_answer_with_a_reason() -> None:
    text = "<think>12 * 3 = 36, so \\boxed{36}. Let me double-check the"
    v = score(_num(36), text, chat=True)
    assert (v.score, v.answer) == (0.0, None)
    assert v.reason is not None and "<think>" in v.reason and "never closed" in v.reason
    # A second thinking block that never closes counts too; a closed one does not hide the answer.
    assert score(_num(36), "<think>a</think>\\boxed{36}<think>b", chat=True).answer is None
    assert score(_num(36), "<think>a</think>\\boxed{36}", chat=True).score == 1.0


def test_the_last_number_fallback_ignores_tool_calls_and_responses() -> None:
    text = (
        '<tool_call>{"name": "orbital_period", "arguments": {"altitude_km": 400}}</tool_call>\n'
        '<tool_response>{"period_min": 92.56}</tool_response>\nIt takes about 93 minutes.\n'
        '<tool_call>{"name": "circular_speed", "arguments": {"altitude_km": 400}}</tool_call>\n'
        '<tool_response>{"speed_km_s": 7.67}</tool_response>\n'
    )
    assert extract_answer(text, chat=True, verifier=_num(93).verifier) == "93"


def _user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def test_a_user_function_judges_the_extracted_answer(tmp_path, monkeypatch) -> None:
    _user_module(tmp_path, monkeypatch, "mychecks_a", (
        "__version__ = '1.4'\n"
        "def same_formula(answer, reference):\n"
        "    return sorted(answer.replace(' ', '')) == sorted(str(reference))\n"
    ))  # fmt: skip
    item = _item("H2O", {"type": "python", "function": "mychecks_a:same_formula"})
    assert score(item, "It is \\boxed{O H 2}", chat=True).score == 1.0
    assert score(item, "Answer: HO2\n").score == 1.0
    assert score(item, "\\boxed{CO2}", chat=True).score == 0.0
    assert describe(item.verifier) == ("mychecks_a:same_formula", "1.4")


def test_a_user_function_without_version_is_recorded_by_its_file_sha256(tmp_path, monkeypatch) -> None:
    path = _user_module(tmp_path, monkeypatch, "mychecks_b", "def ok(answer, reference):\n    return True\n")
    item = _item("x", {"type": "python", "function": "mychecks_b:ok"})
    assert describe(item.verifier) == ("mychecks_b:ok", f"sha256:{file_sha256(path)}")


def test_a_user_function_that_fails_is_an_error_naming_item_and_function(tmp_path, monkeypatch) -> None:
    _user_module(tmp_path, monkeypatch, "mychecks_c", (
        "def boom(answer, reference):\n    raise KeyError(answer)\n"
        "def half(answer, reference):\n    return 0.5\n"
    ))  # fmt: skip
    with pytest.raises(VerifierError, match=r"item 'i': verifier 'mychecks_c:boom' raised KeyError: '7'"):
        score(_item("7", {"type": "python", "function": "mychecks_c:boom"}), "Answer: 7")
    with pytest.raises(VerifierError, match=r"returned 0.5 for '7'; it must return True or False"):
        score(_item("7", {"type": "python", "function": "mychecks_c:half"}), "Answer: 7")
    with pytest.raises(VerifierError, match=r"verifier.function: cannot import module 'no_such_mod_xyz'"):
        describe(_item("7", {"type": "python", "function": "no_such_mod_xyz:f"}).verifier)
    with pytest.raises(VerifierError, match=r"mychecks_c has no 'nope'"):
        describe(_item("7", {"type": "python", "function": "mychecks_c:nope"}).verifier)


def test_a_python_verifier_reference_must_be_module_colon_function() -> None:
    with pytest.raises(ValueError, match=r"verifier.python.function"):
        _item("x", {"type": "python", "function": "just_a_module"})


def test_a_chat_arm_log_scores_real_formats_and_records_each_verifier(tmp_path) -> None:
    suite = [
        {"item_id": "pencils", "family": "gsm", "question": "How many pencils?", "answer": 36,
         "verifier": {"type": "numeric"}},
        {"item_id": "half", "family": "math", "question": "Simplify 2/4.", "answer": "\\frac{1}{2}",
         "verifier": {"type": "math"}},
        {"item_id": "mcq", "family": "mcq", "question": "Which? (A) 1 (B) 2", "answer": "B",
         "verifier": {"type": "choice"}},
    ]  # fmt: skip
    texts = {
        "pencils": [f"{CHAT}\nSo, there are 36 pencils in total.", "#### 36", "<think>36", "\\boxed{35}"],
        "half": ["\\boxed{\\dfrac{1}{2}}", "\\boxed{0.5}", "\\boxed{\\frac12}", "\\boxed{...}"],
        "mcq": ["\\boxed{B}", "Answer: (B)", "The answer is (A).", "\\boxed{...}"],
    }
    suite_path, gens = chat_world(tmp_path, suite, texts)
    out = tmp_path / "log.json"
    res = score_cli(gens, suite_path, out)
    assert res.returncode == 0, res.stderr
    log = load(out)
    assert {it.item_id: it.scores for it in log.items} == {
        "pencils": [1.0, 1.0, 0.0, 0.0],
        "half": [1.0, 1.0, 1.0, 0.0],
        "mcq": [1.0, 1.0, 0.0, 0.0],
    }
    reasons = [s.no_answer_reason for s in log.items[0].samples or []]
    assert reasons[:2] == [None, None] and reasons[2] is not None and "<think>" in reasons[2]
    assert log.items[1].samples is not None and log.items[1].samples[3].answer is None
    assert log.scorer is not None and log.scorer.verifiers is not None
    recorded = [(v.type, v.name, v.version) for v in log.scorer.verifiers]
    assert recorded == [
        ("numeric", "reasoning-delta", BUILTIN_VERSION),
        ("math", "math-verify", importlib.metadata.version("math-verify")),
        ("choice", "reasoning-delta", BUILTIN_VERSION),
    ]


def test_a_user_function_that_cannot_be_imported_ends_scoring_in_one_line(tmp_path) -> None:
    suite = [{"item_id": "own", "family": "f", "question": "q?", "answer": "x",
              "verifier": {"type": "python", "function": "no_such_mod_xyz:check"}}]  # fmt: skip
    suite_path, gens = chat_world(tmp_path, suite, {"own": ["\\boxed{x}"]})
    out = tmp_path / "log.json"
    res = score_cli(gens, suite_path, out)
    assert res.returncode == 2 and not out.exists()
    assert res.stderr.count("\n") == 1
    assert "suite item 'own': verifier.function: cannot import module 'no_such_mod_xyz'" in res.stderr
