"""The prompts of the arms: the plain format the demo models were trained on, or a model's chat template.

Plain models (the demo):
    plain   "Question: {q}\\nAnswer:"                       the model writes " {answer}\\n"
    rag     "[1] {passage}\\n[2] ...\\nQuestion: {q}\\nAnswer:"
    tools   "[passages]Tools: a, b\\nQuestion: {q}\\n"       the model writes
            '<tool_call>{"name": ..., "arguments": {...}}</tool_call>', the tool loop appends
            "\\n<tool_response>{...}</tool_response>\\n", and the model ends with "Answer: {answer}\\n".
Chat models (a tokenizer with a chat template) get one user message through that template, with the tool
schemas passed as `tools=`. The demo's training data is built with build_prompt too, so both agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contract.textformat import ANSWER_TAG

# Plain prompts end in "Answer:"; a model that goes on to invent the next question is stopped there.
PLAIN_STOP = ("\nQuestion:",)
# No placeholder inside the box: small instruct models copy "\boxed{...}" literally (the oracle reads a
# placeholder as no answer and falls back, but a box to fill in is what it should read first).
CHAT_INSTRUCTION = "Put your final answer within \\boxed{}."


def is_chat_model(tokenizer: Any) -> bool:
    """Whether a tokenizer has a chat template (its model is then prompted through it)."""
    return bool(getattr(tokenizer, "chat_template", None))


def passages_block(passages: Sequence[str]) -> str:
    """Numbered passages, one per line, as they stand before the question."""
    return "".join(f"[{i}] {p}\n" for i, p in enumerate(passages, 1))


def build_prompt(question: str, passages: Sequence[str] = (), tools: Sequence[str] = ()) -> str:
    """The plain-model prompt of an arm: optional passages, optional tool list, then the question."""
    head = passages_block(passages)
    if tools:
        return f"{head}Tools: {', '.join(tools)}\nQuestion: {question}\n"
    return f"{head}Question: {question}\n{ANSWER_TAG}"


def tool_schemas(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """MCP tool descriptions as the OpenAI-style function schemas chat templates take."""
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in tools
    ]


def make_prompt(
    tokenizer: Any, chat: bool, question: str, passages: Sequence[str], tools: Sequence[dict[str, Any]]
) -> str:
    """The arm's prompt: the plain format, or the model's chat template with the tool schemas."""
    if not chat:
        return build_prompt(question, passages, [t["name"] for t in tools])
    content = f"{passages_block(passages)}{question}\n{CHAT_INSTRUCTION}"
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": content}],
        tools=tool_schemas(tools) or None,
        add_generation_prompt=True,
        tokenize=False,
    )


def stops_for(chat: bool) -> tuple[str, ...]:
    """Stop strings of a prompt format."""
    return () if chat else PLAIN_STOP
