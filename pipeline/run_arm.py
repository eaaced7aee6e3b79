"""Generate one arm's EvalLog: `python -m pipeline.run_arm arm=<arm>` (Hydra; `-m arm=base,trained` sweeps).

The arm (conf/arm/<arm>.yaml) chooses the model and the augmentations; suite, models, rag and the matched
protocol come from params.yaml, so every arm has the same items, budget, decoding and per-sample seeds.
Before generating, the runner checks the pins (pins.json) of what the arm uses and refuses on drift.

Each (item, sample) is one request with seed(item, sample) (pipeline.seeds). Requests are cut into chunks of
engine.chunk_size in a fixed order; each chunk is one engine call, and its finished samples are appended to
<out_dir>/.partial/<arm>.jsonl and flushed at once. A rerun with the same fingerprint skips finished
chunks and regenerates an interrupted one with the same composition, so it gets the same outputs; a
shard with another fingerprint is refused unless fresh=true. The EvalLog is written to a temporary file and
renamed to <out_dir>/<arm>.json; then the shard is removed.

Arm names contain '+': `arm=+rag` and `arm=trained+rag` work as written (the '+' belongs to the value).
Do not write `+arm=rag`: a leading '+' on the key is Hydra's "append a new key".
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline import oracle
from pipeline.engines import RUNNER_KEYS, make_engine
from pipeline.engines.base import Decoding, Engine, GenRequest
from pipeline.evallog import (
    EngineInfo,
    EvalLog,
    ItemResult,
    RetrievalSettings,
    RetrievedDoc,
    SampleRecord,
    ToolCallRecord,
)
from pipeline.pins import ModelRef, Params, PinError, check_pins, load_params
from pipeline.prompts import build_prompt, passages_block
from pipeline.seeds import sample_seed
from pipeline.shards import Shard, ShardError, now_iso
from pipeline.suite import SuiteError, SuiteItem, load_suite

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
PROTOCOL_KEYS = frozenset({"k", "max_tokens", "temperature", "top_p", "seed", "max_tool_calls", "n_samples"})
# Plain prompts end in "Answer:"; a model that goes on to invent the next question is stopped there.
PLAIN_STOP = ("\nQuestion:",)
CHAT_INSTRUCTION = "Give the final answer as \\boxed{...}."


class RunnerError(RuntimeError):
    """Bad input for the runner; the message names the file, the field and the fix."""


class ArmSpec(BaseModel):
    """An arm: which model, which augmentations, and what a gain over its reference is attributed to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    model: str
    retrieval: bool
    tools: bool
    attribution: str
    description: str | None = None


def known_arms(conf_dir: Path = CONF_DIR) -> list[str]:
    """Names of the arms defined in conf/arm/."""
    return sorted(p.stem for p in (conf_dir / "arm").glob("*.yaml"))


