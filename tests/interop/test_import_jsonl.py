"""`python -m interop.imports jsonl`: any tool's texts, one sample a line, judged as the pipeline judges.

The pipeline's log of real samples (the GRPO world's committed base arm: SmolLM2 texts, 48 items x 4) is
rescored by the pipeline's own scorer (scoring.scorer.score_generations, so the test holds whatever the
scorer's version); its texts are written as JSONL the way another tool would write them, imported, and
every score must equal the pipeline's and `analysis.commands.compare_logs` must report a delta of exactly 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analysis.commands.compare_logs import main as compare_main
from contract.arm import ArmSpec
from contract.digest import file_sha256
from contract.evallog import EvalLog, load
from contract.generations import Generations, GenItem, GenSample, prompt_sha256
from contract.suite import load_suite
from demo.worlds import ROOT
from interop.imports.__main__ import main as imports_main
from scoring.scorer import SCORER_VERSION, score_generations

WORLD = ROOT / "examples" / "smollm2-grpo"
LOG = WORLD / "evallogs" / "base.json"
SUITE = WORLD / "suite" / "smollm2-grpo-arith-v1.jsonl"


def pipeline_log(
    committed: EvalLog, chat: bool, rule: str | None, prompt_end: str = "", suite: Path = SUITE
) -> EvalLog:
    """The committed log's samples scored again by the pipeline's scorer (chat or plain, a prompt rule)."""
    protocol = committed.protocol.model_copy(update={"answer": rule})  # type: ignore[union-attr]
    items = []
    for it in committed.items:
        prompt = (it.prompt or "") + prompt_end
        samples = [
            GenSample(
                index=s.index,
                seed=s.seed,
                text=s.text,
                finish_reason=s.finish_reason,
                prompt_tokens=s.prompt_tokens,
                gen_tokens=s.gen_tokens,
                rounds=s.rounds or 1,
            )  # fmt: skip
            for s in it.samples or []
        ]
        items.append(
            GenItem(item_id=it.item_id, prompt=prompt, prompt_sha256=prompt_sha256(prompt), samples=samples)
        )
    arm = ArmSpec(
        name=committed.arm, model=committed.model_name, retrieval=False, tools=False,
        attribution=committed.attribution,
    )  # fmt: skip
    gens = Generations(
        arm=arm, model=committed.model_name, chat=chat, protocol=protocol, engine=committed.engine,
        pins={k: v for k, v in (committed.pins or {}).items() if k != "suite"}, items=items,
    )  # fmt: skip
    return score_generations(
        gens, load_suite(suite), committed.suite, committed.suite_revision, file_sha256(suite)
    )


def write_lines(path: Path, log: EvalLog, with_prompt: bool = True, sample: int | None = None) -> Path:
    """The log's samples as another tool writes them: its own field names, one sample a line."""
    with path.open("w", encoding="utf-8") as f:
        for it in log.items:
            for s in it.samples or []:
                if sample is not None and s.index != sample:
                    continue
                row: dict[str, Any] = {"id": it.item_id, "response": s.text, "seed": s.seed}
                row |= {"gen_tokens": s.gen_tokens, "finish_reason": s.finish_reason}
                if with_prompt:
                    row["prompt"] = it.prompt
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def flags(log: EvalLog, out: Path, suite: Path = SUITE) -> list[str]:
    """What the importer is told of the run: suite, decoding, seed, model, names; the field mapping."""
    return [
        "--suite", str(suite), "--field", "item_id=id", "--field", "text=response",
        "--temperature", str(log.temperature), "--max-tokens", str(log.max_tokens), "--top-p", str(log.top_p),
        "--seed", str(log.seed), "--model", log.model_name, "--generator", "a JSONL of texts",
        "--arm", "jsonl",
        "--suite-name", log.suite, "--suite-revision", log.suite_revision, "--out", str(out),
    ]  # fmt: skip


