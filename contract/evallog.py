"""The EvalLog: one JSON file per arm, written by the scorer, read by the analyses.

The minimal form (model_name, suite, suite_revision, n_samples, temperature, max_tokens, driver,
measured_at, items[{item_id, scores}]) always validates, so a log made by hand or by another tool can be
analysed. Everything else the scorer knows is optional: the format version, the arm, the pins, the
engine, the scorer's name and version, per item its question, reference answer, prompt, passages (with
their text) and scored samples, and for a tool arm the counts of its tool calls (answered, failed, server
restarts; format 3).

    python -m contract.evallog --schema          # print the JSON Schema
    python -m contract.evallog check FILE...     # one line per problem, exit 1 if any
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contract.engine import EngineInfo
from contract.files import PathCheckError, input_file
from contract.generations import (
    RetrievalSettings,
    RetrievedDoc,
    ToolCallCounts,
    ToolCallRecord,
    check_tool_counts,
    count_tool_calls,
)
from contract.judge import JudgeRecord
from contract.names import Name
from contract.protocol import Protocol
from contract.validation import describe_error

# 3: tool arms carry tool_calls (answered, failed, restarts) and records mark failed calls.
# 4: items carry lenient_scores (the lenient reader's verdicts) and samples the lenient reader's answer where
# it differs from the report's reader's.
# 5: samples carry a verdict (right, wrong or undecided) and items which samples are undecided: the reader
# could not settle them (no answer read, or an `exact` reference whose words the answer does not match).
FORMAT_VERSION = 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SampleRecord(_Strict):
    """One scored sample: what was generated, the answer read from it, its score and (tool arms) its path."""

    index: int = Field(ge=0)
    # None: the tool that generated the sample recorded no per-sample seed (an imported log).
    seed: int | None = None
    score: float
    # right, wrong or undecided: the reader could not settle the sample (no answer read, or a reference only
    # the `exact` fallback judges and the words do not match); an undecided sample keeps score 0, so the
    # headline still counts an unread answer as wrong. None: a log before format 5, or an imported log that
    # was not rescored.
    verdict: Literal["right", "wrong", "undecided"] | None = None
    text: str | None = None
    # A scorer's sample has no `transcript`: its text holds what the model wrote after the prompt, tool
    # calls and the harness's tool responses included, so its transcript is the item's prompt followed by
    # the text (contract.textformat.transcript cuts it into turns) and the log stores each once. This field
    # holds a source's own turns where its text does not (an imported log: Inspect's messages), each
    # {"role", "content"} and, for a model turn, its "tool_calls" [{"name", "arguments"}].
    transcript: list[dict[str, Any]] | None = None
    answer: str | None = None
    # The lenient reader's answer (every reading rule, the verifier's fallbacks included), only where it
    # differs from `answer`: the reports separate a model's format from its reasoning with it.
    lenient_answer: str | None = None
    # Why no answer was read (an unclosed <think>, only the instruction's placeholder, ...).
    no_answer_reason: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = Field(default=None, ge=0)
    gen_tokens: int | None = Field(default=None, ge=0)
    rounds: int | None = Field(default=None, ge=0)
    tool_calls: list[ToolCallRecord] | None = None
    path: str | None = None
    # An imported sample: what decided its score (the source tool's metric, or this project's verifier),
    # and the source tool's own score of it where a verifier judged it instead.
    scored_by: str | None = None
    source_score: float | None = None
    # The mean log-probability of the generated tokens, where the generating tool recorded token
    # log-probabilities (this pipeline with protocol.logprobs; an Inspect log with logprobs on).
    mean_logprob: float | None = Field(default=None, le=0)
    # A judged log's sample that the model judge was asked about (contract.judge; judged/<arm>.json): the
    # rules' verdict, the judge's, its raw reply and the final verdict, which `score` holds.
    judge: JudgeRecord | None = None


class ItemResult(_Strict):
    """One suite item: its per-sample scores, and optionally its question, prompt, passages and samples."""

    item_id: str
    scores: list[float]
    family: Name | None = None
    gen_tokens: list[int] | None = None
    # The lenient reader's score of each sample (scores: the report's reader); absent in logs before format 4
    # and in imported logs that were not rescored.
    lenient_scores: list[float] | None = None
    # Whether each sample is undecided (parallel to scores; format 5). None: every sample decided, or a log
    # before format 5. The analyses read this list, never the sample records (which a reader may drop).
    undecided: list[bool] | None = None
    # The suite's question and reference answer, for a reader (the item browser); no analysis reads them.
    question: str | None = None
    reference_answer: str | None = None
    prompt: str | None = None
    retrieved: list[RetrievedDoc] | None = None
    samples: list[SampleRecord] | None = None
    # The per-sample seeds of a log read without its samples (contract.logreader), so that two logs can
    # still be checked for the same seeds; a log with samples reads them from the samples.
    _seeds: tuple[int | None, ...] | None = PrivateAttr(default=None)
    # Likewise each sample's finish reason, so that the reports can count the samples that hit the budget,
    # its path verdict (None where no sample has one) and whether any sample records its tool calls, for
    # the arm comparison's path table and tool-call check.
    _finish: tuple[str | None, ...] | None = PrivateAttr(default=None)
    _paths: tuple[str | None, ...] | None = PrivateAttr(default=None)
    _tool_calls: bool = PrivateAttr(default=False)
    # Each sample's answer read, for the calibration of the majority answer (analysis.reports.calibration).
    _answers: tuple[str | None, ...] | None = PrivateAttr(default=None)
    # And each sample's mean token log-probability, where recorded (the calibration's weights).
    _logprobs: tuple[float | None, ...] | None = PrivateAttr(default=None)

    def sample_seeds(self) -> tuple[int | None, ...] | None:
        """The seed of each sample, from the samples or kept when they were dropped; None if unknown."""
        seeds = tuple(s.seed for s in self.samples) if self.samples is not None else self._seeds
        if seeds is None or seeds.count(None) == len(seeds):
            return None
        return seeds

    def sample_finish_reasons(self) -> tuple[str | None, ...] | None:
        """Each sample's finish reason ('length': it hit max_tokens), kept when the samples were dropped."""
        if self.samples is not None:
            return tuple(s.finish_reason for s in self.samples)
        return self._finish

    def sample_paths(self) -> tuple[str | None, ...] | None:
        """Each sample's path verdict (tool arms), kept when samples are dropped; None if none has one."""
        if self.samples is None:
            return self._paths
        paths = tuple(s.path for s in self.samples)
        return None if paths.count(None) == len(paths) else paths

    def sample_answers(self) -> tuple[str | None, ...] | None:
        """Each sample's answer read (None: none), kept when the samples were dropped; None if unknown."""
        if self.samples is not None:
            return tuple(s.answer for s in self.samples)
        return self._answers

    def sample_mean_logprobs(self) -> tuple[float, ...] | None:
        """Each sample's mean token log-probability, kept when the samples were dropped; None unless every
        sample records one."""
        values = tuple(s.mean_logprob for s in self.samples) if self.samples is not None else self._logprobs
        if values is None or None in values:
            return None
        return values  # type: ignore[return-value]

    def records_tool_calls(self) -> bool:
        """True when a sample records its tool calls (kept when the samples were dropped)."""
        if self.samples is None:
            return self._tool_calls
        return any(s.tool_calls is not None for s in self.samples)

    @field_validator("scores", "lenient_scores")
    @classmethod
    def _scores_in_unit_interval(cls, v: list[float] | None, info: ValidationInfo) -> list[float] | None:
        for j, s in enumerate(v or []):
            if not math.isfinite(s) or s < 0.0 or s > 1.0:
                raise ValueError(f"{info.field_name}[{j}] = {s!r} is not a finite number in [0, 1]")
        return v

    @model_validator(mode="after")
    def _samples_agree(self) -> ItemResult:
        # scores and gen_tokens are what the analyses read; samples are what a reader checks them against.
        # A log where they disagree would make the headline and the path table speak of different runs.
        for j, flagged in enumerate(self.undecided or []):
            if flagged and j < len(self.scores) and self.scores[j] != 0.0:
                raise ValueError(
                    f"undecided[{j}]: is true but scores[{j}] is {self.scores[j]}; undecided scores 0"
                )
        if self.samples is None:
            return self
        for j, s in enumerate(self.samples):
            if s.index != j:
                raise ValueError(f"samples[{j}].index: is {s.index}; samples must be in index order 0..k-1")
            if j < len(self.scores) and s.score != self.scores[j]:
                raise ValueError(f"samples[{j}].score: is {s.score}, scores[{j}] is {self.scores[j]}")
            flagged = self.undecided is not None and j < len(self.undecided) and self.undecided[j]
            if s.verdict is not None and (s.verdict == "undecided") != flagged:
                raise ValueError(
                    f"samples[{j}].verdict: is {s.verdict!r}, undecided[{j}] is {flagged}; write both "
                    "from one reading"
                )
            tokens = self.gen_tokens
            if (
                tokens is not None
                and j < len(tokens)
                and s.gen_tokens is not None
                and s.gen_tokens != tokens[j]
            ):
                raise ValueError(
                    f"samples[{j}].gen_tokens: is {s.gen_tokens}, gen_tokens[{j}] is {tokens[j]}"
                )
        return self


