"""What every importer shares: the refusal, one source file's samples, and the EvalLog made from them.

An importer reads one file of another tool into a `Source`: its run settings and, per document, the samples
in order, the document's name (its own id, else the tool's position) and a hash of its content. `assemble`
joins the sources of one log: every file once, of one model, task, k and scoring; documents aligned by
their own id or, where the tool names them by position, by content hash (never by position); with a suite,
each document matched to its suite item by id or question; each file's samples appended (k runs of one
sample each, or Inspect logs of some epochs each), one decoding setting throughout. Each sample is scored
by the tool's own metric or, with a verifier, by this project's oracle (the tool's metric kept beside it),
and says which. What the analyses would refuse anyway is refused here, naming the file and the field,
before a log is written.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.digest import file_sha256
from contract.evallog import FORMAT_VERSION, EvalLog, ItemResult, SampleRecord, ScorerInfo, VerifierInfo
from contract.generations import count_tool_calls
from contract.suite import CHOICE_LETTERS, SuiteItem, questions_sha256
from contract.validation import describe_error
from scoring import verifiers
from scoring.numbers import parse_number
from scoring.scorer import SCORER_NAME, SCORER_VERSION

# The decoding settings two runs of one log must share (EvalLog field names).
DECODING = ("temperature", "top_p", "max_tokens")
# --verifier: a built-in verifier type judged against the tool's reference, or `suite`: each item's own
# verifier and answer from --suite.
VERIFIER_TYPES = ("exact", "numeric", "math", "choice", "suite")
# How imported texts are read (they come from any prompt format): every chat rule.
IMPORTED_READING = "imported texts: thinking stripped, last \\boxed{}, '####', 'the answer is', 'Answer:', "
IMPORTED_READING += "then the verifier's last resort"


class ImportRefusal(ValueError):
    """A source file the importer will not turn into a log; str() is the one line the CLI prints."""


@dataclass
class ItemDraft:
    """One document of one source file: prompt, family, reference, samples and what identifies it.

    samples: SampleRecord fields without index and score, plus `tool_score` (the tool's own score of that
    sample, None where the tool scored the document once over all its samples).
    """

    prompt: str | None = None
    family: str | None = None
    reference: Any = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    # A hash of the document's content (lm-eval's doc_hash), to align files that name documents by position.
    content: str | None = None
    # The document's texts (its question among them), to match it with a suite item.
    texts: tuple[str, ...] = ()
    where: str = ""


@dataclass(frozen=True)
class SuiteFile:
    """The suite the documents are of (--suite): its file and items."""

    path: Path
    items: list[SuiteItem]


@dataclass
class Source:
    """One file of another tool, read: who made it, with which settings, and its documents' samples."""

    path: Path
    tool: str
    version: str
    model_name: str
    suite: str
    suite_revision: str
    measured_at: str
    # The tool's metric that scored each sample ("exact_match", Inspect's scorer), None when the tool kept
    # one score per document of several samples; what else says how the tool scored (filter, epochs).
    metric: str | None
    metric_settings: dict[str, Any]
    decoding: dict[str, float | int | None]
    seed: int | None = None
    items: dict[str, ItemDraft] = field(default_factory=dict)
    # How the documents are named: "doc.item_id" (their own id) or "doc_id (position)", ...
    named_by: str = "id"
    positional: bool = False
    # Where the tool recorded the model (results file, the log, the folder it wrote into).
    model_from: str = ""
    # Whether samples per document are a setting of the run (lm-eval repeats, lighteval num_samples): files
    # of one log must then share it. Inspect's epochs are not: logs of some epochs each append.
    k_is_setting: bool = True


def text_hash(text: str) -> str:
    """sha256 of a text, for documents whose tool records no content hash."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def one_setting(path: Path, where: str, name: str, value: Any, seen: dict[str, Any]) -> None:
    """Record a decoding setting of one row; refuse a row that differs from the file's earlier rows."""
    if name in seen and seen[name] != value:
        raise ImportRefusal(
            f"{path}: {where}: {name} is {value!r}, earlier rows have {seen[name]!r}; mixed decoding "
            "settings are not one protocol: import each setting into its own log"
        )
    seen[name] = value


def checked_decoding(path: Path, where: str, name: str, value: Any) -> Any:
    """A decoding setting a log may record: temperature >= 0, top_p in (0, 1], max_tokens an int >= 1."""
    if value is None:
        return None
    if name == "max_tokens":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if not ok:
            raise ImportRefusal(f"{path}: {where}: {value!r} is not a token budget (a whole number >= 1)")
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name == "temperature" and not (number and value >= 0):
        raise ImportRefusal(f"{path}: {where}: {value!r} is not a temperature (a number >= 0)")
    if name == "top_p" and not (number and 0 < value <= 1):
        raise ImportRefusal(f"{path}: {where}: {value!r} is not a top_p (a number in (0, 1])")
    return value


