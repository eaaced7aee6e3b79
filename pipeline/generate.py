"""Generate one arm, resumably: the plan's requests through the engine (or the tool loop) to a file.

Requests are cut into chunks of engine.chunk_size in a fixed order; each chunk is one engine call (or one
run of the tool loop), and its finished samples are appended to <out_dir>/.partial/<arm>.jsonl and flushed
at once (pipeline.shards). A rerun with the same fingerprint skips finished chunks and regenerates an
interrupted one whole, with the same composition, so it gets the same outputs; a shard with another
fingerprint is refused unless fresh=true. The generations file is written atomically to
<out_dir>/<arm>.json (contract.generations), then its provenance record (when, where, how fast) beside it
(contract.provenance); then the shard is removed. Nothing here judges an answer: that is the score
stage's job.

A tool arm holds one tool-server session for the run (open_tools). The tool loop hands over each sample as
it finishes, so the shard and the progress bar move per sample. The server's restarts are recorded in the
shard with the samples and when the run stops; the generations file counts the calls answered and failed
and the restarts (contract.generations.ToolCallCounts). A server that dies more often than conf/config.yaml
tool_server allows stops the run with one line and exit 2; the finished samples stay in the shard for the
resume.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.atomic import atomic_write
from contract.digest import text_sha256
from contract.engine import Decoding, Engine, EngineInfo, GenRequest
from contract.generations import (
    Generations,
    GenItem,
    GenSample,
    RetrievalSettings,
    ToolCallCounts,
    ToolCallRecord,
    count_tool_calls,
    dump_generations,
    prompt_sha256,
)
from contract.provenance import Provenance, provenance_path
from pipeline.config import (
    CONF_DIR,
    ConfigError,
    Params,
    engine_config,
    load_arm,
    load_params,
    tool_server_settings,
)
from pipeline.engines import get_engine
from pipeline.pins import PinError, check_pins
from pipeline.plan import Plan, chunks, plan_run, requests_sha256
from pipeline.shards import Shard, ShardError, now_iso


class RunnerError(RuntimeError):
    """Bad input for the runner; the message names the file, the field and the fix."""


@dataclass
class RunSettings:
    """Everything one run needs besides params.yaml (what Hydra composes from conf/)."""

    arm: str
    engine: dict[str, Any] = field(default_factory=engine_config)
    params: Path = Path("params.yaml")
    pins: Path = Path("pins")
    out_dir: Path = Path("generations")
    fresh: bool = False
    progress: bool = True
    arm_node: dict[str, Any] | None = None
    conf_dir: Path = CONF_DIR
    tool_server: dict[str, Any] | None = None  # None: conf/config.yaml tool_server


@dataclass
class Outcome:
    """What generation gave one request, whether through one engine call or the tool loop."""

    text: str
    finish_reason: str
    prompt_tokens: int
    gen_tokens: int
    rounds: int
    tool_calls: list[ToolCallRecord] | None


@dataclass
class _Tally:
    """Progress of one run: tokens generated, finished items, regenerated samples that differ."""

    items: int = 0
    tokens: int = 0
    differ: int = 0
    latencies: list[float] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)


# The shard's meta key of a tool arm's server restarts, summed over every run that wrote to the shard.
RESTARTS_META = "tool_server_restarts"
# The client waits this much longer than the server's own tool timeout before it counts the server as hung.
_HUNG_AFTER_TIMEOUT_S = 20.0


@contextmanager
def open_tools(settings: RunSettings, arm: str) -> Iterator[Any]:
    """One MCP tool-server session for the whole run (arms.tools.client.ToolClient), under the restart budget.

    A server gone beyond the budget (ToolServerError out of the body) becomes the one-line RunnerError.
    """
    from arms.tools.client import DEFAULT_COMMAND, ToolClient, ToolServerError

    cfg = tool_server_settings(settings.tool_server, settings.conf_dir)
    try:
        client = ToolClient(
            (*DEFAULT_COMMAND, "--tool-timeout-s", str(cfg.tool_timeout_s)),
            call_timeout_s=cfg.tool_timeout_s + _HUNG_AFTER_TIMEOUT_S,
            max_restarts=cfg.max_restarts,
            restart_window=cfg.restart_window,
        )
        client.start()
    except ToolServerError as e:
        raise RunnerError(f"tool server (python -m arms.tools.server) did not start: {e}") from None
    try:
        yield client
    except ToolServerError as e:
        shard = settings.out_dir / ".partial" / f"{arm}.jsonl"
        raise RunnerError(
            f"tool server died {client.deaths} times; rerun `python -m pipeline.run_arm arm={arm}` to resume "
            f"({e}; the finished samples are kept in {shard}; conf/config.yaml tool_server sets the budget)"
        ) from None
    finally:
        client.close()


def tool_specs(client: Any) -> list[dict[str, Any]]:
    """The server's tools, sorted by name (the order the demo models were trained on)."""
    return sorted(client.list_tools(), key=lambda t: t["name"])


