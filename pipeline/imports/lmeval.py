"""lm-evaluation-harness `--log_samples` files (samples_<task>_<date>.jsonl) into a Source.

The format followed is lm-evaluation-harness 0.4's (lm_eval/evaluator.py and
lm_eval/loggers/evaluation_tracker.py; lm_eval/result_schema.py SampleResult): one JSON line per document
and filter, with doc_id, doc, target, arguments ({"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}}),
resps (requests x repeats: a generation task's `repeats` responses are resps[0]), filtered_resps, filter,
metrics (the names of the metric keys on the line, one value per document) and the hashes. The
results_<date>.json beside the file, when present, gives the harness version, the model and the seed.

A document with one response per file scores with the line's metric (--metric, default exact_match). With
`repeats` k the harness keeps k responses but scores the document once (after a filter such as take_first
or majority_vote), so no per-sample score is in the file: each response is then judged by this project's
verifier (--verifier) against the line's target. Several files (one run per seed) append their samples.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.imports.common import (
    ImportRefusal,
    ItemDraft,
    Source,
    one_setting,
    unit_score,
    verifier_scorer,
    verify,
)

TOOL = "lm-evaluation-harness"
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")


def _results(path: Path, date: str) -> dict[str, Any]:
    """The run's results_<date>.json beside the samples file, or {} when there is none."""
    found = path.with_name(f"results_{date}.json")
    if not found.is_file():
        return {}
    try:
        return json.loads(found.read_text())
    except json.JSONDecodeError as e:
        raise ImportRefusal(f"{found}: not JSON (line {e.lineno}): {e.msg}") from None


def _texts(path: Path, where: str, resps: Any) -> list[str | None]:
    """The responses of the document's one request: generated texts, or None per loglikelihood answer."""
    if not isinstance(resps, list) or len(resps) == 0 or not isinstance(resps[0], list):
        raise ImportRefusal(f"{path}: {where}: resps: expected a list of requests, each a list of responses")
    first = resps[0]
    if all(isinstance(r, str) for r in first) and len(resps) == 1:
        return list(first)
    # Multiple choice: one request per choice, each one [log-likelihood, is_greedy] per repeat.
    return [None] * len(first)


def read(
    path: Path, metric: str | None = None, verifier: str | None = None, filter_name: str | None = None
) -> Source:
    """One samples_<task>_<date>.jsonl as a Source; refuse what it cannot read, naming line and field."""
    m = _NAME.match(path.name)
    if m is None:
        raise ImportRefusal(
            f"{path}: file name: not samples_<task>_<date>.jsonl as lm-evaluation-harness names its "
            "--log_samples files; keep the harness's name (it carries the task and the run)"
        )
    task, date = m["task"], m["date"]
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise ImportRefusal(f"{path}: file not found") from None
    results = _results(path, date)
    config = results.get("config") or {}
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ImportRefusal(f"{path}: line {n}: not JSON: {e.msg}") from None
        for key in ("doc_id", "resps", "metrics", "target"):
            if not isinstance(row, dict) or key not in row:
                raise ImportRefusal(
                    f"{path}: line {n}: {key}: missing; not an lm-evaluation-harness sample line"
                )
        rows.append((n, row))
    filters = sorted({row.get("filter", "none") for _, row in rows})
    if filter_name is None:
        if len(filters) > 1:
            raise ImportRefusal(
                f"{path}: filter: the file has filters {filters}; choose one with --filter NAME"
            )
        filter_name = filters[0] if filters else "none"
    source = Source(
        path=path,
        tool=TOOL,
        version=results.get("lm_eval_version", "(version not recorded: no results file beside the samples)"),
        model_name=results.get("model_name") or config.get("model") or "(not recorded)",
        suite=task,
        suite_revision=str((results.get("versions") or {}).get(task, "(not recorded)")),
        measured_at=date,
        scored_by={},
        decoding={},
        seed=config.get("random_seed"),
    )
    settings: dict[str, Any] = {}
    for n, row in rows:
        if row.get("filter", "none") != filter_name:
            continue
        where = f"line {n} (doc_id {row['doc_id']})"
        args = (row.get("arguments") or {}).get("gen_args_0") or {}
        kwargs = args.get("arg_1") if isinstance(args.get("arg_1"), dict) else None
        texts = _texts(path, where, row["resps"])
        if kwargs is not None:
            # lm-eval's default decoding is greedy: temperature 0.0 unless do_sample (models/huggingface.py).
            temperature = kwargs.get("temperature", 1.0 if kwargs.get("do_sample") else 0.0)
            one_setting(path, where, "temperature", temperature, settings)
            one_setting(path, where, "top_p", kwargs.get("top_p"), settings)
            one_setting(path, where, "max_tokens", kwargs.get("max_gen_toks"), settings)
        names = row["metrics"]
        chosen = metric or (
            "exact_match" if "exact_match" in names else (names[0] if len(names) == 1 else None)
        )
        if len(texts) == 1:
            if chosen is None or chosen not in row:
                raise ImportRefusal(
                    f"{path}: {where}: metrics: {names}; choose the per-document score with --metric NAME"
                )
            samples = [{"score": unit_score(path, f"{where}: {chosen}", row[chosen]), "text": texts[0]}]
            scored_by = {"by": "lm-evaluation-harness metric", "metric": chosen, "filter": filter_name}
        else:
            if verifier is None:
                raise ImportRefusal(
                    f"{path}: {where}: resps: {len(texts)} responses (repeats) but one score per document "
                    f"({', '.join(names)}); judge each response with --verifier "
                    "{exact,numeric,math,choice}, or import one file per run"
                )
            if any(t is None for t in texts):
                raise ImportRefusal(
                    f"{path}: {where}: resps: repeats of a loglikelihood task hold no text to judge"
                )
            samples = []
            for text in texts:
                verdict = verify(str(row["doc_id"]), task, row["target"], text, verifier)
                samples.append({
                    "score": verdict.score, "text": text, "answer": verdict.answer,
                    "no_answer_reason": verdict.reason,
                })  # fmt: skip
            scored_by = {**verifier_scorer(verifier), "reference": "target"}
        if source.scored_by and source.scored_by != scored_by:
            raise ImportRefusal(
                f"{path}: {where}: resps: documents with one and with several responses in one file; "
                "every document needs the same number of responses"
            )
        source.scored_by = scored_by
        prompt = args.get("arg_0")
        if str(row["doc_id"]) in source.items:
            raise ImportRefusal(f"{path}: {where}: doc_id: appears twice for filter {filter_name!r}")
        source.items[str(row["doc_id"])] = ItemDraft(
            prompt=prompt if isinstance(prompt, str) else None, family=task, samples=samples
        )
    source.decoding = {name: settings.get(name) for name in ("temperature", "top_p", "max_tokens")}
    return source
