"""Generate one arm, resumably: the plan's requests through the engine (or the tool loop) to a file.

Requests are cut into chunks of engine.chunk_size in a fixed order; each chunk is one engine call (or one
run of the tool loop), and its finished samples are appended to <out_dir>.work/partial/<arm>.jsonl and flushed
at once (pipeline.shards). A rerun with the same fingerprint skips finished chunks and regenerates an
interrupted one whole, with the same composition, so it gets the same outputs; a shard with another
fingerprint is refused unless fresh=true. The generations file is written atomically to
<out_dir>/<arm>.json (contract.generations), then its provenance record (when, where, how fast) beside it
(contract.provenance); then the shard is removed. Nothing here judges an answer: that is the score
stage's job.

A tool arm holds one tool-server session for the run (pipeline.resolve.tool_session). The tool loop hands
over each sample as it finishes, so the shard and the progress bar move per sample. The server's restarts
are recorded in the shard with the samples and when the run stops; the generations file counts the calls
answered and failed and the restarts (contract.generations.ToolCallCounts). A server that dies more often
than conf/config.yaml tool_server allows stops the run with one line and exit 2; the finished samples stay
in the shard for the resume.

The run's steps have their own modules: its settings (pipeline.settings), its configuration resolved once
(pipeline.resolve), whether the arm is up to date (pipeline.staleness), its plan (pipeline.plan), the
record of its samples, from the shard to the generations file and its provenance (pipeline.recorder), the
shard's lines (pipeline.samples) and parts and their merge (pipeline.parts). `generate` is plan, pending,
engine, loop.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.engine import Decoding, Engine, GenRequest
from contract.files import PathCheckError
from pipeline.config import ConfigError
from pipeline.engines import (
    TOOL_RESPONSE_TOKENS,
    EngineStartError,
    fit_context,
    get_engine,
    is_running,
    server_of,
)
from pipeline.parts import part_of
from pipeline.pins import PinError
from pipeline.plan import Plan, chunks, plan_run
from pipeline.recorder import GenerationRecorder
from pipeline.resolve import ResolvedRun, resolve, tool_session
from pipeline.samples import Outcome
from pipeline.settings import RunnerError, RunSettings, part_path
from pipeline.shards import RunLock, ShardError
from pipeline.staleness import reuse, up_to_date, why_stale


def generate_chunk(
    engine: Engine,
    chunk: Sequence[GenRequest],
    decoding: Decoding,
    tools_client: Any,
    max_tool_calls: int,
    on_outcome: Callable[[GenRequest, Outcome], None],
    on_round: Callable[[int, int], None] | None = None,
) -> None:
    """Generate one chunk (one engine call, or the tool loop for tool arms); on_outcome gets each sample,
    on_round each of a tool arm's rounds as it starts."""
    by_key = {r.key: r for r in chunk}
    if tools_client is not None:
        from augment.loop import LoopOutcome, run_tool_loop

        def finished(o: LoopOutcome) -> None:
            on_outcome(
                by_key[o.key],
                Outcome(o.text, o.finish_reason, o.prompt_tokens, o.gen_tokens, o.rounds, o.tool_calls),
            )

        run_tool_loop(
            engine, chunk, decoding, tools_client, max_tool_calls, on_outcome=finished, on_round=on_round
        )
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
    context = engine.max_model_len
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


def run(settings: RunSettings, engine: Engine | None = None) -> Path:
    """Resolve settings (pipeline.resolve) and generate (or finish) the arm's generations file: generate."""
    return generate(resolve(settings, matched_prompting=False), engine)


def generate(run: ResolvedRun, engine: Engine | None) -> Path:
    """Generate (or finish) one arm's generations file and return its path; raise on bad input.

    engine: an engine already started with the run's engine settings (tests, benchmarks); None: the runner
    starts one (or reuses the one it started for the previous arm of a multirun) once there is work to do.
    A second run of the same arm (and part) into the same out_dir is refused while this one holds its lock.
    """
    # Every check of the inputs came first (resolve): a refused run writes nothing, not even its lock.
    stale = why_stale(run)
    if stale is None:
        return reuse(run)
    part = run.part
    with RunLock(run.lock, f"arm {run.arm.name!r}{'' if part is None else f' part {part[0]}/{part[1]}'}"):
        # A run of the same arm may have finished it between the check above and the lock.
        if not run.settings.force and part is None and up_to_date(run.dest, run.inputs) is None:
            print(f"run_arm: {run.arm.name}: up to date (another run just wrote {run.dest})")
            return run.dest
        print(f"run_arm: {run.arm.name}: generating ({stale})", flush=True)
        return _generate(run, engine)