def generate_chunk(
    engine: Engine,
    chunk: Sequence[GenRequest],
    decoding: Decoding,
    tools_client: Any,
    max_tool_calls: int,
    on_outcome: Callable[[GenRequest, Outcome], None],
) -> None:
    """Generate one chunk (one engine call, or the tool loop for tool arms); on_outcome gets each sample."""
    by_key = {r.key: r for r in chunk}
    if tools_client is not None:
        from arms.loop import LoopOutcome, run_tool_loop

        def finished(o: LoopOutcome) -> None:
            on_outcome(
                by_key[o.key],
                Outcome(o.text, o.finish_reason, o.prompt_tokens, o.gen_tokens, o.rounds, o.tool_calls),
            )

        run_tool_loop(engine, chunk, decoding, tools_client, max_tool_calls, on_outcome=finished)
        return

    def handle(res: Any) -> None:
        on_outcome(
            by_key[res.key], Outcome(res.text, res.finish_reason, res.prompt_tokens, res.gen_tokens, 1, None)
        )

    engine.generate(chunk, decoding, on_result=handle)


def check_context(engine: Engine, plan: Plan, max_tokens: int) -> None:
    """Refuse prompts that do not fit the model's context, and warn when one leaves less than max_tokens.

    vLLM would find an overlong prompt only once the engine is busy and lose the run; a prompt that fits
    but leaves less room than the budget silently makes that arm's samples shorter than the others'.
    """
    context = getattr(engine, "max_model_len", None)
    if context is None:
        return
    # +1: the BOS token the engine adds to a plain prompt.
    sizes = {item_id: engine.count_tokens(p) + 1 for item_id, p in plan.prompts.items()}
    worst = max(sizes, key=lambda i: sizes[i])
    if sizes[worst] >= context:
        raise RunnerError(
            f"item {worst!r}: its prompt is {sizes[worst]} tokens, the model's context is {context} "
            "(conf/engine/vllm.yaml max_model_len); shorten the prompt (fewer rag.top_k passages) or use a "
            "model with a longer context"
        )
    short = sorted(i for i, n in sizes.items() if n + max_tokens > context)
    if short:
        print(
            f"run_arm: warning: {len(short)} items (first {short[0]!r}) leave fewer than protocol.max_tokens "
            f"= {max_tokens} tokens of the {context}-token context after their prompt; their samples may "
            "stop early (finish_reason length)",
            file=sys.stderr,
        )


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


def _progress(total: int, done: int, arm: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=done,
        unit="sample",
        desc=f"generate@{arm}",
        disable=not enabled,
        dynamic_ncols=True,
    )


def assemble(
    plan: Plan,
    shard: Shard,
    params: Params,
    arm: ArmSpec,
    pins: dict[str, str],
    engine_info: EngineInfo,
    tool_calls: ToolCallCounts | None = None,
) -> Generations:
    """The arm's generations from the shard's samples, in suite order (tool_calls: a tool arm's counts)."""
    k = params.protocol.k
    items = []
    for item in plan.items:
        samples = []
        for j in range(k):
            rec = dict(shard.records[(item.item_id, j)])
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
        tool_calls=tool_calls,
        items=items,
    )


def tool_counts(shard: Shard) -> ToolCallCounts:
    """A tool arm's counts: its samples' call records, and the restarts of every run of its shard."""
    records = (
        ToolCallRecord.model_validate(c) for r in shard.records.values() for c in r.get("tool_calls", [])
    )
    return count_tool_calls(records, int(shard.meta.get(RESTARTS_META, 0)))


