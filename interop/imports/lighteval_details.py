"""lighteval details files (details_<task>_<date>.parquet) into a ToolFile, read with pyarrow.

The format followed is lighteval 0.13's (src/lighteval/logging/evaluation_tracker.py save_details and
info_loggers.py DetailsLogger.Detail): one row per document with three columns, `doc` (the Doc: query,
choices, gold_index, id, task_name, num_samples, generation_size, ...), `model_response` (the
ModelResponse: input, input_tokens, text (one per sample), output_tokens, text_post_processed, ...) and
`metric` (one value per metric and document). The run's results_<date>.json (under results/<model>/ beside
the details/ folder, or --results) gives the model, the generation parameters and the lighteval commit.

A document with one generation scores with its metric (--metric, default the only one). With n samples
lighteval keeps n texts but scores the document once (pass@k, maj@n, avg@n over them), so each text is then
judged by this project's verifier (--verifier) against the document's gold choice; --verifier rescores a
one-generation file too, the metric kept beside each verdict. Documents are named by doc.id; without one
they are named by row and files are aligned by the hash of the query, never by position.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from interop.imports.tool_file import (
    ImportRefusal,
    ItemDraft,
    ToolFile,
    checked_decoding,
    one_setting,
    plain_text,
    text_hash,
    unit_score,
)

TOOL = "lighteval"
_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.parquet$")


def results_beside(path: Path, date: str) -> Path | None:
    """Where lighteval wrote the run's results: <out>/results/<model>/results_<date>.json for
    <out>/details/<model>/<date>/details_*.parquet; None when the file is not there."""
    for parent in path.parents:
        if parent.name == "details":
            model = path.parent.parent.relative_to(parent)
            found = parent.parent / "results" / model / f"results_{date}.json"
            return found if found.is_file() else None
    return None


def _gold(path: Path, where: str, doc: dict[str, Any]) -> str:
    """The document's one gold answer (its gold choice)."""
    golds = doc.get("gold_index")
    index = golds[0] if isinstance(golds, list) and len(golds) == 1 else golds
    if not isinstance(index, int) or not doc.get("choices") or index >= len(doc["choices"]):
        raise ImportRefusal(
            f"{path}: {where}: doc.gold_index: {golds!r} names no single gold choice to judge against"
        )
    return str(doc["choices"][index])


def _rows(path: Path) -> tuple[str, str, list[dict[str, Any]]]:
    """The file's task and date (from its name) and its rows, read with pyarrow."""
    import pyarrow.parquet as pq

    m = _NAME.match(path.name)
    if m is None:
        raise ImportRefusal(
            f"{path}: file name: not details_<task>_<date>.parquet as lighteval names its details; "
            "keep its name"
        )
    if not path.is_file():
        raise ImportRefusal(f"{path}: file not found")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # pyarrow raises several types for a file that is not parquet
        raise ImportRefusal(f"{path}: not a parquet file pyarrow can read: {e}") from e
    return m["task"], m["date"], rows


