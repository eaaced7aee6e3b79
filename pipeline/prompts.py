"""The prompts of the arms: the plain format the demo models were trained on, or a model's chat template.

Plain models (the demo):
    plain   "Question: {q}\\nAnswer:"                       the model writes " {answer}\\n"
    rag     "[1] {passage}\\n[2] ...\\nQuestion: {q}\\nAnswer:"
    tools   "[passages]Tools: a, b\\nQuestion: {q}\\n"       the model writes
            '<tool_call>{"name": ..., "arguments": {...}}</tool_call>', the tool loop appends
            "\\n<tool_response>{...}</tool_response>\\n", and the model ends with "Answer: {answer}\\n".
Chat models (a tokenizer with a chat template) get the protocol's system prompt (if any) and one user message
(passages, question, instruction) through that template, or through params.yaml protocol.chat_template when
set, with the tool schemas passed as `tools=` and protocol.chat_template_kwargs (e.g. enable_thinking) as
template variables. The defaults render exactly what they rendered before those settings existed. The demo's
training data is built with build_prompt too, so both agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contract.protocol import Protocol
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


# Arguments make_prompt passes to apply_chat_template itself; protocol.chat_template_kwargs may not set them.
RESERVED_TEMPLATE_KWARGS = frozenset(
    {"conversation", "tools", "documents", "chat_template", "add_generation_prompt", "tokenize",
     "continue_final_message", "return_dict", "return_tensors"}
)  # fmt: skip


def chat_messages(question: str, passages: Sequence[str], protocol: Protocol | None) -> list[dict[str, str]]:
    """The messages of a chat prompt: the protocol's system prompt, then the user's passages, question and
    instruction (the built-in one unless protocol.instruction is set; an empty one adds nothing)."""
    instruction = (
        CHAT_INSTRUCTION if protocol is None or protocol.instruction is None else protocol.instruction
    )
    content = f"{passages_block(passages)}{question}" + (f"\n{instruction}" if instruction else "")
    system = None if protocol is None else protocol.system_prompt
    return ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": content}
    ]


def make_prompt(
    tokenizer: Any,
    chat: bool,
    question: str,
    passages: Sequence[str],
    tools: Sequence[dict[str, Any]],
    protocol: Protocol | None = None,
    template: str | None = None,
) -> str:
    """The arm's prompt: the plain format, or a chat template (template's text, else the tokenizer's) with
    the tool schemas and the protocol's template options."""
    if not chat:
        return build_prompt(question, passages, [t["name"] for t in tools])
    options = dict(protocol.chat_template_kwargs or {}) if protocol is not None else {}
    return tokenizer.apply_chat_template(
        chat_messages(question, passages, protocol),
        tools=tool_schemas(tools) or None,
        chat_template=template,
        add_generation_prompt=True,
        tokenize=False,
        **options,
    )


def tools_not_rendered(with_tools: str, without_tools: str, tools: Sequence[dict[str, Any]]) -> list[str]:
    """The tools a rendered chat prompt does not show: all of them when the template ignored `tools=` (the
    prompt equals the one rendered without tools), else those whose name is absent from it."""
    names = [t["name"] for t in tools]
    if with_tools == without_tools:
        return names
    return [n for n in names if n not in with_tools]


def stops_for(chat: bool) -> tuple[str, ...]:
    """Stop strings of a prompt format."""
    return () if chat else PLAIN_STOP