def scores(log: EvalLog) -> dict[str, tuple[list[float], list[float] | None]]:
    """Per item, the report reader's and the lenient reader's scores."""
    return {it.item_id: (it.scores, it.lenient_scores) for it in log.items}


def samples(log: EvalLog) -> dict[str, list[tuple[Any, ...]]]:
    """Per item, each sample's index, seed, text, answers (both readers') and score, in sample order."""
    return {
        it.item_id: [(s.index, s.seed, s.text, s.answer, s.lenient_answer, s.score) for s in it.samples or []]
        for it in log.items
    }


@pytest.mark.parametrize(
    ("log_path", "suite"),
    [
        # A committed log, so the test runs in a fresh clone (the demo's logs are DVC outputs); plain
        # reading is the reading-flags test's, on the same texts.
        pytest.param(LOG, SUITE, id="grpo-base"),
    ],
)  # fmt: skip
def test_the_pipelines_samples_imported_as_jsonl_score_the_same_and_compare_with_a_delta_of_exactly_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], log_path: Path, suite: Path
) -> None:
    committed = load(log_path)
    chat = bool(committed.scorer.settings["chat"])  # type: ignore[union-attr]
    rule = committed.protocol.answer  # type: ignore[union-attr]
    ours = pipeline_log(committed, chat=chat, rule=rule, suite=suite)
    if committed.scorer is not None and committed.scorer.version == SCORER_VERSION:
        assert scores(ours) == scores(committed)  # the rescoring is the committed log's own scoring
    base = tmp_path / "base.json"
    base.write_text(ours.model_dump_json(exclude_none=True))
    imported = tmp_path / "jsonl.json"
    src = write_lines(tmp_path / "texts.jsonl", ours)
    reading = ["--reading", "chat" if chat else "plain", *(["--answer-rule", rule] if rule else [])]
    assert imports_main(["jsonl", str(src), *flags(ours, imported, suite), *reading]) == 0, (
        capsys.readouterr().err
    )
    theirs = load(imported)
    n = len(ours.items) * ours.n_samples
    assert scores(theirs) == scores(ours) and len(theirs.items) == len(ours.items) > 0
    assert 0 < sum(sum(it.scores) for it in ours.items) < n, "all right or all wrong proves nothing"
    assert samples(theirs) == samples(ours)
    assert theirs.scorer is not None and ours.scorer is not None
    assert (theirs.scorer.name, theirs.scorer.version) == (ours.scorer.name, ours.scorer.version)
    assert theirs.scorer.settings["answer"] == ours.scorer.settings["answer"]
    assert (theirs.scorer.read_by, theirs.scorer.timeouts) == (ours.scorer.read_by, ours.scorer.timeouts)
    assert theirs.driver == "jsonl (a JSONL of texts)" and theirs.seed == ours.seed is not None

    out = tmp_path / "cmp"
    args = [str(base), str(imported), "--out", str(out), "--n-boot", "200", "--n-perm", "200"]
    assert compare_main(args) == 0, capsys.readouterr().err
    report = json.loads((out / "delta" / "delta_report.json").read_text())
    assert report["delta_mean"] == 0.0 and report["delta_ci95"] == [0.0, 0.0]
    assert report["flips_wrong_to_right"] == report["flips_right_to_wrong"] == 0
    assert report["claim"] == "ONE MODEL: a cross-tool parity check"