def _protocol_keys_in(node: Any, where: str = "") -> list[str]:
    """Dotted paths of protocol keys anywhere in a mapping (a 'protocol' section counts as one)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            path = f"{where}.{key}" if where else str(key)
            if key in PROTOCOL_KEYS or key == "protocol":
                found.append(path)
            else:
                found.extend(_protocol_keys_in(value, path))
    return found


def load_arm(name: str, conf_dir: Path = CONF_DIR, composed: Mapping[str, Any] | None = None) -> ArmSpec:
    """Read conf/arm/<name>.yaml (or the composed Hydra node for it) and refuse protocol keys."""
    path = conf_dir / "arm" / f"{name}.yaml"
    if not path.is_file():
        raise RunnerError(
            f"unknown arm {name!r} ({path} does not exist); known arms: {', '.join(known_arms(conf_dir))}"
        )
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise RunnerError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise RunnerError(f"{path}: must be a mapping of model, retrieval, tools, attribution")
    for source, node in ((str(path), raw), ("a command-line override of arm", composed or {})):
        bad = _protocol_keys_in(node)
        if bad:
            leaf = bad[0].rsplit(".", 1)[-1]
            raise RunnerError(
                f"{source}: sets protocol key {bad[0]!r}; the protocol is matched across arms and lives only "
                f"in params.yaml (protocol.{leaf}); remove it from the arm"
            )
    data = dict(composed) if composed is not None else dict(raw)
    try:
        return ArmSpec(name=name, **data)
    except ValidationError as e:
        err = e.errors()[0]
        field_name = ".".join(str(x) for x in err["loc"]) or "arm"
        raise RunnerError(f"{path}: {field_name}: {err['msg']}") from None


def engine_config(name: str = "vllm", conf_dir: Path = CONF_DIR, **overrides: Any) -> dict[str, Any]:
    """conf/engine/<name>.yaml as a dict, with overrides (for tests, benchmarks and scripts)."""
    path = conf_dir / "engine" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (conf_dir / "engine").glob("*.yaml"))
        raise RunnerError(
            f"unknown engine {name!r} ({path} does not exist); known engines: {', '.join(known)}"
        )
    cfg = yaml.safe_load(path.read_text())
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise RunnerError(f"{path}: no key {sorted(unknown)[0]!r}; keys: {', '.join(cfg)}")
    cfg.update(overrides)
    return cfg


@dataclass
class RunSettings:
    """Everything one run needs besides params.yaml (what Hydra composes from conf/)."""

    arm: str
    engine: dict[str, Any] = field(default_factory=engine_config)
    params: Path = Path("params.yaml")
    pins: Path = Path("pins.json")
    out_dir: Path = Path("evallogs")
    fresh: bool = False
    progress: bool = True
    arm_node: dict[str, Any] | None = None
    conf_dir: Path = CONF_DIR


@dataclass
class Plan:
    """The requests of a run, in their fixed order, and what each needs to be scored and recorded."""

    items: list[SuiteItem]
    requests: list[GenRequest]
    retrieved: dict[str, list[RetrievedDoc]]
    chat: bool
    tool_names: list[str]


@dataclass
class _Tally:
    """Progress of one run: tokens generated, finished items, regenerated samples that differ."""

    items: int = 0
    tokens: int = 0
    differ: int = 0
    t0: float = field(default_factory=time.perf_counter)


@dataclass
class Outcome:
    """What generation gave one request, whether through one engine call or the tool loop."""

    text: str
    finish_reason: str
    prompt_tokens: int
    gen_tokens: int
    rounds: int
    tool_calls: list[ToolCallRecord] | None


# ---- augmentations (arms/): retrieval, tools --------------------------------------------------------------


def open_index(params: Params) -> Any:
    """The retrieval index of params.yaml rag.index (arms.retrieval)."""
    from arms.retrieval import Index, IndexLoadError

    if params.rag is None:
        raise RunnerError(
            "params.yaml: rag: missing; a retrieval arm needs rag.corpus, rag.index and rag.top_k"
        )
    try:
        return Index.load(params.rag.index)
    except IndexLoadError as e:
        raise RunnerError(str(e)) from None


def retrieve(
    index: Any, question: str, top_k: int, order: str = "best_last"
) -> tuple[list[str], list[RetrievedDoc]]:
    """Passages in prompt order (params.yaml rag.order) and their records in rank order (doc, score, rank)."""
    hits = index.query(question, top_k)
    texts = [h.text for h in hits]
    if order == "best_last":
        texts.reverse()
    return texts, [RetrievedDoc(doc_id=h.doc_id, score=h.score, rank=h.rank) for h in hits]


@contextmanager
def open_tools() -> Iterator[Any]:
    """One MCP tool-server session for the whole run (arms.tools.client.ToolClient)."""
    from arms.tools.client import ToolClient, ToolServerError

    try:
        client = ToolClient()
        client.start()
    except ToolServerError as e:
        raise RunnerError(f"tool server (python -m arms.tools.server) did not start: {e}") from None
    try:
        yield client
    finally:
        client.close()


def tool_specs(client: Any) -> list[dict[str, Any]]:
    """The server's tools, sorted by name (the order the demo models were trained on)."""
    return sorted(client.list_tools(), key=lambda t: t["name"])


def run_tools(
    engine: Engine, requests: Sequence[GenRequest], decoding: Decoding, client: Any, max_tool_calls: int
) -> list[Outcome]:
    """Generate requests through the batched tool loop (arms.loop.run_tool_loop)."""
    from arms.loop import run_tool_loop

    outs = run_tool_loop(engine, requests, decoding, client, max_tool_calls)
    return [
        Outcome(o.text, o.finish_reason, o.prompt_tokens, o.gen_tokens, o.rounds, list(o.tool_calls))
        for o in outs
    ]


