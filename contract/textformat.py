"""The text conventions between a model and the harness: the answer tag and the tool-call markup.

The demo's training data, the tool loop that parses calls, and the scorer that reads answers all use these,
so the three cannot drift apart. `transcript` reads a sample back into its turns (prompt, model turns,
tool calls with their responses), for a reader of the logs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contract.generations import ToolCallRecord

ANSWER_TAG = "Answer:"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
TOOL_RESPONSE_OPEN = "<tool_response>"
TOOL_RESPONSE_CLOSE = "</tool_response>"


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call exactly as a model is taught to write it (Hermes/Qwen convention)."""
    body = json.dumps({"name": name, "arguments": arguments}, separators=(", ", ": "))
    return f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}"


def format_tool_response(payload: dict[str, Any]) -> str:
    """The harness's answer to a tool call, appended after the model's </tool_call>."""
    body = json.dumps(payload, separators=(", ", ": "), sort_keys=True)
    return f"\n{TOOL_RESPONSE_OPEN}{body}{TOOL_RESPONSE_CLOSE}\n"


_RESPONSE = re.compile(
    re.escape(f"\n{TOOL_RESPONSE_OPEN}") + "(.*?)" + re.escape(f"{TOOL_RESPONSE_CLOSE}\n"), re.S
)


@dataclass(frozen=True)
class Turn:
    """One turn of a sample's transcript: the prompt, a model turn, or a tool call with the harness's answer.

    A tool turn's text is the response the model was shown (empty for a call that was never executed, such
    as one over the protocol's cap); call is that call's record (name, arguments, result or error).
    """

    role: Literal["prompt", "model", "tool"]
    text: str
    call: ToolCallRecord | None = None


def transcript(
    prompt: str | None, text: str, tool_calls: Sequence[ToolCallRecord] | None = None
) -> list[Turn]:
    """A sample's turns in order: its prompt, then its text cut at each tool response the harness appended.

    The tool loop continues a sample by appending format_tool_response(...) right after the model's
    </tool_call>, so a response block counts only there (one the model wrote itself stays model text), and
    the n-th response is the n-th call record. Records left over (a call over the cap, or one left open when
    generation ended, recorded but never answered) follow as tool turns without a response.
    """
    calls = list(tool_calls or [])
    turns = [Turn("prompt", prompt)] if prompt is not None else []
    start = 0
    answered = 0
    for m in _RESPONSE.finditer(text):
        if not text[start : m.start()].endswith(TOOL_CALL_CLOSE):
            continue
        turns.append(Turn("model", text[start : m.start()]))
        turns.append(Turn("tool", m.group(1), calls[answered] if answered < len(calls) else None))
        answered += 1
        start = m.end()
    if text[start:]:
        turns.append(Turn("model", text[start:]))
    turns += [Turn("tool", "", call) for call in calls[answered:]]
    return turns
