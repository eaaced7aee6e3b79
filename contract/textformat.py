"""The text conventions between a model and the harness: the answer tag and the tool-call markup.

The demo's training data, the tool loop that parses calls, and the scorer that reads answers all use these,
so the three cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

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
