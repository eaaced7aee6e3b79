"""contract.logreader.read_log accepts exactly the logs contract.evallog.load accepts, words refusals alike,
and returns the same log without its samples; random edits of a real log check it field by field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.bench_logs import arm_log
from contract import logreader
from contract.engine import EngineInfo
from contract.evallog import EvalLog, EvalLogError, ItemResult, SampleRecord, ScorerInfo, load
from contract.generations import RetrievalSettings, RetrievedDoc, ToolCallRecord
from contract.protocol import Protocol


def small_log() -> dict[str, Any]:
    """A log of three items with every optional part the scorer writes (tools, passages, engine, ...)."""
    call = ToolCallRecord(name="orbital_period", arguments={"altitude_km": 400}, result={"period_min": 92.5},
                          round=1)  # fmt: skip
    items = []
    for i in range(3):
        samples = [
            SampleRecord(index=j, seed=100 * i + j, score=float((i + j) % 2), text=f"Answer: {j}\n",
                         answer=str(j), finish_reason="stop", prompt_tokens=20, gen_tokens=5 + j,
                         rounds=1 + j % 2,
                         tool_calls=[call] if j % 2 else [], path="clean" if j % 2 else "answer_without_tool",
                         transcript=[{"role": "tool", "content": "92.5"}] if (i, j) == (0, 1) else None)
            for j in range(3)
        ]  # fmt: skip
        items.append(
            ItemResult(
                item_id=f"q{i}",
                family=["lookup", "compute", None][i],
                scores=[s.score for s in samples],
                gen_tokens=[s.gen_tokens or 0 for s in samples],
                question=f"Question {i}?" if i != 2 else None,
                reference_answer=str(i) if i != 2 else None,
                prompt=f"Question {i}?\nAnswer:",
                retrieved=[RetrievedDoc(doc_id="d1", score=1.5, rank=1, title="D", text="One.")]
                if i == 1
                else None,
                samples=samples,
            )
        )
    log = EvalLog(
        format_version=2, model_name="m", suite="s", suite_revision="v1", n_samples=3, temperature=1.0,
        max_tokens=64, driver="cpu", measured_at="2026-01-01T00:00:00Z", items=items, arm="+tools",
        attribution="tool_access", top_p=1.0, seed=1234, pins={"model": "sha256:00"},
        engine=EngineInfo(name="vllm", version="0.1", device="cpu", dtype="float32", batch_invariant=False),
        protocol=Protocol(k=3, max_tokens=64, temperature=1.0, top_p=1.0, seed=1234, max_tool_calls=4),
        retrieval=RetrievalSettings(top_k=1, order="best_last"), scorer=ScorerInfo(name="x", version="1"),
    )  # fmt: skip
    return json.loads(log.model_dump_json(exclude_none=True))


BASE = small_log()
VALUES = [None, True, False, 0, 1, -1, 2, 3, 0.5, 1.5, 5.0, 2**40, 2**70, "", "x", "5", "0.5", [], [1], {},
          {"x": 1}]  # fmt: skip


def every_path(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree, as the keys and indexes that lead to it."""
    found = [prefix]
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in children:
        found += every_path(child, (*prefix, key))
    return found


PATHS = every_path(BASE)[1:]


def outcome(read, path: Path) -> tuple[str, Any]:
    """('ok', the log's fields without samples and what the analyses read of them) or ('refused', why)."""
    try:
        log = read(path)
    except EvalLogError as e:
        return "refused", str(e)
    # From the samples (load) or from what the fast reader kept of them (read_log): the same either way.
    kept = [
        (it.sample_seeds(), it.sample_finish_reasons(), it.sample_paths(), it.records_tool_calls())
        for it in log.items
    ]
    for it in log.items:
        it.samples = None
    return "ok", (log.model_dump(), kept)


def reachable(parent: Any, key: Any) -> bool:
    """Whether parent[key] exists (an earlier edit may have replaced a container by a number)."""
    if isinstance(parent, dict):
        return key in parent
    return isinstance(parent, list) and isinstance(key, int) and key < len(parent)


def edit(doc: dict[str, Any], data: st.DataObject) -> None:
    """One random edit: a value replaced, a key or element removed or added, two elements swapped."""
    where = data.draw(st.sampled_from(PATHS))
    parent: Any = doc
    for step in where[:-1]:
        if not reachable(parent, step):
            return  # an earlier edit replaced or removed it
        parent = parent[step]
    key = where[-1]
    if not reachable(parent, key):
        return
    node = parent[key]
    op = data.draw(st.sampled_from(["replace", "replace", "nudge", "delete", "extra", "duplicate", "swap"]))
    if op == "replace":
        parent[key] = copy.deepcopy(data.draw(st.sampled_from(VALUES)))
    elif op == "nudge" and isinstance(node, int | float) and not isinstance(node, bool):
        parent[key] = node + data.draw(st.sampled_from([1, -1, 0.25]))
    elif op == "delete":
        del parent[key]
    elif op == "extra" and isinstance(node, dict):
        node["not_a_field"] = 1
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(node))
    elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
        other = (key + 1) % len(parent)
        parent[key], parent[other] = parent[other], parent[key]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), n_edits=st.integers(0, 2))
