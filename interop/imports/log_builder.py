"""The EvalLog of one or more read files of one model on one suite (`build_log`).

It joins the files of one log: every file once, of one model, task, k and scoring (interop.imports.agreement);
documents aligned by their own id or, where the tool names them by position, by content hash (never by
position); with a suite, each document matched to its suite item by id or question; each file's samples
appended (k runs of one sample each, or Inspect logs of some epochs each), one decoding setting throughout.
Each sample is scored by the tool's own metric or, with a verifier, by this project's oracle (the tool's
metric kept beside it), and says which (interop.imports.judging). What the analyses would refuse anyway is
refused here, naming the file and the field, before a log is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.digest import file_sha256
from contract.evallog import FORMAT_VERSION, EvalLog, ItemResult, SampleRecord, ScorerInfo, undecided_of
from contract.generations import count_tool_calls
from contract.suite import SuiteItem, questions_sha256
from contract.validation import describe_error
from interop.imports.agreement import align, check_files
from interop.imports.judging import builtin_item, score_samples, suite_match, verifier_infos
from interop.imports.tool_file import ImportRefusal, SuiteFile, ToolFile, checked_decoding
from scoring import verifiers
from scoring.scorer import SCORER_NAME, SCORER_VERSION

# How imported texts are read (they come from any prompt format): every chat rule.
IMPORTED_READING = "imported texts: thinking stripped, last \\boxed{}, '####', 'the answer is', 'Answer:', "
IMPORTED_READING += "then the verifier's last resort"


def _decoding(first: ToolFile, overrides: dict[str, Any]) -> dict[str, Any]:
    """The log's decoding: the first file's, completed by the flags; a flag that contradicts it is refused."""
    decoding = dict(first.decoding)
    for name, value in overrides.items():
        if value is None:
            continue
        checked_decoding(Path(f"--{name.replace('_', '-')}"), "value", name, value)
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
    return decoding


def _matched(first: ToolFile, by_suite: dict[str, SuiteItem]) -> dict[str, SuiteItem]:
    """Each document's suite item (by id, or by question where named by position), each item once."""
    matched: dict[str, SuiteItem] = {}
    for key, draft in first.items.items():
        item = suite_match(first.path, key, draft, by_suite, by_id=not first.positional)
        if item.item_id in {m.item_id for m in matched.values()}:
            other = next(k for k, m in matched.items() if m.item_id == item.item_id)
            raise ImportRefusal(
                f"{first.path}: {draft.where}: matches suite item {item.item_id!r} as {other!r} does; "
                "each suite item is one document"
            )
        matched[key] = item
    return matched


def _items(
    files: Sequence[ToolFile], verifier: str | None, matched: dict[str, SuiteItem]
) -> list[ItemResult]:
    """Every document as an ItemResult, its files' samples appended in order; equal samples per item."""
    first = files[0]
    items = []
    counts: dict[int, str] = {}
    for key in sorted(first.items, key=lambda k: matched[k].item_id if k in matched else k):
        suite_item = matched.get(key)
        item_id = suite_item.item_id if suite_item is not None else key
        drafts = [file.items[key] for file in files]
        samples = [
            s
            for file, d in zip(files, drafts, strict=True)
            for s in score_samples(file, item_id, d, verifier, suite_item)
        ]
        counts.setdefault(len(samples), item_id)
        try:
            records = [SampleRecord(index=j, **s) for j, s in enumerate(samples)]
            tokens = [s.gen_tokens for s in records]
            items.append(
                ItemResult(
                    item_id=item_id,
                    family=suite_item.family if suite_item is not None else drafts[0].family,
                    prompt=drafts[0].prompt,
                    question=suite_item.question if suite_item is not None else None,
                    reference_answer=str(suite_item.answer) if suite_item is not None else None,
                    scores=[s.score for s in records],
                    undecided=undecided_of(records),
                    gen_tokens=None if any(t is None for t in tokens) else tokens,  # type: ignore[arg-type]
                    samples=records,
                )
            )
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ImportRefusal(f"{first.path}: item {item_id!r}: {where}: {err['msg']}") from None
    if len(counts) > 1:
        (few, a), (many, b) = min(counts.items()), max(counts.items())
        raise ImportRefusal(
            f"{first.path}: samples: item {a!r} has {few} samples, item {b!r} has {many}; every item needs "
            "the same number of samples (an errored or missing epoch/repeat): rerun or drop the item"
        )
    return items


