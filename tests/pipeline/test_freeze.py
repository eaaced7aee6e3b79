"""`python -m pipeline.freeze`: MATH-style and GSM8K-style sources into the project's suite format."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract.suite import load_suite
from demo.worlds import ROOT
from scoring.verifiers import score

# Records as MATH-500 and GSM8K publish them (fields and answer markup), a few of each.
MATH = [
    {"problem": "Compute $\\frac{3}{4} - \\frac{1}{4}$.", "subject": "Prealgebra", "level": 1,
     "solution": "We have $\\frac{3}{4}-\\frac{1}{4}=\\frac{2}{4}=\\boxed{\\frac{1}{2}}$.",
     "unique_id": "test/prealgebra/1.json"},
    {"problem": "Solve $x^2 = 2$ for $x > 0$.", "subject": "Algebra", "level": 2,
     "solution": "First try \\boxed{x} is wrong; in the end $x = \\boxed{\\sqrt{2}}$.",
     "unique_id": "test/algebra/7.json"},
]  # fmt: skip
GSM8K = [
    {"question": "Ann has 3 boxes of 12 pencils. How many pencils?", "answer": "3 * 12 = 36\n#### 36"},
    {"question": "A book costs $1,200 and is cut by $200. Price?", "answer": "1200 - 200 = 1000\n#### 1000"},
]


def freeze(*args: str) -> subprocess.CompletedProcess:
    """Run the freeze command (as a user does) from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.freeze", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_math_style_jsonl_is_frozen_with_answers_read_from_the_last_box(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "math500.jsonl", MATH)
    out = tmp_path / "suite" / "math-mini.jsonl"
    fields = ["--field", "question=problem", "--field", "family=subject", "--field", "item_id=unique_id"]
    done = freeze(str(src), "--out", str(out), *fields, "--answer-from", "solution", "--revision", "r1")
    assert done.returncode == 0, done.stderr
    items = load_suite(out)
    assert [it.item_id for it in items] == ["test/prealgebra/1.json", "test/algebra/7.json"]
    assert [it.answer for it in items] == ["\\frac{1}{2}", "\\sqrt{2}"]  # the last box, nested braces whole
    assert {it.family for it in items} == {"Prealgebra", "Algebra"}
    assert all(it.verifier.type == "math" and it.question.startswith(("Compute", "Solve")) for it in items)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert out.with_suffix(".sha256").read_text() == f"{digest}  math-mini.jsonl\n"
    assert f"sha256: {digest}" in done.stdout and "revision: r1" in done.stdout
    assert f"path: {out}" in done.stdout and "name: math-mini" in done.stdout
    # The oracle judges the frozen answers as it judges any math item.
    assert score(items[0], "So the result is \\boxed{\\dfrac{1}{2}}.", chat=True).score == 1.0
    assert score(items[0], "So the result is \\boxed{0.5}.", chat=True).score == 1.0
    assert score(items[1], "\\boxed{2}", chat=True).score == 0.0


