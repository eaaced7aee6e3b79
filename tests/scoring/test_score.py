"""Scoring on its own: generations written by hand, scored by each form of `python -m pipeline.score`.

The score stage must give the same EvalLog whichever way it is called, judge answers with the suite's
verifiers, count a tool-arm sample as clean only through the tool its item names, and refuse (one line,
exit 2, nothing written) generations that do not answer the suite it is given.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract.evallog import FORMAT_VERSION, EvalLog, load
from demo.worlds import ROOT
from pipeline.score import score_file
from scoring.scorer import SCORER_NAME, SCORER_VERSION
from tests.helpers.generations import write_generations
from tests.helpers.scoring import PERIOD, SPEED, SUITE, sample, write_world


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """python -m pipeline.score ARGS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.score", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hand_written_generations_are_scored_the_same_by_every_form(tmp_path: Path) -> None:
    suite, gens, params = write_world(tmp_path)
    explicit = tmp_path / "explicit.json"
    res = cli("--generations", str(gens), "--suite", str(suite), "--out", str(explicit),
              "--params", str(params), cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "3 items x 2 samples" in res.stdout
    # The form the score stages run (Hydra, arm=), on the same files.
    res = cli("arm=+tools", f"params={params}", f"generations_dir={gens.parent}",
              f"out_dir={tmp_path / 'logs'}", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    staged = tmp_path / "logs" / "+tools.json"
    assert staged.read_bytes() == explicit.read_bytes()
    in_process = score_file(gens, suite, tmp_path / "again.json", params=params)
    assert (tmp_path / "again.json").read_bytes() == explicit.read_bytes()

    log = load(explicit)
    assert log == in_process
    assert (log.suite, log.suite_revision, log.n_samples, log.arm, log.format_version) == (
        "hand-suite", "r1", 2, "+tools", FORMAT_VERSION,
    )  # fmt: skip
    assert log.scorer is not None and (log.scorer.name, log.scorer.version) == (SCORER_NAME, SCORER_VERSION)
    by_id = {it.item_id: it for it in log.items}
    assert [it.item_id for it in log.items] == ["period-1", "name-1", "speed-1"]
    assert by_id["period-1"].scores == [1.0, 1.0]  # 92.6 and 92.5 are within 1% of 92.56
    assert by_id["name-1"].scores == [1.0, 0.0]  # exact verifier: case-insensitive, SDA-18 is wrong
    assert by_id["speed-1"].scores == [1.0, 0.0]
    assert by_id["period-1"].gen_tokens == [5, 6] and by_id["period-1"].family == "compute"
    paths = {k: [s.path for s in it.samples or []] for k, it in by_id.items()}
    assert paths == {
        "period-1": ["clean", "answer_without_tool"],
        "name-1": ["answer_without_tool", "answer_without_tool"],
        "speed-1": ["clean", "no_answer"],
    }
    assert by_id["period-1"].prompt is not None and "Question: Period" in by_id["period-1"].prompt
    # A reader of the log sees each item's question and reference answer as the suite holds them.
    assert [(it.question, it.reference_answer) for it in log.items] == [
        (i["question"], str(i["answer"])) for i in SUITE
    ]
    assert log.pins is not None and log.pins["suite"].startswith("sha256:")


def test_a_sample_through_another_tool_than_the_item_names_is_not_clean(tmp_path: Path) -> None:
    suite, gens, params = write_world(tmp_path)
    raw = json.loads(gens.read_text())
    # period-1 names orbital_period: a sample that called circular_speed and carried it is a tool_error.
    raw["items"][0]["samples"][0] = sample(0, "<tool_call>...</tool_call>\nAnswer: 7.67", [SPEED])
    write_generations(gens, raw)
    log = score_file(gens, suite, tmp_path / "log.json", params=params)
    assert log.items[0].samples is not None and log.items[0].samples[0].path == "tool_error"
    # Without the item's expected tool, the same sample's carried value would count.
    lines = suite.read_text().splitlines()
    lines[0] = json.dumps({k: v for k, v in SUITE[0].items() if k != "tool"})
    suite.write_text("\n".join(lines) + "\n")
    log = score_file(gens, suite, tmp_path / "log.json", params=params)
    assert log.items[0].samples is not None and log.items[0].samples[0].path == "tool_error"  # 7.67 is wrong
    raw["items"][0]["samples"][0] = sample(0, "<tool_call>...</tool_call>\nAnswer: 92.56", [PERIOD])
    write_generations(gens, raw)
    assert score_file(gens, suite, tmp_path / "log.json", params=params).items[0].samples[0].path == "clean"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda g, s: g["items"].pop(), r"items: missing 1 suite items \(first 'speed-1'\)"),
        (
            lambda g, s: s.__setitem__(1, s[1].replace("705 km", "706 km")),
            r"pins.questions: generated from other",
        ),
        (
            lambda g, s: g["items"][0].__setitem__("prompt", "edited"),
            r"item 'period-1': prompt_sha256: is not the sha256",
        ),
        (lambda g, s: g["items"][1]["samples"].pop(), r"item 'name-1': samples: has 1, protocol.k is 2"),
    ],
)
def test_generations_that_do_not_answer_the_suite_are_refused_in_one_line(
    tmp_path: Path, edit, message
) -> None:
    suite, gens, params = write_world(tmp_path)
    raw, lines = json.loads(gens.read_text()), suite.read_text().splitlines()
    edit(raw, lines)
    write_generations(gens, raw)
    suite.write_text("\n".join(lines) + "\n")
    out = tmp_path / "log.json"
    res = cli("--generations", str(gens), "--suite", str(suite), "--out", str(out), cwd=tmp_path)
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("score: ") and str(gens) in line

    assert re.search(message, line), line
    assert not out.exists()