def plain_text(path: Path, where: str, value: Any) -> str:
    """A string the log can hold: refuse one with a lone surrogate (JSON allows it, UTF-8 does not)."""
    if not isinstance(value, str):
        raise ImportRefusal(f"{path}: {where}: is {type(value).__name__} {value!r:.60}, not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ImportRefusal(
            f"{path}: {where}: holds a lone surrogate ({value[e.start]!r} at character {e.start}), which is "
            "not text; the file was damaged or written by a broken encoder: fix or regenerate it"
        ) from None
    return value


def unit_score(path: Path, where: str, value: Any) -> float:
    """A score as a float in [0, 1], or a refusal naming the row and field."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ImportRefusal(
            f"{path}: {where}: {value!r} is not a score in [0, 1]; choose a 0/1 or [0, 1] metric (--metric)"
        )
    return float(value)


def _builtin_item(item_id: str, family: str | None, reference: Any, kind: str) -> SuiteItem:
    """A suite item that judges one imported document by a built-in verifier against the tool's reference.

    Raises ValueError (the caller names file and line) for a reference that verifier cannot judge against.
    """
    number = isinstance(reference, int | float) and not isinstance(reference, bool)
    if not number and not isinstance(reference, str):
        raise ValueError(f"the reference {reference!r:.60} is not an answer (a string or a number)")
    answer: Any = reference if number else str(reference)
    if kind == "numeric":
        value = reference if number else parse_number(reference)
        if value is None or not math.isfinite(value):
            raise ValueError(f"the reference {reference!r:.60} is not a number; choose another --verifier")
        answer = value
    if kind == "choice" and str(answer) not in CHOICE_LETTERS:
        raise ValueError(f"the reference {reference!r:.60} is not a choice letter; choose another --verifier")
    return SuiteItem(
        item_id=item_id,
        family=family or "(imported)",
        question="(imported)",
        answer=answer,
        verifier={"type": kind},
    )


def _verifier_infos(items: Sequence[SuiteItem]) -> list[VerifierInfo]:
    seen: dict[tuple[str, str], VerifierInfo] = {}
    for it in items:
        name, version = verifiers.describe(it.verifier)
        seen.setdefault(
            (it.verifier.type, name), VerifierInfo(type=it.verifier.type, name=name, version=version)
        )
    return list(seen.values())


def _check_sources(sources: Sequence[Source]) -> None:
    """Refuse a file given twice, and files of another model, task, naming, k, scoring or decoding."""
    seen: dict[str, Path] = {}
    for src in sources:
        digest = file_sha256(src.path)
        if digest in seen:
            raise ImportRefusal(
                f"{seen[digest]} and {src.path}: the same file given twice (sha256 {digest[:12]}...); each "
                "file is one run of its samples: give each once"
            )
        seen[digest] = src.path
    first = sources[0]
    for src in sources[1:]:
        for name in ("tool", "model_name", "suite", "suite_revision", "named_by"):
            a, b = getattr(first, name), getattr(src, name)
            if a != b:
                source = f" (from {first.model_from} and {src.model_from})" if name == "model_name" else ""
                raise ImportRefusal(
                    f"{first.path} vs {src.path}: {name} differs ({a!r} vs {b!r}){source}; one log holds one "
                    "model on one suite: import each into its own log"
                )
        ka, kb = _k(first), _k(src)
        if None not in (ka, kb) and ka != kb and first.k_is_setting:
            raise ImportRefusal(
                f"{first.path} vs {src.path}: samples per item differ ({ka} vs {kb}); the files of one log "
                "are runs of one protocol: import each k into its own log"
            )
        if (first.metric, first.metric_settings) != (src.metric, src.metric_settings):
            raise ImportRefusal(
                f"{first.path} vs {src.path}: scoring differs ({_scoring(first)} vs {_scoring(src)}); "
                "one log is scored one way: import them apart, or judge both with --verifier"
            )
        for name in DECODING:
            a, b = first.decoding.get(name), src.decoding.get(name)
            if a != b:
                raise ImportRefusal(
                    f"{first.path} vs {src.path}: {name} differs ({a!r} vs {b!r}); mixed decoding settings "
                    "are not one protocol: import each setting into its own log"
                )


def _k(src: Source) -> int | None:
    """Samples per document of one file; None when they differ (refused item by item later)."""
    counts = {len(d.samples) for d in src.items.values()}
    return counts.pop() if len(counts) == 1 else None


def _scoring(src: Source) -> str:
    if src.metric is None:
        return "one score per document of several samples"
    return f"metric {src.metric!r}" + "".join(f", {k} {v!r}" for k, v in sorted(src.metric_settings.items()))


def _align(sources: Sequence[Source]) -> None:
    """Key each later file's documents as the first's: by own id, or by content where named by position."""
    first = sources[0]
    if first.positional:
        by_content: dict[str, str] = {}
        for key, draft in first.items.items():
            if draft.content is None:
                if len(sources) > 1:
                    raise ImportRefusal(
                        f"{first.path}: {draft.where}: the document has no id and no content hash "
                        "(doc_hash); files that name documents by position cannot be aligned: give the "
                        "documents an id (--id-field doc.FIELD) or import one file"
                    )
                continue
            if draft.content in by_content:
                raise ImportRefusal(
                    f"{first.path}: {draft.where}: the same document as {by_content[draft.content]!r} (equal "
                    "content hash) and no id to tell them apart; give the documents an id (--id-field)"
                )
            by_content[draft.content] = key
    for src in sources[1:]:
        if first.positional:
            rekeyed: dict[str, ItemDraft] = {}
            for draft in src.items.values():
                key = by_content.get(draft.content or "")
                if key is None:
                    raise ImportRefusal(
                        f"{src.path}: {draft.where}: no document of {first.path} has this content "
                        f"(hash {str(draft.content)[:12]}...); every file of one log holds the same documents"
                    )
                if key in rekeyed:
                    raise ImportRefusal(
                        f"{src.path}: {draft.where}: the same document twice (equal content hash)"
                    )
                rekeyed[key] = draft
            src.items = rekeyed
            continue
        for key in sorted(set(first.items) & set(src.items)):
            a, b = first.items[key].content, src.items[key].content
            if a is not None and b is not None and a != b:
                raise ImportRefusal(
                    f"{first.path} vs {src.path}: item {key!r}: another document under the same id (content "
                    f"hash {a[:12]}... vs {b[:12]}...); the files are of two datasets: import each apart"
                )
        if set(src.items) != set(first.items):
            only_a = sorted(set(first.items) - set(src.items))
            only_b = sorted(set(src.items) - set(first.items))
            example = f"{only_a[0]!r} only in the first" if only_a else f"{only_b[0]!r} only in the second"
            raise ImportRefusal(
                f"{first.path} vs {src.path}: items differ ({len(only_a)} only in the first, {len(only_b)} "
                f"only in the second, e.g. {example}); every file of one log must hold the same items"
            )


def suite_match(
    path: Path, key: str, draft: ItemDraft, suite: dict[str, SuiteItem], by_id: bool
) -> SuiteItem:
    """The suite item of one document: by its id (its question checked), else by its question."""
    if by_id:
        item = suite.get(key)
        if item is None:
            raise ImportRefusal(
                f"{path}: {draft.where}: item {key!r} is not an item of the suite; import the run of this "
                "suite, or name the documents' id field (--id-field doc.FIELD)"
            )
        if not _holds_question(draft, item.question):
            raise ImportRefusal(
                f"{path}: {draft.where}: item {key!r}: its document does not hold the suite's question "
                f"{item.question[:60]!r}; the run is of another version of the suite"
            )
        return item
    found = [it for it in suite.values() if it.question in draft.texts]
    if not found:
        # A tool that keeps only the rendered prompt (lighteval's query): the question inside it.
        found = [it for it in suite.values() if _holds_question(draft, it.question)]
    if len(found) != 1:
        what = "no suite item's question" if not found else f"{len(found)} suite items' questions"
        raise ImportRefusal(
            f"{path}: {draft.where}: the document (named by position) holds {what}; name the documents' "
            "id field (--id-field doc.FIELD) to align them with the suite"
        )
    return found[0]


def _holds_question(draft: ItemDraft, question: str) -> bool:
    return question in draft.texts or (draft.prompt is not None and question in draft.prompt)


def _score_samples(
    src: Source, key: str, draft: ItemDraft, verifier: str | None, item: SuiteItem | None
) -> list[dict[str, Any]]:
    """The draft's samples with score, answer and how each was scored."""
    out = []
    for j, s in enumerate(draft.samples):
        sample = {k: v for k, v in s.items() if k != "tool_score"}
        tool_score = s.get("tool_score")
        if verifier is None:
            if tool_score is None:
                raise ImportRefusal(
                    f"{src.path}: {draft.where}: samples[{j}]: no per-sample score in the file; judge each "
                    "with --verifier {exact,numeric,math,choice,suite}"
                )
            sample.update(score=tool_score, scored_by=f"{src.tool} {src.metric}")
        else:
            try:
                judge = (
                    item
                    if verifier == "suite"
                    else _builtin_item(key, draft.family, draft.reference, verifier)
                )
            except ValueError as e:
                raise ImportRefusal(f"{src.path}: {draft.where}: {e}") from None
            if judge is None:
                raise ImportRefusal(
                    "--verifier suite: give the suite the items were drawn from (--suite FILE)"
                )
            try:
                verdict = verifiers.score(judge, s.get("text") or "", chat=True)
            except verifiers.VerifierError as e:
                raise ImportRefusal(f"{src.path}: {draft.where}: {e}") from None
            sample.update(
                score=verdict.score,
                answer=verdict.answer,
                no_answer_reason=verdict.reason,
                scored_by=f"{SCORER_NAME} {judge.verifier.type} verifier",
                source_score=tool_score,
            )
        out.append(sample)
    return out


