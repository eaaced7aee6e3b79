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


def read(
    path: Path, metric: str | None = None, verifier: str | None = None, results: Path | None = None
) -> ToolFile:
    """One details parquet file as a ToolFile; refuse what it cannot read, naming row and field."""
    import pyarrow.parquet as pq

    m = _NAME.match(path.name)
    if m is None:
        raise ImportRefusal(
            f"{path}: file name: not details_<task>_<date>.parquet as lighteval names its details; "
            "keep its name"
        )
    task, date = m["task"], m["date"]
    if not path.is_file():
        raise ImportRefusal(f"{path}: file not found")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # pyarrow raises several types for a file that is not parquet
        raise ImportRefusal(f"{path}: not a parquet file pyarrow can read: {e}") from e
    found = results or results_beside(path, date)
    run: dict[str, Any] = {}
    if found is not None:
        try:
            run = json.loads(Path(found).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ImportRefusal(f"{found}: cannot read the run's results: {e}") from None
    if run and not isinstance(run, dict):
        raise ImportRefusal(f"{found}: is a JSON {type(run).__name__}, not lighteval's results object")
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
    read_file = ToolFile(
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
    settings: dict[str, Any] = {}
    if run:
        # lighteval's default is greedy: GenerationParameters.temperature defaults to 0.
        settings["temperature"] = params.get("temperature", 0.0)
        settings["top_p"] = params.get("top_p")
        settings["max_tokens"] = params.get("max_new_tokens")
        for name in ("temperature", "top_p", "max_tokens"):
            checked_decoding(found or path, f"generation_parameters.{name}", name, settings[name])
    chosen_metrics: set[str | None] = set()
    for n, row in enumerate(rows):
        for key in ("doc", "model_response", "metric"):
            if not isinstance(row.get(key), dict):
                raise ImportRefusal(f"{path}: row {n}: {key}: missing; not a lighteval details row")
        doc, response, scores = row["doc"], row["model_response"], row["metric"]
        item_id = str(n) if positional else plain_text(path, f"row {n}: doc.id", str(doc["id"]))
        where = f"row {n} (doc id {item_id!r})"
        if doc.get("generation_size") is not None and settings.get("max_tokens") is None:
            one_setting(path, where, "generation_size", doc["generation_size"], settings)
        texts = response.get("text") or []
        if not texts:
            raise ImportRefusal(
                f"{path}: {where}: model_response.text: no generated text (a loglikelihood task?)"
            )
        texts = [plain_text(path, f"{where}: model_response.text[{j}]", t) for j, t in enumerate(texts)]
        out_tokens = response.get("output_tokens") or []
        tokens = [len(t) for t in out_tokens] if len(out_tokens) == len(texts) else [None] * len(texts)
        prompt_tokens = len(response.get("input_tokens") or []) or None
        tool_score = None
        if len(texts) == 1:
            names = sorted(k for k, v in scores.items() if v is not None)
            chosen = metric or (names[0] if len(names) == 1 else None)
            if verifier is None and (chosen is None or scores.get(chosen) is None):
                raise ImportRefusal(f"{path}: {where}: metric: {names}; choose the score with --metric NAME")
            if chosen is not None and scores.get(chosen) is not None:
                tool_score = unit_score(path, f"{where}: metric.{chosen}", scores[chosen])
            chosen_metrics.add(chosen if tool_score is not None else None)
        else:
            if verifier is None:
                raise ImportRefusal(
                    f"{path}: {where}: model_response.text: {len(texts)} samples but one score per document "
                    f"({', '.join(sorted(scores))}); judge each sample with --verifier "
                    "{exact,numeric,math,choice,suite}"
                )
            chosen_metrics.add(None)
        if item_id in read_file.items:
            raise ImportRefusal(f"{path}: {where}: doc.id: appears twice")
        query = response.get("input") if isinstance(response.get("input"), str) else doc.get("query")
        query = plain_text(path, f"{where}: doc.query", query) if query is not None else None
        read_file.items[item_id] = ItemDraft(
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
