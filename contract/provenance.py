"""The provenance record of a generation: when, where and how fast, kept beside the generations file.

    generations/<arm>.provenance.json

Wall-clock times, the host and the throughput differ on every run, so they live here and nowhere in the
tracked artifacts (generations, EvalLogs, reports, pins, dvc.lock): a rerun from the same pinned inputs
then reproduces those byte for byte, and `git status` stays clean. The record names the sha256 of the
generations file it describes, so a record left by another run is never taken for this one's. It is not a
DVC output and is not committed (`*.provenance.json` is ignored by git); `python -m pipeline.provenance`
prints the records and says whether each arm was generated on this machine's kind of hardware.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from contract.engine import EngineInfo

# What an EvalLog made by the pipeline holds in its (required) measured_at: the time is in the record.
NOT_RECORDED = "not recorded in the log (see the generation's provenance record)"


class Provenance(BaseModel):
    """When, where and how one arm's generations were made."""

    model_config = ConfigDict(extra="forbid")
    arm: str
    generations_sha256: str
    host: str
    started_at: str
    finished_at: str
    engine: EngineInfo
    engine_start_s: float | None = None
    generate_s: float
    samples: int
    samples_resumed: int = 0
    gen_tokens: int
    tokens_per_s: float
    # Tool arms: the calls this run made and their wall-clock latency (kept out of the generations).
    tool_calls: int = 0
    tool_latency_median_s: float | None = None
    tool_latency_p95_s: float | None = None
    # A sharded run: how many parts were merged; generate_s is then the slowest part's, host lists them all.
    parts: int = 1


def provenance_path(generations: str | Path) -> Path:
    """Where the provenance record of a generations file lives: beside it, <stem>.provenance.json."""
    p = Path(generations)
    return p.with_name(f"{p.stem}.provenance.json")


def load_provenance(path: str | Path) -> Provenance | None:
    """The record at path, or None when there is none (pulled from a remote, or made elsewhere)."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        return Provenance.model_validate(json.loads(p.read_text()))
    except (json.JSONDecodeError, ValidationError) as e:
        raise ValueError(
            f"{p}: not a provenance record ({e.__class__.__name__}); delete it and rerun the arm"
        ) from None