def test_read_log_accepts_and_refuses_exactly_what_load_does(tmp_path: Path, data, n_edits: int) -> None:
    doc = copy.deepcopy(BASE)
    for _ in range(n_edits):
        edit(doc, data)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    assert outcome(logreader.read_log, path) == outcome(load, path)


def test_a_valid_log_is_read_without_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.json"
    path.write_text(json.dumps(BASE))
    want = outcome(load, path)

    def refuse(p: Any) -> None:
        raise AssertionError(f"read_log fell back to load for a valid log {p}")

    monkeypatch.setattr(logreader, "load", refuse)
    assert outcome(logreader.read_log, path) == want


def test_a_log_only_msgspec_refuses_is_read_in_full(tmp_path: Path) -> None:
    doc = copy.deepcopy(BASE)
    doc["items"][1]["samples"][2]["gen_tokens"] = 7.0  # pydantic's lax mode takes 7.0 for an int
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    got = outcome(logreader.read_log, path)
    assert got == outcome(load, path)
    assert got[0] == "ok"


def test_refusals_name_the_file_item_and_field(tmp_path: Path) -> None:
    doc = copy.deepcopy(BASE)
    doc["items"][2]["samples"][1]["score"] = 0.5
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(EvalLogError, match=r"log\.json: item 'q2': samples\[1\]\.score: is 0\.5"):
        logreader.read_log(path)
    with pytest.raises(EvalLogError, match="missing.json: not found"):
        logreader.read_log(tmp_path / "missing.json")


def test_the_fast_path_mirrors_every_sample_field() -> None:
    assert logreader.why_no_fast_path() is None
    sample = logreader._mirror_struct(SampleRecord, {})
    assert sample.__struct_fields__ == tuple(SampleRecord.model_fields)
    required = {n for n, f in SampleRecord.model_fields.items() if f.is_required()}
    assert {f.name for f in msgspec.structs.fields(sample) if f.required} == required


def test_a_large_log_reads_as_load_reads_it(tmp_path: Path) -> None:
    logit = np.random.default_rng(0).normal(0.0, 1.5, 800)
    path = tmp_path / "big.json"
    path.write_text(
        arm_log("base", 800, 32, True, logit, seed=3).model_dump_json(indent=1, exclude_none=True)
    )
    got = logreader.read_log(path)
    assert all(it.samples is None for it in got.items)
    assert outcome(lambda p: got, path) == outcome(load, path)


def test_the_sample_check_runs_vectorized_and_leaves_a_refusal_to_the_validator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A valid log never calls the validator that compares samples with the item's lists; a log where
    # one sample disagrees calls it, and it words the refusal.
    calls: list[str] = []
    validator = logreader._SAMPLES_AGREE

    def counted(view: Any) -> Any:
        calls.append(view.item_id)
        return validator(view)

    planned = logreader._PLAN
    assert planned is not None
    swapped = [counted if v is validator else v for v in planned[1]]
    monkeypatch.setattr(logreader, "_PLAN", (planned[0], swapped, planned[2]))
    monkeypatch.setattr(logreader, "_SAMPLES_AGREE", counted)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(BASE))
    log = logreader.read_log(path)
    assert calls == [] and all(it.sample_seeds() is not None for it in log.items)
    doc = copy.deepcopy(BASE)
    doc["items"][2]["samples"][1]["gen_tokens"] += 1
    path.write_text(json.dumps(doc))
    with pytest.raises(EvalLogError, match=r"item 'q2': samples\[1\]\.gen_tokens"):
        logreader.read_log(path)
    assert calls[-1] == "q2"


def test_read_logs_reads_side_by_side_what_read_log_reads_and_raises_its_errors(tmp_path: Path) -> None:
    paths = []
    for i in range(3):
        doc = copy.deepcopy(BASE)
        doc["model_name"] = f"m{i}"
        paths.append(tmp_path / f"log{i}.json")
        paths[-1].write_text(json.dumps(doc))
    logs = logreader.read_logs(paths)
    assert [outcome(lambda _, log=log: log, p) for log, p in zip(logs, paths, strict=True)] == [
        outcome(logreader.read_log, p) for p in paths
    ]
    assert [it.sample_seeds() for it in logs[2].items] == [
        it.sample_seeds() for it in logreader.read_log(paths[2]).items
    ]
    with pytest.raises(EvalLogError, match="missing.json: not found"):
        logreader.read_logs([paths[0], tmp_path / "missing.json"])
