"""An arm in parts (`part=s/N`): a fixed slice of its items each, and the merge of the N finished parts.

Part s of N generates the items at suite positions i with i % N == s (each item whole), and the merge writes
the arm's generations file from the N finished parts.

A worker (pipeline.ray_run, a SLURM array, a DVC queue) runs `part=s/N`: its finished shard moves to
<out_dir>.work/parts/<arm>.part-s-of-N.jsonl with a record of where and how fast it ran
(pipeline.recorder). The merge refuses a missing, incomplete or foreign part, or parts made on different
engines. A tool arm's part records the tool specs its prompts showed, so the merge plans the arm without
starting a tool server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.engine_record import merged
from pipeline.plan import Plan, plan_run
from pipeline.recorder import write_arm
from pipeline.resolve import ResolvedRun, resolve, tool_session
from pipeline.samples import RESTARTS_META, TOOL_SPECS_META, run_fingerprint, tool_counts
from pipeline.settings import RunnerError, RunSettings, part_path
from pipeline.shards import RunLock, Shard, recorded_meta
from pipeline.staleness import reuse, why_stale


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


def merge_parts(settings: RunSettings, n: int) -> Path:
    """Resolve settings (pipeline.resolve) and merge the arm's n finished parts: merge."""
    return merge(resolve(settings, matched_prompting=False), n)


def merge(run: ResolvedRun, n: int) -> Path:
    """Write the arm's generations file from its n finished parts; refuse a missing or foreign part.

    Every (item, sample) carries its own seed, so the merged file equals a one-worker run wherever the
    engine's outputs do not depend on the batch (vLLM's batch-invariant mode on a GPU; float32 on a CPU).
    """
    if why_stale(run) is None:
        return reuse(run)
    with RunLock(run.lock, f"arm {run.arm.name!r}"):
        return _merge(run, n)


def recorded_tool_specs(run: ResolvedRun, paths: list[Path]) -> list[dict[str, Any]]:
    """The tool specs a tool arm's parts were planned with, as the first part records them; parts made
    before parts recorded them are planned with the specs a tool server lists."""
    for path in paths:
        if path.is_file():
            specs = recorded_meta(path).get(TOOL_SPECS_META)
            if specs is not None:
                return list(specs)
            break
    from augment.tools.session import tool_specs

    with tool_session(run) as client:
        return tool_specs(client)


def _merge(run: ResolvedRun, n: int) -> Path:
    arm, params, pins, settings = run.arm, run.params, run.pins, run.settings
    paths = [part_path(settings.out_dir, arm.name, (s, n)) for s in range(n)]
    plan = plan_run(run.prompting, recorded_tool_specs(run, paths) if arm.tools else [])
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
        info = merged(shard.meta)
        infos.setdefault(info.model_dump_json() if info is not None else "", path)
        records.update(shard.records)
        parts.append(shard)
    if len(infos) != 1 or "" in infos:
        a, b = list(infos.values())[:2] if len(infos) > 1 else (parts[0].path, parts[0].path)
        raise RunnerError(
            f"{a} and {b}: the parts ran on different engines (or one has no engine record); run every part "
            "on the same engine build and device kind"
        )
    info = merged(parts[0].meta)
    assert info is not None
    restarts = sum(int(p.meta.get(RESTARTS_META, 0)) for p in parts)
    counts = tool_counts(records, restarts) if arm.tools else None
    runs = [p.meta.get("provenance", {}) for p in parts]
    write_arm(
        run, plan, records, info, counts,
        host=",".join(sorted({str(r.get("host", "unknown")) for r in runs})),
        started_at=min(p.started_at for p in parts),
        generate_s=max(float(r.get("generate_s") or 0.0) for r in runs),
        gen_tokens=sum(int(r.get("gen_tokens") or 0) for r in runs),
        parts=n,
    )  # fmt: skip
    for shard in parts:
        shard.path.unlink()
    print(f"run_arm: {arm.name}: merged {n} parts, {len(records)} samples; wrote {run.dest}", flush=True)
    return run.dest
