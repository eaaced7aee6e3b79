"""The contamination audit on small real files: the probes' comparison, the overlap, the seen/clean split
and the analyses that print it; the probes on a real vLLM engine (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from analysis.reports import contamination_split as cs
from analysis.reports.refusal import Refusal
from analysis.reports.settings import AnalysisSettings
from contract.contamination import OverlapSettings, ProbeFile, ProbeItem, TrainingData
from contract.engine import EngineInfo
from contract.suite import SuiteItem
from pipeline.overlap import OverlapError, longest_run, ngram_index, overlap, read_training
from pipeline.probes import compare, split_question

NUMERIC = {"type": "numeric", "rel_tol": 0.0, "abs_tol": 0.0}


def suite_item(i: int, question: str, answer: int = 1) -> SuiteItem:
    return SuiteItem.model_validate(
        {"item_id": f"q{i:03d}", "family": "f", "question": question, "answer": answer, "verifier": NUMERIC}
    )


def test_the_question_is_cut_at_a_word_boundary() -> None:
    q = "A satellite at 938 km altitude is raised by 100 km. What is its new altitude in km?"
    head, rest = split_question(q, 0.6)
    assert q == f"{head} {rest}" and len(head) <= round(0.6 * len(q))
    assert (head, rest) == (
        "A satellite at 938 km altitude is raised by 100",
        "km. What is its new altitude in km?",
    )
    assert split_question("Oneword", 0.6) == ("Oneword", "")


def test_rouge_l_is_rouge_scores_on_its_readme_example_and_exact_match_collapses_spaces() -> None:
    # rouge-score's README: target "The quick brown fox jumps over the lazy dog", prediction "The quick brown
    # dog jumps on the log.": LCS "the quick brown jumps the", 5 words, P 5/8, R 5/9.
    cut, exact, f1 = compare(
        "The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."
    )
    assert f1 == pytest.approx(2 * (5 / 8) * (5 / 9) / (5 / 8 + 5 / 9))
    assert not exact and cut == "The quick brown dog jumps on the log."
    cut, exact, f1 = compare("its new  altitude in km?", " its new altitude in km? And more text")
    assert exact and f1 == 1.0 and cut == "its new altitude in km?"


def test_overlap_finds_the_run_its_span_and_a_reworded_near_duplicate(tmp_path: Path) -> None:
    seen = "Which company operates the satellite FUNEX-82 launched in 2021 from the northern range?"
    reworded = "which company operates the satellite funex 82 launched in 2021 from the northern range"
    items = [
        suite_item(0, seen),
        suite_item(1, "What is the orbital period in minutes of a circular orbit at 612 km altitude?"),
        suite_item(2, "Short question here?"),
    ]
    data = tmp_path / "train.jsonl"
    data.write_text(
        json.dumps({"prompt": "Something else entirely about rockets."}) + "\n"
        + json.dumps({"prompt": "Intro. " + seen + " Answer briefly."}) + "\n"
    )  # fmt: skip
    text = tmp_path / "corpus.txt"
    text.write_text("\n" + reworded.upper() + "\nshort question here?\n")
    cfg = OverlapSettings(ngram=8, minhash_threshold=0.5)
    got = overlap(
        items, [TrainingData(path=str(data), field="prompt"), TrainingData(path=str(text))], cfg, "s"
    )
    first, second, third = got.items
    # 16 tokens: words, and the hyphen and question mark as tokens of their own.
    assert first.longest_run == 16 and first.span == seen and first.source == f"{data}:2"
    assert first.near_duplicate is not None and first.jaccard >= 0.5
    assert second.longest_run == 0 and second.span is None and second.near_duplicate is None
    # Shorter than the n-gram: it counts when it appears whole.
    assert third.longest_run == 4 and third.source == f"{text}:3"
    assert [s.documents for s in got.sources] == [2, 2]


def test_training_data_without_the_field_is_refused_naming_file_line_and_fix(tmp_path: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text('{"prompt": "a b c"}\n{"question": "d e f"}\n')
    with pytest.raises(OverlapError, match=rf"{data}:2: no text under 'prompt'; set contamination"):
        read_training(TrainingData(path=str(data), field="prompt"))
    with pytest.raises(OverlapError, match="training data not found"):
        read_training(TrainingData(path=str(tmp_path / "missing.jsonl"), field="prompt"))


def test_a_run_is_the_longest_one_document_holds() -> None:
    docs, _ = [], None
    from pipeline.overlap import Doc

    docs = [Doc("a:1", ("x", "y", "z", "w", "v")), Doc("b:1", ("z", "w", "v", "u", "t", "s"))]
    run, span, where = longest_run("x y z w v u t", docs, ngram_index(docs, 2), 2)
    assert (run, span, where) == (5, "x y z w v", "a:1")


def probe_file(model: str, ids: list[str], recited: set[str], answered: set[str]) -> ProbeFile:
    rows = [
        ProbeItem(item_id=i, prefix="p", rest="r", completion="r" if i in recited else "x",
                  exact=i in recited, rouge_l=1.0 if i in recited else 0.0, answer_text="", answer="1",
                  answer_right=i in answered)
        for i in ids
    ]  # fmt: skip
    return ProbeFile(
        model=model, model_sha256="0" * 64, suite="s", questions_sha256="0" * 64, prefix=0.6, rouge="r",
        engine=EngineInfo(name="vllm"), inputs_sha256="0" * 64, seconds=1.0, items=rows,
    )  # fmt: skip


def write_audit(tmp_path: Path, ids: list[str], recited: set[str], **flag: object) -> Path:
    out = tmp_path / "contamination"
    out.mkdir()
    (out / "probe-trained.json").write_text(probe_file("trained", ids, recited, set()).model_dump_json())
    params = tmp_path / "params.yaml"
    section = {"models": ["trained"], "out": str(out), "flag": flag}
    params.write_text(yaml.safe_dump({"contamination": section}))
    return params


def test_a_gain_that_lives_only_on_recited_items_is_called_so(tmp_path: Path) -> None:
    ids = [f"q{i:03d}" for i in range(200)]
    seen = set(ids[:60])
    audit = cs.read_audit(write_audit(tmp_path, ids, seen))
    rng = np.random.default_rng(0)
    ref = rng.uniform(0, 0.5, 200)
    arm = ref + np.where(np.isin(ids, sorted(seen)), 0.4, 0.0) + rng.normal(0, 0.02, 200)
    s = cs.split(audit, ids, ref, arm, ("base", "trained"), AnalysisSettings(n_boot=400, n_perm=400))
    assert (s.n_seen, s.n_clean, s.evidence["recited"]) == (60, 140, 60)
    assert [r.items for r in s.rows] == ["all", "possibly seen", "clean"]
    assert s.rows[1].delta == pytest.approx(0.4, abs=0.01) and abs(s.rows[2].delta) < 0.01
    assert s.rows[1].ci95[0] > 0 and s.rows[2].ci95[0] < 0 < s.rows[2].ci95[1]
    assert s.call == cs.ONLY_SEEN and s.difference_p < 0.01
    # The same gain on every item: no difference detected.
    flat = cs.split(audit, ids, ref, ref + 0.2 + rng.normal(0, 0.02, 200), ("base", "trained"),
                    AnalysisSettings(n_boot=400, n_perm=400))  # fmt: skip
    assert flat.call == cs.NO_DIFFERENCE


def test_nothing_flagged_is_said_plainly_and_a_file_of_other_items_is_refused(tmp_path: Path) -> None:
    ids = [f"q{i:03d}" for i in range(30)]
    audit = cs.read_audit(write_audit(tmp_path, ids, set()))
    s = cs.split(
        audit, ids, np.zeros(30), np.ones(30), ("base", "trained"), AnalysisSettings(n_boot=200, n_perm=200)
    )
    assert s.call == cs.NOTHING and len(s.rows) == 1 and s.n_seen == 0
    assert "no item is flagged" in s.call_detail
    with pytest.raises(Refusal, match=r"probe-trained.json: item q999 of the logs is not in it"):
        cs.split(
            audit,
            [*ids, "q999"],
            np.zeros(31),
            np.ones(31),
            ("a", "b"),
            AnalysisSettings(n_boot=200, n_perm=200),
        )


def test_a_missing_file_and_a_bad_threshold_are_refused_in_one_line(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"contamination": {"models": ["base"], "out": str(tmp_path / "c")}}))
    with pytest.raises(Refusal, match=r"probe-base.json: missing .*run python -m pipeline.contamination"):
        cs.read_audit(params)
    params.write_text(yaml.safe_dump({"contamination": {"flag": {"rouge_l": 2}}}))
    with pytest.raises(Refusal, match=r"contamination.flag.rouge_l: "):
        cs.read_audit(params)
    params.write_text(yaml.safe_dump({"analysis": {"alpha": 0.05}}))
    assert cs.read_audit(params) is None


def test_the_reports_print_the_split_and_the_browser_shows_the_evidence(tmp_path: Path) -> None:
    from analysis.commands import arm_comparison, delta, index_page
    from tests.helpers.evallogs import synthetic_scores, write_log

    rng = np.random.default_rng(1)
    ids = [f"q{i:04d}" for i in range(120)]
    pre, logit = synthetic_scores(rng, 120, 4)
    post = pre.copy()
    post[:40] = 1.0  # the gain: every possibly-seen item solved
    logs = tmp_path / "evallogs"
    logs.mkdir()
    write_log(logs / "base.json", pre, arm="base")
    write_log(logs / "trained.json", post, arm="trained", model_name="demo-trained")
    params = write_audit(tmp_path, ids, set(ids[:40]))
    body = yaml.safe_load(params.read_text())
    body["analysis"] = {"n_boot": 400, "n_perm": 400}
    body["arms"] = ["base", "trained"]
    params.write_text(yaml.safe_dump(body))
    out = tmp_path / "reports"
    pa = str(params)
    assert delta.main(["--pre", str(logs / "base.json"), "--post", str(logs / "trained.json"),
                       "--out", str(out / "delta"), "--params", pa]) == 0  # fmt: skip
    assert arm_comparison.main(["--logs", str(logs), "--out", str(out / "arms"), "--params", pa]) == 0
    assert index_page.main(["--delta", str(out / "delta"), "--arms", str(out / "arms"), "--logs", str(logs),
                            "--out", str(out), "--params", pa]) == 0  # fmt: skip
    report = json.loads((out / "delta" / "delta_report.json").read_text())
    split = report["contamination"]
    assert (split["n_seen"], split["call"]) == (40, cs.ONLY_SEEN)
    text = (out / "delta" / "delta_report.md").read_text()
    assert f"**Seen or clean: {cs.ONLY_SEEN}.**" in text and "## Seen or clean: the delta on items" in text
    arms = json.loads((out / "arms" / "arm_comparison_report.json").read_text())
    assert arms["contamination"][0]["rows"] == split["rows"]
    assert "## Seen or clean" in (out / "arms" / "arm_comparison_report.md").read_text()
    assert f"{cs.ONLY_SEEN}" in (out / "index.md").read_text()
    page = (out / "items.html").read_text()
    assert "trained continues \\u201cp\\u201d with the rest word for word" in page or "word for word" in page
    assert "Possibly seen: " in page


@pytest.mark.slow
def test_the_stage_probes_a_real_checkpoint_and_keeps_an_up_to_date_file(
    tmp_path: Path, tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from demo.tiny_models import arithmetic_items
    from demo.worlds import make_world
    from pipeline import contamination
    from pipeline.engines import engines_started

    items = arithmetic_items(12)
    world = make_world(tmp_path / "w", {"base": tiny_checkpoint}, items, k=1, temperature=0.0)
    train = tmp_path / "train.txt"
    train.write_text(items[3]["question"] + "\nsomething else\n")
    body = yaml.safe_load(world.params.read_text())
    body["contamination"] = {"models": ["base"], "out": str(tmp_path / "c"),
                             "training_data": [{"path": str(train)}], "overlap": {"ngram": 6}}  # fmt: skip
    world.params.write_text(yaml.safe_dump(body))
    monkeypatch.chdir(tmp_path)
    lines = contamination.run(world.params)
    probe = ProbeFile.model_validate_json((tmp_path / "c" / "probe-base.json").read_bytes())
    assert [r.item_id for r in probe.items] == [it["item_id"] for it in items]
    for row, it in zip(probe.items, items, strict=True):
        assert f"{row.prefix} {row.rest}" == it["question"]
        assert row.exact == (" ".join(row.completion.split()) == row.rest)
        assert 0.0 <= row.rouge_l <= 1.0 and (row.rouge_l == 1.0) >= row.exact
    # The tiny model was trained on every "What is a op b?" question: it recites the template's tail.
    assert sum(r.rouge_l > 0 for r in probe.items) > 0
    assert probe.engine.name == "vllm" and probe.seconds > 0
    overlap_rows = json.loads((tmp_path / "c" / "overlap.json").read_text())["items"]
    assert [r["item_id"] for r in overlap_rows if r["longest_run"]] == [items[3]["item_id"]]
    started = engines_started()
    again = contamination.run(world.params)
    assert (
        again[0] == "base: up to date"
        and engines_started() == started
        and lines[0].startswith("base: probed")
    )


def test_a_reference_checkpoints_hits_are_the_templates_not_memory(tmp_path: Path) -> None:
    ids = [f"q{i:03d}" for i in range(20)]
    out = tmp_path / "c"
    out.mkdir()
    template = set(ids[:8])  # both checkpoints recite these: the wording predicts them
    memorized = set(ids[8:12])
    (out / "probe-base.json").write_text(probe_file("base", ids, template, {ids[0]}).model_dump_json())
    trained = probe_file("trained", ids, template | memorized, {ids[0], ids[9]})
    (out / "probe-trained.json").write_text(trained.model_dump_json())
    params = tmp_path / "params.yaml"
    section = {"models": ["base", "trained"], "out": str(out), "flag": {"reference": "base"}}
    params.write_text(yaml.safe_dump({"contamination": section}))
    audit = cs.read_audit(params)
    assert cs.seen_mask(audit, ids).tolist() == [i in memorized for i in ids]
    assert audit.kinds[ids[9]] == {"recited", "answered"}
    section["flag"] = {}
    params.write_text(yaml.safe_dump({"contamination": section}))
    assert cs.seen_mask(cs.read_audit(params), ids).sum() == 12
    section["flag"] = {"reference": "placebo"}
    params.write_text(yaml.safe_dump({"contamination": section}))
    with pytest.raises(Refusal, match=r"contamination.flag.reference: 'placebo' is not probed"):
        cs.read_audit(params)
