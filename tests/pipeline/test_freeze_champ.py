"""`python -m pipeline.freeze` on a real dataset with text answers: CHAMP (270 competition problems).

Every record that cannot be frozen is named at once; `--fallback-verifier exact` judges the references
math-verify cannot read whole (text, or several answers of which it reads one) by the exact verifier,
`--skip-unreadable` leaves them out, and the summary says how many items each verifier judges. A committed
sample of nine CHAMP problems always runs; the whole dataset runs from the installed `champ-dataset`
package (skipped where it is not installed).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract.suite import load_suite
from demo.worlds import ROOT
from scoring.verifiers import score

SAMPLE = ROOT / "tests" / "data" / "freeze" / "champ_sample.jsonl"
FIELDS = ["--field", "item_id=identifier", "--field", "family=category", "--field", "question=text"]
# The sample's references math-verify cannot read whole, by line: text. Several answers ('376 and 625') are
# frozen as the set math-verify reads whole, and an approximation ('5/14, or approximately 35.7%') is left
# out of the forms an answer may state (scoring.reference_forms).
UNREADABLE = {4: "No", 9: "Exactly one sequence"}


def run(*args: str) -> subprocess.CompletedProcess:
    """A command of the project, run as a user runs it, from the repository root."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )  # fmt: skip


def test_every_record_that_cannot_be_frozen_is_named_at_once(tmp_path: Path) -> None:
    src = tmp_path / "champ.jsonl"
    extra = [
        '{"identifier": "broken", "category": "Sequence"\n',
        '{"identifier": "P_x", "category": "Sequence", "answer": "1"}\n',
    ]
    src.write_text(SAMPLE.read_text() + "".join(extra))
    out = tmp_path / "suite.jsonl"
    done = run("-m", "pipeline.freeze", str(src), "--out", str(out), *FIELDS)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 5, done.stderr  # four records, then the count
    for line, (n, answer) in zip(lines, UNREADABLE.items(), strict=False):
        assert line.startswith(f"suite freeze: {src}:{n}: answer: ") and repr(answer) in line, line
    assert lines[2].startswith(f"suite freeze: {src}:10: not JSON"), lines[2]
    assert re.match(
        rf"suite freeze: {re.escape(str(src))}:11: field 'text' \(for question\) is missing", lines[3]
    )
    assert lines[4] == (
        "suite freeze: 4 of 11 records cannot be frozen; 2 of them a reference math-verify cannot read "
        "whole: judge those with --fallback-verifier exact or leave them out with --skip-unreadable; "
        "nothing written"
    )
    assert not out.exists() and not out.with_suffix(".sha256").exists()


def test_the_fallback_judges_text_answers_by_the_exact_verifier_and_counts_them(tmp_path: Path) -> None:
    out = tmp_path / "champ.jsonl"
    done = run(
        "-m", "pipeline.freeze", str(SAMPLE), "--out", str(out), *FIELDS, "--fallback-verifier", "exact"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "suite freeze: 9 items judged 7 by math, 2 by exact (2 by exact as the fallback: a reference "
        f"math-verify cannot read whole); wrote {out} and {out.with_suffix('.sha256')}"
    )
    items = load_suite(out)
    assert [it.item_id for it in items] == [json.loads(line)["identifier"] for line in SAMPLE.open()]
    exact = {it.item_id: it for it in items if it.verifier.type == "exact"}
    assert sorted(str(it.answer) for it in exact.values()) == sorted(UNREADABLE.values())
    # The fallback items are judged as text: the stated answer scores, another does not.
    no = exact["P_Combinatorics_17"]
    assert score(no, "So no such polyhedron exists: \\boxed{No}", chat=True).score == 1.0
    assert score(no, "\\boxed{Yes}", chat=True).score == 0.0
    assert score(exact["P_Sequence_44"], "\\boxed{exactly  one sequence}", chat=True).score == 1.0
    # Read in part, '376 and 625' gave 625 alone a right verdict; as the set {376, 625} it is the whole
    # answer or nothing, in any order and joined by words or commas.
    both = next(it for it in items if it.item_id == "P_Number-Theory_3")
    assert both.verifier.type == "math" and both.alternatives == ["\\{376, 625\\}"]
    assert score(both, "\\boxed{625}", chat=True).score == 0.0
    assert score(both, "\\boxed{376 and 625}", chat=True).score == 1.0
    assert score(both, "So the three-digit automorphic numbers are 625 and 376.", chat=True).score == 1.0
    # An approximation is not a form of the answer: 5/14 is, 35.7% is not.
    ratio = next(it for it in items if it.item_id == "P_Combinatorics_14")
    assert score(ratio, "\\boxed{\\frac{5}{14}}", chat=True).score == 1.0
    assert score(ratio, "\\boxed{35.7\\%}", chat=True).score == 0.0
    # A reference that restates itself as one number stays math: 'C(10, 5), or equivalently 252'.
    restated = next(it for it in items if it.item_id == "P_Combinatorics_2")
    assert restated.verifier.type == "math" and score(restated, "\\boxed{252}", chat=True).score == 1.0


