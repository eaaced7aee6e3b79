"""The record of one generation run: each finished sample kept as it comes, then the generations file.

The record is started with the run's fingerprint, each finished sample recorded as it comes, finished into the
arm's generations file and its provenance record (or, for a part, into the finished part the merge reads).

The storage is the run's shard in <out_dir>.work/partial/ (pipeline.shards): each sample is appended and
flushed as it finishes, so a killed run loses nothing it finished. The samples a previous run with the same
fingerprint left there are the source the run loop reads (`previous`): finished chunks are skipped, and a
chunk cut short is regenerated (whole, or only its missing samples on an engine whose batches are not
reproducible), keeping the samples already on disk.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.engine import EngineInfo, GenRequest
from contract.generations import ToolCallCounts, dump_generations
from contract.provenance import Provenance, provenance_path
from pipeline.engine_record import merged, new_record
from pipeline.plan import Plan
from pipeline.provenance import record
from pipeline.resolve import ResolvedRun
from pipeline.samples import (
    RESTARTS_META,
    TOOL_SPECS_META,
    Outcome,
    build_generations,
    run_fingerprint,
    sample_line,
    sample_validator,
    tool_counts,
)
from pipeline.settings import RunnerError, part_path
from pipeline.shards import Shard, now_iso


@dataclass
class Tally:
    """What this run generated: tokens, new samples' tool-call latencies, regenerated samples that differ."""

    tokens: int = 0
    differ: int = 0
    latencies: list[float] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)


