"""The EvalLog contract: one JSON file per arm, written by the runner, read by the analyses.

The minimal form is exactly the one of seed 000 (model_name, suite, suite_revision, n_samples,
temperature, max_tokens, driver, measured_at, items[{item_id, scores}]) and always validates.
Everything else the runner knows is optional, so old or hand-made logs keep working.

    python -m pipeline.evallog --schema          # print the JSON Schema
    python -m pipeline.evallog check FILE...     # one line per problem, exit 1 if any
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrievedDoc(_Strict):
    """One passage a retrieval arm put in front of the question."""

    doc_id: str
    score: float
    rank: int | None = None


class ToolCallRecord(_Strict):
    """One tool call of a sample: what the model asked for and what came back."""

    name: str | None = None
    arguments: Any = None
    raw: str | None = None
    result: Any = None
    error: str | None = None
    latency_s: float | None = None
    round: int | None = None


class SampleRecord(_Strict):
    """Everything the runner knows about one sample of one item."""

    index: int = Field(ge=0)
    seed: int
    score: float
    text: str | None = None
    transcript: list[dict[str, Any]] | None = None
    answer: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = Field(default=None, ge=0)
    gen_tokens: int | None = Field(default=None, ge=0)
    rounds: int | None = Field(default=None, ge=0)
    retrieved: list[RetrievedDoc] | None = None
    tool_calls: list[ToolCallRecord] | None = None
    path: str | None = None


class ItemResult(_Strict):
    """One suite item: its per-sample scores, and optionally the samples themselves."""

    item_id: str
    scores: list[float]
    family: str | None = None
    gen_tokens: list[int] | None = None
    samples: list[SampleRecord] | None = None

    @field_validator("scores")
    @classmethod
    def _scores_in_unit_interval(cls, v: list[float]) -> list[float]:
        for j, s in enumerate(v):
            if not math.isfinite(s) or s < 0.0 or s > 1.0:
                raise ValueError(f"scores[{j}] = {s!r} is not a finite number in [0, 1]")
        return v


class EngineInfo(_Strict):
    """Provenance of the engine that generated a log."""

    name: str
    version: str | None = None
    device: str | None = None
    driver: str | None = None
    dtype: str | None = None
    batch_invariant: bool | None = None


class Protocol(_Strict):
    """The matched protocol: identical for every arm of a comparison."""

    k: int = Field(ge=1)
    max_tokens: int = Field(ge=1)
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    seed: int
    max_tool_calls: int = Field(default=0, ge=0)


class RetrievalSettings(_Strict):
    """How a retrieval arm put passages before the question (params.yaml rag)."""

    top_k: int = Field(ge=1)
    order: str


class EvalLog(_Strict):
    """A whole arm's evaluation: the seed-000 fields plus optional runner provenance."""

    model_name: str
    suite: str
    suite_revision: str
    n_samples: int = Field(ge=1)
    temperature: float
    max_tokens: int
    driver: str
    measured_at: str
    items: list[ItemResult]

    arm: str | None = None
    attribution: str | None = None
    top_p: float | None = None
    seed: int | None = None
    pins: dict[str, str] | None = None
    engine: EngineInfo | None = None
    protocol: Protocol | None = None
    retrieval: RetrievalSettings | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EvalLog:
        seen: set[str] = set()
        for it in self.items:
            if it.item_id in seen:
                raise ValueError(f"item {it.item_id!r}: item_id: duplicate item id")
            seen.add(it.item_id)
            if len(it.scores) != self.n_samples:
                raise ValueError(
                    f"item {it.item_id!r}: scores: has {len(it.scores)} scores, n_samples is {self.n_samples}"
                )
            if it.gen_tokens is not None and len(it.gen_tokens) != self.n_samples:
                raise ValueError(
                    f"item {it.item_id!r}: gen_tokens: has {len(it.gen_tokens)} entries, "
                    f"n_samples is {self.n_samples}"
                )
            if it.samples is not None and len(it.samples) != self.n_samples:
                raise ValueError(
                    f"item {it.item_id!r}: samples: has {len(it.samples)} samples, "
                    f"n_samples is {self.n_samples}"
                )
        return self


class EvalLogError(ValueError):
    """A log that cannot be read or does not validate; the message names file, item and field."""


def _describe(err: dict[str, Any], raw: Any) -> str:
    """Turn one pydantic error into 'item X: field: message' using the raw JSON for item ids."""
    loc = list(err.get("loc", ()))
    msg = err.get("msg", "invalid")
    if len(loc) >= 2 and loc[0] == "items" and isinstance(loc[1], int):
        item_id: Any = loc[1]
        try:
            item_id = raw["items"][loc[1]]["item_id"]
        except (KeyError, IndexError, TypeError):
            item_id = f"#{loc[1]}"
        field = ".".join(str(p) for p in loc[2:]) or "item"
        return f"item {item_id!r}: {field}: {msg}"
    if loc:
        return f"{'.'.join(str(p) for p in loc)}: {msg}"
    return msg.removeprefix("Value error, ")


def problems(path: str | Path) -> list[str]:
    """Every problem of one log file, one line each ('FILE: item X: field: what is wrong')."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        return [f"{p}: file not found"]
    except json.JSONDecodeError as e:
        return [f"{p}: not JSON (line {e.lineno}, column {e.colno}): {e.msg}"]
    try:
        EvalLog.model_validate(raw)
    except ValidationError as e:
        return [f"{p}: {_describe(err, raw)}" for err in e.errors()]
    return []


def load(path: str | Path) -> EvalLog:
    """Read and validate one EvalLog; raise EvalLogError naming the file, item and field."""
    try:
        return EvalLog.model_validate_json(Path(path).read_text())
    except (OSError, ValidationError):
        # Validate once on the fast path; only a failing file is parsed again to word its problems.
        raise EvalLogError("; ".join(problems(path))) from None


def main(argv: list[str] | None = None) -> int:
    """Command line: print the schema or check log files."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.evallog", description=__doc__.split("\n\n")[0])
    ap.add_argument("--schema", action="store_true", help="print the EvalLog JSON Schema and exit")
    sub = ap.add_subparsers(dest="cmd")
    chk = sub.add_parser("check", help="validate EvalLog files; one line per problem")
    chk.add_argument("files", nargs="+", help="EvalLog JSON files")
    args = ap.parse_args(argv)
    if args.schema:
        print(json.dumps(EvalLog.model_json_schema(), indent=2))
        return 0
    if args.cmd != "check":
        ap.print_help()
        return 2
    bad = 0
    for f in args.files:
        lines = problems(f)
        for line in lines:
            print(line)
        if not lines:
            print(f"{f}: ok")
        bad += bool(lines)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