def assemble(
    sources: Sequence[Source],
    overrides: dict[str, Any],
    arm: str | None = None,
    verifier: str | None = None,
    suite_file: SuiteFile | None = None,
    names: dict[str, str | None] | None = None,
) -> EvalLog:
    """The EvalLog of one or more source files of one model on one suite (their samples appended).

    names: the suite's name and revision as the log records them, where given (else the tool's task).
    """
    suite = suite_file.items if suite_file is not None else None
    first = sources[0]
    if not first.items:
        raise ImportRefusal(f"{first.path}: no items with samples; nothing to import")
    if verifier == "suite" and suite is None:
        raise ImportRefusal("--verifier suite: judges each item by its suite verifier; give --suite FILE")
    _check_sources(sources)
    _align(sources)
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
    by_suite = {it.item_id: it for it in suite} if suite is not None else None
    matched: dict[str, SuiteItem] = {}
    if by_suite is not None:
        for key, draft in first.items.items():
            item = suite_match(first.path, key, draft, by_suite, by_id=not first.positional)
            if item.item_id in {m.item_id for m in matched.values()}:
                other = next(k for k, m in matched.items() if m.item_id == item.item_id)
                raise ImportRefusal(
                    f"{first.path}: {draft.where}: matches suite item {item.item_id!r} as {other!r} does; "
                    "each suite item is one document"
                )
            matched[key] = item
    items = []
    counts: dict[int, str] = {}
    for key in sorted(first.items, key=lambda k: matched[k].item_id if k in matched else k):
        suite_item = matched.get(key)
        item_id = suite_item.item_id if suite_item is not None else key
        drafts = [src.items[key] for src in sources]
        samples = [
            s
            for src, d in zip(sources, drafts, strict=True)
            for s in _score_samples(src, item_id, d, verifier, suite_item)
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
    seeds = {src.seed for src in sources}
    settings: dict[str, Any] = {
        "imported_from": [str(s.path) for s in sources],
        "items_named_by": first.named_by,
    }
    if by_suite is not None:
        settings["aligned_with_suite"] = "by id" if not first.positional else "by question"
    if verifier is None:
        scorer = ScorerInfo(
            name=first.tool,
            version=first.version,
            settings={
                **settings,
                "by": f"{first.tool} metric",
                "metric": first.metric,
                **first.metric_settings,
            },
        )
    else:
        judged = list(matched.values()) if verifier == "suite" else [_builtin_item("x", None, "0", verifier)]
        try:
            infos = _verifier_infos(judged)
        except verifiers.VerifierError as e:
            raise ImportRefusal(f"--verifier {verifier}: {e}") from None
        scorer = ScorerInfo(
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
        "temperature": float(decoding["temperature"]),  # type: ignore[arg-type]
        "max_tokens": int(decoding["max_tokens"]),  # type: ignore[arg-type]
        "top_p": None if decoding.get("top_p") is None else float(decoding["top_p"]),  # type: ignore[arg-type]
        # One run seed for every file, else none: a per-file seed is not the log's.
        "seed": seeds.pop() if len(seeds) == 1 else None,
        "driver": f"{first.tool} {first.version}",
        "measured_at": first.measured_at,
        "arm": arm,
        "scorer": scorer,
        "items": items,
        # The counts the arm comparison reads of a tool arm, from the calls the log itself records (the
        # source has no tool-server restarts to count).
        "tool_calls": count_tool_calls(records_calls, 0) if records_calls else None,
    }
    try:
        return EvalLog.model_validate(record)
    except ValidationError as e:
        raise ImportRefusal(f"{first.path}: {describe_error(e.errors()[0], record)}") from None