class VerifierInfo(_Strict):
    """One verifier the suite uses: its suite type, what implements it, and that implementation's version."""

    type: str
    name: str
    version: str


class ScorerInfo(_Strict):
    """The scorer that turned generations into this log: its name, version, settings and verifiers."""

    name: str
    version: str
    settings: dict[str, Any] = Field(default_factory=dict)
    verifiers: list[VerifierInfo] | None = None
    # Answers whose verifier ran out of its time limit (scored 0, each sample's no_answer_reason says so).
    timeouts: int | None = Field(default=None, ge=0)
    # How many samples' answers each rule of the report's reader read ('math-verify', 'final sentence',
    # '####', 'first_answer', ...; 'none': no answer read), so that a reader of the log sees what decided it.
    read_by: dict[str, int] | None = None


class EvalLog(_Strict):
    """A whole arm's evaluation: the minimal fields every log has, plus optional provenance."""

    model_name: Name
    suite: Name
    suite_revision: str
    n_samples: int = Field(ge=1)
    temperature: float
    max_tokens: int
    driver: str
    measured_at: str
    items: list[ItemResult]

    # Absent in the minimal form (version 1); logs the scorer writes carry FORMAT_VERSION.
    format_version: int = Field(default=1, ge=1)
    arm: Name | None = None
    attribution: str | None = None
    top_p: float | None = None
    seed: int | None = None
    pins: dict[str, str] | None = None
    engine: EngineInfo | None = None
    protocol: Protocol | None = None
    retrieval: RetrievalSettings | None = None
    scorer: ScorerInfo | None = None
    started_at: str | None = None
    finished_at: str | None = None
    tool_calls: ToolCallCounts | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EvalLog:
        if self.format_version > FORMAT_VERSION:
            raise ValueError(
                f"format_version: {self.format_version} is newer than this tool reads ({FORMAT_VERSION}); "
                "update the tool"
            )
        seen: set[str] = set()
        for it in self.items:
            if it.item_id in seen:
                raise ValueError(f"item {it.item_id!r}: item_id: duplicate item id")
            seen.add(it.item_id)
            for name in ("scores", "lenient_scores", "undecided", "gen_tokens", "samples"):
                got = getattr(it, name)
                if got is not None and len(got) != self.n_samples:
                    raise ValueError(
                        f"item {it.item_id!r}: {name}: has {len(got)} entries, n_samples is {self.n_samples}"
                    )
        if self.tool_calls is not None and all(it.samples is not None for it in self.items):
            records = (c for it in self.items for s in it.samples or [] for c in s.tool_calls or [])
            check_tool_counts(self.tool_calls, count_tool_calls(records, self.tool_calls.restarts))
        return self