def run(settings: RunSettings, engine: Engine | None = None) -> Path:
    """Generate (or finish) one arm's generations file and return its path; raise on bad input.

    engine: an engine already started with settings.engine (tests, benchmarks); by default the runner starts
    one (or reuses the one it started for the previous arm of a multirun) once there is work to do.
    """
    arm = load_arm(settings.arm, settings.conf_dir, settings.arm_node)
    params = load_params(settings.params)
    if arm.model not in params.models:
        raise ConfigError(
            f"{settings.conf_dir / 'arm' / (arm.name + '.yaml')}: model: {arm.model!r} is not in "
            f"{settings.params} models ({', '.join(params.models)})"
        )
    pins = check_pins(params, settings.pins, arm.name, settings.conf_dir)
    ref = params.models[arm.model]
    proto = params.protocol
    decoding = Decoding(temperature=proto.temperature, top_p=proto.top_p)
    engine_start_s: float | None = None
    tools_cm = open_tools(settings, arm.name) if arm.tools else nullcontext(None)
    with tools_cm as tools_client:
        specs = tool_specs(tools_client) if tools_client is not None else []
        plan = plan_run(params, arm, specs)
        todo = chunks(plan.requests, int(settings.engine["chunk_size"]))
        fingerprint = {
            "arm": arm.model_dump(),
            "protocol": proto.model_dump(),
            "pins": pins,
            # The log level changes what is printed, not what is generated: a resume may change it.
            "engine": {k: v for k, v in settings.engine.items() if k != "log_level"},
            "requests_sha256": requests_sha256(plan.requests),
            "tools": plan.tool_names,
        }
        shard = Shard(settings.out_dir / ".partial" / f"{arm.name}.jsonl", fingerprint, fresh=settings.fresh)
        pending = [c for c in todo if any(r.key not in shard.records for r in c)]
        if pending:
            if engine is None:
                t_engine = time.perf_counter()
                engine = get_engine(settings.engine, ref.location, ref.revision)
                engine_start_s = time.perf_counter() - t_engine
            check_context(engine, plan, proto.max_tokens)
            if "engine" not in shard.meta:
                shard.set_meta("engine", engine.info.model_dump(mode="json"))
        bar = _progress(len(plan.requests), len(shard.records), arm.name, settings.progress)
        total = len(plan.items)

        def finished(item_id: str) -> bool:
            return all((item_id, j) in shard.records for j in range(proto.k))

        tally = _Tally(items=sum(finished(it.item_id) for it in plan.items))
        resumed = len(shard.records)
        restarts_before = int(shard.meta.get(RESTARTS_META, 0))

        def record_restarts() -> None:
            # In the shard, so that a resumed run still counts the earlier runs' restarts.
            restarts = restarts_before + (tools_client.restarts if tools_client is not None else 0)
            if restarts != int(shard.meta.get(RESTARTS_META, 0)):
                shard.set_meta(RESTARTS_META, restarts)

        def on_outcome(request: GenRequest, out: Outcome) -> None:
            record_restarts()
            old = shard.records.get(request.key)
            if old is not None:
                # A regenerated sample of an interrupted chunk: the one on disk stays.
                tally.differ += old.get("text") != out.text
                return
            shard.append([sample_line(request, out, arm.tools)])
            tally.latencies += [c.latency_s for c in out.tool_calls or [] if c.latency_s is not None]
            tally.tokens += out.gen_tokens
            tally.items += finished(request.key[0])
            rate = tally.tokens / max(time.perf_counter() - tally.t0, 1e-9)
            bar.set_postfix_str(f"items {tally.items}/{total}, {rate:.0f} tok/s", refresh=False)
            bar.update(1)

        try:
            for chunk in pending:
                # The whole chunk is generated even if part of it is on disk: same batch, same outputs.
                generate_chunk(engine, chunk, decoding, tools_client, proto.max_tool_calls, on_outcome)
                shard.sync()
        finally:
            bar.close()
            record_restarts()
            shard.close()
        if tools_client is not None and tools_client.dead_reason is not None:
            from arms.tools.client import ToolServerError

            # Never write the log of an arm whose tool server is gone, whatever swallowed its error.
            raise ToolServerError(tools_client.dead_reason)
        if tally.differ:
            print(
                f"run_arm: warning: {tally.differ} regenerated samples of an interrupted chunk differ from "
                f"those already in {shard.path} (kept those); the engine did not reproduce its batch",
                file=sys.stderr,
            )
    if "engine" not in shard.meta:
        raise RunnerError(f"{shard.path}: has no engine record; pass fresh=true to regenerate the arm")
    info = EngineInfo.model_validate(shard.meta["engine"])
    counts = tool_counts(shard) if arm.tools else None
    if counts is not None and counts.failed:
        print(
            f"run_arm: warning: {counts.failed} of {counts.answered + counts.failed} tool calls of "
            f"{arm.name} failed (the tool server did not answer them; {counts.restarts} restarts); they are "
            "marked failed in the generations, and the arm comparison leaves the arm out above "
            "params.yaml analysis.max_failed_tool_calls",
            file=sys.stderr,
        )
    gens = assemble(plan, shard, params, arm, pins, info, counts)
    dest = settings.out_dir / f"{arm.name}.json"
    text = dump_generations(gens)
    atomic_write(dest, text)
    generate_s = time.perf_counter() - tally.t0
    record = Provenance(
        arm=arm.name,
        generations_sha256=text_sha256(text),
        host=platform.node(),
        started_at=shard.started_at,
        finished_at=now_iso(),
        engine=info,
        engine_start_s=engine_start_s,
        generate_s=generate_s,
        samples=len(plan.requests),
        samples_resumed=resumed,
        gen_tokens=tally.tokens,
        tokens_per_s=tally.tokens / max(generate_s, 1e-9),
        tool_calls=len(tally.latencies),
        tool_latency_median_s=statistics.median(tally.latencies) if tally.latencies else None,
        tool_latency_p95_s=statistics.quantiles(tally.latencies, n=20)[-1]
        if len(tally.latencies) > 1
        else None,
    )
    atomic_write(provenance_path(dest), record.model_dump_json(indent=1) + "\n")
    shard.remove()
    return dest


KNOWN_ERRORS = (RunnerError, ConfigError, PinError, ShardError)