class GenerationRecorder:
    """One run's samples, on their way from the engine to the generations file (module docstring)."""

    def __init__(self, run: ResolvedRun, plan: Plan) -> None:
        self.run = run
        self.plan = plan
        fingerprint = run_fingerprint(run.arm, run.params, run.pins, run.settings.engine, plan, run.part)
        self.shard = Shard(run.shard, fingerprint, fresh=run.settings.fresh, validate=sample_validator(plan))
        self.resumed = len(self.shard.records)
        self.restarts_before = int(self.shard.meta.get(RESTARTS_META, 0))
        self.tally = Tally()

    @property
    def previous(self) -> Mapping[tuple[str, int], dict[str, Any]]:
        """Every finished sample so far, those of earlier runs with this fingerprint included."""
        return self.shard.records

    def pending(self, chunks: Sequence[list[GenRequest]]) -> list[list[GenRequest]]:
        """The chunks that still miss a sample."""
        return [c for c in chunks if any(r.key not in self.previous for r in c)]

    def missing(self, chunk: Sequence[GenRequest]) -> list[GenRequest]:
        """The requests of chunk that have no sample yet (a served engine regenerates only those)."""
        return [r for r in chunk if r.key not in self.previous]

    def note(self, key: str, value: Any) -> None:
        """Record once what the run learned (the engine, a part's tool specs), so a resume knows it too."""
        if key not in self.shard.meta:
            self.shard.set_meta(key, value)

    def engine(self, info: EngineInfo) -> None:
        """Record this run's engine; a resume on another server adds its record (pipeline.engine_record)."""
        new = new_record(self.shard.meta, info, self.shard.path)
        if new is not None:
            self.shard.set_meta(*new)

    def tool_specs(self, specs: list[dict[str, Any]]) -> None:
        """A tool arm's part records the tool specs its prompts showed: the merge plans with them."""
        if self.run.part is not None and self.run.arm.tools:
            self.note(TOOL_SPECS_META, specs)

    def restarts(self, this_run: int) -> None:
        """The tool server's restarts so far, summed with the earlier runs' (kept in the shard)."""
        total = self.restarts_before + this_run
        if total != int(self.shard.meta.get(RESTARTS_META, 0)):
            self.shard.set_meta(RESTARTS_META, total)

    def record(self, request: GenRequest, out: Outcome) -> bool:
        """Save one finished sample; False for a regenerated one already on disk (the one on disk stays)."""
        old = self.shard.records.get(request.key)
        if old is not None:
            self.tally.differ += old.get("text") != out.text
            return False
        self.shard.append([sample_line(request, out, self.run.arm.tools)])
        self.tally.latencies += [c.latency_s for c in out.tool_calls or [] if c.latency_s is not None]
        self.tally.tokens += out.gen_tokens
        return True

    def sync(self) -> None:
        """Force the samples recorded so far to disk (at the end of each chunk)."""
        self.shard.sync()

    def close(self) -> None:
        """Force the shard to disk and close it."""
        self.shard.close()

    def warn_if_differ(self) -> None:
        """Say when regenerated samples of an interrupted chunk differed from those already kept."""
        if self.tally.differ:
            print(
                f"run_arm: warning: {self.tally.differ} regenerated samples of an interrupted chunk differ "
                f"from those already in {self.shard.path} (kept those); the engine did not reproduce its "
                "batch",
                file=sys.stderr,
            )

    def engine_info(self) -> EngineInfo:
        """The engine every sample of the shard was generated on."""
        info = merged(self.shard.meta)
        if info is None:
            raise RunnerError(
                f"{self.shard.path}: has no engine record; pass fresh=true to regenerate the arm"
            )
        return info

    def finish(self, engine_start_s: float | None) -> Path:
        """Write the arm's generations file and its provenance record, then remove the shard."""
        info = self.engine_info()
        generate_s = time.perf_counter() - self.tally.t0
        if self.run.part is not None:
            return self._finish_part(engine_start_s, generate_s)
        arm = self.run.arm
        counts = tool_counts(self.previous, int(self.shard.meta.get(RESTARTS_META, 0))) if arm.tools else None
        if counts is not None and counts.failed:
            print(
                f"run_arm: warning: {counts.failed} of {counts.answered + counts.failed} tool calls of "
                f"{arm.name} failed (the tool server did not answer them; {counts.restarts} restarts); they "
                "are marked failed in the generations, and the arm comparison leaves the arm out above "
                "params.yaml analysis.max_failed_tool_calls",
                file=sys.stderr,
            )
        prov = write_arm(
            self.run, self.plan, self.previous, info, counts,
            host=platform.node(), started_at=self.shard.started_at, engine_start_s=engine_start_s,
            generate_s=generate_s, samples_resumed=self.resumed, gen_tokens=self.tally.tokens,
            latencies=self.tally.latencies,
        )  # fmt: skip
        self.shard.remove()
        print(summary_line(prov, self.run.dest), flush=True)
        return self.run.dest

    def _finish_part(self, engine_start_s: float | None, generate_s: float) -> Path:
        """Record where and how fast a finished part ran, then move its shard to where the merge reads it."""
        shard, run = self.shard, self.run
        assert run.part is not None
        if "provenance" not in shard.meta:  # a part killed before its move has recorded it already
            shard.set_meta(
                "provenance",
                {
                    "host": platform.node(),
                    "started_at": shard.started_at,
                    "finished_at": now_iso(),
                    "engine_start_s": engine_start_s,
                    "generate_s": generate_s,
                    "gen_tokens": self.tally.tokens,
                },
            )
        shard.close()
        dest = part_path(run.settings.out_dir, run.arm.name, run.part)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shard.path.replace(dest)
        s, n = run.part
        print(
            f"run_arm: {run.arm.name}: part {s}/{n}: {len(shard.records)} samples; wrote {dest}", flush=True
        )
        return dest


def write_arm(
    run: ResolvedRun,
    plan: Plan,
    records: Mapping[tuple[str, int], dict[str, Any]],
    info: EngineInfo,
    counts: ToolCallCounts | None,
    **provenance: Any,
) -> Provenance:
    """Write the arm's generations file from its samples (atomically), then its provenance record."""
    gens = build_generations(plan, records, run.params, run.arm, run.pins, info, run.inputs, counts)
    text = dump_generations(gens)
    atomic_write(run.dest, text)
    prov = record(run.arm.name, text, info, finished_at=now_iso(), samples=len(plan.requests), **provenance)
    atomic_write(provenance_path(run.dest), prov.model_dump_json(indent=1) + "\n")
    return prov


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