def _run(path: Path, date: str, results: Path | None) -> tuple[Path | None, dict[str, Any]]:
    """The run's results file (--results, else the one beside the details) and its content ({}: none)."""
    found = results or results_beside(path, date)
    run: dict[str, Any] = {}
    if found is not None:
        try:
            run = json.loads(Path(found).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ImportRefusal(f"{found}: cannot read the run's results: {e}") from None
    if run and not isinstance(run, dict):
        raise ImportRefusal(f"{found}: is a JSON {type(run).__name__}, not lighteval's results object")
    return found, run


def _tool_file(path: Path, task: str, date: str, run: dict[str, Any], rows: list[dict[str, Any]]) -> ToolFile:
    """The file's run settings and how its documents are named (doc.id, else row), no documents yet."""
    general = run.get("config_general") or {}
    params = (general.get("model_config") or {}).get("generation_parameters") or {}
    sha = general.get("lighteval_sha")
    ids = [isinstance(r.get("doc"), dict) and r["doc"].get("id") not in (None, "") for r in rows]
    positional = not all(ids)
    if any(ids) and positional:
        raise ImportRefusal(
            f"{path}: row {ids.index(False)}: doc.id: missing, though other rows have "
            "one; each document needs one"
        )
    return ToolFile(
        path=path,
        tool=TOOL,
        version=f"(commit {sha})" if sha and sha != "?" else "(version not recorded)",
        model_name=general.get("model_name") or "(not recorded)",
        suite=task,
        suite_revision=str((run.get("versions") or {}).get(task, "(not recorded)")),
        measured_at=date,
        metric=None,
        metric_settings={},
        decoding={},
        seed=params.get("seed"),
        named_by="row (position; aligned by the query's hash)" if positional else "doc.id",
        positional=positional,
        model_from="the results file's config_general.model_name",
    )


def _run_decoding(path: Path, found: Path | None, run: dict[str, Any]) -> dict[str, Any]:
    """The decoding the results file records ({} without one), each setting checked."""
    settings: dict[str, Any] = {}
    if run:
        general = run.get("config_general") or {}
        params = (general.get("model_config") or {}).get("generation_parameters") or {}
        # lighteval's default is greedy: GenerationParameters.temperature defaults to 0.
        settings["temperature"] = params.get("temperature", 0.0)
        settings["top_p"] = params.get("top_p")
        settings["max_tokens"] = params.get("max_new_tokens")
        for name in ("temperature", "top_p", "max_tokens"):
            checked_decoding(found or path, f"generation_parameters.{name}", name, settings[name])
    return settings


def _tool_score(
    path: Path, where: str, texts: list[str], scores: dict[str, Any], metric: str | None, verifier: str | None
) -> tuple[float | None, str | None]:
    """The row's per-document score and the metric that gave it (None, None: each text is judged)."""
    if len(texts) == 1:
        names = sorted(k for k, v in scores.items() if v is not None)
        chosen = metric or (names[0] if len(names) == 1 else None)
        if verifier is None and (chosen is None or scores.get(chosen) is None):
            raise ImportRefusal(f"{path}: {where}: metric: {names}; choose the score with --metric NAME")
        if chosen is not None and scores.get(chosen) is not None:
            tool_score = unit_score(path, f"{where}: metric.{chosen}", scores[chosen])
            return tool_score, chosen
        return None, None
    if verifier is None:
        raise ImportRefusal(
            f"{path}: {where}: model_response.text: {len(texts)} samples but one score per document "
            f"({', '.join(sorted(scores))}); judge each sample with --verifier "
            "{exact,numeric,math,choice,suite}"
        )
    return None, None


def _draft(
    path: Path,
    where: str,
    task: str,
    row: dict[str, Any],
    texts: list[str],
    tool_score: float | None,
    verifier: str | None,
) -> ItemDraft:
    """One row's document: its query, gold choice (judged against), texts with token counts, content hash."""
    doc, response = row["doc"], row["model_response"]
    out_tokens = response.get("output_tokens") or []
    tokens = [len(t) for t in out_tokens] if len(out_tokens) == len(texts) else [None] * len(texts)
    prompt_tokens = len(response.get("input_tokens") or []) or None
    query = response.get("input") if isinstance(response.get("input"), str) else doc.get("query")
    query = plain_text(path, f"{where}: doc.query", query) if query is not None else None
    return ItemDraft(
        prompt=query,
        family=task,
        reference=_gold(path, where, doc) if verifier is not None and verifier != "suite" else None,
        samples=[
            {"text": t, "tool_score": tool_score, "gen_tokens": tokens[j], "prompt_tokens": prompt_tokens}
            for j, t in enumerate(texts)
        ],
        content=text_hash(doc["query"]) if isinstance(doc.get("query"), str) else None,
        texts=tuple(v for v in (doc.get("query"), response.get("input")) if isinstance(v, str)),
        where=where,
    )


def read(
    path: Path, metric: str | None = None, verifier: str | None = None, results: Path | None = None
) -> ToolFile:
    """One details parquet file, read; refuse what it cannot read, naming row and field."""
    task, date, rows = _rows(path)
    found, run = _run(path, date, results)
    read_file = _tool_file(path, task, date, run, rows)
    settings = _run_decoding(path, found, run)
    chosen_metrics: set[str | None] = set()
    for n, row in enumerate(rows):
        for key in ("doc", "model_response", "metric"):
            if not isinstance(row.get(key), dict):
                raise ImportRefusal(f"{path}: row {n}: {key}: missing; not a lighteval details row")
        doc, response = row["doc"], row["model_response"]
        item_id = str(n) if read_file.positional else plain_text(path, f"row {n}: doc.id", str(doc["id"]))
        where = f"row {n} (doc id {item_id!r})"
        if doc.get("generation_size") is not None and settings.get("max_tokens") is None:
            one_setting(path, where, "generation_size", doc["generation_size"], settings)
        texts = response.get("text") or []
        if not texts:
            raise ImportRefusal(
                f"{path}: {where}: model_response.text: no generated text (a loglikelihood task?)"
            )
        texts = [plain_text(path, f"{where}: model_response.text[{j}]", t) for j, t in enumerate(texts)]
        tool_score, chosen = _tool_score(path, where, texts, row["metric"], metric, verifier)
        chosen_metrics.add(chosen)
        if item_id in read_file.items:
            raise ImportRefusal(f"{path}: {where}: doc.id: appears twice")
        read_file.items[item_id] = _draft(path, where, task, row, texts, tool_score, verifier)
    if len(chosen_metrics) > 1:
        raise ImportRefusal(
            f"{path}: metric: some documents carry the metric and some do not; one log is scored one way: "
            "choose a metric every row has (--metric) or judge with --verifier"
        )
    read_file.metric = chosen_metrics.pop() if chosen_metrics else None
    read_file.decoding = {
        "temperature": settings.get("temperature"),
        "top_p": settings.get("top_p"),
        "max_tokens": settings.get("max_tokens") or settings.get("generation_size"),
    }
    return read_file
