"""The generations file: what one arm's generate stage produced, before any scoring.

    generations/<arm>.json
        {"format_version": 2, "content_sha256": "...",
         "arm": {...}, "model": "...", "chat": false, "tools": [...],
         "protocol": {...}, "pins": {...}, "engine": {...}, "retrieval": {...} | absent,
         "inputs_sha256": "...",
         "tool_calls": {"answered": ..., "failed": ..., "restarts": ...} | absent,
         "items": [{"item_id": "...", "prompt": "...", "prompt_sha256": "...", "retrieved": [...] | absent,
                    "samples": [{"index": 0, "seed": ..., "text": "...", "finish_reason": "stop",
                                 "prompt_tokens": ..., "gen_tokens": ..., "rounds": 1,
                                 "tool_calls": [...] | absent}, ...]}, ...]}

The prompt is stored once per item (every sample of an item has the same prompt) with its sha256, so a
reader can check what the model was asked, and that a chat template or the tool schemas reached it. The
scorer (scoring/) turns this file and the suite into the EvalLog; nothing in it depends on answers. The
runner writes no wall-clock time here (contract.provenance holds those), so a rerun reproduces the file
byte for byte; `started_at` and `finished_at` are for generations made elsewhere that carry them.

A tool arm's file counts its tool calls (`tool_calls`): a call the tool server could not answer (it died
or hung twice, once after a restart) is marked `failed: true` in its record and counted as failed, so an
arm whose tools broke down says so instead of passing for an arm whose model used them badly.

`content_sha256` seals the file as its writer made it, as `check` seals each shard line: the sha256 of the
file's text without the seal's own line, so of the run's fingerprint (`inputs_sha256`) and everything the
run produced (samples, prompts, passages, counts, engine). `dump_generations` writes it on the second line
and `load_generations` checks it on the bytes read (about 1 ms for a demo arm), so a hand edit that still
validates (a sample's text changed, samples copied from another arm's file) is refused: the runner
finds the file stale and regenerates it (`run_arms --status` says so) and the score stage refuses it in one
line, never scores it. It guards against edits, not against a writer who recomputes it on purpose: a file
made elsewhere is sealed by writing it with `dump_generations`. A format 1 file without a seal (written
before the seal) is treated the same way: stale for the runner, refused by scoring; one that carries a
seal (format 2 only added it) is checked like a format 2 file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from contract.arm import ArmSpec
from contract.digest import text_sha256
from contract.engine import EngineInfo
from contract.names import Name
from contract.protocol import Protocol
from contract.validation import describe_error

GENERATIONS_FORMAT = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrievedDoc(_Strict):
    """One passage a retrieval arm put in front of the question, with its text as the prompt shows it."""

    doc_id: str
    score: float
    rank: int | None = None
    title: str | None = None
    text: str | None = None


class ToolCallRecord(_Strict):
    """One tool call of a sample: what the model asked for and what came back.

    latency_s is for records made elsewhere: the runner keeps latencies in the provenance record, since wall
    time would change the generations on every rerun. failed is true when the tool server could not answer
    the call (the harness failed, not the model); it is absent otherwise, so records of answered calls stay
    as they were.
    """

    name: str | None = None
    arguments: Any = None
    raw: str | None = None
    result: Any = None
    error: str | None = None
    latency_s: float | None = None
    round: int | None = None
    failed: bool | None = None


class ToolCallCounts(_Strict):
    """How an arm's tool calls fared: answered by the harness, failed, and tool-server restarts.

    answered: every recorded call the harness dealt with (a result, or an error about the call itself:
    malformed, unknown tool, bad arguments, a tool's own error, over the cap); failed: calls the tool server
    could not answer (marked failed in their records); restarts: tool-server restarts while generating the
    arm (a server that died and was restarted before its call was retried leaves that call answered).
    """

    answered: int = Field(ge=0)
    failed: int = Field(ge=0)
    restarts: int = Field(ge=0)

    @property
    def failed_share(self) -> float:
        """Failed calls as a share of all calls (0 when there were none)."""
        total = self.answered + self.failed
        return self.failed / total if total else 0.0


def count_tool_calls(records: Iterable[ToolCallRecord], restarts: int) -> ToolCallCounts:
    """The counts of an arm from its tool-call records and the server restarts of its run."""
    answered = failed = 0
    for r in records:
        if r.failed:
            failed += 1
        else:
            answered += 1
    return ToolCallCounts(answered=answered, failed=failed, restarts=restarts)


class RetrievalSettings(_Strict):
    """How a retrieval arm put passages before the question (params.yaml rag)."""

    top_k: int = Field(ge=1)
    order: str


class GenSample(_Strict):
    """One sample as the engine (or the tool loop) produced it."""

    index: int = Field(ge=0)
    seed: int
    text: str
    finish_reason: str
    prompt_tokens: int = Field(ge=0)
    gen_tokens: int = Field(ge=0)
    rounds: int = Field(default=1, ge=1)
    tool_calls: list[ToolCallRecord] | None = None
    # The mean log-probability of the sample's generated tokens, when the engine was asked for them
    # (protocol.logprobs): the calibration's confidence then weighs each answer by it.
    mean_logprob: float | None = Field(default=None, le=0)


def prompt_sha256(prompt: str) -> str:
    """sha256 of a prompt's UTF-8 bytes."""
    return text_sha256(prompt)


class GenItem(_Strict):
    """One suite item: its prompt (once), the passages it was given, and its k samples in index order."""

    item_id: str = Field(min_length=1)
    prompt: str
    prompt_sha256: str
    retrieved: list[RetrievedDoc] | None = None
    samples: list[GenSample]

    @model_validator(mode="after")
    def _consistent(self) -> GenItem:
        if prompt_sha256(self.prompt) != self.prompt_sha256:
            raise ValueError("prompt_sha256: is not the sha256 of prompt (the prompt was edited?)")
        for j, s in enumerate(self.samples):
            if s.index != j:
                raise ValueError(f"samples[{j}].index: is {s.index}; samples must be in index order 0..k-1")
        return self


class Generations(_Strict):
    """Everything one arm's generation produced, with the settings and pins it ran under."""

    format_version: Literal[1, 2] = GENERATIONS_FORMAT
    arm: ArmSpec
    model: Name
    chat: bool
    tools: list[str] = Field(default_factory=list)
    protocol: Protocol
    pins: dict[str, str] = Field(default_factory=dict)
    engine: EngineInfo
    retrieval: RetrievalSettings | None = None
    # sha256 of everything the generation read (the arm's pin file, the arm, the protocol, the engine
    # settings): a later run with the same inputs finds the file up to date and starts no engine.
    inputs_sha256: str | None = None
    # The file's seal (module docstring): absent in memory; dump_generations writes it as the second line.
    content_sha256: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    tool_calls: ToolCallCounts | None = None
    items: list[GenItem]

    @model_validator(mode="after")
    def _consistent(self) -> Generations:
        seen: set[str] = set()
        for it in self.items:
            if it.item_id in seen:
                raise ValueError(f"item {it.item_id!r}: item_id: duplicate item id")
            seen.add(it.item_id)
            if len(it.samples) != self.protocol.k:
                raise ValueError(
                    f"item {it.item_id!r}: samples: has {len(it.samples)}, protocol.k is {self.protocol.k}"
                )
        if self.tool_calls is not None:
            records = (c for it in self.items for s in it.samples for c in s.tool_calls or [])
            check_tool_counts(self.tool_calls, count_tool_calls(records, self.tool_calls.restarts))
        return self


def check_tool_counts(stated: ToolCallCounts, recorded: ToolCallCounts) -> None:
    """Refuse counts that disagree with the records they count (a hand edit, or records dropped)."""
    for name in ("answered", "failed"):
        if getattr(stated, name) != getattr(recorded, name):
            raise ValueError(
                f"tool_calls.{name}: is {getattr(stated, name)}, the samples' tool-call records give "
                f"{getattr(recorded, name)}"
            )


class GenerationsError(ValueError):
    """A generations file that cannot be read or does not validate; the message names file and field."""


class StaleGenerations(GenerationsError):
    """A generations file that validates but is not what its run wrote (edited, or older than the seal)."""


_SEALED_HEAD = f'{{\n "format_version": {GENERATIONS_FORMAT},\n'


def _seal_line(seal: str) -> str:
    return f' "content_sha256": "{seal}",\n'


def content_sha256(body: str | bytes) -> str:
    """The seal of a generations file: sha256 of its text as dump_generations writes it, without the seal
    line (so it covers `inputs_sha256`, the run's fingerprint, and everything the run produced)."""
    return hashlib.sha256(body.encode("utf-8") if isinstance(body, str) else body).hexdigest()


def check_seal(gens: Generations, data: bytes, where: str | Path) -> None:
    """Refuse generations whose text is not what their writer sealed (StaleGenerations naming where)."""
    if gens.content_sha256 is None:
        raise StaleGenerations(
            f"{where}: format_version: {gens.format_version} without content_sha256, written before "
            "generations were sealed; regenerate the arm (dvc repro, or python -m pipeline.run_arm arm=...)"
        )
    # The seal is checked on the bytes (a sha256 of the file, about 1 ms), not on a re-serialised model
    # (ten times that, per file, every time a file is scored or found up to date).
    # A format 1 file that carries a seal (format 2 only added the seal) is checked the same way, on its
    # own first line: what its writer sealed is read, whatever format it names.
    head = f'{{\n "format_version": {gens.format_version},\n'.encode()
    line = _seal_line(gens.content_sha256).encode()
    body = head + data[len(head) + len(line) :] if data.startswith(head + line) else None
    if body is None or content_sha256(body) != gens.content_sha256:
        raise StaleGenerations(
            f"{where}: content_sha256: does not match the file's content (edited after it was written: a "
            "sample's text, a count, samples of another run); regenerate the arm (python -m "
            "pipeline.run_arm arm=... force=true) instead of editing it"
        )


def load_generations(path: str | Path) -> Generations:
    """Read, validate and check the seal of a generations file; GenerationsError naming the file and field."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise GenerationsError(f"{p}: generations file not found") from None
    except IsADirectoryError:
        raise GenerationsError(f"{p}: is a folder; give a generations file (<arm>.json)") from None
    try:
        gens = Generations.model_validate_json(data)
    except ValidationError as e:
        try:
            raw = json.loads(data)
        except json.JSONDecodeError as je:
            raise GenerationsError(f"{p}: not JSON (line {je.lineno}, column {je.colno}): {je.msg}") from None
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise GenerationsError(f"{p}: {describe_error(e.errors()[0], raw)}{more}") from None
    check_seal(gens, data, p)
    return gens


def dump_generations(gens: Generations) -> str:
    """The JSON text of a generations file, sealed: format 2 with content_sha256 on its second line."""
    unsealed = gens.model_copy(update={"format_version": GENERATIONS_FORMAT, "content_sha256": None})
    body = unsealed.model_dump_json(indent=1, exclude_none=True) + "\n"
    return _SEALED_HEAD + _seal_line(content_sha256(body)) + body.removeprefix(_SEALED_HEAD)
