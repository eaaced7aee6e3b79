"""Path evaluation of a tool-arm sample: did the answer come through the tool, or around it?

    path_verdict(expected_tools, tool_calls, answer_text, correct) -> one of VERDICTS

Verdicts (first that applies wins):
    no_answer            the sample has no final answer (answer_text is None or blank), whatever it called.
    clean                a right tool returned a value, that value is carried into the answer, and the answer
                         is correct. Tools return oracle ground truth, so a carried value that does not verify
                         means the arguments were wrong; that is a tool_error, not a clean path.
    tool_result_ignored  a right tool returned a value, and the answer does not carry it.
    tool_error           calls were made but none gave a right tool's value that the answer could use:
                         every call failed (malformed, unknown tool, bad arguments, a tool or server fault,
                         over the cap), or only other tools answered, or the carried value did not verify
                         (wrong arguments).
    answer_without_tool  an answer with no tool call at all: for an item that needs a tool, the leak that path
                         evaluation exists to catch.

"Right tool": the suite item names it (its optional field `tool`); when the item names none
(expected_tools is None), any tool counts, and the verdict rests on whether a returned value reaches the
answer.
"Carried": some number in the answer equals some number of the tool's result to the precision the answer is
written in (92.56 carries 92.56; 92.6 and 93 carry it too, rounded; 92.57 and 92.5 do not).
`correct` is the oracle's verdict on the sample.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from contract.generations import ToolCallRecord
from scoring.numbers import number_value, written_numbers

CLEAN = "clean"
ANSWER_WITHOUT_TOOL = "answer_without_tool"
TOOL_RESULT_IGNORED = "tool_result_ignored"
TOOL_ERROR = "tool_error"
NO_ANSWER = "no_answer"
VERDICTS = (CLEAN, ANSWER_WITHOUT_TOOL, TOOL_RESULT_IGNORED, TOOL_ERROR, NO_ANSWER)


def _numbers_in_text(text: str) -> list[tuple[float, int]]:
    """Every number in text with its count of decimals (for the precision the text states it to).

    Read with the oracle's grammar, so a carried value is the number the oracle judged ('1,436' is one).
    """
    out = []
    for s in written_numbers(text):
        v = number_value(s)
        mantissa = s.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        if v is not None:
            out.append((v, decimals))
    return out


def _numbers_in_result(result: Any) -> list[float]:
    """Every finite number inside a tool result (nested dicts and lists included, booleans excluded)."""
    if isinstance(result, bool):
        return []
    if isinstance(result, int | float):
        return [float(result)] if math.isfinite(result) else []
    if isinstance(result, dict):
        return [v for x in result.values() for v in _numbers_in_result(x)]
    if isinstance(result, list | tuple):
        return [v for x in result for v in _numbers_in_result(x)]
    return []


def carries(answer_text: str, result: Any) -> bool:
    """Whether the answer states a number of the tool result, rounded to the answer's own precision."""
    values = _numbers_in_result(result)
    for a, decimals in _numbers_in_text(answer_text):
        for v in values:
            if round(v, decimals) == a:
                return True
    return False


def _record(call: ToolCallRecord | dict[str, Any]) -> ToolCallRecord:
    return call if isinstance(call, ToolCallRecord) else ToolCallRecord.model_validate(call)


def path_verdict(
    expected_tools: str | Collection[str] | None,
    tool_calls: Sequence[ToolCallRecord | dict[str, Any]],
    answer_text: str | None,
    correct: bool,
) -> str:
    """The path verdict of one sample of a tool arm (see the module docstring for the rules)."""
    if answer_text is None or not answer_text.strip():
        return NO_ANSWER
    expected = frozenset([expected_tools]) if isinstance(expected_tools, str) else expected_tools
    calls = [_record(c) for c in tool_calls]
    right = [
        c
        for c in calls
        if c.error is None and c.result is not None and (expected is None or c.name in expected)
    ]
    if any(carries(answer_text, c.result) for c in right):
        return CLEAN if correct else TOOL_ERROR
    if right:
        return TOOL_RESULT_IGNORED
    if calls:
        return TOOL_ERROR
    return ANSWER_WITHOUT_TOOL