def test_a_gsm8k_style_json_list_gets_ids_a_default_family_and_a_numeric_verifier(tmp_path: Path) -> None:
    src = tmp_path / "gsm8k.json"
    src.write_text(json.dumps(GSM8K, indent=1))
    out = tmp_path / "gsm.jsonl"
    done = freeze(str(src), "--out", str(out), "--answer-from", "answer", "--verifier", "numeric",
                  "--family", "word-problems", "--name", "gsm8k-mini")  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = load_suite(out)
    assert [it.item_id for it in items] == ["gsm8k-mini-00001", "gsm8k-mini-00002"]
    assert [it.answer for it in items] == ["36", "1000"] and {it.family for it in items} == {"word-problems"}
    assert items[0].verifier.model_dump() == {"type": "numeric", "rel_tol": 0.0, "abs_tol": 0.0}
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    # No --revision: the revision names the content.
    assert f"revision: sha256:{digest[:12]}" in done.stdout
    assert score(items[0], "3 boxes of 12 is 36 pencils.\n#### 36", chat=True).score == 1.0
    # Freezing the same source again gives the same bytes.
    again = tmp_path / "again.jsonl"
    assert freeze(str(src), "--out", str(again), "--answer-from", "answer", "--verifier", "numeric",
                  "--family", "word-problems", "--name", "gsm8k-mini").returncode == 0  # fmt: skip
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (MATH, ["--field", "question=problem", "--answer-from", "answers"],
         r"math.jsonl:1: field 'answers' \(for answer\) is missing; its fields: level, problem, solution, "
         r"subject, unique_id; name another with --answer-from FIELD"),
        (MATH, ["--answer-from", "solution"],
         r"math.jsonl:1: field 'question' \(for question\) is missing.* --field question=FIELD"),
        ([MATH[0], {**MATH[1], "solution": "x is the square root of two"}],
         ["--field", "question=problem", "--answer-from", "solution"],
         r"math.jsonl:2: field 'solution': no \\boxed\{\} and no '####' line"),
        ([MATH[0], MATH[0]], ["--field", "question=problem", "--answer-from", "solution", "--field",
                              "item_id=unique_id"],
         r"math.jsonl:2: item_id: 'test/prealgebra/1.json' already used on line 1"),
        (MATH, ["--field", "question=problem", "--answer-from", "solution", "--verifier", "numeric"],
         r"math.jsonl:1: item 'math-00001': answer: a numeric verifier needs a finite number, got "
         r"'\\\\frac\{1\}\{2\}'"),
        ([{**MATH[0], "problem": ""}], ["--field", "question=problem", "--answer-from", "solution"],
         r"math.jsonl:1: question \(source field 'problem'\): String should have at least 1 character"),
        (MATH, ["--field", "query=problem"], r"--field 'query=problem': 'query' is not a suite field"),
        (MATH, ["--verifier", "fuzzy"], r"--verifier 'fuzzy': one of math, numeric, exact, choice"),
    ],
)  # fmt: skip
def test_what_cannot_be_frozen_is_refused_in_one_line_naming_file_line_and_field(
    tmp_path: Path, rows: list[dict], args: list[str], message: str
) -> None:
    src = write_jsonl(tmp_path / "math.jsonl", rows)
    out = tmp_path / "out" / "math.jsonl"
    done = freeze(str(src), "--out", str(out), *args)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and re.search(message, lines[0]), done.stderr
    # Every record refused is named, each once; several are followed by their count.
    refused = [line for line in lines if re.match(r"suite freeze: .*math\.jsonl:\d+: ", line)]
    assert len(refused) == len(set(refused)), lines
    assert len(lines) == max(1, len(refused) + (len(refused) > 1)), lines
    if len(refused) > 1:
        assert (
            lines[-1]
            == f"suite freeze: {len(refused)} of {len(rows)} records cannot be frozen; nothing written"
        )
    assert not out.exists() and not out.with_suffix(".sha256").exists()


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(MATH[0]) + "\n{not json\n")
    done = freeze(str(src), "--out", str(tmp_path / "o.jsonl"), "--field", "question=problem")
    assert done.returncode == 2 and "bad.jsonl:2: not JSON" in done.stderr, done.stderr