def path_of(item: SuiteItem, tool_calls: Sequence[ToolCallRecord], answer: str | None, correct: bool) -> str:
    """Path verdict of a tool-arm sample (arms.paths)."""
    from arms.paths import expected_tools_for_item, path_verdict

    return path_verdict(expected_tools_for_item(item.model_dump()), tool_calls, answer, correct)


# ---- planning -------------------------------------------------------------------------------------------


def load_tokenizer(ref: ModelRef) -> Any:
    """The model's tokenizer (to tell chat models, which have a chat template, from plain ones)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(ref.location, revision=ref.revision)
    except OSError as e:
        raise RunnerError(f"{ref.location}: cannot load the tokenizer: {e}") from None


def make_prompt(
    tokenizer: Any, chat: bool, question: str, passages: Sequence[str], tools: Sequence[dict[str, Any]]
) -> str:
    """The arm's prompt: the plain format of pipeline.prompts, or the model's chat template."""
    if not chat:
        return build_prompt(question, passages, [t["name"] for t in tools])
    content = f"{passages_block(passages)}{question}\n{CHAT_INSTRUCTION}"
    schemas = [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in tools
    ]
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": content}],
        tools=schemas or None,
        add_generation_prompt=True,
        tokenize=False,
    )


def plan_run(params: Params, arm: ArmSpec, tools: Sequence[dict[str, Any]]) -> Plan:
    """Every request of the run in its fixed order (suite order, then sample index), with its seed."""
    try:
        items = load_suite(params.suite.path)
    except SuiteError as e:
        raise RunnerError(str(e)) from None
    ref = params.models[arm.model]
    tokenizer = load_tokenizer(ref)
    chat = bool(getattr(tokenizer, "chat_template", None))
    index = open_index(params) if arm.retrieval else None
    proto = params.protocol
    stop = () if chat else PLAIN_STOP
    requests: list[GenRequest] = []
    retrieved: dict[str, list[RetrievedDoc]] = {}
    for item in items:
        passages: list[str] = []
        if index is not None and params.rag is not None:
            passages, retrieved[item.item_id] = retrieve(
                index, item.question, params.rag.top_k, params.rag.order
            )
        prompt = make_prompt(tokenizer, chat, item.question, passages, tools)
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
    return Plan(items, requests, retrieved, chat, [t["name"] for t in tools])


def requests_sha256(requests: Sequence[GenRequest]) -> str:
    """sha256 over every request (key, prompt, seed, budget, stops): any change of prompts changes it."""
    h = hashlib.sha256()
    for r in requests:
        h.update(json.dumps([r.key, r.prompt, r.seed, r.max_tokens, list(r.stop)]).encode())
    return h.hexdigest()


def chunks(requests: Sequence[GenRequest], size: int) -> list[list[GenRequest]]:
    """Consecutive chunks of a fixed size (the last may be shorter): the same cut on every run."""
    if size < 1:
        raise RunnerError(f"engine.chunk_size = {size}: must be >= 1 (conf/engine/*.yaml)")
    return [list(requests[i : i + size]) for i in range(0, len(requests), size)]


# ---- engine (one per process, reused across a Hydra multirun when model and settings match) ---------------

_ENGINE: dict[str, Any] = {}


def get_engine(engine_cfg: Mapping[str, Any], ref: ModelRef) -> Engine:
    """Start the engine for ref, or reuse the running one if it has the same model and settings."""
    # Runner-only keys (chunk_size) do not change the engine, so a new chunk size reuses it.
    engine_only = {k: v for k, v in engine_cfg.items() if k not in RUNNER_KEYS or k == "name"}
    key = json.dumps([engine_only, ref.model_dump()], sort_keys=True)
    if _ENGINE.get("key") == key:
        return _ENGINE["engine"]
    old = _ENGINE.pop("engine", None)
    if old is not None and hasattr(old, "close"):
        old.close()
    engine = make_engine(engine_cfg, ref.location, ref.revision)
    _ENGINE.update(key=key, engine=engine)
    return engine


# ---- the run --------------------------------------------------------------------------------------------


def generate_chunk(
    engine: Engine,
    chunk: Sequence[GenRequest],
    decoding: Decoding,
    tools_client: Any,
    max_tool_calls: int,
    on_outcome: Callable[[GenRequest, Outcome], None],
) -> None:
    """Generate one chunk (one engine call, or the tool loop for tool arms); on_outcome gets each sample."""
    if tools_client is not None:
        for r, o in zip(chunk, run_tools(engine, chunk, decoding, tools_client, max_tool_calls), strict=True):
            on_outcome(r, o)
        return
    by_key = {r.key: r for r in chunk}

    def handle(res: Any) -> None:
        on_outcome(
            by_key[res.key], Outcome(res.text, res.finish_reason, res.prompt_tokens, res.gen_tokens, 1, None)
        )

    engine.generate(chunk, decoding, on_result=handle)


def sample_record(
    item: SuiteItem, request: GenRequest, out: Outcome, plan: Plan, tool_arm: bool
) -> dict[str, Any]:
    """The shard line of one finished sample: its SampleRecord fields plus item_id."""
    verdict = oracle.score(item, oracle.scored_text(request.prompt, out.text), chat=plan.chat)
    calls = out.tool_calls if tool_arm else None
    rec = SampleRecord(
        index=request.key[1],
        seed=request.seed,
        score=verdict.score,
        text=out.text,
        answer=verdict.answer,
        finish_reason=out.finish_reason,
        prompt_tokens=out.prompt_tokens,
        gen_tokens=out.gen_tokens,
        rounds=out.rounds,
        retrieved=plan.retrieved.get(item.item_id),
        tool_calls=calls,
        path=path_of(item, calls or [], verdict.answer, verdict.score == 1.0) if tool_arm else None,
    )
    return {"item_id": item.item_id, **rec.model_dump(mode="json")}


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
    plan: Plan, shard: Shard, params: Params, arm: ArmSpec, pins: dict[str, str], engine_info: EngineInfo
) -> EvalLog:
    """The arm's EvalLog from the shard's samples, in suite order."""
    k = params.protocol.k
    items = []
    for item in plan.items:
        recs = [dict(shard.records[(item.item_id, j)]) for j in range(k)]
        for r in recs:
            r.pop("item_id")
        samples = [SampleRecord.model_validate(r) for r in recs]
        items.append(
            ItemResult(
                item_id=item.item_id,
                family=item.family,
                scores=[s.score for s in samples],
                gen_tokens=[int(s.gen_tokens or 0) for s in samples],
                samples=samples,
            )
        )
    finished = now_iso()
    ref = params.models[arm.model]
    model_name = ref.path if ref.path is not None else f"{ref.hf}@{ref.revision}"
    proto = params.protocol
    return EvalLog(
        model_name=str(model_name),
        suite=params.suite.name,
        suite_revision=params.suite.revision,
        n_samples=k,
        temperature=proto.temperature,
        max_tokens=proto.max_tokens,
        driver=str(engine_info.driver),
        measured_at=finished,
        items=items,
        arm=arm.name,
        attribution=arm.attribution,
        top_p=proto.top_p,
        seed=proto.seed,
        pins=pins,
        engine=engine_info,
        protocol=proto,
        retrieval=(
            RetrievalSettings(top_k=params.rag.top_k, order=params.rag.order)
            if arm.retrieval and params.rag is not None
            else None
        ),
        started_at=shard.started_at,
        finished_at=finished,
    )


def write_log(log: EvalLog, dest: Path) -> None:
    """Write the EvalLog to a temporary file beside dest, force it to disk, then rename it over dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(log.model_dump_json(indent=1, exclude_none=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, dest)


def run(settings: RunSettings, engine: Engine | None = None) -> Path:
    """Generate (or finish) one arm's EvalLog and return its path; raise RunnerError on bad input.

    engine: an engine already started with settings.engine (tests, benchmarks); by default the runner starts
    one (or reuses the one it started for the previous arm of a multirun) once there is work to do.
    """
    arm = load_arm(settings.arm, settings.conf_dir, settings.arm_node)
    try:
        params = load_params(settings.params)
        if arm.model not in params.models:
            raise RunnerError(
                f"{settings.conf_dir / 'arm' / (arm.name + '.yaml')}: model: {arm.model!r} is not in "
                f"{settings.params} models ({', '.join(params.models)})"
            )
        pins = check_pins(params, settings.pins, arm.model, arm.retrieval)
    except PinError as e:
        raise RunnerError(str(e)) from None
    ref = params.models[arm.model]
    proto = params.protocol
    decoding = Decoding(temperature=proto.temperature, top_p=proto.top_p)
    tools_cm = open_tools() if arm.tools else nullcontext(None)
    with tools_cm as tools_client:
        specs = tool_specs(tools_client) if tools_client is not None else []
        plan = plan_run(params, arm, specs)
        todo = chunks(plan.requests, int(settings.engine["chunk_size"]))
        fingerprint = {
            "arm": arm.model_dump(),
            "protocol": proto.model_dump(),
            "pins": pins,
            "suite": {"name": params.suite.name, "revision": params.suite.revision},
            "engine": dict(settings.engine),
            "requests_sha256": requests_sha256(plan.requests),
            "tools": plan.tool_names,
        }
        shard = Shard(settings.out_dir / ".partial" / f"{arm.name}.jsonl", fingerprint, fresh=settings.fresh)
        by_id = {it.item_id: it for it in plan.items}
        pending = [c for c in todo if any(r.key not in shard.records for r in c)]
        if pending and engine is None:
            engine = get_engine(settings.engine, ref)
        if pending and "engine" not in shard.meta:
            shard.set_meta("engine", engine.info.model_dump(mode="json"))
        bar = _progress(len(plan.requests), len(shard.records), arm.name, settings.progress)
        total = len(plan.items)

        def finished(item_id: str) -> bool:
            return all((item_id, j) in shard.records for j in range(proto.k))

        tally = _Tally(items=sum(finished(it.item_id) for it in plan.items))

        def on_outcome(request: GenRequest, out: Outcome) -> None:
            old = shard.records.get(request.key)
            if old is not None:
                # A regenerated sample of an interrupted chunk: the one on disk stays.
                tally.differ += old.get("text") != out.text
                return
            item = by_id[request.key[0]]
            shard.append([sample_record(item, request, out, plan, arm.tools)])
            tally.tokens += out.gen_tokens
            tally.items += finished(item.item_id)
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
            shard.close()
        if tally.differ:
            print(
                f"run_arm: warning: {tally.differ} regenerated samples of an interrupted chunk differ from "
                f"those already in {shard.path} (kept those); the engine did not reproduce its batch",
                file=sys.stderr,
            )
    if "engine" not in shard.meta:
        raise RunnerError(f"{shard.path}: has no engine record; pass fresh=true to regenerate the arm")
    log = assemble(plan, shard, params, arm, pins, EngineInfo.model_validate(shard.meta["engine"]))
    dest = settings.out_dir / f"{arm.name}.json"
    write_log(log, dest)
    shard.remove()
    return dest


# ---- command line (Hydra) -------------------------------------------------------------------------------

KNOWN_ERRORS = (RunnerError, ShardError, PinError, SuiteError)


def _arm_values(args: Sequence[str]) -> list[str]:
    """Arm names requested by command-line overrides (`arm=x`, or a sweep `arm=x,y`), parsed as Hydra does."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    wanted = [a for a in args if not a.startswith("-") and a.split("=", 1)[0].lstrip("~+") == "arm"]
    if not wanted:
        return []
    names: list[str] = []
    for ov in OverridesParser.create().parse_overrides(wanted):
        if ov.is_sweep_override():
            names.extend(str(v) for v in ov.sweep_string_iterator())
        else:
            names.append(str(ov.value()))
    return names


def _hydra_task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    arm_name = HydraConfig.get().runtime.choices["arm"]
    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    settings = RunSettings(
        arm=str(arm_name),
        engine=dict(node["engine"]),
        params=Path(node["params"]),
        pins=Path(node["pins"]),
        out_dir=Path(node["out_dir"]),
        fresh=bool(node["fresh"]),
        progress=bool(node["progress"]),
        arm_node=dict(node["arm"]),
    )
    try:
        dest = run(settings)
    except KNOWN_ERRORS as e:
        print(f"run_arm: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"run_arm: wrote {dest}")


def main() -> None:
    """Entry point: refuse unknown arm names in one line, then hand the command line to Hydra."""
    import hydra
    from hydra.errors import HydraException

    try:
        unknown = [a for a in _arm_values(sys.argv[1:]) if a not in known_arms()]
    except HydraException:
        unknown = []  # Hydra reports a malformed override itself, with its grammar error
    if unknown:
        print(
            f"run_arm: unknown arm {unknown[0]!r} (no conf/arm/{unknown[0]}.yaml); known arms: "
            f"{', '.join(known_arms())}",
            file=sys.stderr,
        )
        sys.exit(2)
    hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")(_hydra_task)()


if __name__ == "__main__":
    main()
