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
from pipeline.config import ConfigError, ModelRef, Params
from pipeline.hub import model_dir
from pipeline.prompts import (
    RESERVED_TEMPLATE_KWARGS,
    is_chat_model,
    make_prompt,
    stops_for,
    tools_not_rendered,
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


def load_tokenizer(ref: ModelRef, key: str = "model", source: Path | str = "params.yaml") -> Any:
    """The model's tokenizer (it tells chat models from plain ones, and renders chat prompts)."""
    from transformers import AutoTokenizer

    where = model_dir(ref, key, source)
    try:
        return AutoTokenizer.from_pretrained(where)
    except OSError as e:
        raise ConfigError(f"{where}: cannot load the tokenizer: {e}") from None


def chat_settings(params: Params, chat: bool, model: str) -> str | None:
    """The text of protocol.chat_template (None: the tokenizer's own); refuse chat settings on a plain model
    and template options make_prompt sets itself."""
    proto = params.protocol
    if not chat:
        for key in PROMPTING_KEYS:
            if getattr(proto, key) is not None:
                raise ConfigError(
                    f"{params.source}: protocol.{key}: applies to chat models; {model} has no chat template "
                    "(it is prompted in the plain format): remove the key"
                )
        return None
    reserved = sorted(set(proto.chat_template_kwargs or {}) & RESERVED_TEMPLATE_KWARGS)
    if reserved:
        raise ConfigError(
            f"{params.source}: protocol.chat_template_kwargs.{reserved[0]}: set by the runner itself; "
            "remove it (the options are template variables such as enable_thinking)"
        )
    if proto.chat_template is None:
        return None
    try:
        return Path(proto.chat_template).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{params.source}: protocol.chat_template: cannot read {proto.chat_template} ({e.strerror}); "
            "give the path of a Jinja chat template file"
        ) from None


def check_tools_rendered(
    tokenizer: Any,
    question: str,
    passages: Sequence[str],
    tools: Sequence[dict[str, Any]],
    params: Params,
    arm: ArmSpec,
    template: str | None,
    prompt: str,
) -> None:
    """Refuse a tool arm whose chat template leaves its tool schemas out of the prompt (it ignores tools=)."""
    bare = make_prompt(tokenizer, True, question, passages, [], params.protocol, template)
    missing = tools_not_rendered(prompt, bare, tools)
    if not missing:
        return
    which = f"protocol.chat_template ({params.protocol.chat_template})" if template else "the chat template"
    raise ConfigError(
        f"arm {arm.name!r}: {which} of {params.models[arm.model].display_name} does not render the tool "
        f"schemas (no {', '.join(missing)} in the prompt; it ignores tools=), so the arm would be prompted "
        f"without its tools; set {params.source} protocol.chat_template to a Jinja chat template file that "
        "renders `tools` (the model family's tool-use template); every arm then uses it"
    )


def open_index(params: Params) -> Any:
    """The retrieval index of params.yaml rag.index (arms.retrieval)."""
    from arms.retrieval import Index, IndexLoadError

    if params.rag is None:
        raise ConfigError(
            f"{params.source}: rag: missing; a retrieval arm needs rag.corpus, rag.index and rag.top_k"
        )
    try:
        return Index.load(params.rag.index)
    except IndexLoadError as e:
        raise ConfigError(str(e)) from None


def plan_run(params: Params, arm: ArmSpec, tools: Sequence[dict[str, Any]]) -> Plan:
    """Every request of the run in its fixed order (suite order, then sample index), with its seed."""
    try:
        items = load_suite(params.suite.path)
    except SuiteError as e:
        raise ConfigError(str(e)) from None
    tokenizer = load_tokenizer(params.models[arm.model], arm.model, params.source)
    chat = is_chat_model(tokenizer)
    template = chat_settings(params, chat, params.models[arm.model].display_name)
    index = open_index(params) if arm.retrieval else None
    if index is not None:
        from arms.retrieval import passages_for
    proto = params.protocol
    stop = stops_for(chat)
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
        prompt = make_prompt(tokenizer, chat, item.question, passages, tools, proto, template)
        if chat and tools and not prompts:
            check_tools_rendered(tokenizer, item.question, passages, tools, params, arm, template, prompt)
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
    return Plan(items, requests, prompts, retrieved, chat, [t["name"] for t in tools])


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
