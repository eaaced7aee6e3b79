"""Bring your own logs: Inspect, lm-evaluation-harness and lighteval files imported into EvalLogs, compared.

The Inspect logs are made here by inspect-ai itself (its offline mockllm model, several epochs); the other
tools' files are written here in their documented formats (lm_eval/result_schema.py SampleResult,
lighteval's DetailsLogger.Detail saved as parquet). Every command runs as a user runs it, in a subprocess.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from analysis.commands.compare_logs import main as compare_main
from contract.evallog import load
from interop.imports.__main__ import main as imports_main
from interop.inspect_export import main as export_main
from tests.helpers.foreign_logs import EPOCHS, N_ITEMS, inspect_log

ROOT = Path(__file__).resolve().parents[2]
FAST_PARAMS = "analysis:\n  n_boot: 300\n  n_perm: 300\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command of this project as a user runs it (this worktree's code on the path)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True)


class Cli:
    """The commands' main() in this process (an interpreter start and inspect-ai's import saved per call)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, command: str, *args: str | Path) -> tuple[int, str]:
        """(exit status, stderr) of `python -m <command> args`."""
        main = {"interop.imports": imports_main, "analysis.commands.compare_logs": compare_main}[command]
        rc = main([str(a) for a in args])
        return rc, self.capsys.readouterr().err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run a command's main() in this process, capturing its stderr."""
    return Cli(capsys)


