"""Imports that cannot mis-pair: documents aligned by their own id or content hash, never by position; a file
given twice, files of other models, tasks or k and mixed scoring refused; every bad file one line (exit 2).

The lm-eval files are written here as lm-evaluation-harness 0.4 writes them (evaluator.py: doc_hash is the
sha256 of the document as indented JSON; loggers/evaluation_tracker.py: ensure_ascii=False), the Inspect
logs by inspect-ai's own writer.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.commands.compare_logs import main as compare_main
from contract.evallog import load
from contract.jsonl import read_jsonl
from tests.helpers.foreign_logs import DATE, N_DOCS, imports, text, write_run


def expected_texts(runs: list[int], ids: str = "item_id") -> dict[str, list[str]]:
    """Per document, the texts of the runs in order, under the name the import must give it."""
    key = (lambda i: f"q{i}") if ids != "position" else (lambda i: str(i))
    return {key(i): [text(i, r) for r in runs] for i in range(N_DOCS)}


def imported_texts(path: Path) -> dict[str, list[str]]:
    """Per item of an imported log, its samples' texts."""
    return {it.item_id: [s.text for s in it.samples or []] for it in load(path).items}


# Failure 2: runs over one dataset in another order.


@pytest.mark.parametrize("ids", ["item_id", "id", "position"])
def test_two_runs_in_another_order_pair_each_document_with_itself(
    ids: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0, ids)
    b = write_run(tmp_path / "b", [3, 1, 4, 0, 2], 1, ids)
    rc, err = imports(capsys, "lm-eval", a, b, "--out", tmp_path / "log.json")
    assert rc == 0, err
    # By position, item 0 of b would be document 3; by id or doc_hash it is document 0 in both.
    assert imported_texts(tmp_path / "log.json") == expected_texts([0, 1], ids)
    log = load(tmp_path / "log.json")
    assert log.scorer is not None
    assert log.scorer.settings["items_named_by"] == (
        "doc_id (position; aligned by doc_hash)" if ids == "position" else f"doc.{ids}"
    )


def test_id_field_names_the_documents_and_a_suite_aligns_them_by_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", [2, 0, 1, 3, 4], 0, "uid")
    rc, err = imports(capsys, "lm-eval", a, "--id-field", "doc.uid", "--out", tmp_path / "log.json")
    assert rc == 0, err
    assert sorted(imported_texts(tmp_path / "log.json")) == [f"q{i}" for i in range(N_DOCS)]
    rc, err = imports(capsys, "lm-eval", a, "--id-field", "doc.nope", "--out", tmp_path / "x.json")
    assert rc == 2 and "line 1: doc.nope: missing, but --id-field names it" in err
    # Named by position, matched with the suite by the question each document holds.
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(
        json.dumps({"item_id": f"s-{i}", "family": "add", "question": f"What is {i} + 1?", "answer": i + 1,
                    "verifier": {"type": "numeric"}}) + "\n"
        for i in range(N_DOCS)
    ))  # fmt: skip
    p = write_run(tmp_path / "p", [4, 3, 2, 1, 0], 0, "position")
    rc, err = imports(
        capsys, "lm-eval", p, "--suite", suite, "--verifier", "suite", "--out", tmp_path / "s.json"
    )
    assert rc == 0, err
    log = load(tmp_path / "s.json")
    assert {it.item_id: it.samples[0].text for it in log.items} == {
        f"s-{i}": text(i, 0) for i in range(N_DOCS)
    }
    assert all(it.question == f"What is {it.item_id[2:]} + 1?" for it in log.items)
    # A suite whose question for an id is another question: the run is of another suite version.
    a_suite = tmp_path / "a_suite.jsonl"
    a_suite.write_text(suite.read_text().replace('"s-', '"q').replace("What is 4 + 1?", "What is 9 + 9?"))
    rc, err = imports(
        capsys, "lm-eval", a, "--suite", a_suite, "--id-field", "doc.uid", "--out", tmp_path / "x.json"
    )
    assert rc == 2 and "item 'q4': its document does not hold the suite's question" in err


# Failure 3: the same file twice, other models, k and mixed scoring.


