"""What every importer shares: the refusal, one source file's samples, and the EvalLog made from them.

An importer reads one file of another tool into a `Source` (its run settings and, per item, the samples in
order); `assemble` joins the sources of one log: the same items in every file, each file's samples
appended (k runs of one sample each, or Inspect logs of some epochs each), one decoding setting
throughout. What the analyses would refuse anyway (unequal samples per item, another item set, mixed
decoding) is refused here, naming the file and the field, before a log is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.evallog import FORMAT_VERSION, EvalLog, ItemResult, SampleRecord, ScorerInfo
from contract.suite import SuiteItem
from contract.validation import describe_error
from scoring import verifiers

# The decoding settings two runs of one log must share (EvalLog field names).
DECODING = ("temperature", "top_p", "max_tokens")
VERIFIER_TYPES = ("exact", "numeric", "math", "choice")


class ImportRefusal(ValueError):
    """A source file the importer will not turn into a log; str() is the one line the CLI prints."""


@dataclass
class ItemDraft:
    """One item of one source file: its prompt, family and samples (SampleRecord fields without index)."""

    prompt: str | None = None
    family: str | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Source:
    """One file of another tool, read: who made it, with which settings, and its items' samples."""

    path: Path
    tool: str
    version: str
    model_name: str
    suite: str
    suite_revision: str
    measured_at: str
    # How each sample's score was decided (the tool's own scorer, or this project's verifier).
    scored_by: dict[str, Any]
    decoding: dict[str, float | int | None]
    seed: int | None = None
    items: dict[str, ItemDraft] = field(default_factory=dict)


def one_setting(path: Path, where: str, name: str, value: Any, seen: dict[str, Any]) -> None:
    """Record a decoding setting of one row; refuse a row that differs from the file's earlier rows."""
    if name in seen and seen[name] != value:
        raise ImportRefusal(
            f"{path}: {where}: {name} is {value!r}, earlier rows have {seen[name]!r}; mixed decoding "
            "settings are not one protocol: import each setting into its own log"
        )
    seen[name] = value


def unit_score(path: Path, where: str, value: Any) -> float:
    """A score as a float in [0, 1], or a refusal naming the row and field."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ImportRefusal(
            f"{path}: {where}: {value!r} is not a score in [0, 1]; choose a 0/1 or [0, 1] metric (--metric)"
        )
    return float(value)


def verify(item_id: str, family: str, reference: Any, text: str, kind: str) -> verifiers.Verdict:
    """One sample judged by this project's oracle (scoring.verifiers) against the source's reference."""
    item = SuiteItem(
        item_id=item_id,
        family=family,
        question="(imported)",
        answer=reference if isinstance(reference, int | float) else str(reference),
        verifier={"type": kind},
    )
    # Imported texts come from any prompt format: read the answer with every chat rule (boxed, ####, ...).
    return verifiers.score(item, text, chat=True)


def verifier_scorer(kind: str) -> dict[str, Any]:
    """The scored_by record of samples judged by this project's verifier of that type."""
    name, version = verifiers.describe(SuiteItem.model_validate({
        "item_id": "x", "family": "x", "question": "x", "answer": "0", "verifier": {"type": kind}
    }).verifier)  # fmt: skip
    return {"by": "reasoning-delta verifier", "verifier": kind, "implementation": name, "version": version}


def assemble(sources: Sequence[Source], overrides: dict[str, Any], arm: str | None = None) -> EvalLog:
    """The EvalLog of one or more source files of one model on one suite (their samples appended)."""
    first = sources[0]
    for src in sources[1:]:
        for name in ("tool", "model_name", "suite", "suite_revision"):
            a, b = getattr(first, name), getattr(src, name)
            if a != b:
                raise ImportRefusal(
                    f"{first.path} vs {src.path}: {name} differs ({a!r} vs {b!r}); one log holds one model "
                    "on one suite: import each into its own log"
                )
        for name in DECODING:
            a, b = first.decoding.get(name), src.decoding.get(name)
            if a != b:
                raise ImportRefusal(
                    f"{first.path} vs {src.path}: {name} differs ({a!r} vs {b!r}); mixed decoding settings "
                    "are not one protocol: import each setting into its own log"
                )
        if set(src.items) != set(first.items):
            only_a, only_b = (
                sorted(set(first.items) - set(src.items)),
                sorted(set(src.items) - set(first.items)),
            )
            example = f"{only_a[0]!r} only in the first" if only_a else f"{only_b[0]!r} only in the second"
            raise ImportRefusal(
                f"{first.path} vs {src.path}: items differ ({len(only_a)} only in the first, {len(only_b)} "
                f"only in the second, e.g. {example}); every file of one log must hold the same items"
            )
    decoding = dict(first.decoding)
    for name, value in overrides.items():
        if value is None:
            continue
        if decoding.get(name) is not None and decoding[name] != value:
            raise ImportRefusal(
                f"{first.path}: {name}: the file records {decoding[name]!r}, --{name.replace('_', '-')} says "
                f"{value!r}; drop the flag"
            )
        decoding[name] = value
    for name in ("temperature", "max_tokens"):
        if decoding.get(name) is None:
            raise ImportRefusal(
                f"{first.path}: {name}: not recorded in the source; pass --{name.replace('_', '-')} with the "
                "value the run used"
            )
    items = []
    counts: dict[int, str] = {}
    for item_id in sorted(first.items):
        drafts = [src.items[item_id] for src in sources]
        samples = [s for d in drafts for s in d.samples]
        counts.setdefault(len(samples), item_id)
        try:
            records = [SampleRecord(index=j, **s) for j, s in enumerate(samples)]
            tokens = [s.gen_tokens for s in records]
            items.append(
                ItemResult(
                    item_id=item_id,
                    family=drafts[0].family,
                    prompt=drafts[0].prompt,
                    scores=[s.score for s in records],
                    gen_tokens=None if any(t is None for t in tokens) else tokens,  # type: ignore[arg-type]
                    samples=records,
                )
            )
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise ImportRefusal(f"{first.path}: item {item_id!r}: {field}: {err['msg']}") from None
    if len(counts) > 1:
        (few, a), (many, b) = min(counts.items()), max(counts.items())
        raise ImportRefusal(
            f"{first.path}: samples: item {a!r} has {few} samples, item {b!r} has {many}; every item needs "
            "the same number of samples (an errored or missing epoch/repeat): rerun or drop the item"
        )
    if not items:
        raise ImportRefusal(f"{first.path}: no items with samples; nothing to import")
    seeds = {src.seed for src in sources}
    record = {
        "format_version": FORMAT_VERSION,
        "model_name": first.model_name,
        "suite": first.suite,
        "suite_revision": first.suite_revision,
        "n_samples": len(items[0].scores),
        "temperature": float(decoding["temperature"]),  # type: ignore[arg-type]
        "max_tokens": int(decoding["max_tokens"]),  # type: ignore[arg-type]
        "top_p": None if decoding.get("top_p") is None else float(decoding["top_p"]),  # type: ignore[arg-type]
        # One run seed for every file, else none: a per-file seed is not the log's.
        "seed": seeds.pop() if len(seeds) == 1 else None,
        "driver": f"{first.tool} {first.version}",
        "measured_at": first.measured_at,
        "arm": arm,
        "scorer": ScorerInfo(
            name=first.tool,
            version=first.version,
            settings={"imported_from": [str(s.path) for s in sources], **first.scored_by},
        ),
        "items": items,
    }
    try:
        return EvalLog.model_validate(record)
    except ValidationError as e:
        raise ImportRefusal(f"{first.path}: {describe_error(e.errors()[0], record)}") from None