def test_skip_unreadable_leaves_them_out_with_a_count_and_names_each(tmp_path: Path) -> None:
    out = tmp_path / "champ.jsonl"
    done = run("-m", "pipeline.freeze", str(SAMPLE), "--out", str(out), *FIELDS, "--skip-unreadable")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "suite freeze: 7 items judged 7 by math; 2 records skipped (a reference math-verify cannot read "
        "whole)"
    ), done.stdout
    skipped = [line for line in done.stderr.splitlines() if line.startswith("suite freeze: skipped ")]
    assert [line.split(": ")[1].removeprefix("skipped ") for line in skipped] == [
        f"{SAMPLE}:{n}" for n in UNREADABLE
    ]
    assert "P_Combinatorics_17" not in {it.item_id for it in load_suite(out)}


def test_the_fallback_and_skipping_exclude_each_other(tmp_path: Path) -> None:
    out = tmp_path / "champ.jsonl"
    both = ["--fallback-verifier", "exact", "--skip-unreadable"]
    done = run("-m", "pipeline.freeze", str(SAMPLE), "--out", str(out), *FIELDS, *both)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr and not out.exists()


def test_all_of_champ_is_frozen_from_the_installed_package_with_the_fallback(tmp_path: Path) -> None:
    pytest.importorskip(
        "champ_dataset", reason="the champ-dataset package is not installed (pip install champ-dataset)"
    )
    src = tmp_path / "champ-src.jsonl"
    made = run("scripts/champ_jsonl.py", "--out", str(src))
    assert made.returncode == 0 and made.stdout.startswith(f"{src}: 270 CHAMP problems"), made.stderr
    out = tmp_path / "champ.jsonl"
    refused = run("-m", "pipeline.freeze", str(src), "--out", str(out), *FIELDS)
    assert refused.returncode == 2 and not out.exists()
    named = [
        line
        for line in refused.stderr.splitlines()
        if re.match(rf"suite freeze: {re.escape(str(src))}:\d+: ", line)
    ]
    # Every reference math-verify cannot read whole is named, not only the first: the text ones (line 17's
    # 'No' was the first); several answers joined by words ('376 and 625' on line 93) are frozen as a set.
    assert any(line.startswith(f"suite freeze: {src}:17: answer: ") and "'No'" in line for line in named)
    assert not any(f"{src}:93: " in x for x in named)
    done = run("-m", "pipeline.freeze", str(src), "--out", str(out), *FIELDS, "--fallback-verifier", "exact")
    assert done.returncode == 0, done.stderr
    m = re.match(
        r"suite freeze: 270 items judged (\d+) by math, (\d+) by exact \((\d+) by exact as the", done.stdout
    )
    assert m is not None, done.stdout
    n_math, n_exact, fallen = map(int, m.groups())
    assert n_math + n_exact == 270 and n_exact == fallen == len(named) > 0
    items = load_suite(out)
    assert len(items) == 270 and len({it.item_id for it in items}) == 270
    assert {it.family for it in items} == {
        "Combinatorics",
        "Inequality",
        "Number-Theory",
        "Polynomial",
        "Sequence",
    }
    by_type = {t: [it for it in items if it.verifier.type == t] for t in ("math", "exact")}
    assert (len(by_type["math"]), len(by_type["exact"])) == (n_math, n_exact)
    assert {"Yes", "No"} <= {str(it.answer) for it in by_type["exact"]}