def test_the_evallog_ties_scores_and_gen_tokens_to_its_samples(tmp_path: Path) -> None:
    suite, gens, params = write_world(tmp_path)
    good = json.loads(score_file(gens, suite, tmp_path / "log.json", params=params).model_dump_json())
    EvalLog.model_validate(good)
    for field, value, message in (
        ("scores", [0.0, 1.0], r"samples\[0\].score: is 1.0, scores\[0\] is 0.0"),
        ("gen_tokens", [9, 6], r"samples\[0\].gen_tokens: is 5, gen_tokens\[0\] is 9"),
    ):
        bad = json.loads(json.dumps(good))
        bad["items"][0][field] = value
        with pytest.raises(ValueError, match=message):
            EvalLog.model_validate(bad)
    bad = json.loads(json.dumps(good))
    bad["format_version"] = 99
    with pytest.raises(ValueError, match="format_version: 99 is newer than this tool reads"):
        EvalLog.model_validate(bad)
    minimal = {k: good[k] for k in ("model_name", "suite", "suite_revision", "n_samples", "temperature",
                                    "max_tokens", "driver", "measured_at")}  # fmt: skip
    minimal["items"] = [{"item_id": it["item_id"], "scores": it["scores"]} for it in good["items"]]
    assert EvalLog.model_validate(minimal).format_version == 1


def test_the_help_shows_both_forms(tmp_path: Path) -> None:
    res = cli("--help", cwd=tmp_path)
    assert res.returncode == 0
    assert "arm=<arm>" in res.stdout and "--generations G --suite S --out L" in res.stdout


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("suite folder", r"--suite .*: is a folder; give a file"),
        ("generations folder", r"--generations .*: is a folder; give a file"),
        ("out folder", r"--out .*: is a folder; give a file name"),
        ("out under /proc", r"--out /proc/self/log.json: under /proc, not a place for output"),
        ("suite loop", r"--suite .*loop.jsonl: a symbolic link loop"),
        ("generations dangling", r"--generations .*: a dangling symbolic link"),
    ],
)
def test_a_path_score_cannot_use_is_refused_in_one_line(tmp_path: Path, case: str, message: str) -> None:
    suite, gens, _ = write_world(tmp_path)
    out = tmp_path / "log.json"
    if case == "suite folder":
        suite = tmp_path
    elif case == "generations folder":
        gens = gens.parent
    elif case == "out folder":
        out = tmp_path
    elif case == "out under /proc":
        out = Path("/proc/self/log.json")
    elif case == "suite loop":
        suite = tmp_path / "loop.jsonl"
        suite.symlink_to(suite)
    else:
        gens = tmp_path / "gone.json"
        gens.symlink_to(tmp_path / "nowhere.json")
    res = cli("--generations", str(gens), "--suite", str(suite), "--out", str(out), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("score: ") and re.search(message, res.stderr), res.stderr


def test_a_format_1_file_is_read_by_its_seal_not_its_number(tmp_path: Path) -> None:
    from contract.generations import StaleGenerations, content_sha256, load_generations

    _, gens_path, _ = write_world(tmp_path)
    sealed = gens_path.read_text()
    assert sealed.startswith('{\n "format_version": 2,\n "content_sha256": "')
    body = sealed.split("\n", 3)[3]
    old_head = '{\n "format_version": 1,'
    # A format 1 file that carries a seal of its own text: read as a sealed file.
    unsealed = old_head + "\n" + body
    v1 = old_head + f'\n "content_sha256": "{content_sha256(unsealed)}",\n' + body
    gens_path.write_text(v1)
    assert load_generations(gens_path).format_version == 1
    # Its seal, not its number, is what an edit is refused by.
    gens_path.write_text(v1.replace('"Answer: 92.5"', '"Answer: 92.6"'))
    with pytest.raises(StaleGenerations, match=r"content_sha256: does not match the file's content"):
        load_generations(gens_path)
    gens_path.write_text(unsealed)
    with pytest.raises(StaleGenerations, match=r"format_version: 1 without content_sha256, written before"):
        load_generations(gens_path)