def undecided_of(samples: list[SampleRecord]) -> list[bool] | None:
    """ItemResult.undecided of these samples (which the reader could not settle); None when it settled all."""
    flags = [s.verdict == "undecided" for s in samples]
    return flags if any(flags) else None


class EvalLogError(ValueError):
    """A log that cannot be read or does not validate; the message names file, item and field."""


def problems(path: str | Path) -> list[str]:
    """Every problem of one log file, one line each ('FILE: item X: field: what is wrong')."""
    p = Path(path)
    try:
        input_file(p, "log")
    except PathCheckError as e:
        return [str(e)]
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        return [f"{p}: file not found"]
    except json.JSONDecodeError as e:
        return [f"{p}: not JSON (line {e.lineno}, column {e.colno}): {e.msg}"]
    try:
        EvalLog.model_validate(raw)
    except ValidationError as e:
        return [f"{p}: {describe_error(err, raw)}" for err in e.errors()]
    return []


def load(path: str | Path) -> EvalLog:
    """Read and validate one EvalLog; raise EvalLogError naming the file, item and field."""
    try:
        with collector_paused():
            return EvalLog.model_validate_json(Path(path).read_bytes())
    except (OSError, ValidationError):
        # Validate once on the fast path; only a failing file is parsed again to word its problems.
        raise EvalLogError("; ".join(problems(path))) from None


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block; the collector is left as it was found.

    A log with samples is a million small objects: every collection while they are built traverses all
    built so far (more than doubling the load of a 60 MB log), and every later one all of them again. An
    analysis holds its logs until it ends and makes little cyclic garbage, so it runs inside one.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    """Command line: print the schema or check log files."""
    ap = argparse.ArgumentParser(prog="python -m contract.evallog", description=__doc__.split("\n\n")[0])
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
