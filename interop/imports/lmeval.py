"""lm-evaluation-harness `--log_samples` files (samples_<task>_<date>.jsonl) into a ToolFile.

The format followed is lm-evaluation-harness 0.4's (lm_eval/evaluator.py and
lm_eval/loggers/evaluation_tracker.py; lm_eval/result_schema.py SampleResult): one JSON line per document
and filter, with doc_id (the document's position in the task's split), doc, target, arguments
({"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}}), resps (requests x repeats: a generation task's
`repeats` responses are resps[0]), filtered_resps, filter, metrics (the names of the metric keys on the
line, one value per document) and doc_hash (the sha256 of the document as JSON), prompt_hash and
target_hash. The harness writes its files with ensure_ascii=False, so a text may hold a raw U+2028 or U+0085:
lines are split on "\\n" only (contract.jsonl). The results_<date>.json beside the file, when present,
gives the harness version, the model and the seed; the folder the harness wrote into is named after the
model, which stands for it when there is no results file.

Documents are named by their own id (doc.item_id, else doc.id, or --id-field doc.FIELD), else by doc_id;
files that name them by doc_id are aligned by doc_hash, never by position. A document with one response
per file scores with the line's metric (--metric, default exact_match). With `repeats` k the harness keeps k
responses but scores the document once (after a filter such as take_first or majority_vote), so each
response is then judged by this project's verifier (--verifier) against the line's target (or the suite's
item); --verifier rescores a one-response file too, the harness's metric kept beside each verdict.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contract.jsonl import JsonlError, read_jsonl
from interop.imports.tool_file import (
    ImportRefusal,
    ItemDraft,
    ToolFile,
    checked_decoding,
    one_setting,
    plain_text,
    unit_score,
)

TOOL = "lm-evaluation-harness"
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")
# The document fields that carry a document's own id, in the order they are looked for.
ID_FIELDS = ("item_id", "id")


def _results(path: Path, date: str) -> dict[str, Any]:
    """The run's results_<date>.json beside the samples file, or {} when there is none."""
    found = path.with_name(f"results_{date}.json")
    if not found.is_file():
        return {}
    try:
        data = json.loads(found.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ImportRefusal(f"{found}: cannot be read ({e})") from None
    except json.JSONDecodeError as e:
        raise ImportRefusal(f"{found}: not JSON (line {e.lineno}): {e.msg}") from None
    if not isinstance(data, dict):
        raise ImportRefusal(
            f"{found}: is a JSON {type(data).__name__}, not the object lm-evaluation-harness writes; "
            "restore the run's results file or move it away"
        )
    for key, kind in (("config", dict), ("versions", dict), ("lm_eval_version", str), ("model_name", str)):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            raise ImportRefusal(f"{found}: {key}: is {type(data[key]).__name__}, expected {kind.__name__}")
    return data


def _texts(path: Path, where: str, resps: Any) -> list[str | None]:
    """The responses of the document's one request: generated texts, or None per loglikelihood answer."""
    if not isinstance(resps, list) or len(resps) == 0 or not all(isinstance(r, list) for r in resps):
        raise ImportRefusal(f"{path}: {where}: resps: expected a list of requests, each a list of responses")
    first = resps[0]
    if len(resps) == 1 and first and all(isinstance(r, str) for r in first):
        return [plain_text(path, f"{where}: resps[0][{j}]", r) for j, r in enumerate(first)]
    if not first:
        raise ImportRefusal(f"{path}: {where}: resps: the request has no response")
    # Multiple choice: one request per choice, each one [log-likelihood, is_greedy] per repeat.
    return [None] * len(first)


def _gen_args(path: Path, where: str, arguments: Any) -> tuple[str | None, dict[str, Any] | None]:
    """The prompt and generation kwargs of the document's first request (arguments.gen_args_0)."""
    if arguments is None:
        return None, None
    if not isinstance(arguments, dict):
        raise ImportRefusal(
            f"{path}: {where}: arguments: is a {type(arguments).__name__}, not the object lm-evaluation-"
            'harness 0.4 writes ({"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}}); regenerate the file'
        )
    args = arguments.get("gen_args_0")
    if args is None:
        return None, None
    if not isinstance(args, dict):
        raise ImportRefusal(
            f"{path}: {where}: arguments.gen_args_0: is a {type(args).__name__}, not an object"
        )
    prompt = args.get("arg_0")
    kwargs = args.get("arg_1")
    return (
        plain_text(path, f"{where}: arguments.gen_args_0.arg_0", prompt) if prompt is not None else None,
        kwargs if isinstance(kwargs, dict) else None,
    )


def _own_id(path: Path, where: str, doc: Any, name: str) -> str | None:
    """The document's own id under doc.<name>, as a string; None when the document has no such field."""
    if not isinstance(doc, dict) or doc.get(name) is None:
        return None
    value = doc[name]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ImportRefusal(f"{path}: {where}: doc.{name}: {value!r} is not an id (a string or an integer)")
    return plain_text(path, f"{where}: doc.{name}", str(value))


def _id_field(path: Path, rows: list[tuple[int, dict[str, Any]]], id_field: str | None) -> str | None:
    """The document field that names the documents (every row has it), or None: named by doc_id."""
    if id_field is not None:
        name = id_field.removeprefix("doc.")
        for n, row in rows:
            if _own_id(path, f"line {n}", row.get("doc"), name) is None:
                raise ImportRefusal(
                    f"{path}: line {n}: doc.{name}: missing, but --id-field names it; every document needs it"
                )
        return name
    for name in ID_FIELDS:
        has = [_own_id(path, f"line {n}", row.get("doc"), name) is not None for n, row in rows]
        if all(has):
            return name
        if any(has):
            n = rows[has.index(False)][0]
            raise ImportRefusal(
                f"{path}: line {n}: doc.{name}: missing, though other documents have it; name the id field "
                "every document has (--id-field doc.FIELD)"
            )
    return None


def _doc_texts(doc: Any) -> tuple[str, ...]:
    """The document's top-level string fields (its question among them)."""
    if not isinstance(doc, dict):
        return ()
    return tuple(v for v in doc.values() if isinstance(v, str))


def _lines(path: Path) -> tuple[str, str, list[tuple[int, Any]]]:
    """The file's task and date (from its name) and its lines (line number, value)."""
    m = _NAME.match(path.name)
    if m is None:
        raise ImportRefusal(
            f"{path}: file name: not samples_<task>_<date>.jsonl as lm-evaluation-harness names its "
            "--log_samples files; keep the harness's name (it carries the task and the run)"
        )
    try:
        lines = read_jsonl(path)
    except JsonlError as e:
        raise ImportRefusal(str(e)) from None
    if not lines:
        raise ImportRefusal(
            f"{path}: the file holds no sample lines (empty); the run wrote none: rerun it with --log_samples"
        )
    return m["task"], m["date"], lines


def _rows(
    path: Path, lines: list[tuple[int, Any]], filter_name: str | None
) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """The filter chosen and its sample lines (line number, row), each checked as the harness writes it."""
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, row in lines:
        for key in ("doc_id", "resps", "metrics", "target"):
            if not isinstance(row, dict) or key not in row:
                raise ImportRefusal(
                    f"{path}: line {n}: {key}: missing; not an lm-evaluation-harness sample line"
                )
        if not isinstance(row["metrics"], list) or not all(isinstance(x, str) for x in row["metrics"]):
            raise ImportRefusal(
                f"{path}: line {n}: metrics: {row['metrics']!r:.60} is not the list of metric names the "
                "harness writes"
            )
        if not isinstance(row.get("filter", "none"), str):
            raise ImportRefusal(f"{path}: line {n}: filter: {row['filter']!r:.60} is not a filter name")
        rows.append((n, row))
    filters = sorted({row.get("filter", "none") for _, row in rows})
    if filter_name is None:
        if len(filters) > 1:
            raise ImportRefusal(
                f"{path}: filter: the file has filters {filters}; choose one with --filter NAME"
            )
        filter_name = filters[0]
    rows = [(n, row) for n, row in rows if row.get("filter", "none") == filter_name]
    if not rows:
        raise ImportRefusal(f"{path}: filter: no line of filter {filter_name!r}; the file has {filters}")
    return filter_name, rows


def _tool_file(
    path: Path, task: str, date: str, results: dict[str, Any], filter_name: str, named: str | None
) -> ToolFile:
    """The file's run settings (from the results file beside it, else the folder's name), no documents yet."""
    config = results.get("config") or {}
    model = results.get("model_name")
    model_from = f"{path.parent / f'results_{date}.json'} model_name"
    if not model:
        # The harness writes into <output_path>/<model name, sanitized>/: the folder names the model.
        model = f"{path.parent.name} (the folder name; no results_{date}.json beside the samples)"
        model_from = "the folder the harness wrote into"
    return ToolFile(
        path=path,
        tool=TOOL,
        version=results.get("lm_eval_version")
        or "(version not recorded: no results file beside the samples)",
        model_name=model,
        suite=task,
        suite_revision=str((results.get("versions") or {}).get(task, "(not recorded)")),
        measured_at=date,
        metric=None,
        metric_settings={"filter": filter_name},
        decoding={},
        seed=config.get("random_seed") if isinstance(config.get("random_seed"), int) else None,
        named_by=f"doc.{named}" if named else "doc_id (position; aligned by doc_hash)",
        positional=named is None,
        model_from=model_from,
    )


def _decoding(path: Path, where: str, kwargs: dict[str, Any], settings: dict[str, Any]) -> None:
    """Record the line's decoding settings (its generation kwargs) in settings, equal on every line."""
    # lm-eval's default decoding is greedy: temperature 0.0 unless do_sample (models/huggingface.py).
    temperature = kwargs.get("temperature", 1.0 if kwargs.get("do_sample") else 0.0)
    for name, key, value in (
        ("temperature", "temperature", temperature),
        ("top_p", "top_p", kwargs.get("top_p")),
        ("max_tokens", "max_gen_toks", kwargs.get("max_gen_toks")),
    ):
        checked_decoding(path, f"{where}: arguments.gen_args_0.arg_1.{key}", name, value)
        one_setting(path, where, name, value, settings)


def _tool_score(
    path: Path,
    where: str,
    row: dict[str, Any],
    texts: list[str | None],
    metric: str | None,
    verifier: str | None,
) -> tuple[float | None, str | None]:
    """The line's per-document score and the metric that gave it (None, None: each text is judged)."""
    names = row["metrics"]
    chosen = metric or ("exact_match" if "exact_match" in names else (names[0] if len(names) == 1 else None))
    if len(texts) == 1 and texts[0] is not None:
        if verifier is None and (chosen is None or chosen not in row):
            raise ImportRefusal(
                f"{path}: {where}: metrics: {names}; choose the per-document score with --metric NAME"
            )
        scored = chosen is not None and chosen in row
        tool_score = unit_score(path, f"{where}: {chosen}", row[chosen]) if scored else None
        return tool_score, chosen if tool_score is not None else None
    if verifier is None:
        raise ImportRefusal(
            f"{path}: {where}: resps: {len(texts)} responses (repeats) but one score per document "
            f"({', '.join(names)}); judge each response with --verifier "
            "{exact,numeric,math,choice,suite}, or import one file per run"
        )
    if any(t is None for t in texts):
        raise ImportRefusal(f"{path}: {where}: resps: repeats of a loglikelihood task hold no text to judge")
    return None, None


def read(
    path: Path,
    metric: str | None = None,
    verifier: str | None = None,
    filter_name: str | None = None,
    id_field: str | None = None,
) -> ToolFile:
    """One samples_<task>_<date>.jsonl, read; refuse what it cannot read, naming line and field."""
    task, date, lines = _lines(path)
    results = _results(path, date)
    filter_name, rows = _rows(path, lines, filter_name)
    named = _id_field(path, rows, id_field)
    read_file = _tool_file(path, task, date, results, filter_name, named)
    settings: dict[str, Any] = {}
    chosen_metrics: set[str | None] = set()
    for n, row in rows:
        doc_id = row["doc_id"]
        if isinstance(doc_id, bool) or not isinstance(doc_id, int | str):
            raise ImportRefusal(f"{path}: line {n}: doc_id: {doc_id!r:.60} is not a document number")
        where = f"line {n} (doc_id {doc_id})"
        prompt, kwargs = _gen_args(path, where, row.get("arguments"))
        texts = _texts(path, where, row["resps"])
        if kwargs is not None:
            _decoding(path, where, kwargs, settings)
        tool_score, chosen = _tool_score(path, where, row, texts, metric, verifier)
        chosen_metrics.add(chosen)
        doc = row.get("doc")
        key = _own_id(path, where, doc, named) if named else str(doc_id)
        assert key is not None  # _id_field checked every row
        if key in read_file.items:
            raise ImportRefusal(
                f"{path}: {where}: {'doc.' + named if named else 'doc_id'}: {key!r} appears twice for filter "
                f"{filter_name!r}; each document once"
            )
        target = row["target"]
        doc_hash = row.get("doc_hash")
        read_file.items[key] = ItemDraft(
            prompt=prompt,
            family=task,
            reference=plain_text(path, f"{where}: target", target) if isinstance(target, str) else target,
            samples=[{"text": t, "tool_score": tool_score} for t in texts],
            content=doc_hash if isinstance(doc_hash, str) else None,
            texts=_doc_texts(doc),
            where=where,
        )
    if len(chosen_metrics) > 1:
        raise ImportRefusal(
            f"{path}: metrics: some documents carry the metric {metric or 'exact_match'!r} and some do not; "
            "one log is scored one way: choose a metric every line has (--metric) or judge with --verifier"
        )
    read_file.metric = chosen_metrics.pop()
    read_file.decoding = {name: settings.get(name) for name in ("temperature", "top_p", "max_tokens")}
    return read_file