@pytest.mark.parametrize(
    ("reading", "rule", "prompt_end", "with_prompt"),
    [
        ("plain", None, "Answer:", False),  # no prompt in the lines: read as continuing 'Answer:'
        ("plain", None, "Answer:", True),
        ("chat", "last_boxed", "", True),
        ("chat", "answer_is", "", False),
    ],
)
def test_the_reading_flags_read_as_the_pipeline_reads_under_that_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reading: str, rule: str | None, prompt_end: str,
    with_prompt: bool,
) -> None:  # fmt: skip
    committed = load(LOG)
    ours = pipeline_log(committed, chat=reading == "chat", rule=rule, prompt_end=prompt_end)
    chat = pipeline_log(committed, chat=True, rule=None)
    assert scores(ours) != scores(chat), "a reading that changes nothing proves nothing"
    imported = tmp_path / "jsonl.json"
    src = write_lines(tmp_path / "texts.jsonl", ours, with_prompt=with_prompt)
    more = ["--reading", reading, *(["--answer-rule", rule] if rule else [])]
    assert imports_main(["jsonl", str(src), *flags(ours, imported), *more]) == 0, capsys.readouterr().err
    theirs = load(imported)
    assert scores(theirs) == scores(ours)
    assert samples(theirs) == samples(ours)
    assert theirs.scorer.settings["answer"] == ours.scorer.settings["answer"]  # type: ignore[union-attr]


def test_k_files_of_one_sample_each_give_sample_j_from_file_j(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = pipeline_log(load(LOG), chat=True, rule=None)
    files = [str(write_lines(tmp_path / f"run{j}.jsonl", ours, sample=j)) for j in range(4)]
    imported = tmp_path / "jsonl.json"
    assert imports_main(["jsonl", *files, *flags(ours, imported)]) == 0, capsys.readouterr().err
    theirs = load(imported)
    assert scores(theirs) == scores(ours)
    assert samples(theirs) == samples(ours)
    assert theirs.scorer.settings["imported_from"] == files  # type: ignore[union-attr]


def test_an_item_with_another_k_is_refused_naming_both_items_and_their_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = pipeline_log(load(LOG), chat=True, rule=None)
    src = write_lines(tmp_path / "texts.jsonl", ours)
    lines = src.read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:-1]))  # the last item loses its last sample
    out = tmp_path / "jsonl.json"
    assert imports_main(["jsonl", str(src), *flags(ours, out)]) == 2
    err = capsys.readouterr().err
    last = ours.items[-1].item_id
    assert f"item {last!r} has 3 samples, item " in err and "has 4" in err and "the same k" in err, err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize(
    ("row", "extra", "message"),
    [
        ({"id": "nope-001", "response": "4"}, [], r"texts.jsonl:1: item 'nope-001' is not an item of"),
        ({"item": "add-001", "response": "4"}, [],
         r"texts.jsonl:1: field 'id' \(for item_id\) is missing; its fields: item, response; name another"),
        ({"id": "add-001", "response": 4}, [],
         r"texts.jsonl:1: field 'response' \(for text\): 4 is not a string"),
        ({"id": "add-001", "response": "4", "seed": "7"}, ["--field", "seed=seed"],
         r"texts.jsonl:1: field 'seed' \(for seed\): '7' is not an integer"),
        ({"id": "add-001", "response": "4"}, ["--field", "answer=response"],
         r"--field 'answer=response': 'answer' is not a line field"),
    ],
)  # fmt: skip
def test_a_line_it_cannot_import_is_refused_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: dict[str, Any], extra: list[str], message: str
) -> None:
    import re

    src = tmp_path / "texts.jsonl"
    src.write_text(json.dumps(row) + "\n")
    out = tmp_path / "jsonl.json"
    args = ["jsonl", str(src), "--suite", str(SUITE), "--field", "item_id=id", "--field", "text=response",
            "--temperature", "0", "--max-tokens", "8", "--out", str(out), *extra]  # fmt: skip
    assert imports_main(args) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.count("\n") == 1 and not out.exists(), err


def test_what_the_lines_and_flags_do_not_give_is_recorded_as_not_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = pipeline_log(load(LOG), chat=True, rule=None)
    src = write_lines(tmp_path / "texts.jsonl", ours, with_prompt=False)
    out = tmp_path / "jsonl.json"
    args = ["jsonl", str(src), "--suite", str(SUITE), "--field", "item_id=id", "--field", "text=response",
            "--temperature", "0.7", "--max-tokens", "64", "--out", str(out)]  # fmt: skip
    assert imports_main(args) == 0, capsys.readouterr().err
    log = load(out)
    assert log.model_name == "(not recorded)" and log.seed is None and log.top_p is None
    assert log.suite == SUITE.stem and log.suite_revision == f"sha256:{file_sha256(SUITE)[:12]}"
    assert log.driver == "jsonl (generator not recorded)" and scores(log) == scores(ours)


