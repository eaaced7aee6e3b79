"""The batched tool loop of the +tools arms: generate, execute Hermes/Qwen tool calls, continue.

    outcomes = run_tool_loop(engine, requests, decoding, tool_client, max_tool_calls, on_outcome=save)

`engine` follows contract.engine.Engine; `requests` are the round-0 GenRequests (one per item and
sample, each with its own seed and max_tokens); `tool_client` has `.call(name, arguments) -> dict`
(augment.tools.client.ToolClient). Returns one LoopOutcome per request, in request order; `on_outcome`, if
given, gets each LoopOutcome as soon as its sample finishes: a sample whose round ends without a tool call
as the engine hands that round's result over (mid-round), one that ends on a call after the round's tool
calls, so a caller can save it and count it before the slowest sample of the batch is done (a progress bar
that moves, and an ETA from samples finishing at their own pace). `on_round(round, samples)`, if given, is
told each round as it starts.

Each round generates for every still-active sample in one engine call, with the request's own stop strings
plus "</tool_call>". A round that ends in "</tool_call>" holds one call, `<tool_call>{"name": ...,
"arguments": {...}}</tool_call>`: its body is parsed with json.loads (never eval; augment.tools.strict_json:
standard JSON whose every value can be stored, so no number or string escape can crash the run) and executed
through the client, and contract.textformat.format_tool_response(result or {"error": ...}) is appended. The
next round's prompt is the original prompt + everything generated so far + the responses, and its seed is
contract.seeds.round_seed(seed, round). The engine must return text that includes the matched stop string
(the GenResult contract); a round is a tool call exactly when its text ends with "</tool_call>". Handing
outcomes over early changes nothing of the rounds: every round's batch is the same as without on_outcome.

Budget: a request's max_tokens covers the generated tokens of all its rounds together; each round may
generate only what is left (max_tokens - generated so far), and a sample with nothing left stops with
finish_reason "length". Tool responses are prompt text, not generated tokens, so they do not count against it.

Cap: at most max_tool_calls calls are answered per sample (malformed ones included: each costs a round). A
further call is recorded with an error and not executed, and the sample stops with finish_reason
"tool_limit" (so rounds <= max_tool_calls + 1). Stopping is chosen over answering the call with an error
because it keeps the rounds of every arm bounded by the protocol.

Faults are recorded in LoopOutcome.tool_calls (contract.generations.ToolCallRecord) and answered in the
transcript, never raised: a call that cannot be parsed (not JSON, nested deeper than MAX_CALL_DEPTH, not an
object with a string "name"), an unknown tool, bad arguments, a tool that raises. A client that raises
ToolCallFailed (the server could not answer this call) gives a record marked failed, answered with the
error. Any other exception of the client (its restart budget is spent) ends the loop: the outcomes already
handed to on_outcome stay the caller's. A "<tool_call>" left open when generation ends is recorded as an
unexecuted malformed call. latency_s is the wall time of the client call; it is None for calls that never
reached the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from augment.tools import strict_json
from contract.engine import Decoding, Engine, GenRequest, GenResult
from contract.generations import ToolCallRecord
from contract.seeds import round_seed
from contract.textformat import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, format_tool_response

FINISH_TOOL_LIMIT = "tool_limit"
FINISH_LENGTH = "length"
# Real calls nest two or three levels; deeper ones cannot be stored (pydantic serializes about 250 levels,
# json.loads about 1000) and are answered as malformed instead.
MAX_CALL_DEPTH = 32


class ToolCallFailed(RuntimeError):
    """Raised by a tool client when the server could not answer this call; the loop records it as failed."""


class ToolCaller(Protocol):
    """What the loop needs from a tool client."""

    def call(self, name: Any, arguments: Any) -> dict[str, Any]:
        """One tool call: a result dict or {"error": ...}; ToolCallFailed if the server cannot answer."""
        ...


@dataclass
class LoopOutcome:
    """One sample after the loop: its transcript after the prompt, token counts, and every tool call."""

    key: tuple[str, int]
    text: str
    gen_tokens: int
    prompt_tokens: int
    finish_reason: str
    rounds: int
    tool_calls: list[ToolCallRecord] = field(default_factory=list)


@dataclass
class _State:
    request: GenRequest
    text: str = ""
    gen_tokens: int = 0
    prompt_tokens: int = 0
    rounds: int = 0
    executed: int = 0
    finish_reason: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)


@dataclass(frozen=True)
class ParsedCall:
    """A tool call parsed from model text: name and arguments, or why it could not be parsed."""

    raw: str
    name: str | None = None
    arguments: Any = None
    error: str | None = None


def parse_tool_call(segment: str) -> ParsedCall:
    """Parse the last <tool_call>...</tool_call> of a segment ending in </tool_call> (json.loads only)."""
    body_end = segment.rfind(TOOL_CALL_CLOSE)
    start = segment.rfind(TOOL_CALL_OPEN, 0, body_end)
    if start < 0:
        raw = segment[max(0, body_end - 200) : body_end + len(TOOL_CALL_CLOSE)]
        return ParsedCall(raw=raw, error=f"malformed tool call: {TOOL_CALL_CLOSE} without {TOOL_CALL_OPEN}")
    raw = segment[start + len(TOOL_CALL_OPEN) : body_end].strip()
    try:
        call = strict_json.loads(raw)
    except ValueError as e:  # JSONDecodeError, NotStrictJSON, and the int-string limit of an unchecked parse
        return ParsedCall(raw=raw, error=f"malformed tool call: not JSON ({e})")
    except RecursionError:
        too_deep = True
    else:
        too_deep = _depth(call) > MAX_CALL_DEPTH
    if too_deep:
        return ParsedCall(raw=raw, error=f"malformed tool call: nested deeper than {MAX_CALL_DEPTH} levels")
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return ParsedCall(
            raw=raw,
            error='malformed tool call: expected {"name": "<tool>", "arguments": {...}} with a string name',
        )
    return ParsedCall(raw=raw, name=call["name"], arguments=call.get("arguments", {}))


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is None:
            continue
        deepest = max(deepest, d + 1)
        if deepest > MAX_CALL_DEPTH:
            return deepest
        stack.extend((c, d + 1) for c in children)
    return deepest


def _execute(
    call: ParsedCall, tool_client: ToolCaller, round_index: int
) -> tuple[ToolCallRecord, dict[str, Any]]:
    """Run a parsed call (or not, if it is malformed) and return its record and the payload the model sees."""
    if call.error is not None:
        record = ToolCallRecord(raw=call.raw, error=call.error, round=round_index)
        return record, {"error": call.error}
    t0 = time.perf_counter()
    failed = None
    try:
        payload = tool_client.call(call.name, call.arguments)
    except ToolCallFailed as e:
        payload, failed = {"error": str(e)}, True
    latency = time.perf_counter() - t0
    if not isinstance(payload, dict):
        payload = {"error": f"tool client returned {type(payload).__name__}, not a JSON object"}
    if "error" in payload:
        record = ToolCallRecord(
            name=call.name,
            arguments=call.arguments,
            raw=call.raw,
            error=str(payload["error"]),
            latency_s=latency,
            round=round_index,
            failed=failed,
        )
    else:
        record = ToolCallRecord(
            name=call.name,
            arguments=call.arguments,
            raw=call.raw,
            result=payload,
            latency_s=latency,
            round=round_index,
        )
    return record, payload


def _stops(request: GenRequest) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*request.stop, TOOL_CALL_CLOSE)))


def run_tool_loop(
    engine: Engine,
    requests: Sequence[GenRequest],
    decoding: Decoding,
    tool_client: ToolCaller,
    max_tool_calls: int,
    on_outcome: Callable[[LoopOutcome], None] | None = None,
    on_round: Callable[[int, int], None] | None = None,
) -> list[LoopOutcome]:
    """Run every request through generate / call / continue rounds; one LoopOutcome per request, in order.

    on_outcome gets each sample's LoopOutcome as soon as the sample finishes; on_round each round's index
    and number of samples as it starts.
    """
    if max_tool_calls < 0:
        raise ValueError(f"max_tool_calls must be >= 0, got {max_tool_calls}")
    states = [_State(r) for r in requests]
    outcomes: dict[int, LoopOutcome] = {}

    def finish(i: int, s: _State, reason: str) -> None:
        s.finish_reason = reason
        outcomes[i] = _outcome(s)
        if on_outcome is not None:
            on_outcome(outcomes[i])

    active = list(enumerate(states))
    round_index = 0
    while active:
        batch = [_round_request(s, round_index) for _, s in active]
        if on_round is not None:
            on_round(round_index, len(batch))
        by_key = {s.request.key: (i, s) for i, s in active}

        def ended(res: GenResult, r: int = round_index, pending: dict[Any, Any] = by_key) -> None:
            # A round without a tool call ends its sample: finished now, not after the slowest of the batch
            # (_advance runs no tool for it, so the engine's step is not held up).
            if not res.text.endswith(TOOL_CALL_CLOSE) and res.key in pending:
                i, s = pending.pop(res.key)
                finish(i, s, str(_advance(s, res, r, tool_client, max_tool_calls)))

        results = engine.generate(batch, decoding, on_result=ended)
        if len(results) != len(batch):
            raise RuntimeError(f"engine returned {len(results)} results for {len(batch)} requests")
        still: list[tuple[int, _State]] = []
        for (i, s), res in zip(active, results, strict=True):
            if i in outcomes:
                continue  # finished as its result arrived
            reason = _advance(s, res, round_index, tool_client, max_tool_calls)
            if reason is None:
                still.append((i, s))
            else:
                finish(i, s, reason)
        active = still
        round_index += 1
    return [outcomes[i] for i in range(len(states))]


def _round_request(s: _State, round_index: int) -> GenRequest:
    """A sample's request for this round: its prompt and text so far, the round's seed, the budget left."""
    return GenRequest(
        key=s.request.key,
        prompt=s.request.prompt + s.text,
        seed=round_seed(s.request.seed, round_index),
        max_tokens=s.request.max_tokens - s.gen_tokens,
        stop=_stops(s.request),
    )


def _advance(
    s: _State, res: GenResult, round_index: int, tool_client: ToolCaller, max_tool_calls: int
) -> str | None:
    """Take one round's result into a sample: run the tool call it ends with, or say why it finished (its
    finish reason; None: it goes on to the next round)."""
    if round_index == 0:
        s.prompt_tokens = res.prompt_tokens
    s.text += res.text
    s.gen_tokens += res.gen_tokens
    s.rounds += 1
    if not res.text.endswith(TOOL_CALL_CLOSE):
        last_open, last_close = res.text.rfind(TOOL_CALL_OPEN), res.text.rfind(TOOL_CALL_CLOSE)
        if last_open > last_close:
            s.tool_calls.append(
                ToolCallRecord(
                    raw=res.text[last_open + len(TOOL_CALL_OPEN) :],
                    error=f"malformed tool call: not closed with {TOOL_CALL_CLOSE} "
                    f"(generation ended: {res.finish_reason})",
                    round=round_index,
                )
            )
        return res.finish_reason
    call = parse_tool_call(res.text)
    if s.executed >= max_tool_calls:
        s.tool_calls.append(
            ToolCallRecord(
                name=call.name,
                arguments=call.arguments,
                raw=call.raw,
                error=f"max_tool_calls ({max_tool_calls}) reached; call not executed",
                round=round_index,
            )
        )
        return FINISH_TOOL_LIMIT
    record, payload = _execute(call, tool_client, round_index)
    s.tool_calls.append(record)
    s.executed += 1
    s.text += format_tool_response(payload)
    if s.gen_tokens >= s.request.max_tokens:
        return FINISH_LENGTH
    return None


def _outcome(s: _State) -> LoopOutcome:
    return LoopOutcome(
        key=s.request.key,
        text=s.text,
        gen_tokens=s.gen_tokens,
        prompt_tokens=s.prompt_tokens,
        finish_reason=s.finish_reason or "stop",
        rounds=s.rounds,
        tool_calls=s.tool_calls,
    )
