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

import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.arm import ArmSpec
from contract.atomic import atomic_write
from contract.digest import file_sha256, text_sha256
from contract.engine import Decoding, Engine, EngineInfo, GenRequest
from contract.files import PathCheckError, output_dir
from contract.generations import (
    Generations,
    GenerationsError,
    GenItem,
    GenSample,
    RetrievalSettings,
    StaleGenerations,
    ToolCallCounts,
    ToolCallRecord,
    count_tool_calls,
    dump_generations,
    load_generations,
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
from pipeline.engines import (
    TOOL_RESPONSE_TOKENS,
    EngineStartError,
    fit_context,
    get_engine,
    is_running,
    settings_record,
)
from pipeline.hub import model_dir
from pipeline.pins import PinError, check_pins
from pipeline.plan import Plan, chunks, plan_run, requests_sha256
from pipeline.shards import RunLock, Shard, ShardError, now_iso


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
    force: bool = False
    # "s/N": generate only part s of N (items at suite positions i with i % N == s), for a worker of a
    # sharded run (pipeline.ray_run, a SLURM array); `merge_parts` then writes the arm's file.
    part: str | None = None
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


def context_needed(plan: Plan, proto: Any, arm: ArmSpec) -> int:
    """Tokens one sequence of this run may need: its longest prompt, the budget, and for a tool arm room
    for the tool responses the harness appends (pipeline.engines.TOOL_RESPONSE_TOKENS per answered call)."""
    tools = proto.max_tool_calls * TOOL_RESPONSE_TOKENS if arm.tools else 0
    return plan.longest_prompt + proto.max_tokens + tools


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


def inputs_sha256(arm: ArmSpec, params: Params, pins_dir: Path, engine: dict[str, Any]) -> str:
    """sha256 of what an arm's generation reads: its pin file (suite questions, model, index, code), the
    arm, the protocol and the engine settings (all but the log level, which changes only what is printed)."""
    record = {
        "arm": arm.model_dump(),
        "protocol": params.protocol.model_dump(),
        "pin_sha256": file_sha256(pins_dir / "arms" / f"{arm.name}.json"),
        "engine": settings_record(engine),
    }
    return text_sha256(json.dumps(record, sort_keys=True))


def up_to_date(dest: Path, inputs: str) -> str | None:
    """Why dest cannot be reused for these inputs, or None when it can (it loads and has them)."""
    if not dest.is_file():
        return "not generated yet"
    try:
        old = load_generations(dest)
    except StaleGenerations as e:
        return f"stale ({e})"
    except GenerationsError as e:
        return f"unreadable ({e})"
    if old.inputs_sha256 != inputs:
        return "its inputs changed"
    return None


def staleness(settings: RunSettings) -> tuple[ArmSpec, Params, dict[str, str], str, str | None]:
    """Check the arm's config and pins; (arm, params, pins, inputs sha256, why to generate it or None)."""
    arm = load_arm(settings.arm, settings.conf_dir, settings.arm_node)
    params = load_params(settings.params)
    output_dir(settings.out_dir, "out_dir")
    if arm.model not in params.models:
        raise ConfigError(
            f"{settings.conf_dir / 'arm' / (arm.name + '.yaml')}: model: {arm.model!r} is not in "
            f"{settings.params} models ({', '.join(params.models)})"
        )
    pins = check_pins(params, settings.pins, arm.name, settings.conf_dir)
    dest = settings.out_dir / f"{arm.name}.json"
    inputs = inputs_sha256(arm, params, settings.pins, settings.engine)
    stale = "force=true" if settings.force else up_to_date(dest, inputs)
    return arm, params, pins, inputs, stale


def _reuse(arm: str, dest: Path) -> Path:
    """Say that an arm's generations file is up to date, and hand it back."""
    print(f"run_arm: {arm}: up to date ({dest} has these inputs; force=true regenerates it)")
    return dest


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


def run_fingerprint(
    arm: ArmSpec,
    params: Params,
    pins: dict[str, str],
    engine: Mapping[str, Any],
    plan: Plan,
    part: tuple[int, int] | None,
) -> dict[str, Any]:
    """What a shard must have been started with to be continued: settings, pins and the exact requests."""
    fingerprint = {
        "arm": arm.model_dump(),
        "protocol": params.protocol.model_dump(),
        "pins": pins,
        # The log level changes what is printed, not what is generated: a resume may change it.
        "engine": settings_record(engine),
        "requests_sha256": requests_sha256(plan.requests),
        "tools": plan.tool_names,
    }
    if part is not None:
        fingerprint["part"] = list(part)
    return fingerprint


def parse_part(text: str | None) -> tuple[int, int] | None:
    """'s/N' as (s, N), checked; None for a whole-arm run."""
    if text is None:
        return None
    try:
        s, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise RunnerError(f"part={text!r}: write it as s/N, e.g. part=0/2 (the first of two parts)") from None
    if n < 1 or not 0 <= s < n:
        raise RunnerError(f"part={text!r}: needs N >= 1 and 0 <= s < N")
    return s, n


def part_of(plan: Plan, s: int, n: int) -> Plan:
    """The requests of part s of n: the items at suite positions i with i % n == s, all k samples each.

    A fixed rule over suite order, so every worker cuts the same parts; items whole, so an item's samples
    share their prompt's cache on one engine.
    """
    items = [it for i, it in enumerate(plan.items) if i % n == s]
    keep = {it.item_id for it in items}
    requests = [r for r in plan.requests if r.key[0] in keep]
    return Plan(
        items, requests, plan.prompts, plan.retrieved, plan.chat, plan.tool_names, plan.longest_prompt
    )


def part_suffix(part: tuple[int, int] | None) -> str:
    """'.part-0-of-2' for a part, '' for a whole arm."""
    return "" if part is None else f".part-{part[0]}-of-{part[1]}"


def part_path(out_dir: Path, arm: str, part: tuple[int, int]) -> Path:
    """Where a finished part waits for the merge: <out_dir>/.parts/<arm>.part-s-of-N.jsonl."""
    return out_dir / ".parts" / f"{arm}{part_suffix(part)}.jsonl"


def finish_part(
    shard: Shard,
    out_dir: Path,
    arm: str,
    part: tuple[int, int],
    engine_start_s: float | None,
    generate_s: float,
    tokens: int,
) -> Path:
    """Record where and how fast a finished part ran, then move its shard to where the merge reads it."""
    if "provenance" not in shard.meta:  # a part killed before its move has recorded it already
        shard.set_meta(
            "provenance",
            {
                "host": platform.node(),
                "started_at": shard.started_at,
                "finished_at": now_iso(),
                "engine_start_s": engine_start_s,
                "generate_s": generate_s,
                "gen_tokens": tokens,
            },
        )
    shard.close()
    dest = part_path(out_dir, arm, part)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shard.path.replace(dest)
    print(f"run_arm: {arm}: part {part[0]}/{part[1]}: {len(shard.records)} samples; wrote {dest}", flush=True)
    return dest


def merge_parts(settings: RunSettings, n: int) -> Path:
    """Write the arm's generations file from its n finished parts; refuse a missing or foreign part.

    Every (item, sample) carries its own seed, so the merged file equals a one-worker run wherever the
    engine's outputs do not depend on the batch (vLLM's batch-invariant mode on a GPU; float32 on a CPU).
    """
    state = staleness(settings)
    dest = settings.out_dir / f"{settings.arm}.json"
    if state[-1] is None:
        return _reuse(settings.arm, dest)
    with RunLock(settings.out_dir / ".partial" / f"{settings.arm}.lock", f"arm {settings.arm!r}"):
        return _merge(settings, n, state)


def _merge(
    settings: RunSettings, n: int, state: tuple[ArmSpec, Params, dict[str, str], str, str | None]
) -> Path:
    arm, params, pins, inputs, _ = state
    dest = settings.out_dir / f"{arm.name}.json"
    tools_cm = open_tools(settings, arm.name) if arm.tools else nullcontext(None)
    with tools_cm as tools_client:
        plan = plan_run(params, arm, tool_specs(tools_client) if tools_client is not None else [])
    records: dict[tuple[str, int], dict[str, Any]] = {}
    infos: dict[str, Path] = {}
    parts = []
    for s in range(n):
        path = part_path(settings.out_dir, arm.name, (s, n))
        if not path.is_file():
            raise RunnerError(
                f"{path}: part {s}/{n} of arm {arm.name!r} is missing; generate it with "
                f"`python -m pipeline.run_arm arm={arm.name} part={s}/{n}` and merge again"
            )
        sub = part_of(plan, s, n)
        shard = Shard(path, run_fingerprint(arm, params, pins, settings.engine, sub, (s, n)))
        shard.close()
        want = {r.key for r in sub.requests}
        if set(shard.records) != want:
            raise RunnerError(
                f"{path}: holds {len(set(shard.records) & want)} of the {len(want)} samples of part {s}/{n}; "
                f"regenerate it with `python -m pipeline.run_arm arm={arm.name} part={s}/{n} fresh=true`"
            )
        infos.setdefault(json.dumps(shard.meta.get("engine"), sort_keys=True), path)
        records.update(shard.records)
        parts.append(shard)
    if len(infos) != 1 or "engine" not in parts[0].meta:
        a, b = list(infos.values())[:2] if len(infos) > 1 else (parts[0].path, parts[0].path)
        raise RunnerError(
            f"{a} and {b}: the parts ran on different engines (or one has no engine record); run every part "
            "on the same engine build and device kind"
        )
    info = EngineInfo.model_validate(parts[0].meta["engine"])
    restarts = sum(int(p.meta.get(RESTARTS_META, 0)) for p in parts)
    counts = tool_counts(records, restarts) if arm.tools else None
    text = dump_generations(assemble(plan, records, params, arm, pins, info, inputs, counts))
    atomic_write(dest, text)
    runs = [p.meta.get("provenance", {}) for p in parts]
    wall = max(float(r.get("generate_s") or 0.0) for r in runs)
    tokens = sum(int(r.get("gen_tokens") or 0) for r in runs)
    record = Provenance(
        arm=arm.name,
        generations_sha256=text_sha256(text),
        host=",".join(sorted({str(r.get("host", "unknown")) for r in runs})),
        started_at=min(p.started_at for p in parts),
        finished_at=now_iso(),
        engine=info,
        generate_s=wall,
        samples=len(plan.requests),
        gen_tokens=tokens,
        tokens_per_s=tokens / max(wall, 1e-9),
        parts=n,
    )
    atomic_write(provenance_path(dest), record.model_dump_json(indent=1) + "\n")
    for shard in parts:
        shard.path.unlink()
    print(f"run_arm: {arm.name}: merged {n} parts, {len(records)} samples; wrote {dest}", flush=True)
    return dest


def run(settings: RunSettings, engine: Engine | None = None) -> Path:
    """Generate (or finish) one arm's generations file and return its path; raise on bad input.

    engine: an engine already started with settings.engine (tests, benchmarks); by default the runner starts
    one (or reuses the one it started for the previous arm of a multirun) once there is work to do.
    A second run of the same arm (and part) into the same out_dir is refused while this one holds its lock.
    """
    part = parse_part(settings.part)
    # Every check of the inputs comes first: a refused run writes nothing, not even its lock.
    state = staleness(settings)
    dest = settings.out_dir / f"{settings.arm}.json"
    if state[-1] is None:
        return _reuse(settings.arm, dest)
    lock = settings.out_dir / ".partial" / f"{settings.arm}{part_suffix(part)}.lock"
    with RunLock(lock, f"arm {settings.arm!r}{'' if part is None else f' part {settings.part}'}"):
        # A run of the same arm may have finished it between the check above and the lock.
        if not settings.force and part is None and up_to_date(dest, state[3]) is None:
            print(f"run_arm: {settings.arm}: up to date (another run just wrote {dest})")
            return dest
        return _run(settings, engine, state)


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


def _run(
    settings: RunSettings,
    engine: Engine | None,
    state: tuple[ArmSpec, Params, dict[str, str], str, str | None],
) -> Path:
    arm, params, pins, inputs, stale = state
    dest = settings.out_dir / f"{arm.name}.json"
    print(f"run_arm: {arm.name}: generating ({stale})", flush=True)
    ref = params.models[arm.model]
    proto = params.protocol
    decoding = Decoding(temperature=proto.temperature, top_p=proto.top_p)
    engine_start_s: float | None = None
    tools_cm = open_tools(settings, arm.name) if arm.tools else nullcontext(None)
    with tools_cm as tools_client:
        specs = tool_specs(tools_client) if tools_client is not None else []
        plan = plan_run(params, arm, specs)
        part = parse_part(settings.part)
        if part is not None:
            plan = part_of(plan, *part)
        todo = chunks(plan.requests, int(settings.engine["chunk_size"]))
        fingerprint = run_fingerprint(arm, params, pins, settings.engine, plan, part)
        shard_path = settings.out_dir / ".partial" / f"{arm.name}{part_suffix(part)}.jsonl"
        if part is not None and part_path(settings.out_dir, arm.name, part).is_file():
            print(f"run_arm: {arm.name}: part {part[0]}/{part[1]} already generated")
            return part_path(settings.out_dir, arm.name, part)
        shard = Shard(shard_path, fingerprint, fresh=settings.fresh, validate=sample_validator(plan))
        pending = [c for c in todo if any(r.key not in shard.records for r in c)]
        if pending:
            if engine is None:
                # A hub model runs from its cached snapshot: the engine never reaches the hub.
                where = model_dir(ref, arm.model, params.source)
                cfg = fit_context(settings.engine, where, context_needed(plan, proto, arm))
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
                # The whole chunk is generated even if part of it is on disk: same batch, same outputs.
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
    gens = assemble(plan, shard.records, params, arm, pins, info, inputs, counts)
    text = dump_generations(gens)
    atomic_write(dest, text)
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
    print(summary_line(record, dest), flush=True)
    return dest


def summary_line(record: Provenance, dest: Path) -> str:
    """One line on what a run did: samples, engine, device, start time, throughput, the file written."""
    e = record.engine
    start = f"engine start {record.engine_start_s:.1f} s, " if record.engine_start_s is not None else ""
    resumed = f" ({record.samples_resumed} resumed)" if record.samples_resumed else ""
    return (
        f"run_arm: {record.arm}: {record.samples} samples{resumed} on {e.version or e.name}, {e.device}, "
        f"{e.dtype}; {start}generation {record.generate_s:.1f} s, {record.tokens_per_s:.0f} tok/s; "
        f"wrote {dest}"
    )


KNOWN_ERRORS = (RunnerError, ConfigError, PinError, ShardError, EngineStartError, PathCheckError)