def _generate(run: ResolvedRun, engine: Engine | None) -> Path:
    """Plan, pending, engine, loop; then the recorder writes the arm's file."""
    with _tools(run) as tools_client:
        specs = _tool_specs(tools_client)
        plan = plan_run(run.prompting, specs)
        if run.part is not None:
            plan = part_of(plan, *run.part)
        todo = chunks(plan.requests, int(run.settings.engine["chunk_size"]))
        if run.part is not None and part_path(run.settings.out_dir, run.arm.name, run.part).is_file():
            print(f"run_arm: {run.arm.name}: part {run.part[0]}/{run.part[1]} already generated")
            return part_path(run.settings.out_dir, run.arm.name, run.part)
        recorder = GenerationRecorder(run, plan)
        recorder.tool_specs(specs)
        pending = recorder.pending(todo)
        engine_start_s = None
        if pending:
            engine, engine_start_s = _engine(run, plan, engine, recorder)
        _loop(run, plan, recorder, engine, pending, tools_client)
    return recorder.finish(engine_start_s)


@contextmanager
def _tools(run: ResolvedRun) -> Iterator[Any]:
    """The run's tool session for a tool arm (pipeline.resolve.tool_session), None for the others."""
    if not run.arm.tools:
        yield None
        return
    with tool_session(run) as client:
        yield client


def _tool_specs(tools_client: Any) -> list[dict[str, Any]]:
    if tools_client is None:
        return []
    from augment.tools.session import tool_specs

    return tool_specs(tools_client)


def _engine(
    run: ResolvedRun, plan: Plan, engine: Engine | None, recorder: GenerationRecorder
) -> tuple[Engine, float | None]:
    """The run's engine (the one given, else one started on the model's folder) set to the plan's prompt
    format, its prompts checked against its context, and recorded."""
    start_s = None
    if engine is None:
        # A hub model runs from its cached snapshot: the engine never reaches the hub.
        where = run.prompting.model_dir
        needed = context_needed(plan, run.params.protocol, run.arm)
        cfg = fit_context(server_of(run.settings.engine, run.arm.model), where, needed)
        engine, start_s = start_engine(cfg, run.arm.name, where, None)
    # The engine reads the prompts as this plan made them: chat prompts hold their own BOS token.
    engine.chat = plan.chat
    check_context(engine, plan, run.params.protocol.max_tokens)
    recorder.engine(engine.info)
    return engine, start_s


def _loop(
    run: ResolvedRun,
    plan: Plan,
    recorder: GenerationRecorder,
    engine: Engine | None,
    pending: list[list[GenRequest]],
    tools_client: Any,
) -> None:
    """Generate the pending chunks, each sample recorded as it finishes, with a progress bar."""
    proto = run.params.protocol
    decoding = Decoding(temperature=proto.temperature, top_p=proto.top_p)
    bar = _progress(len(plan.requests), len(recorder.previous), run.arm.name, run.settings.progress)

    def finished(item_id: str) -> bool:
        return all((item_id, j) in recorder.previous for j in range(proto.k))

    items = [sum(finished(it.item_id) for it in plan.items)]
    # A tool arm's round: where its samples are, between the samples that finish (a bar that moves).
    where = [""]

    def show() -> None:
        rate = recorder.tally.tokens / max(time.perf_counter() - recorder.tally.t0, 1e-9)
        bar.set_postfix_str(f"items {items[0]}/{len(plan.items)}{where[0]}, {rate:.0f} tok/s", refresh=False)

    def on_round(round_index: int, samples: int) -> None:
        where[0] = f", round {round_index + 1} of {samples} samples"
        show()
        bar.refresh()

    def restarts() -> None:
        # In the shard, so that a resumed run still counts the earlier runs' restarts.
        recorder.restarts(tools_client.restarts if tools_client is not None else 0)

    def on_outcome(request: GenRequest, out: Outcome) -> None:
        restarts()
        if not recorder.record(request, out):
            return
        items[0] += finished(request.key[0])
        show()
        bar.update(1)

    try:
        for chunk in pending:
            assert engine is not None
            # The whole chunk is generated even if part of it is on disk: same batch, same outputs. A
            # served engine's batches are the server's, which no rerun reproduces: only what is missing.
            todo = recorder.missing(chunk) if engine.resumes_per_sample else chunk
            generate_chunk(engine, todo, decoding, tools_client, proto.max_tool_calls, on_outcome, on_round)
            recorder.sync()
    except BaseException as e:
        bar.close()
        # Closing syncs the shard, which fails again on a full disk: say so under the first error
        # instead of raising a second one over it.
        try:
            restarts()
            recorder.close()
        except OSError as again:
            e.add_note(f"closing {recorder.shard.path} failed too: {again}")
        raise
    bar.close()
    restarts()
    recorder.close()
    if tools_client is not None and tools_client.dead_reason is not None:
        from augment.tools.client import ToolServerError

        # Never write the log of an arm whose tool server is gone, whatever swallowed its error.
        raise ToolServerError(tools_client.dead_reason)
    recorder.warn_if_differ()


KNOWN_ERRORS = (RunnerError, ConfigError, PinError, ShardError, EngineStartError, PathCheckError)