def test_a_file_twice_or_files_of_other_models_or_k_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0)
    rc, err = imports(capsys, "lm-eval", a, a, "--out", tmp_path / "x.json")
    assert rc == 2 and "the same file given twice" in err
    copy = tmp_path / "copy" / a.name
    copy.parent.mkdir()
    copy.write_bytes(a.read_bytes())
    rc, err = imports(capsys, "lm-eval", a, copy, "--out", tmp_path / "x.json")
    assert rc == 2 and f"{a} and {copy}: the same file given twice" in err
    # Two models without results files: the folders the harness wrote into name them.
    m1 = write_run(tmp_path / "org__model-a", list(range(N_DOCS)), 0, model=None)
    m2 = write_run(tmp_path / "org__model-b", list(range(N_DOCS)), 1, model=None)
    rc, err = imports(capsys, "lm-eval", m1, m2, "--out", tmp_path / "x.json")
    assert rc == 2 and "model_name differs ('org__model-a (the folder name" in err
    k2 = write_run(tmp_path / "k2", list(range(N_DOCS)), 1, k=2)
    rc, err = imports(capsys, "lm-eval", a, k2, "--verifier", "numeric", "--out", tmp_path / "x.json")
    assert rc == 2 and "samples per item differ (1 vs 2)" in err
    assert not (tmp_path / "x.json").exists()


def test_verifier_rescoring_at_k_1_keeps_the_tools_metric_beside_each_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0)
    lines = [row for _, row in read_jsonl(a)]
    for x in lines:  # the harness's exact_match misses "Answer: 1"-style texts the verifier reads
        x["resps"] = [[f"{x['resps'][0][0]} apples"]]
        x["exact_match"] = 0.0
    a.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rc, err = imports(capsys, "lm-eval", a, "--out", tmp_path / "metric.json")
    assert rc == 0, err
    metric = load(tmp_path / "metric.json")
    assert all(it.scores == [0.0] and it.samples[0].scored_by == "lm-evaluation-harness exact_match"
               for it in metric.items)  # fmt: skip
    rc, err = imports(capsys, "lm-eval", a, "--verifier", "numeric", "--out", tmp_path / "ours.json")
    assert rc == 0, err
    ours = load(tmp_path / "ours.json")
    assert {it.item_id: it.scores for it in ours.items} == {
        f"q{i}": [float((i + 0) % 2 == 0)] for i in range(N_DOCS)
    }
    for it in ours.items:
        [s] = it.samples or []
        assert s.scored_by == "reasoning-delta numeric verifier" and s.source_score == 0.0
    assert ours.scorer is not None and ours.scorer.name == "reasoning-delta"
    assert ours.scorer.settings["source_metric"] == "exact_match"
    # A reference the verifier cannot judge against is one line, not a crash.
    _edit(a, 2, lambda x: x.update(target={"a": 1}))
    rc, err = imports(capsys, "lm-eval", a, "--verifier", "numeric", "--out", tmp_path / "bad.json")
    assert rc == 2 and "line 3 (doc_id 2): the reference {'a': 1} is not an answer" in err, err
    # The two logs are scored by different scorers: never one measurement.
    metric_b = write_run(tmp_path / "b", list(range(N_DOCS)), 1, model="org/other")
    assert imports(capsys, "lm-eval", metric_b, "--out", tmp_path / "b.json")[0] == 0
    rc = compare_main([str(tmp_path / "ours.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert (
        rc == 2
        and "scorer differs ('reasoning-delta" in err
        and "'lm-evaluation-harness 0.4.13 (exact_match)'" in err
    )


# Failures 6 and 8: every malformed file one line; valid files accepted.


def _edit(path: Path, n: int, change: Any) -> None:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x]
    change(lines[n])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda x: x.update(arguments="Question: 1?"), "arguments: is a str, not the object"),
        (lambda x: x.update(arguments=[["Question: 1?", {}]]), "arguments: is a list, not the object"),
        (lambda x: x.update(metrics=3), "metrics: 3 is not the list of metric names"),
        (lambda x: x.update(resps=[["\ud800 1"]]), "resps[0][0]: holds a lone surrogate"),
        (lambda x: x["arguments"]["gen_args_0"]["arg_1"].update(temperature=-0.5), "is not a temperature"),
        (
            lambda x: x["arguments"]["gen_args_0"]["arg_1"].update(max_gen_toks=48.7),
            "48.7 is not a token budget",
        ),
        (lambda x: x.update(doc_id=[0]), "doc_id: [0] is not a document number"),
    ],
)
def test_a_malformed_lm_eval_line_is_one_line(
    change: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0)
    for n in range(N_DOCS):
        _edit(a, n, change)
    rc, err = imports(capsys, "lm-eval", a, "--out", tmp_path / "x.json")
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"refused: {a}: line 1") and message in err, (
        err
    )


