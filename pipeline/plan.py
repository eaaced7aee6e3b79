"""The plan of one arm's run: every request in its fixed order, with its prompt, seed, budget and stops.

Each (item, sample) is one request with seed(item, sample) (contract.seeds), in suite order and then sample
index, so every arm gives sample j of an item the same seed. The plan reads only each item's id and
question; the prompt is the same for the k samples of an item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.engine import GenRequest
from contract.generations import RetrievedDoc
from contract.protocol import PROMPTING_KEYS
from contract.seeds import sample_seed
from contract.suite import SuiteError, SuiteItem, load_suite
from pipeline.config import ConfigError, Params, read_template, template_file
from pipeline.fewshot import Example, check_disjoint, load_examples
from pipeline.heavy_imports import collector_paused
from pipeline.hub import model_dir
from pipeline.prompts import (
    RESERVED_TEMPLATE_KWARGS,
    check_uses_question,
    compile_template,
    is_chat_model,
    make_prompt,
    stops_for,
    tools_not_rendered,
    use_chat,
)


@dataclass
class Plan:
    """The requests of a run, in their fixed order, and what the generations file records per item."""

    items: list[SuiteItem]
    requests: list[GenRequest]
    prompts: dict[str, str]
    retrieved: dict[str, list[RetrievedDoc]]
    chat: bool
    tool_names: list[str]
    # The longest prompt in tokens (a plain prompt's BOS included): what max_model_len auto must hold.
    longest_prompt: int = 0


def load_tokenizer(where: str) -> Any:
    """The tokenizer in the model folder where (it tells chat models from plain ones, renders chat ones)."""
    with collector_paused():
        from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(where)
    except OSError as e:
        raise ConfigError(f"{where}: cannot load the tokenizer: {e}") from None


def ships_chat_template(where: str | Path) -> bool:
    """Whether the tokenizer in a checkpoint directory has a chat template, read from its files alone.

    The rule of transformers' tokenizer loading (tokenization_utils_base.from_pretrained): a
    chat_template.jinja file, templates under additional_chat_templates/, or a non-empty "chat_template" in
    tokenizer_config.json. Reading the files spares the check of every model before a run the import of
    transformers (about 8 s of CPU here); tests hold it equal to AutoTokenizer's chat_template.
    """
    folder = Path(where)
    if (folder / "chat_template.jinja").is_file():
        return True
    if any((folder / "additional_chat_templates").glob("*.jinja")):
        return True
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"{config}: cannot read the tokenizer config ({e}); restore the checkpoint's files"
        ) from None


def chat_template_text(params: Params, chat: bool, model: str) -> str | None:
    """The text of protocol.chat_template (None: the tokenizer's own); refuse chat settings on a plain model
    and template options make_prompt sets itself."""
    proto = params.protocol
    if proto.instruction is not None and template_file(proto) is not None:
        raise ConfigError(
            f"{params.file}: protocol.instruction: the prompt template writes the whole user message; put "
            "the instruction in the template and remove the key"
        )
    if not chat:
        for key in PROMPTING_KEYS:
            if getattr(proto, key) is not None:
                raise ConfigError(
                    f"{params.file}: protocol.{key}: applies to chat models; {model} has no chat template "
                    "or protocol.chat is false (it is prompted in the plain format): remove the key"
                )
        return None
    reserved = sorted(set(proto.chat_template_kwargs or {}) & RESERVED_TEMPLATE_KWARGS)
    if reserved:
        raise ConfigError(
            f"{params.file}: protocol.chat_template_kwargs.{reserved[0]}: set by the runner itself; "
            "remove it (the options are template variables such as enable_thinking)"
        )
    if proto.chat_template is None:
        return None
    try:
        return Path(proto.chat_template).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{params.file}: protocol.chat_template: cannot read {proto.chat_template} ({e.strerror}); "
            "give the path of a Jinja chat template file"
        ) from None


def prompt_template(params: Params) -> tuple[Any, str] | None:
    """protocol.prompt's or protocol.prompt_template's Jinja file, compiled, with its path (None: unset)."""
    path = template_file(params.protocol)
    if path is None:
        return None
    key = "prompt" if params.protocol.prompt is not None else "prompt_template"
    return compile_template(read_template(path, key, params.file), str(path)), str(path)


def fewshot_examples(params: Params) -> list[Example]:
    """protocol.fewshot's examples ([] when unset); plan_run refuses one that is a suite item."""
    spec = params.protocol.fewshot
    if spec is None:
        return []
    if template_file(params.protocol) is None:
        raise ConfigError(
            f"{params.file}: protocol.fewshot: the built-in prompt shows no examples; set protocol.prompt "
            "to a few-shot preset of conf/prompt/ or protocol.prompt_template to a template that renders them"
        )
    return load_examples(spec, params.file)


def prompt_formats(params: Params, arms: Sequence[ArmSpec]) -> dict[str, bool]:
    """Whether each model of the arms is prompted through a chat template, by model key."""
    formats: dict[str, bool] = {}
    for arm in arms:
        key = arm.model
        if key in formats or key not in params.models:
            continue
        has = ships_chat_template(model_dir(params.models[key], key, params.file))
        formats[key] = use_chat(has, params.protocol, params.models[key].display_name, params.file)
    return formats


def check_matched_prompting(params: Params, arms: Sequence[ArmSpec]) -> None:
    """Refuse arms whose models would be prompted in different formats (one plain, one through a chat
    template): their scores would differ by the prompt as much as by the model."""
    formats = prompt_formats(params, arms)
    plain = [k for k, chat in formats.items() if not chat]
    chat = [k for k, c in formats.items() if c]
    if not plain or not chat:
        return
    p, c = plain[0], chat[0]
    raise ConfigError(
        f"{params.file}: models {p} ({params.models[p].display_name}) and {c} "
        f"({params.models[c].display_name}) would be prompted differently: {p} plain (no chat template), {c} "
        f"through its chat template; set protocol.chat: false to prompt both plain with the same template, "
        f"or give {p} a chat template (protocol.chat_template and protocol.chat: true)"
    )


def check_tools_rendered(
    tokenizer: Any,
    question: str,
    passages: Sequence[str],
    tools: Sequence[dict[str, Any]],
    params: Params,
    arm: ArmSpec,
    template: str | None,
    prompt: str,
    user: tuple[Any, str] | None = None,
    examples: Sequence[Example] = (),
) -> None:
    """Refuse a tool arm whose chat template leaves its tool schemas out of the prompt (it ignores tools=)."""
    bare = make_prompt(tokenizer, True, question, passages, [], params.protocol, template, user, examples)
    missing = tools_not_rendered(prompt, bare, tools)
    if not missing:
        return
    which = f"protocol.chat_template ({params.protocol.chat_template})" if template else "the chat template"
    raise ConfigError(
        f"arm {arm.name!r}: {which} of {params.models[arm.model].display_name} does not render the tool "
        f"schemas (no {', '.join(missing)} in the prompt; it ignores tools=), so the arm would be prompted "
        f"without its tools; set {params.file} protocol.chat_template to a Jinja chat template file that "
        "renders `tools` (the model family's tool-use template); every arm then uses it"
    )


@dataclass(frozen=True)
class Prompting:
    """What an arm's prompts are made of, read once (pipeline.resolve): params.yaml (suite, protocol, rag),
    the arm, its model's folder, the compiled prompt template, the few-shot examples and, for a retrieval
    arm, the index (pipeline.pins.pinned_index)."""

    params: Params
    arm: ArmSpec
    model_dir: str
    template: tuple[Any, str] | None
    examples: list[Example]
    index: Any
    items: Sequence[SuiteItem]


def read_prompting(params: Params, arm: ArmSpec, index: Any, items: Sequence[SuiteItem]) -> Prompting:
    """The Prompting of arm: its model folder, protocol.prompt's template, protocol.fewshot's examples."""
    where = model_dir(params.models[arm.model], arm.model, params.file)
    return Prompting(params, arm, where, prompt_template(params), fewshot_examples(params), index, items)


def plan_run(prompting: Prompting, tools: Sequence[dict[str, Any]]) -> Plan:
    """Every request of the run in its fixed order (suite order, then sample index), with its seed."""
    params, arm, user, examples = prompting.params, prompting.arm, prompting.template, prompting.examples
    items = prompting.items
    tokenizer = load_tokenizer(prompting.model_dir)
    display = params.models[arm.model].display_name
    chat = use_chat(is_chat_model(tokenizer), params.protocol, display, params.file)
    template = chat_template_text(params, chat, display)
    if params.protocol.fewshot is not None:
        check_disjoint(examples, items, params.protocol.fewshot)
    if user is not None:
        check_uses_question(*user, tools, examples)
    index = prompting.index if arm.retrieval else None
    if index is not None:
        from augment.retrieval import passages_for
    proto = params.protocol
    stop = stops_for(chat, proto.stop)
    requests: list[GenRequest] = []
    prompts: dict[str, str] = {}
    retrieved: dict[str, list[RetrievedDoc]] = {}
    for item in items:
        passages: list[str] = []
        if index is not None and params.rag is not None:
            passages, hits = passages_for(index, item.question, params.rag.top_k, params.rag.order)
            retrieved[item.item_id] = [
                RetrievedDoc(doc_id=h.doc_id, score=h.score, rank=h.rank, title=h.title or None, text=h.text)
                for h in hits
            ]
        prompt = make_prompt(tokenizer, chat, item.question, passages, tools, proto, template, user, examples)
        if chat and tools and not prompts:
            check_tools_rendered(
                tokenizer, item.question, passages, tools, params, arm, template, prompt, user, examples
            )
        prompts[item.item_id] = prompt
        for j in range(proto.k):
            requests.append(
                GenRequest(
                    key=(item.item_id, j),
                    prompt=prompt,
                    seed=sample_seed(proto.seed, item.item_id, j),
                    max_tokens=proto.max_tokens,
                    stop=stop,
                )
            )
    longest = max(
        (len(tokenizer(p, add_special_tokens=not chat)["input_ids"]) for p in prompts.values()), default=0
    )
    return Plan(items, requests, prompts, retrieved, chat, [t["name"] for t in tools], longest)


def requests_sha256(requests: Sequence[GenRequest]) -> str:
    """sha256 over every request (key, prompt, seed, budget, stops): any change of prompts changes it."""
    h = hashlib.sha256()
    for r in requests:
        h.update(json.dumps([r.key, r.prompt, r.seed, r.max_tokens, list(r.stop)]).encode())
    return h.hexdigest()


def chunks(requests: Sequence[GenRequest], size: int) -> list[list[GenRequest]]:
    """Consecutive chunks of a fixed size (the last may be shorter): the same cut on every run."""
    if size < 1:
        raise ConfigError(f"engine.chunk_size = {size}: must be >= 1 (conf/engine/*.yaml)")
    return [list(requests[i : i + size]) for i in range(0, len(requests), size)]


def plan_arm(params: Params, arm: ArmSpec, tools: Sequence[dict[str, Any]]) -> Plan:
    """plan_run for an arm outside a run (tests, benchmarks): its Prompting read here, the index included."""
    from pipeline.pins import pinned_index

    try:
        items = load_suite(params.suite.path)
    except SuiteError as e:
        raise ConfigError(str(e)) from None
    index = pinned_index(params) if arm.retrieval else None
    return plan_run(read_prompting(params, arm, index, items), tools)