def test_jsonl_after_the_shared_options_is_told_to_come_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "texts.jsonl"
    src.write_text(json.dumps({"item_id": "add-001", "text": "4"}) + "\n")
    with pytest.raises(SystemExit) as done:
        imports_main(["--out", str(tmp_path / "x.json"), "jsonl", str(src)])
    assert done.value.code == 2 and "jsonl takes its own options: write it first" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("copies", "temperature", "seeds"),
    [
        pytest.param(2, "0.7", True, id="cat-f-f"),
        pytest.param(3, "0.7", False, id="cat-f-f-f-without-seeds"),
        pytest.param(2, "0", True, id="greedy-with-each-samples-seed"),
    ],
)  # fmt: skip
def test_a_file_of_repeated_lines_is_refused_not_read_as_a_larger_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], copies: int, temperature: str, seeds: bool
) -> None:
    ours = pipeline_log(load(LOG), chat=True, rule=None)
    once = write_lines(tmp_path / "once.jsonl", ours)
    rows = [json.loads(line) for line in once.read_text().splitlines()]
    text = "".join(json.dumps({k: v for k, v in r.items() if seeds or k != "seed"}) + "\n" for r in rows)
    src = tmp_path / "texts.jsonl"
    src.write_text(text * copies)  # `cat f f`
    out = tmp_path / "jsonl.json"
    args = [*flags(ours, out)]
    args[args.index("--temperature") + 1] = temperature
    assert imports_main(["jsonl", str(src), *args]) == 2
    err = capsys.readouterr().err
    assert (
        f"texts.jsonl:{len(rows) + 1}: from this line on, the lines repeat the {len(rows)} lines from " in err
    )
    assert f"({copies} copies: a file concatenated with itself?)" in err, err
    assert err.count("\n") == 1 and not out.exists()
    # The same file named twice is refused as such; the file once is read, with its own k.
    assert imports_main(["jsonl", str(once), str(once), *args]) == 2
    assert "once.jsonl: given twice; give each file once" in capsys.readouterr().err
    assert imports_main(["jsonl", str(once), *args]) == 0, capsys.readouterr().err
    assert load(out).n_samples == ours.n_samples


def test_greedy_texts_without_seeds_may_repeat_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two greedy runs of one file each, the same texts: k=2 samples per item, rightly the same.
    src = tmp_path / "texts.jsonl"
    src.write_text(
        "".join(json.dumps({"id": i, "response": "\\boxed{4}"}) + "\n" for i in ("add-001", "add-002")) * 2
    )
    out = tmp_path / "jsonl.json"
    args = ["jsonl", str(src), "--suite", str(SUITE), "--field", "item_id=id", "--field", "text=response",
            "--temperature", "0", "--max-tokens", "8", "--out", str(out)]  # fmt: skip
    assert imports_main(args) == 0, capsys.readouterr().err
    assert load(out).n_samples == 2


def test_a_null_text_is_called_null_not_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "texts.jsonl"
    src.write_text(json.dumps({"id": "add-001", "response": None}) + "\n")
    out = tmp_path / "jsonl.json"
    args = ["jsonl", str(src), "--suite", str(SUITE), "--field", "item_id=id", "--field", "text=response",
            "--temperature", "0", "--max-tokens", "8", "--out", str(out)]  # fmt: skip
    assert imports_main(args) == 2
    err = capsys.readouterr().err
    assert err == (
        f"refused: {src}:1: field 'response' (for text) is null; every line needs a text "
        "(an empty string for an empty answer)\n"
    ), err
