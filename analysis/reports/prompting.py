"""How each arm was prompted, in one line a report prints: plain or chat, template, its sha256, few-shot pin.

Read from the EvalLog alone (its protocol, pins and scorer settings), so an imported log that records none
of them says so instead of passing for the built-in format.
"""

from __future__ import annotations

from contract.evallog import EvalLog

# The built-in reading of each format (scoring.verifiers), for a protocol without protocol.answer.
_BUILT_IN_ANSWER = {False: "first 'Answer:' line", True: "built-in reading (last \\boxed{}, then fallbacks)"}


def _sha(pins: dict[str, str], key: str) -> str:
    value = pins.get(key, "")
    return f"sha256 {value.removeprefix('sha256:')[:12]}" if value else "sha256 not recorded"


def prompt_line(log: EvalLog) -> str:
    """'plain, template conf/prompt/gsm8k.jinja (sha256 ea5b381d1b5b), few-shot fewshot/gsm8k.jsonl n=4
    (sha256 60dd6a14ca92), answer: answer_is' for one log."""
    settings = log.scorer.settings if log.scorer is not None else {}
    chat = settings.get("chat")
    if log.protocol is None or not isinstance(chat, bool):
        return "not recorded in the log"
    proto, pins = log.protocol, log.pins or {}
    parts = ["through the model's chat template" if chat else "plain"]
    if proto.prompt is not None or proto.prompt_template is not None:
        name = f"conf/prompt/{proto.prompt}.jinja" if proto.prompt is not None else proto.prompt_template
        parts.append(f"template {name} ({_sha(pins, 'prompt_template')})")
    else:
        parts.append("the built-in prompt")
    if proto.chat_template is not None:
        parts.append(f"chat template {proto.chat_template} ({_sha(pins, 'chat_template')})")
    if proto.fewshot is not None:
        parts.append(f"few-shot {proto.fewshot.path} n={proto.fewshot.n} ({_sha(pins, 'fewshot')})")
    else:
        parts.append("zero-shot")
    parts.append(f"answer: {proto.answer or _BUILT_IN_ANSWER[chat]}")
    return ", ".join(parts)
