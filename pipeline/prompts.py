"""The prompts of the arms: plain (as the demo models were trained), from a template, or by a chat template.

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

Any model may instead be prompted through a Jinja prompt template (protocol.prompt, a preset of conf/prompt/,
or protocol.prompt_template, a file), rendered with `question`, `passages`, `tools` (the tool specs: name,
description, input_schema) and `examples` (the few-shot examples: id, question, answer): the whole prompt of
a plain model, the user message of a chat model (whose chat template still wraps it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from contract.protocol import Protocol
from contract.textformat import ANSWER_TAG
from pipeline.config import ConfigError

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


def compile_template(text: str, where: str) -> jinja2.Template:
    """A prompt template compiled in Jinja's sandbox (undefined names are errors, last newline kept)."""
    env = ImmutableSandboxedEnvironment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    try:
        return env.from_string(text)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(
            f"{where}:{e.lineno}: not a Jinja template ({e.message}); fix the template"
        ) from None


def render_template(
    template: jinja2.Template,
    where: str,
    question: str,
    passages: Sequence[str],
    tools: Sequence[dict[str, Any]],
    examples: Sequence[Any],
) -> str:
    """The text a prompt template renders for one item (examples: objects with id, question, answer)."""
    shots = [{"id": e.id, "question": e.question, "answer": e.answer} for e in examples]
    try:
        return template.render(question=question, passages=list(passages), tools=list(tools), examples=shots)
    except Exception as e:  # noqa: BLE001 - any error of a user's template (1/0, include, a huge range) is its
        # author's to fix: one line naming the file, never a traceback
        what = str(e).splitlines()[0] if str(e) else ""
        raise ConfigError(
            f"{where}: cannot render ({type(e).__name__}: {what}); a prompt template may use question, "
            "passages, tools and examples, and no include, extends or import (it is one file)"
        ) from None


def check_uses_question(
    template: jinja2.Template, where: str, tools: Sequence[dict[str, Any]], examples: Sequence[Any]
) -> None:
    """Refuse a prompt template that renders the same text whatever the question (an empty file, a
    template that never shows `question`): every item would be asked the same thing."""
    one, two = (
        render_template(template, where, q, [], tools, examples) for q in ("7 + 5?", "What is 2 x 9?")
    )
    if one == two:
        raise ConfigError(
            f"{where}: renders the same prompt whatever the question (it never uses `question`), so every "
            "item would be asked the same thing; put {{ question }} where the question goes"
        )


def chat_messages(
    question: str, passages: Sequence[str], protocol: Protocol | None, content: str | None = None
) -> list[dict[str, str]]:
    """The messages of a chat prompt: the protocol's system prompt, then the user's message: content (a
    prompt template's text) when given, else passages, question and instruction (the built-in one unless
    protocol.instruction is set; an empty one adds nothing)."""
    instruction = (
        CHAT_INSTRUCTION if protocol is None or protocol.instruction is None else protocol.instruction
    )
    if content is None:
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
    prompt: tuple[jinja2.Template, str] | None = None,
    examples: Sequence[Any] = (),
) -> str:
    """The arm's prompt: the plain format, or a chat template (template's text, else the tokenizer's) with
    the tool schemas and the protocol's template options; prompt, a compiled prompt template and where it
    is, renders the plain prompt or the user message instead."""
    content = None if prompt is None else render_template(*prompt, question, passages, tools, examples)
    if not chat:
        return (
            content if content is not None else build_prompt(question, passages, [t["name"] for t in tools])
        )
    options = dict(protocol.chat_template_kwargs or {}) if protocol is not None else {}
    return tokenizer.apply_chat_template(
        chat_messages(question, passages, protocol, content),
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


def stops_for(chat: bool, extra: Sequence[str] | None = None) -> tuple[str, ...]:
    """Stop strings of a prompt format, then the protocol's own (protocol.stop, its preset's), once each."""
    stops = [*(() if chat else PLAIN_STOP), *(extra or ())]
    return tuple(dict.fromkeys(stops))


def use_chat(has: bool, protocol: Protocol, model: str, params_file: object) -> bool:
    """Whether a model is prompted through a chat template (`has`: it ships one): protocol.chat true or
    false says so; auto (or unset) when it has one. True without one needs protocol.chat_template."""
    if protocol.chat is False:
        return False
    if protocol.chat is True and not has and protocol.chat_template is None:
        raise ConfigError(
            f"{params_file}: protocol.chat: true, but {model} has no chat template; set "
            "protocol.chat_template to a Jinja chat template file, or protocol.chat: false to prompt every "
            "model plain"
        )
    return has or protocol.chat is True
