"""What a run's shard holds and what its generations file is made of.

A run's fingerprint (what a shard must have been started with to be continued), the shard line of one
finished sample and the check every line must pass, and the arm's Generations assembled from the samples of
a shard (or of the parts of a sharded run) in suite order, with a tool arm's call counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from contract.arm import ArmSpec
from contract.engine import EngineInfo, GenRequest
from contract.generations import (
    Generations,
    GenItem,
    GenSample,
    RetrievalSettings,
    ToolCallCounts,
    ToolCallRecord,
    count_tool_calls,
    prompt_sha256,
)
from pipeline.config import Params
from pipeline.engines.settings import EngineSettings
from pipeline.plan import Plan, requests_sha256

# The shard's meta key of a tool arm's server restarts, summed over every run that wrote to the shard.
RESTARTS_META = "tool_server_restarts"
# The meta key of a part's tool specs: what its prompts showed, so that the merge plans without a server.
TOOL_SPECS_META = "tool_specs"


@dataclass
class Outcome:
    """What generation gave one request, whether through one engine call or the tool loop."""

    text: str
    finish_reason: str
    prompt_tokens: int
    gen_tokens: int
    rounds: int
    tool_calls: list[ToolCallRecord] | None


def run_fingerprint(
    arm: ArmSpec,
    params: Params,
    pins: dict[str, str],
    engine: EngineSettings,
    plan: Plan,
    part: tuple[int, int] | None,
) -> dict[str, Any]:
    """What a shard must have been started with to be continued: settings, pins and the exact requests."""
    fingerprint = {
        "arm": arm.model_dump(),
        "protocol": params.protocol.model_dump(),
        "pins": pins,
        # The log level changes what is printed, not what is generated: a resume may change it.
        "engine": engine.record(),
        "requests_sha256": requests_sha256(plan.requests),
        "tools": plan.tool_names,
    }
    if part is not None:
        fingerprint["part"] = list(part)
    return fingerprint


def sample_validator(plan: Plan) -> Callable[[Mapping[str, Any]], str | None]:
    """What every shard line of this run must be: a request of the plan, with its seed, typed as a sample."""
    seeds = {r.key: r.seed for r in plan.requests}

    def check(rec: Mapping[str, Any]) -> str | None:
        key = (rec.get("item_id"), rec.get("index"))
        if key not in seeds:
            return f"sample {key[1]!r} of item {key[0]!r} is not a request of this run"
        if rec.get("seed") != seeds[key]:  # type: ignore[index]
            return f"seed: is {rec.get('seed')!r}, this sample's seed is {seeds[key]}"  # type: ignore[index]
        try:
            GenSample.model_validate({k: v for k, v in rec.items() if k != "item_id"})
        except ValidationError as e:
            err = e.errors()[0]
            return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
        return None

    return check


def sample_line(request: GenRequest, out: Outcome, tool_arm: bool) -> dict[str, Any]:
    """The shard line of one finished sample: its GenSample fields plus item_id.

    A tool call's latency is wall time, different on every rerun: it goes to the provenance record, never
    into the generations, which a rerun must reproduce byte for byte.
    """
    calls = [c.model_copy(update={"latency_s": None}) for c in out.tool_calls or []]
    rec = GenSample(
        index=request.key[1],
        seed=request.seed,
        text=out.text,
        finish_reason=out.finish_reason,
        prompt_tokens=out.prompt_tokens,
        gen_tokens=out.gen_tokens,
        rounds=out.rounds,
        tool_calls=calls if tool_arm else None,
    )
    return {"item_id": request.key[0], **rec.model_dump(mode="json", exclude_none=True)}


def build_generations(
    plan: Plan,
    records: Mapping[tuple[str, int], dict[str, Any]],
    params: Params,
    arm: ArmSpec,
    pins: dict[str, str],
    engine_info: EngineInfo,
    inputs: str | None = None,
    tool_calls: ToolCallCounts | None = None,
) -> Generations:
    """The arm's generations from the shard's samples, in suite order (tool_calls: a tool arm's counts)."""
    k = params.protocol.k
    items = []
    for item in plan.items:
        samples = []
        for j in range(k):
            rec = dict(records[(item.item_id, j)])
            rec.pop("item_id")
            samples.append(GenSample.model_validate(rec))
        prompt = plan.prompts[item.item_id]
        items.append(
            GenItem(
                item_id=item.item_id,
                prompt=prompt,
                prompt_sha256=prompt_sha256(prompt),
                retrieved=plan.retrieved.get(item.item_id),
                samples=samples,
            )
        )
    return Generations(
        arm=arm,
        model=params.models[arm.model].display_name,
        chat=plan.chat,
        tools=plan.tool_names,
        protocol=params.protocol,
        pins=pins,
        engine=engine_info,
        retrieval=(
            RetrievalSettings(top_k=params.rag.top_k, order=params.rag.order)
            if arm.retrieval and params.rag is not None
            else None
        ),
        inputs_sha256=inputs,
        tool_calls=tool_calls,
        items=items,
    )


def tool_counts(records: Mapping[tuple[str, int], dict[str, Any]], restarts: int) -> ToolCallCounts:
    """A tool arm's counts: its samples' call records, and the restarts of every run that made them."""
    calls = (ToolCallRecord.model_validate(c) for r in records.values() for c in r.get("tool_calls", []))
    return count_tool_calls(calls, restarts)