@dataclass(frozen=True)
class Pair:
    """Two Inspect logs of two mock models on the same items, and their imports."""

    base_src: Path
    trained_src: Path
    base: Path
    trained: Path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    """base right on fewer (item, epoch) cells than trained; base imported by the command in a subprocess."""
    folder = tmp_path_factory.mktemp("inspect")
    cells = [(i, e) for i in range(N_ITEMS) for e in range(1, EPOCHS + 1)]
    base_src = inspect_log(folder / "base", "mockllm/base", {c for c in cells if (c[0] + c[1]) % 3 == 0})
    trained_src = inspect_log(
        folder / "trained", "mockllm/trained", {c for c in cells if (c[0] + c[1]) % 3 != 1}
    )
    r = run("interop.imports", "inspect", str(base_src), "--out", "base.json", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert imports_main(["inspect", str(trained_src), "--out", str(folder / "trained.json")]) == 0
    return Pair(base_src, trained_src, folder / "base.json", folder / "trained.json")


def inspect_scores(path: Path) -> dict[str, list[float]]:
    """Per item, the scores of Inspect's own log in epoch order (read with inspect-ai)."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    log = read_eval_log(str(path))
    by_item: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for s in log.samples or []:
        by_item[str(s.id)].append((s.epoch, value_to_float()(s.scores["match"].value)))
    return {k: [v for _, v in sorted(pairs)] for k, pairs in by_item.items()}


def test_inspect_logs_import_with_their_epochs_and_compare_as_inspect_scored_them(
    pair: Pair, cli: Cli, tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log

    base, trained = load(pair.base), load(pair.trained)
    assert base.n_samples == EPOCHS and len(base.items) == N_ITEMS
    assert {it.item_id: it.scores for it in base.items} == inspect_scores(pair.base_src)
    assert {it.item_id: it.scores for it in trained.items} == inspect_scores(pair.trained_src)
    own = read_eval_log(str(pair.base_src))
    by_cell = {(str(s.id), s.epoch): s for s in own.samples or []}
    for it in base.items:
        cells = [by_cell[(it.item_id, e)] for e in range(1, EPOCHS + 1)]
        assert [s.text for s in it.samples or []] == [c.output.completion for c in cells]
        assert it.gen_tokens == [c.output.usage.output_tokens for c in cells]
        assert it.prompt == f"Item {it.item_id[1:]} question" and it.family == f"fam{int(it.item_id[1:]) % 2}"
    assert base.driver == f"inspect-ai {own.eval.packages['inspect_ai']}" and base.scorer is not None
    assert base.scorer.settings["scorer"] == "match" and base.temperature == 0.8 and base.max_tokens == 64

    # The comparison reads the same per-item scores: its means are Inspect's own.
    rc, err = cli(
        "analysis.commands.compare_logs",
        pair.base,
        pair.trained,
        "--out",
        tmp_path,
        "--n-boot",
        "300",
        "--n-perm",
        "300",
    )
    assert rc == 0, err
    report = json.loads((tmp_path / "delta/delta_report.json").read_text())
    mean = lambda scores: sum(sum(v) / len(v) for v in scores.values()) / len(scores)  # noqa: E731
    assert report["mean_pre"] == pytest.approx(mean(inspect_scores(pair.base_src)))
    assert report["mean_post"] == pytest.approx(mean(inspect_scores(pair.trained_src)))
    arms = json.loads((tmp_path / "arms/arm_comparison_report.json").read_text())
    assert (
        arms["arms_found"] == ["base", "trained"] and arms["contrasts"][0]["mean_arm"] == report["mean_post"]
    )
    assert (tmp_path / "delta/delta_report.md").is_file() and (tmp_path / "arms/arm_deltas.png").is_file()
    # The contrast rows link to ../items.html: the item browser of these two logs, with their flips.
    page = (tmp_path / "items.html").read_text()
    assert "../items.html" in (tmp_path / "arms/arm_comparison_report.md").read_text()
    data = json.loads(
        re.search(r'<script type="application/json" id="item-data">(.*?)</script>', page, re.S)[1]
    )
    assert data["arms"] == ["base", "trained"] and arms["arms_missing"] == []
    assert len(data["items"]) == report["flips_wrong_to_right"] + report["flips_right_to_wrong"]


def test_inspect_token_logprobs_are_kept_and_weigh_the_calibration(tmp_path: Path, cli: Cli) -> None:
    from inspect_ai.log import read_eval_log

    cells = [(i, e) for i in range(N_ITEMS) for e in range(1, EPOCHS + 1)]
    srcs = {
        name: inspect_log(tmp_path / name, f"mockllm/{name}", {c for c in cells if (c[0] + c[1]) % 3 == r},
                          logprobs=True)
        for name, r in (("base", 0), ("trained", 1))
    }  # fmt: skip
    for name, src in srcs.items():
        assert imports_main(["inspect", str(src), "--out", str(tmp_path / f"{name}.json")]) == 0
    own = {(str(s.id), s.epoch): s for s in read_eval_log(str(srcs["base"])).samples or []}
    for it in load(tmp_path / "base.json").items:
        for e, sample in enumerate(it.samples or [], start=1):
            tokens = own[(it.item_id, e)].output.choices[0].logprobs.content
            assert sample.mean_logprob == pytest.approx(sum(t.logprob for t in tokens) / len(tokens))
            assert sample.mean_logprob == pytest.approx(-math.log(1 + e))
    rc, err = cli("analysis.commands.compare_logs", tmp_path / "base.json", tmp_path / "trained.json",
                  "--out",
                  tmp_path / "cmp", "--n-boot", "300", "--n-perm", "300")  # fmt: skip
    assert rc == 0, err
    calib = json.loads((tmp_path / "cmp/delta/delta_report.json").read_text())["calibration"]
    assert "log-probability" in calib["confidence"]
    # Every sample's weight is at most 1/2 (epoch 1: exp(-log 2)), so no confidence reaches the vote share.
    assert all(a["mean_confidence"] <= 0.5 for a in calib["arms"])


def test_compare_writes_the_delta_report_that_analysis_delta_writes(pair: Pair, tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_text(FAST_PARAMS)
    r = run(
        "analysis.commands.delta",
        "--pre",
        str(pair.base),
        "--post",
        str(pair.trained),
        "--out",
        "by_delta",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    (tmp_path / "params.yaml").unlink()  # compare needs no params file: the same settings come as flags
    r = run("analysis.commands.compare_logs", str(pair.base), str(pair.trained), "--out", "cmp",
            "--n-boot", "300",
            "--n-perm", "300", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    by_delta = (tmp_path / "by_delta/delta_report.json").read_bytes()
    assert (tmp_path / "cmp/delta/delta_report.json").read_bytes() == by_delta
    assert json.loads(by_delta)["pre_log"] == str(pair.base)
    assert (tmp_path / "cmp/delta/delta_report.md").read_text() == (
        tmp_path / "by_delta/delta_report.md"
    ).read_text()


def test_compare_refuses_logs_of_other_items_or_one_model(pair: Pair, cli: Cli, tmp_path: Path) -> None:
    rc, err = cli("analysis.commands.compare_logs", pair.base, pair.base, "--out", tmp_path / "cmp")
    assert rc == 2 and "the same log given twice" in err
    # A copy under another name is one run twice: the same model, arm, prompt, seed and driver.
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "base.json").write_text(pair.base.read_text() + " ")
    rc, err = cli(
        "analysis.commands.compare_logs",
        pair.base,
        tmp_path / "copy" / "base.json",
        "--out",
        tmp_path / "cmp",
    )
    assert rc == 2 and "both hold arm 'base'" in err
    two = json.loads(pair.trained.read_text())
    two["model_name"] = "mockllm/base"
    (tmp_path / "trained.json").write_text(json.dumps({**two, "arm": "trained"}))
    rc, err = cli(
        "analysis.commands.compare_logs", pair.base, tmp_path / "trained.json", "--out", tmp_path / "one"
    )
    # One model under two arm names: compared as such, never as a parametric gain.
    assert rc == 0, err
    report = json.loads((tmp_path / "one/delta/delta_report.json").read_text())
    assert report["claim"] == "ONE MODEL: an A/A comparison of two runs"
    assert report["comparison"]["differs_in"] == ["arm"] and "not training" in report["claim_detail"]
    arms = json.loads((tmp_path / "one/arms/arm_comparison_report.json").read_text())
    [row] = arms["contrasts"]
    assert row["attribution"] == "same model" and "no causal reading" in row["claim"]
    assert "parametric" not in (tmp_path / "one/arms/arm_comparison_report.md").read_text().split("## ")[1]
    fewer = json.loads(pair.trained.read_text())
    fewer["items"] = fewer["items"][1:]
    (tmp_path / "fewer.json").write_text(json.dumps(fewer))
    rc, err = cli(
        "analysis.commands.compare_logs", pair.base, tmp_path / "fewer.json", "--out", tmp_path / "cmp"
    )
    assert rc == 2 and "items differ (1 only in the first" in err and err.count("\n") == 1
    rc, err = cli(
        "analysis.commands.compare_logs", pair.base, pair.trained, "--out", tmp_path / "cmp", "--alpha", "1.5"
    )
    assert rc == 2 and "--alpha = 1.5 must lie strictly between 0 and 1" in err
    rc, err = cli(
        "analysis.commands.compare_logs",
        pair.base,
        pair.trained,
        tmp_path / "trained.json",
        "--out",
        tmp_path / "cmp",
    )
    assert rc == 2 and "both hold arm 'trained'" in err
    assert not (tmp_path / "cmp").exists()


def test_inspect_logs_of_one_model_append_their_epochs_and_others_are_refused(
    pair: Pair, cli: Cli, tmp_path: Path
) -> None:
    more = inspect_log(tmp_path / "more", "mockllm/base", {(0, 1)}, epochs=1)
    rc, err = cli("interop.imports", "inspect", pair.base_src, more, "--out", tmp_path / "four.json")
    assert rc == 0, err
    four = load(tmp_path / "four.json")
    assert four.n_samples == EPOCHS + 1
    assert {it.item_id: it.scores[:EPOCHS] for it in four.items} == inspect_scores(pair.base_src)
    assert [it.scores[EPOCHS] for it in four.items] == [1.0] + [0.0] * (N_ITEMS - 1)
    out = tmp_path / "x.json"
    rc, err = cli("interop.imports", "inspect", pair.base_src, pair.base_src, "--out", out)
    assert rc == 2 and "the same file given twice" in err
    rc, err = cli("interop.imports", "inspect", pair.base_src, pair.trained_src, "--out", out)
    assert rc == 2 and "model_name differs ('mockllm/base' vs 'mockllm/trained')" in err
    rc, err = cli("interop.imports", "inspect", pair.base, "--out", out)
    assert rc == 2 and f"{pair.base}: not an Inspect log" in err and err.count("\n") == 1
    rc, err = cli("interop.imports", "inspect", pair.base_src, "--scorer", "f1", "--out", out)
    assert rc == 2 and "epoch 1: scores.f1: missing" in err
    from inspect_ai.log import read_eval_log, write_eval_log

    odd = read_eval_log(str(pair.base_src))
    odd.samples[3].scores["match"].value = "maybe"  # type: ignore[index]
    write_eval_log(odd, str(tmp_path / "odd.eval"))
    rc, err = cli("interop.imports", "inspect", tmp_path / "odd.eval", "--out", out)
    where = f"sample {odd.samples[3].id!r} epoch {odd.samples[3].epoch}"  # type: ignore[index]
    assert rc == 2 and f"{where}: scores.match.value: 'maybe' is not a score" in err
    assert not out.exists()


def test_an_imported_inspect_log_exported_again_opens_with_inspects_own_scores(
    pair: Pair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import read_eval_log

    assert export_main([str(pair.base), "--out", str(tmp_path)]) == 0
    back = read_eval_log(str(tmp_path / "base.eval"))
    assert back.eval.config.epochs == EPOCHS and back.eval.model == "mockllm/base"
    scores: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for s in back.samples or []:
        scores[str(s.id)].append((s.epoch, s.scores["inspect-ai"].value))
    assert {k: [v for _, v in sorted(p)] for k, p in scores.items()} == inspect_scores(pair.base_src)
    texts = {
        (str(s.id), s.epoch): s.output.completion for s in read_eval_log(str(pair.base_src)).samples or []
    }
    assert {(str(s.id), s.epoch): s.output.completion for s in back.samples or []} == texts


# lm-evaluation-harness


DATE = "2026-01-02T03-04-05.678901"


def lm_eval_line(doc_id: int, texts: list[str], target: str, gen_kwargs: dict[str, Any]) -> dict[str, Any]:
    """One line of a --log_samples file as lm-evaluation-harness 0.4 writes it (after its sanitizing)."""
    prompt = f"Question: what is {doc_id} + 1?\nAnswer:"
    first = texts[0].split()[-1]
    return {
        "doc_id": doc_id,
        "doc": {"question": f"what is {doc_id} + 1?", "answer": target},
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}},
        "resps": [texts],
        "filtered_resps": [first],  # the default take_first filter: one answer per document
        "filter": "none",
        "metrics": ["exact_match"],
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": f"t{doc_id}",
        "exact_match": float(first == target),
    }


def write_lm_eval(folder: Path, lines: list[dict[str, Any]], date: str = DATE, seed: int = 0) -> Path:
    """samples_<task>_<date>.jsonl and the run's results_<date>.json beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_arith_{date}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = {
        "results": {"arith": {"exact_match,none": 0.5}},
        "versions": {"arith": 1.0},
        "config": {"model": "hf", "random_seed": seed},
        "lm_eval_version": "0.4.9",
        "model_name": "org/model-a",
    }
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    return path


