"""Path evaluation: one test per verdict, the precedence between them, and the 'carried' rule."""

from __future__ import annotations

import pytest

from contract.generations import ToolCallRecord
from scoring.numbers import parse_number
from scoring.paths import (
    ANSWER_WITHOUT_TOOL,
    CLEAN,
    NO_ANSWER,
    TOOL_ERROR,
    TOOL_RESULT_IGNORED,
    VERDICTS,
    carries,
    path_verdict,
)

PERIOD_OK = ToolCallRecord(
    name="orbital_period",
    arguments={"altitude_km": 400},
    result={"period_min": 92.56},
    latency_s=0.01,
    round=0,
)
SPEED_OK = ToolCallRecord(
    name="circular_speed",
    arguments={"altitude_km": 400},
    result={"speed_km_s": 7.67},
    latency_s=0.01,
    round=0,
)
PERIOD_BAD_ARGS = ToolCallRecord(
    name="orbital_period",
    arguments={"altitude_km": "x"},
    error="argument 'altitude_km' must be a number, got str",
    latency_s=0.01,
    round=0,
)
MALFORMED = ToolCallRecord(raw="{not json", error="malformed tool call: not JSON", round=0)
# Right tool, valid arguments, but the wrong altitude: the value is carried, the answer does not verify.
PERIOD_WRONG_ALT = ToolCallRecord(
    name="orbital_period",
    arguments={"altitude_km": 500},
    result={"period_min": 94.62},
    latency_s=0.01,
    round=0,
)


def test_clean_right_tool_value_carried_and_correct() -> None:
    assert path_verdict("orbital_period", [PERIOD_OK], "92.56", correct=True) == CLEAN
    # Rounded to the answer's own precision still carries the value.
    assert path_verdict({"orbital_period"}, [PERIOD_OK], "92.6", correct=True) == CLEAN
    # An error first, then a good call: the path recovered.
    assert path_verdict("orbital_period", [PERIOD_BAD_ARGS, PERIOD_OK], "92.56 min", correct=True) == CLEAN


def test_answer_without_tool() -> None:
    assert path_verdict("orbital_period", [], "92.56", correct=True) == ANSWER_WITHOUT_TOOL
    assert path_verdict("orbital_period", [], "90", correct=False) == ANSWER_WITHOUT_TOOL


def test_tool_result_ignored() -> None:
    assert path_verdict("orbital_period", [PERIOD_OK], "95.1", correct=False) == TOOL_RESULT_IGNORED
    # The model called the tool but answered right from elsewhere without its value: still ignored.
    assert path_verdict("orbital_period", [PERIOD_OK], "about ninety", correct=True) == TOOL_RESULT_IGNORED


def test_tool_error() -> None:
    assert path_verdict("orbital_period", [PERIOD_BAD_ARGS], "92.56", correct=True) == TOOL_ERROR
    assert path_verdict("orbital_period", [MALFORMED], "92.56", correct=True) == TOOL_ERROR
    # Only a wrong tool answered; its value even reaches the answer.
    assert path_verdict("orbital_period", [SPEED_OK], "7.67", correct=False) == TOOL_ERROR
    # The right tool with wrong arguments: carried but not verified.
    assert path_verdict("orbital_period", [PERIOD_WRONG_ALT], "94.62", correct=False) == TOOL_ERROR


def test_no_answer_wins_over_everything() -> None:
    for calls in ([], [PERIOD_OK], [PERIOD_BAD_ARGS]):
        assert path_verdict("orbital_period", calls, None, correct=False) == NO_ANSWER
        assert path_verdict("orbital_period", calls, "  ", correct=False) == NO_ANSWER


def test_without_an_expected_tool_any_tool_whose_value_is_carried_counts() -> None:
    assert path_verdict(None, [SPEED_OK], "7.67", correct=True) == CLEAN
    assert path_verdict(None, [SPEED_OK, PERIOD_OK], "92.56", correct=True) == CLEAN
    assert path_verdict(None, [SPEED_OK], "8.1", correct=False) == TOOL_RESULT_IGNORED
    assert path_verdict(None, [], "8.1", correct=False) == ANSWER_WITHOUT_TOOL


def test_records_as_dicts_from_a_log_are_accepted() -> None:
    as_dicts = [PERIOD_OK.model_dump()]
    assert path_verdict("orbital_period", as_dicts, "92.56", correct=True) == CLEAN


@pytest.mark.parametrize(
    ("answer", "result", "expected"),
    [
        ("92.56", {"period_min": 92.56}, True),
        ("92.6", {"period_min": 92.56}, True),
        ("93", {"period_min": 92.56}, True),
        ("92.5", {"period_min": 92.56}, False),
        ("92.57", {"period_min": 92.56}, False),
        ("1.5e3", {"x": 1500.0}, True),
        ("-3.2 km", {"x": -3.2}, True),
        ("7.67", {"speed_km_s": 7.67, "note": True}, True),
        ("1", {"flag": True}, False),
        ("no number", {"x": 1.0}, False),
        ("1000.4", {"x": 1000.0}, False),
        ("1000", {"x": 1000.4}, True),
    ],
)
def test_carries(answer: str, result: dict, expected: bool) -> None:
    assert carries(answer, result) is expected


@pytest.mark.parametrize(
    ("answer", "result", "expected"),
    [
        ("1,436 km", {"x": 1436.0}, True),
        ("1,436 km", {"x": 436.0}, False),
        ("1,436 km", {"x": 1.0}, False),
        ("12,345.67", {"x": 12345.67}, True),
        ("\u22123.5", {"x": -3.5}, True),
        ("3, 4", {"x": 34.0}, False),
    ],
)
def test_answers_are_read_as_the_oracle_reads_them(answer: str, result: dict, expected: bool) -> None:
    """The carried number is the one the oracle judged: one grammar for both (scoring.verifiers)."""
    assert carries(answer, result) is expected
    if expected:
        assert parse_number(answer) == next(iter(result.values()))


def test_a_thousands_comma_answer_is_clean_when_the_oracle_says_right() -> None:
    call = PERIOD_OK.model_copy(update={"result": {"period_min": 1436.0}})
    assert path_verdict("orbital_period", [call], "1,436 min", correct=True) == CLEAN


def test_the_verdicts_named_are_the_ones_given() -> None:
    """VERDICTS (the reports' path tables follow it) holds what path_verdict gives over a grid of paths: every
    expected tool, record and answer above, right or wrong; none it never gives, none it gives missing."""
    records = [PERIOD_OK, SPEED_OK, PERIOD_BAD_ARGS, MALFORMED, PERIOD_WRONG_ALT]
    paths = [[], *([r] for r in records), [PERIOD_BAD_ARGS, PERIOD_OK]]
    given = {
        path_verdict(expected, calls, answer, correct=correct)
        for expected in ("orbital_period", "circular_speed", None)
        for calls in paths
        for answer in ("92.56", "7.67", "94.62", "95.1", "about ninety", None)
        for correct in (True, False)
    }
    assert given == set(VERDICTS)
