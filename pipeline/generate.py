"""Generate one arm, resumably: the plan's requests through the engine (or the tool loop) to a file.

Requests are cut into chunks of engine.chunk_size in a fixed order; each chunk is one engine call (or one
run of the tool loop), and its finished samples are appended to <out_dir>.work/partial/<arm>.jsonl and flushed
at once (pipeline.shards). A rerun with the same fingerprint skips finished chunks and regenerates an
interrupted one whole, with the same composition, so it gets the same outputs; a shard with another
fingerprint is refused unless fresh=true. The generations file is written atomically to
<out_dir>/<arm>.json (contract.generations), then its provenance record (when, where, how fast) beside it
(contract.provenance); then the shard is removed. Nothing here judges an answer: that is the score
stage's job.

A tool arm holds one tool-server session for the run (pipeline.settings.tool_session). The tool loop hands
over each sample as it finishes, so the shard and the progress bar move per sample. The server's restarts
are recorded in the shard with the samples and when the run stops; the generations file counts the calls
answered and failed and the restarts (contract.generations.ToolCallCounts). A server that dies more often
than conf/config.yaml tool_server allows stops the run with one line and exit 2; the finished samples stay
in the shard for the resume.

The run's steps have their own modules: its settings (pipeline.settings), whether the arm is up to date
(pipeline.staleness), the shard's lines and the assembled file (pipeline.samples), parts and their merge
(pipeline.parts) and the provenance record (pipeline.provenance).
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.atomic import atomic_write
from contract.engine import Decoding, Engine, EngineInfo, GenRequest
from contract.files import PathCheckError
from contract.generations import dump_generations
from contract.provenance import Provenance, provenance_path
from pipeline.config import ConfigError, Params
from pipeline.engines import (
    TOOL_RESPONSE_TOKENS,
    EngineStartError,
    fit_context,
    get_engine,
    is_running,
    server_of,
)
from pipeline.hub import model_dir
from pipeline.parts import finish_part, parse_part, part_of, part_path, part_suffix
from pipeline.pins import PinError
from pipeline.plan import Plan, chunks, plan_run
from pipeline.provenance import record
from pipeline.samples import (
    RESTARTS_META,
    TOOL_SPECS_META,
    Outcome,
    assemble,
    run_fingerprint,
    sample_line,
    sample_validator,
    tool_counts,
)
from pipeline.settings import RunnerError, RunSettings, partial_dir, tool_session
from pipeline.shards import RunLock, Shard, ShardError, now_iso
from pipeline.staleness import RunState, reuse, staleness, up_to_date


@dataclass
class _Tally:
    """Progress of one run: tokens generated, finished items, regenerated samples that differ."""

    items: int = 0
    tokens: int = 0
    differ: int = 0
    latencies: list[float] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)


# The shard's meta key of a tool arm's server restarts, summed over every run that wrote to the shard.


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


def context_needed(plan: Plan, proto: Any, arm: ArmSpec) -> int:
    """Tokens one sequence of this run may need: its longest prompt, the budget, and for a tool arm room
    for the tool responses the harness appends (pipeline.engines.TOOL_RESPONSE_TOKENS per answered call)."""
    tools = proto.max_tool_calls * TOOL_RESPONSE_TOKENS if arm.tools else 0
    return plan.longest_prompt + proto.max_tokens + tools


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


def start_engine(
    cfg: dict[str, Any], arm: str, model: str, revision: str | None
) -> tuple[Engine, float | None]:
    """The engine for model (the running one if it fits) and its start time (None: reused); says which."""
    if is_running(cfg, model, revision):
        print(f"run_arm: {arm}: reusing the {cfg['name']} engine on {model}", flush=True)
        return get_engine(cfg, model, revision), None
    length = cfg.get("max_model_len")
    context = f" (max_model_len {length})" if isinstance(length, int) else ""
    print(f"run_arm: {arm}: starting the {cfg['name']} engine on {model}{context}", flush=True)
    t0 = time.perf_counter()
    engine = get_engine(cfg, model, revision)
    return engine, time.perf_counter() - t0


def run(
    settings: RunSettings,
    engine: Engine | None = None,
    arm: ArmSpec | None = None,
    params: Params | None = None,
) -> Path:
    """Generate (or finish) one arm's generations file and return its path; raise on bad input.

    engine: an engine already started with settings.engine (tests, benchmarks); by default the runner starts
    one (or reuses the one it started for the previous arm of a multirun) once there is work to do.
    arm, params: the arm and params.yaml when the caller has read them already.
    A second run of the same arm (and part) into the same out_dir is refused while this one holds its lock.
    """
    part = parse_part(settings.part)
    # Every check of the inputs comes first: a refused run writes nothing, not even its lock.
    state = staleness(settings, part, arm, params)
    if state.stale is None:
        return reuse(state)
    lock = partial_dir(settings.out_dir) / f"{settings.arm}{part_suffix(part)}.lock"
    with RunLock(lock, f"arm {settings.arm!r}{'' if part is None else f' part {settings.part}'}"):
        # A run of the same arm may have finished it between the check above and the lock.
        if not settings.force and part is None and up_to_date(state.dest, state.inputs) is None:
            print(f"run_arm: {settings.arm}: up to date (another run just wrote {state.dest})")
            return state.dest
        return _run(state, engine)


def _run(state: RunState, engine: Engine | None) -> Path:
    arm, params, pins, settings, part = state.arm, state.params, state.pins, state.settings, state.part
    dest = state.dest
    print(f"run_arm: {arm.name}: generating ({state.stale})", flush=True)
    ref = params.models[arm.model]
    proto = params.protocol
    decoding = Decoding(temperature=proto.temperature, top_p=proto.top_p)
    engine_start_s: float | None = None
    tools_cm = tool_session(settings, arm.name) if arm.tools else nullcontext(None)
    with tools_cm as tools_client:
        specs: list[dict[str, Any]] = []
        if tools_client is not None:
            from arms.tools.session import tool_specs

            specs = tool_specs(tools_client)
        plan = plan_run(params, arm, specs)
        if part is not None:
            plan = part_of(plan, *part)
        todo = chunks(plan.requests, int(settings.engine["chunk_size"]))
        fingerprint = run_fingerprint(arm, params, pins, settings.engine, plan, part)
        shard_path = partial_dir(settings.out_dir) / f"{arm.name}{part_suffix(part)}.jsonl"
        if part is not None and part_path(settings.out_dir, arm.name, part).is_file():
            print(f"run_arm: {arm.name}: part {part[0]}/{part[1]} already generated")
            return part_path(settings.out_dir, arm.name, part)
        shard = Shard(shard_path, fingerprint, fresh=settings.fresh, validate=sample_validator(plan))
        if part is not None and arm.tools and TOOL_SPECS_META not in shard.meta:
            shard.set_meta(TOOL_SPECS_META, specs)  # the merge plans the arm with these, without a server
        pending = [c for c in todo if any(r.key not in shard.records for r in c)]
        if pending:
            if engine is None:
                # A hub model runs from its cached snapshot: the engine never reaches the hub.
                where = model_dir(ref, arm.model, params.source)
                cfg = fit_context(
                    server_of(settings.engine, arm.model), where, context_needed(plan, proto, arm)
                )
                engine, engine_start_s = start_engine(cfg, arm.name, where, None)
            # The engine reads the prompts as this plan made them: chat prompts hold their own BOS token.
            if hasattr(engine, "chat"):
                engine.chat = plan.chat  # type: ignore[attr-defined]
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
                # The whole chunk is generated even if part of it is on disk: same batch, same outputs. A
                # served engine's batches are the server's, which no rerun reproduces: only what is missing.
                if getattr(engine, "resumes_per_sample", False):
                    chunk = [r for r in chunk if r.key not in shard.records]
                generate_chunk(engine, chunk, decoding, tools_client, proto.max_tool_calls, on_outcome)
                shard.sync()
        except BaseException as e:
            bar.close()
            # Closing syncs the shard, which fails again on a full disk: say so under the first error
            # instead of raising a second one over it.
            try:
                record_restarts()
                shard.close()
            except OSError as again:
                e.add_note(f"closing {shard.path} failed too: {again}")
            raise
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
    generate_s = time.perf_counter() - tally.t0
    if part is not None:
        return finish_part(shard, settings.out_dir, arm.name, part, engine_start_s, generate_s, tally.tokens)
    counts = tool_counts(shard.records, int(shard.meta.get(RESTARTS_META, 0))) if arm.tools else None
    if counts is not None and counts.failed:
        print(
            f"run_arm: warning: {counts.failed} of {counts.answered + counts.failed} tool calls of "
            f"{arm.name} failed (the tool server did not answer them; {counts.restarts} restarts); they are "
            "marked failed in the generations, and the arm comparison leaves the arm out above "
            "params.yaml analysis.max_failed_tool_calls",
            file=sys.stderr,
        )
    gens = assemble(plan, shard.records, params, arm, pins, info, state.inputs, counts)
    text = dump_generations(gens)
    atomic_write(dest, text)
    prov = record(
        arm.name,
        text,
        info,
        host=platform.node(),
        started_at=shard.started_at,
        finished_at=now_iso(),
        engine_start_s=engine_start_s,
        generate_s=generate_s,
        samples=len(plan.requests),
        samples_resumed=resumed,
        gen_tokens=tally.tokens,
        latencies=tally.latencies,
    )
    atomic_write(provenance_path(dest), prov.model_dump_json(indent=1) + "\n")
    shard.remove()
    print(summary_line(prov, dest), flush=True)
    return dest


def summary_line(prov: Provenance, dest: Path) -> str:
    """One line on what a run did: samples, engine, device, start time, throughput, the file written."""
    e = prov.engine
    start = f"engine start {prov.engine_start_s:.1f} s, " if prov.engine_start_s is not None else ""
    resumed = f" ({prov.samples_resumed} resumed)" if prov.samples_resumed else ""
    # A server someone else runs has no device or dtype the runner knows: its host instead.
    on = ", ".join(str(x) for x in (e.version or e.name, e.device or e.server, e.dtype) if x is not None)
    return (
        f"run_arm: {prov.arm}: {prov.samples} samples{resumed} on {on}; "
        f"{start}generation {prov.generate_s:.1f} s, {prov.tokens_per_s:.0f} tok/s; "
        f"wrote {dest}"
    )


KNOWN_ERRORS = (RunnerError, ConfigError, PinError, ShardError, EngineStartError, PathCheckError)