SAMPLING = {"until": ["\n"], "do_sample": True, "temperature": 0.6, "max_gen_toks": 32}


def test_an_lm_eval_sample_file_with_repeats_imports_with_its_k_samples(tmp_path: Path, cli: Cli) -> None:
    k = 4
    lines = []
    for d in range(6):
        texts = [f" {d + 1 if (d + j) % 2 == 0 else d + 5}" for j in range(k)]
        lines.append(lm_eval_line(d, texts, str(d + 1), SAMPLING))
    src = write_lm_eval(tmp_path / "run", lines)
    rc, err = cli("interop.imports", "lm-eval", src, "--out", tmp_path / "a.json")
    assert rc == 2 and "resps: 4 responses (repeats) but one score per document" in err
    r = run("interop.imports", "lm-eval", str(src), "--verifier", "numeric", "--out", "a.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    log = load(tmp_path / "a.json")
    assert log.n_samples == k and [it.item_id for it in log.items] == [str(d) for d in range(6)]
    for it in log.items:
        d = int(it.item_id)
        assert it.scores == [1.0 if (d + j) % 2 == 0 else 0.0 for j in range(k)]
        assert [s.text for s in it.samples or []] == lines[d]["resps"][0]
        assert it.prompt == lines[d]["arguments"]["gen_args_0"]["arg_0"]
        # The harness's own score (take_first) agrees with the first sample's verdict.
        assert it.scores[0] == lines[d]["exact_match"]
    assert (log.temperature, log.max_tokens, log.seed, log.model_name) == (0.6, 32, 0, "org/model-a")
    assert (
        log.driver == "lm-evaluation-harness 0.4.9" and log.suite == "arith" and log.suite_revision == "1.0"
    )
    assert log.scorer is not None and log.scorer.settings["verifier"] == "numeric"


def test_lm_eval_runs_of_one_sample_each_append_and_their_metric_is_the_score(
    tmp_path: Path, cli: Cli
) -> None:
    greedy = {"until": ["\n"], "do_sample": False, "max_gen_toks": 32}
    srcs = []
    for run_no in range(2):
        lines = [
            lm_eval_line(d, [f" {d + 1 if d % (run_no + 2) == 0 else 0}"], str(d + 1), greedy)
            for d in range(5)
        ]
        srcs.append(str(write_lm_eval(tmp_path / f"run{run_no}", lines)))
    rc, err = cli("interop.imports", "lm-eval", *srcs, "--out", tmp_path / "a.json")
    assert rc == 0, err
    log = load(tmp_path / "a.json")
    assert log.n_samples == 2 and log.temperature == 0.0
    assert {it.item_id: it.scores for it in log.items} == {
        str(d): [float(d % 2 == 0), float(d % 3 == 0)] for d in range(5)
    }
    assert log.scorer is not None and log.scorer.settings["metric"] == "exact_match"


def test_lm_eval_refusals_name_the_file_and_field(tmp_path: Path, cli: Cli) -> None:
    lines = [lm_eval_line(d, [" 1", " 2"], "1", SAMPLING) for d in range(3)]
    lines[2]["resps"] = [[" 1", " 2", " 3"]]
    src = write_lm_eval(tmp_path / "unequal", lines)
    rc, err = cli("interop.imports", "lm-eval", src, "--verifier", "numeric", "--out", tmp_path / "a.json")
    assert rc == 2 and "samples: item '0' has 2 samples, item '2' has 3" in err

    lines = [lm_eval_line(d, [" 1"], "1", SAMPLING) for d in range(3)]
    lines[1]["arguments"]["gen_args_0"]["arg_1"] = {**SAMPLING, "temperature": 1.0}
    src = write_lm_eval(tmp_path / "mixed", lines)
    rc, err = cli("interop.imports", "lm-eval", src, "--out", tmp_path / "a.json")
    assert rc == 2 and f"{src}: line 2 (doc_id 1): temperature is 1.0, earlier rows have 0.6" in err

    a = write_lm_eval(tmp_path / "a", [lm_eval_line(d, [" 1"], "1", SAMPLING) for d in range(3)])
    b = write_lm_eval(tmp_path / "b", [lm_eval_line(d, [" 1"], "1", SAMPLING) for d in range(1, 4)])
    rc, err = cli("interop.imports", "lm-eval", a, b, "--out", tmp_path / "a.json")
    # Named by doc_id (the documents carry no id of their own), the files are aligned by doc_hash.
    assert rc == 2 and f"{b}: line 3 (doc_id 3): no document of {a} has this content" in err

    bad = tmp_path / "bad" / f"samples_arith_{DATE}.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"doc_id": 0, "resps": [[" 1"]]}\n')
    rc, err = cli("interop.imports", "lm-eval", bad, "--out", tmp_path / "a.json")
    assert rc == 2 and f"{bad}: line 1: metrics: missing" in err
    bad.write_text('{"doc_id": 0, "resps": [[" 1"]]}\nnot json\n')
    rc, err = cli("interop.imports", "lm-eval", bad, "--out", tmp_path / "a.json")
    assert rc == 2 and f"{bad}:2: not JSON" in err
    (tmp_path / "results.jsonl").write_text(bad.read_text())
    rc, err = cli("interop.imports", "lm-eval", tmp_path / "results.jsonl", "--out", tmp_path / "a.json")
    assert rc == 2 and "file name: not samples_<task>_<date>.jsonl" in err
    assert all("Traceback" not in x for x in err.splitlines()) and not (tmp_path / "a.json").exists()


# lighteval


def write_lighteval(
    out: Path, rows: list[dict[str, Any]], params: dict[str, Any], model: str = "org/model-b"
) -> Path:
    """details/<model>/<date>/details_<task>_<date>.parquet and results/<model>/results_<date>.json, as
    lighteval's EvaluationTracker lays them out (rows: asdict(Detail) of doc, model_response, metric)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = out / "details" / model / DATE
    folder.mkdir(parents=True)
    path = folder / f"details_lighteval|arith|0_{DATE}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    results = out / "results" / model / f"results_{DATE}.json"
    results.parent.mkdir(parents=True)
    general = {
        "lighteval_sha": "abc123",
        "model_name": model,
        "model_config": {"generation_parameters": params},
    }
    results.write_text(json.dumps({"config_general": general, "versions": {"lighteval|arith|0": 0}}))
    return path


def lighteval_row(d: int, texts: list[str], metric: dict[str, float]) -> dict[str, Any]:
    """One Detail row: the Doc, the ModelResponse (one text per sample) and the document's metrics."""
    return {
        "doc": {
            "query": f"What is {d} + 1?",
            "choices": [str(d + 1)],
            "gold_index": 0,
            "id": f"doc{d}",
            "task_name": "lighteval|arith|0",
            "num_samples": len(texts),
            "generation_size": 48,
        },  # fmt: skip
        "model_response": {
            "input": f"Q: What is {d} + 1?\nA:",
            "input_tokens": [1, 2, 3],
            "text": texts,
            "output_tokens": [[7] * (j + 2) for j in range(len(texts))],
        },  # fmt: skip
        "metric": metric,
    }


def test_a_lighteval_details_file_imports_with_its_samples(tmp_path: Path, cli: Cli) -> None:
    n = 3
    rows = []
    for d in range(5):
        texts = [f"The answer is {d + 1 if j <= d % n else d}" for j in range(n)]
        rows.append(lighteval_row(d, texts, {f"pass@k:k=1&n={n}": ((d % n) + 1) / n}))
    src = write_lighteval(tmp_path / "out", rows, {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 48})
    rc, err = cli("interop.imports", "lighteval", src, "--out", tmp_path / "a.json")
    assert rc == 2 and "model_response.text: 3 samples but one score per document" in err
    r = run(
        "interop.imports", "lighteval", str(src), "--verifier", "numeric", "--out", "a.json", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    log = load(tmp_path / "a.json")
    assert log.n_samples == n and (log.temperature, log.top_p, log.max_tokens) == (0.7, 0.95, 48)
    for it in log.items:
        d = int(it.item_id.removeprefix("doc"))
        assert it.scores == [1.0 if j <= d % n else 0.0 for j in range(n)]
        # lighteval's own per-document mean over the samples agrees with the per-sample verdicts.
        assert sum(it.scores) / n == pytest.approx(rows[d]["metric"][f"pass@k:k=1&n={n}"])
        assert it.gen_tokens == [2, 3, 4] and it.prompt == f"Q: What is {d} + 1?\nA:"
        assert [s.prompt_tokens for s in it.samples or []] == [3] * n
    assert log.driver == "lighteval (commit abc123)" and log.model_name == "org/model-b"


def test_a_lighteval_file_of_one_sample_per_document_scores_with_its_metric(tmp_path: Path, cli: Cli) -> None:
    rows = [lighteval_row(d, [f"{d}"], {"extractive_match": float(d % 2)}) for d in range(4)]
    src = write_lighteval(tmp_path / "out", rows, {})
    rc, err = cli("interop.imports", "lighteval", src, "--out", tmp_path / "a.json")
    assert rc == 0, err
    log = load(tmp_path / "a.json")
    # No temperature in the run's generation parameters: lighteval's default (greedy) ran.
    assert log.n_samples == 1 and log.temperature == 0.0 and log.max_tokens == 48
    assert {it.item_id: it.scores for it in log.items} == {f"doc{d}": [float(d % 2)] for d in range(4)}
    rows[1]["metric"] = {"extractive_match": 3.0}
    src = write_lighteval(tmp_path / "bad", rows, {})
    rc, err = cli("interop.imports", "lighteval", src, "--out", tmp_path / "a.json")
    assert rc == 2 and "row 1 (doc id 'doc1'): metric.extractive_match: 3.0 is not a score in [0, 1]" in err


def test_lighteval_files_without_ids_align_by_query_and_a_file_twice_is_refused(
    tmp_path: Path, cli: Cli
) -> None:
    def rows(order: list[int], run: int) -> list[dict[str, Any]]:
        out = []
        for d in order:
            row = lighteval_row(d, [f"{d + run}"], {"extractive_match": float(run == 0)})
            del row["doc"]["id"]
            out.append(row)
        return out

    a = write_lighteval(tmp_path / "a", rows([0, 1, 2, 3], 0), {})
    b = write_lighteval(tmp_path / "b", rows([2, 0, 3, 1], 1), {})
    rc, err = cli("interop.imports", "lighteval", a, b, "--out", tmp_path / "x.json")
    assert rc == 0, err
    # Named by row of the first file; the second's rows found by the query's hash, not by position.
    assert {it.item_id: [s.text for s in it.samples or []] for it in load(tmp_path / "x.json").items} == {
        str(d): [f"{d}", f"{d + 1}"] for d in range(4)
    }
    rc, err = cli("interop.imports", "lighteval", a, a, "--out", tmp_path / "y.json")
    assert rc == 2 and "the same file given twice" in err
