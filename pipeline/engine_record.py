"""The engine a run's samples came from, as its shard records it across resumes.

A run records its engine in the shard's meta (`engine`). A resume that attaches to another server of the
same build (another host, the same vLLM version and model) adds its own record (`engine 2`, `engine 3`,
...), and the generations name every server (`server: "gpu1:8000, gpu2:8000"`): the provenance of each
sample stays true. A resume on another build (another vLLM version, engine, dtype or device) is refused, as
replicas of different versions are: its samples could differ from those already saved, and one generations
file records one build.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contract.engine import EngineInfo
from pipeline.settings import RunnerError

KEY = "engine"
# What may differ between the runs of one arm: where the server ran, the name it served the model under.
PLACES = ("server", "served_model")


def engine_key(n: int) -> str:
    """The meta key of the n-th engine record of a shard (1: the first run's)."""
    return KEY if n == 1 else f"{KEY} {n}"


def records_of(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The engine records of a shard's meta, the first run's first."""
    out = []
    while engine_key(len(out) + 1) in meta:
        out.append(dict(meta[engine_key(len(out) + 1)]))
    return out


def _describe(info: Mapping[str, Any]) -> str:
    fields = ("name", "version", "device", "dtype", "server")
    return ", ".join(f"{k} {info[k]}" for k in fields if info.get(k))


def new_record(meta: Mapping[str, Any], info: EngineInfo, shard: Path) -> tuple[str, dict[str, Any]] | None:
    """The (key, record) this run's engine adds to a shard's meta; None when it is recorded already.

    RunnerError in one line when the samples already saved came from another build."""
    new = info.model_dump(mode="json")
    runs = records_of(meta)
    if new in runs:
        return None
    if runs:
        first = runs[0]
        field = next((k for k in new if k not in PLACES and new[k] != first.get(k)), None)
        if field is not None:
            raise RunnerError(
                f"{shard}: its samples so far were generated on {_describe(first)}; this run's engine has "
                f"{field} {new[field]!r} (not {first.get(field)!r}), which may generate different texts: "
                "resume on the same build, or pass fresh=true to start over"
            )
    return engine_key(len(runs) + 1), new


def merged(meta: Mapping[str, Any]) -> EngineInfo | None:
    """The engine of every sample of a shard: its first record, naming each server (and served name)."""
    runs = records_of(meta)
    if not runs:
        return None
    out = dict(runs[0])
    for field in PLACES:
        names: list[str] = []
        for run in runs:
            names += [n for n in str(run.get(field) or "").split(", ") if n and n not in names]
        out[field] = ", ".join(names) or None
    return EngineInfo.model_validate(out)