def test_bad_paths_and_results_files_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0)
    (tmp_path / "a" / f"results_{DATE}.json").write_text("[1, 2]")
    rc, err = imports(capsys, "lm-eval", a, "--out", tmp_path / "x.json")
    assert rc == 2 and "is a JSON list, not the object lm-evaluation-harness writes" in err
    (tmp_path / "a" / f"results_{DATE}.json").unlink()
    rc, err = imports(capsys, "lm-eval", a, "--out", tmp_path)
    assert rc == 2 and err == f"refused: --out {tmp_path}: is a folder; give a file name\n"
    empty = tmp_path / "e" / f"samples_arith_{DATE}.jsonl"
    empty.parent.mkdir()
    empty.write_text("\n")
    rc, err = imports(capsys, "lm-eval", empty, "--out", tmp_path / "x.json")
    assert rc == 2 and "holds no sample lines (empty)" in err
    folder = tmp_path / "log.eval"
    folder.mkdir()
    rc, err = imports(capsys, "inspect", folder, "--out", tmp_path / "x.json")
    assert rc == 2 and err == f"refused: SRC {folder}: is a folder; give a file\n"
    assert imports(capsys, "lm-eval", a, "--out", tmp_path / "ok.json")[0] == 0
    b = write_run(tmp_path / "b", list(range(N_DOCS)), 1, model="org/n")
    assert imports(capsys, "lm-eval", b, "--out", tmp_path / "other.json")[0] == 0
    for args, message in (
        (
            [tmp_path / "ok.json", tmp_path / "other.json", "--out", tmp_path / "ok.json"],
            "is a file; give a folder",
        ),
        (
            [tmp_path / "ok.json", folder, "--out", tmp_path / "cmp"],
            f"LOG {folder}: is a folder; give a file",
        ),
    ):
        rc = compare_main([str(x) for x in args])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and message in err, err


def test_raw_line_separators_inside_strings_are_valid_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", list(range(N_DOCS)), 0)
    _edit(a, 0, lambda x: x.update(resps=[[" 1\u2028and\u0085more"]]))
    # As lm-eval writes it: ensure_ascii=False, so the separators are raw bytes inside the JSON string.
    a.write_text(
        "".join(json.dumps(json.loads(x), ensure_ascii=False) + "\n" for x in a.read_text().split("\n") if x),
        encoding="utf-8",
    )
    assert "\u2028" in a.read_text(encoding="utf-8")
    rc, err = imports(capsys, "lm-eval", a, "--out", tmp_path / "x.json")
    assert rc == 0, err
    assert imported_texts(tmp_path / "x.json")["q0"] == [" 1\u2028and\u0085more"]


# Failure 5: compare keeps each log's own arm, refuses other verifier versions.


