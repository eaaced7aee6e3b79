"""Prompt formats shared by the runner and the demo training data, so both speak the same language.

Plain models (the demo):
    plain   "Question: {q}\\nAnswer:"                       the model writes " {answer}\\n"
    rag     "[1] {passage}\\n[2] ...\\nQuestion: {q}\\nAnswer:"
    tools   "[passages]Tools: a, b\\nQuestion: {q}\\n"       the model writes
            '<tool_call>{"name": ..., "arguments": {...}}</tool_call>', the runner appends
            "\\n<tool_response>{...}</tool_response>\\n", and the model ends with "Answer: {answer}\\n".
Chat models use their tokenizer's chat template instead (pipeline.engines decide which).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
TOOL_RESPONSE_OPEN = "<tool_response>"
TOOL_RESPONSE_CLOSE = "</tool_response>"
ANSWER_TAG = "Answer:"


def passages_block(passages: Sequence[str]) -> str:
    """Numbered passages, one per line, as they stand before the question."""
    return "".join(f"[{i}] {p}\n" for i, p in enumerate(passages, 1))


def build_prompt(question: str, passages: Sequence[str] = (), tools: Sequence[str] = ()) -> str:
    """The plain-model prompt of an arm: optional passages, optional tool list, then the question."""
    head = passages_block(passages)
    if tools:
        return f"{head}Tools: {', '.join(tools)}\nQuestion: {question}\n"
    return f"{head}Question: {question}\n{ANSWER_TAG}"


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call exactly as a model is taught to write it (Hermes/Qwen convention)."""
    body = json.dumps({"name": name, "arguments": arguments}, separators=(", ", ": "))
    return f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}"


def format_tool_response(payload: dict[str, Any]) -> str:
    """The runner's answer to a tool call, appended after the model's </tool_call>."""
    body = json.dumps(payload, separators=(", ", ": "), sort_keys=True)
    return f"\n{TOOL_RESPONSE_OPEN}{body}{TOOL_RESPONSE_CLOSE}\n"