def test_a_frozen_suite_keeps_each_records_own_verifier_and_tolerances(tmp_path: Path) -> None:
    demo = ROOT / "demo" / "suite" / "sda-mini-v1.jsonl"
    out = tmp_path / "again.jsonl"
    done = freeze(str(demo), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert [it.verifier for it in load_suite(out)] == [it.verifier for it in load_suite(demo)]
    assert out.read_bytes() == demo.read_bytes()  # the demo suite is already frozen: a fixed point
    # --verifier that agrees with every record is no conflict; one that differs is refused, naming the line.
    numeric = tmp_path / "numeric.jsonl"
    rows = [{"question": "q1", "answer": 100, "verifier": {"type": "numeric", "rel_tol": 0.01}},
            {"question": "q2", "answer": 7, "verifier": {"type": "numeric", "rel_tol": 0.01}}]  # fmt: skip
    write_jsonl(numeric, rows)
    done = freeze(str(numeric), "--out", str(out), "--verifier", "numeric", "--rel-tol", "0.01")
    assert done.returncode == 0, done.stderr
    done = freeze(str(numeric), "--out", str(tmp_path / "x.jsonl"), "--verifier", "math")
    assert done.returncode == 2 and done.stderr.count("\n") == 3, done.stderr  # both records, then the count
    assert "numeric.jsonl:1: verifier: the record's own" in done.stderr and "drop --verifier" in done.stderr
    assert "numeric.jsonl:2: verifier: the record's own" in done.stderr
    assert score(load_suite(out)[0], "Answer: 100.4").score == 1.0  # 0.4% off, within rel_tol 0.01


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        ([{"question": "q", "solution": "First \\boxed{a}{b}, then in the end \\boxed{3"}],
         ["--answer-from", "solution"], r"g.jsonl:1: field 'solution': 1 \\boxed\{ never closed"),
        ([{"question": "q", "answer": "4"}, {"question": "q", "answer": "the cat sat"}], [],
         r"g.jsonl:2: answer: math-verify cannot read the reference 'the cat sat'"),
        ([{"question": "q", "answer": "\\frac{1}{2"}], ["--verifier", "math"],
         r"g.jsonl:1: answer: math-verify cannot read the reference"),
        ([{"question": "q", "answer": 3, "verifier": "math"}], [], r"g.jsonl:1: verifier: is 'math', not a"),
    ],
)  # fmt: skip
def test_a_reference_its_verifier_cannot_read_is_refused_at_freeze(
    tmp_path: Path, rows: list[dict], args: list[str], message: str
) -> None:
    out = tmp_path / "out.jsonl"
    done = freeze(str(write_jsonl(tmp_path / "g.jsonl", rows)), "--out", str(out), *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert not out.exists()


def test_a_thousands_comma_answer_is_read_as_the_numeric_verifier_reads_it(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "gsm.jsonl", [{"question": "How many?", "answer": "6 * 205.67\n#### 1,234"}])
    out = tmp_path / "gsm-out.jsonl"
    done = freeze(str(src), "--out", str(out), "--answer-from", "answer", "--verifier", "numeric")
    assert done.returncode == 0, done.stderr
    (item,) = load_suite(out)
    assert item.answer == "1234" and score(item, "Answer: 1,234").score == 1.0


def test_separators_json_allows_raw_in_a_string_are_frozen_and_read_back(tmp_path: Path) -> None:
    question = "Line one\u2028line two\u0085three\u2029four: 2 + 2?"
    src = tmp_path / "raw.jsonl"
    src.write_text(json.dumps({"question": question, "answer": "4"}, ensure_ascii=False) + "\n")
    out = tmp_path / "raw-out.jsonl"
    done = freeze(str(src), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "\u2028" in out.read_text() and load_suite(out)[0].question == question
    again = freeze(str(out), "--out", str(tmp_path / "again.jsonl"))  # its own output, read back
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


@pytest.mark.parametrize("case", ["src folder", "out folder", "out under /proc", "src loop"])
def test_a_path_freeze_cannot_use_is_one_line(tmp_path: Path, case: str) -> None:
    src = write_jsonl(tmp_path / "s.jsonl", [{"question": "q", "answer": "4"}])
    out = tmp_path / "o.jsonl"
    if case == "src folder":
        src = tmp_path
    elif case == "out folder":
        out = tmp_path
    elif case == "out under /proc":
        out = Path("/proc/self/o.jsonl")
    else:
        src = tmp_path / "loop.jsonl"
        src.symlink_to(src)
    done = freeze(str(src), "--out", str(out))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("suite freeze: "), done.stderr


@pytest.mark.parametrize(
    ("answer", "part"),
    [
        ("376 and 625", "625"),  # math-verify keeps the last answer: '625' alone would score
        ("sum_(k=1)^n 1/k", "1"),
        ("x=16 and x=81", "81"),
        ("\\frac{81}{9}", None),  # is 9, and every number counts: '\frac{82}{9}' is not 9
        ("6\\sqrt{36}", None),
        ("(1, 2)", None),  # an interval, read whole
        ("\\{1, 4, 9\\}", None),
        ("C(10, 5), or equivalently 252", None),  # restates itself as one number
        ("42", None),
    ],
)
def test_a_math_reference_read_in_part_is_found_by_the_numbers_that_decide_nothing(
    answer: str, part: str | None
) -> None:
    from contract.suite import SuiteItem
    from pipeline.freeze.references import read_in_part

    item = SuiteItem(item_id="x", family="f", question="q", answer=answer, verifier={"type": "math"})
    assert read_in_part(item) == part