def test_compare_keeps_each_logs_own_arm_and_refuses_other_verifier_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = {}
    for run, (arm, model) in enumerate((("+rag", "org/base"), ("trained+rag", "org/trained"))):
        src = write_run(tmp_path / arm, list(range(8)), run, model=model)  # enough items for a claim
        out = tmp_path / f"{arm}.json"
        assert imports(capsys, "lm-eval", src, "--verifier", "numeric", "--arm", arm, "--out", out)[0] == 0
        logs[arm] = out
    fast = ["--n-boot", "200", "--n-perm", "200"]
    rc = compare_main([str(logs["+rag"]), str(logs["trained+rag"]), "--out", str(tmp_path / "cmp"), *fast])
    assert rc == 0, capsys.readouterr().err
    report = json.loads((tmp_path / "cmp/arms/arm_comparison_report.json").read_text())
    assert report["arms_found"] == ["+rag", "trained+rag"] and report["base"]["arm"] == "+rag"
    [row] = report["contrasts"]
    # trained+rag against +rag is the marginal contrast of training: the row itself, named in its claim.
    assert (row["arm"], row["reference"], row["attribution"]) == ("trained+rag", "+rag", "marginal")
    assert "on top of +rag" in row["claim"] and report["marginal"] == []
    md = (tmp_path / "cmp/arms/arm_comparison_report.md").read_text()
    assert "## Every arm against +rag" in md and "against base" not in md
    delta = json.loads((tmp_path / "cmp/delta/delta_report.json").read_text())
    assert (delta["pre_arm"], delta["post_arm"]) == ("+rag", "trained+rag")
    other = json.loads(logs["trained+rag"].read_text())
    other["scorer"]["verifiers"][0]["version"] = "0"
    (tmp_path / "old.json").write_text(json.dumps(other))
    rc = compare_main([str(logs["+rag"]), str(tmp_path / "old.json"), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2 and "scorer.verifiers[numeric] differs" in err and " vs reasoning-delta 0)" in err, err


# Failure 9: imported Inspect logs with tool calls carry their counts.


def test_an_imported_inspect_log_with_tool_calls_is_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool
    from inspect_ai.tool import ToolCall

    from tests.helpers.foreign_logs import EPOCHS, inspect_log

    base_src = inspect_log(tmp_path / "b", "mockllm/base", {(0, 1), (1, 2)})
    tools_src = inspect_log(tmp_path / "t", "mockllm/tools", {(0, 1), (2, 2), (3, 3)})
    log = read_eval_log(str(tools_src))
    for j, s in enumerate(log.samples or []):
        call = ToolCall(id=f"c{j}", function="lookup", arguments={"q": s.input})
        s.messages[1:1] = [ChatMessageAssistant(content="", tool_calls=[call])]
        if j % 4:  # every fourth call was never answered
            s.messages[2:2] = [ChatMessageTool(content="42", tool_call_id=f"c{j}", function="lookup")]
    write_eval_log(log, str(tmp_path / "tools.eval"))
    assert imports(capsys, "inspect", base_src, "--out", tmp_path / "base.json")[0] == 0
    rc, err = imports(
        capsys, "inspect", tmp_path / "tools.eval", "--arm", "+tools", "--out", tmp_path / "+tools.json"
    )
    assert rc == 0, err
    tools = load(tmp_path / "+tools.json")
    n = len(log.samples or [])
    assert tools.tool_calls is not None and tools.n_samples == EPOCHS
    assert (tools.tool_calls.answered, tools.tool_calls.failed) == (
        n - len(range(0, n, 4)),
        len(range(0, n, 4)),
    )
    fast = ["--n-boot", "200", "--n-perm", "200"]
    rc = compare_main(
        [str(tmp_path / "base.json"), str(tmp_path / "+tools.json"), "--out", str(tmp_path / "c"), *fast]
    )
    err = capsys.readouterr().err
    report = json.loads((tmp_path / "c/arms/arm_comparison_report.json").read_text())
    # Failed calls beyond analysis.max_failed_tool_calls leave the arm out, for that reason (no dvc repro).
    [unusable] = report["arms_unusable"]
    assert (
        rc == 0 and "tool calls failed" in unusable["reason"] and "older than 3" not in unusable["reason"]
    ), err
    # A log imported before the importer counted the calls: the advice is to import it again.
    older = json.loads((tmp_path / "+tools.json").read_text())
    del older["tool_calls"]
    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "+tools.json").write_text(json.dumps(older))
    rc = compare_main([str(tmp_path / "base.json"), str(tmp_path / "older/+tools.json"), "--out",
                       str(tmp_path / "o"), *fast])  # fmt: skip
    [unusable] = json.loads((tmp_path / "o/arms/arm_comparison_report.json").read_text())["arms_unusable"]
    assert rc == 0 and "import it again" in unusable["reason"] and "dvc repro" not in unusable["reason"]


# The property: shuffled, duplicated, truncated, retyped files and mixed models or k.


CASES = st.sampled_from(["shuffle", "duplicate", "truncate", "retype", "model", "k", "same"])
MUST_REFUSE = {"duplicate", "model", "k", "same"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    how=CASES,
    ids=st.sampled_from(["item_id", "id", "position"]),
    verifier=st.sampled_from([None, "numeric"]),
    seed=st.integers(0, 10_000),
)
def test_every_import_is_refused_in_one_line_or_holds_exactly_the_files_samples_by_id(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    how: str,
    ids: str,
    verifier: str | None,
    seed: int,
) -> None:
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("imp")
    a = write_run(root / "a", list(range(N_DOCS)), 0, ids)
    order = list(range(N_DOCS))
    rng.shuffle(order)
    b = write_run(
        root / "b", order, 1, ids, k=2 if how == "k" else 1, model="org/x" if how == "model" else "org/m"
    )
    lines = b.read_bytes().split(b"\n")[:-1]
    n = rng.randrange(len(lines))
    if how == "duplicate":
        lines.insert(rng.randrange(len(lines) + 1), lines[n])
        b.write_bytes(b"\n".join(lines) + b"\n")
    elif how == "truncate":
        data = b.read_bytes()
        b.write_bytes(data[: rng.randrange(len(data) + 1)])
    elif how == "retype":
        row = json.loads(lines[n])
        key = rng.choice(sorted(row))
        row[key] = rng.choice(["x", 7, [1], {"a": 1}, None, True, 0.5])
        lines[n] = json.dumps(row).encode()
        b.write_bytes(b"\n".join(lines) + b"\n")
    elif how == "same":
        b = a
    args = ["lm-eval", a, b, "--out", root / "log.json", *(["--verifier", verifier] if verifier else [])]
    rc, err = imports(capsys, *args)
    if rc != 0:
        assert how != "shuffle", f"two runs in another order were refused: {err}"
        assert rc == 2 and err.count("\n") == 1 and err.startswith("refused: ") and "Traceback" not in err, (
            err
        )
        assert not (root / "log.json").exists()
        return
    assert how not in MUST_REFUSE, f"a {how} case was imported"
    # Imported: every document's samples are the texts both files hold for it, under its own name.
    got = imported_texts(root / "log.json")
    assert got == expected_texts([0, 1], ids), how