def _scorer(
    first: ToolFile, settings: dict[str, Any], verifier: str | None, matched: dict[str, SuiteItem]
) -> ScorerInfo:
    """Who scored the log: the tool's metric, or this project's verifier with the tool's metric beside it."""
    if verifier is None:
        return ScorerInfo(
            name=first.tool,
            version=first.version,
            settings={
                **settings,
                "by": f"{first.tool} metric",
                "metric": first.metric,
                **first.metric_settings,
            },
        )
    judged = list(matched.values()) if verifier == "suite" else [builtin_item("x", None, "0", verifier)]
    try:
        infos = verifier_infos(judged)
    except verifiers.VerifierError as e:
        raise ImportRefusal(f"--verifier {verifier}: {e}") from None
    return ScorerInfo(
        name=SCORER_NAME,
        version=SCORER_VERSION,
        settings={
            **settings,
            "by": f"{SCORER_NAME} verifier",
            "verifier": verifier,
            "reference": "each item's suite answer" if verifier == "suite" else "the tool's reference",
            "answer": IMPORTED_READING,
            "source": f"{first.tool} {first.version}",
            "source_metric": first.metric,
            **{f"source_{k}": v for k, v in first.metric_settings.items()},
        },
        verifiers=infos,
    )


def build_log(
    files: Sequence[ToolFile],
    overrides: dict[str, Any],
    arm: str | None = None,
    verifier: str | None = None,
    suite_file: SuiteFile | None = None,
    names: dict[str, str | None] | None = None,
) -> EvalLog:
    """The EvalLog of one or more read files of one model on one suite (their samples appended).

    names: the suite's name and revision as the log records them, where given (else the tool's task).
    """
    suite = suite_file.items if suite_file is not None else None
    first = files[0]
    if not first.items:
        raise ImportRefusal(f"{first.path}: no items with samples; nothing to import")
    if verifier == "suite" and suite is None:
        raise ImportRefusal("--verifier suite: judges each item by its suite verifier; give --suite FILE")
    check_files(files)
    align(files)
    decoding = _decoding(first, overrides)
    by_suite = {it.item_id: it for it in suite} if suite is not None else None
    matched = _matched(first, by_suite) if by_suite is not None else {}
    items = _items(files, verifier, matched)
    seeds = {file.seed for file in files}
    settings: dict[str, Any] = {
        "imported_from": [str(s.path) for s in files],
        "items_named_by": first.named_by,
    }
    if by_suite is not None:
        settings["aligned_with_suite"] = "by id" if not first.positional else "by question"
    records_calls = [c for it in items for s in it.samples or [] for c in s.tool_calls or []]
    record = {
        "format_version": FORMAT_VERSION,
        "model_name": first.model_name,
        "suite": (names or {}).get("suite") or first.suite,
        "suite_revision": (names or {}).get("suite_revision") or first.suite_revision,
        # The suite file's and its questions' pins, as the scorer records them, checked by the analyses.
        "pins": None
        if suite_file is None
        else {
            "suite": f"sha256:{file_sha256(suite_file.path)}",
            "questions": f"sha256:{questions_sha256(suite_file.items)}",
        },
        "n_samples": len(items[0].scores),
        "temperature": float(decoding["temperature"]),
        "max_tokens": int(decoding["max_tokens"]),
        "top_p": None if decoding.get("top_p") is None else float(decoding["top_p"]),
        # One run seed for every file, else none: a per-file seed is not the log's.
        "seed": seeds.pop() if len(seeds) == 1 else None,
        "driver": f"{first.tool} {first.version}",
        "measured_at": first.measured_at,
        "arm": arm,
        "scorer": _scorer(first, settings, verifier, matched),
        "items": items,
        # The counts the arm comparison reads of a tool arm, from the calls the log itself records (the
        # import file has no tool-server restarts to count).
        "tool_calls": count_tool_calls(records_calls, 0) if records_calls else None,
    }
    try:
        return EvalLog.model_validate(record)
    except ValidationError as e:
        raise ImportRefusal(f"{first.path}: {describe_error(e.errors()[0], record)}") from None
