"""An arm in parts: part s of N generates the items at suite positions i with i % N == s (each item whole),
and the merge writes the arm's generations file from the N finished parts.

A worker (pipeline.ray_run, a SLURM array, a DVC queue) runs `part=s/N`: its finished shard moves to
<out_dir>.work/parts/<arm>.part-s-of-N.jsonl with a record of where and how fast it ran (finish_part). The
merge refuses a missing, incomplete or foreign part, or parts made on different engines. A tool arm's part
records the tool specs its prompts showed, so the merge plans the arm without starting a tool server.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.atomic import atomic_write
from contract.engine import EngineInfo
from contract.generations import dump_generations
from contract.provenance import provenance_path
from pipeline.config import Params
from pipeline.plan import Plan, plan_run
from pipeline.provenance import record
from pipeline.samples import RESTARTS_META, TOOL_SPECS_META, assemble, run_fingerprint, tool_counts
from pipeline.settings import RunnerError, RunSettings, partial_dir, tool_session, work_dir
from pipeline.shards import RunLock, Shard, now_iso, recorded_meta
from pipeline.staleness import RunState, reuse, staleness


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
    """Where a finished part waits for the merge: <out_dir>.work/parts/<arm>.part-s-of-N.jsonl."""
    return work_dir(out_dir) / "parts" / f"{arm}{part_suffix(part)}.jsonl"


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


def merge_parts(
    settings: RunSettings, n: int, arm: ArmSpec | None = None, params: Params | None = None
) -> Path:
    """Write the arm's generations file from its n finished parts; refuse a missing or foreign part.

    Every (item, sample) carries its own seed, so the merged file equals a one-worker run wherever the
    engine's outputs do not depend on the batch (vLLM's batch-invariant mode on a GPU; float32 on a CPU).
    """
    state = staleness(settings, arm=arm, params=params)
    if state.stale is None:
        return reuse(state)
    with RunLock(partial_dir(settings.out_dir) / f"{settings.arm}.lock", f"arm {settings.arm!r}"):
        return _merge(state, n)


def recorded_tool_specs(state: RunState, paths: list[Path]) -> list[dict[str, Any]]:
    """The tool specs a tool arm's parts were planned with, as the first part records them; parts made
    before parts recorded them are planned with the specs a tool server lists."""
    for path in paths:
        if path.is_file():
            specs = recorded_meta(path).get(TOOL_SPECS_META)
            if specs is not None:
                return list(specs)
            break
    from arms.tools.session import tool_specs

    with tool_session(state.settings, state.arm.name) as client:
        return tool_specs(client)


def _merge(state: RunState, n: int) -> Path:
    arm, params, pins, settings = state.arm, state.params, state.pins, state.settings
    paths = [part_path(settings.out_dir, arm.name, (s, n)) for s in range(n)]
    plan = plan_run(params, arm, recorded_tool_specs(state, paths) if arm.tools else [])
    records: dict[tuple[str, int], dict[str, Any]] = {}
    infos: dict[str, Path] = {}
    parts = []
    for s, path in enumerate(paths):
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
    text = dump_generations(assemble(plan, records, params, arm, pins, info, state.inputs, counts))
    atomic_write(state.dest, text)
    runs = [p.meta.get("provenance", {}) for p in parts]
    wall = max(float(r.get("generate_s") or 0.0) for r in runs)
    prov = record(
        arm.name,
        text,
        info,
        host=",".join(sorted({str(r.get("host", "unknown")) for r in runs})),
        started_at=min(p.started_at for p in parts),
        finished_at=now_iso(),
        generate_s=wall,
        samples=len(plan.requests),
        gen_tokens=sum(int(r.get("gen_tokens") or 0) for r in runs),
        parts=n,
    )
    atomic_write(provenance_path(state.dest), prov.model_dump_json(indent=1) + "\n")
    for shard in parts:
        shard.path.unlink()
    print(f"run_arm: {arm.name}: merged {n} parts, {len(records)} samples; wrote {state.dest}", flush=True)
    return state.dest
