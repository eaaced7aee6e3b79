"""How tests/data/answer_reading/ was made: Math-Verify's own test cases and CHAMP's model responses.

    .venv/bin/python scripts/answer_reading_data.py math-verify --repo PATH/TO/Math-Verify [--commit SHA]
    .venv/bin/python scripts/answer_reading_data.py champ

`math-verify` reads four test files of a checkout (or a bare clone) of huggingface/Math-Verify at one commit
(tests/test_all.py, test_numina_cases.py, test_open_thoughts.py, test_boxed.py), parses them with `ast`
(nothing is copied by hand): every `compare_strings(gold, pred, ...) == expected` of a test function, once per
row of its `pytest.mark.parametrize` list, with the keyword arguments the test passes (match_types, precision,
strict, allow_set_relation_comp; the helper's defaults otherwise). Each case is then judged by math-verify as
installed here, by the upstream `compare_strings` helper itself (its source executed from the same commit),
and its verdict recorded beside `expected`. It writes math_verify_cases.jsonl and MATH_VERIFY_LICENSE.

`champ` reads the `champ-dataset` package's problems and the GPT-4 and GPT-4 Turbo responses of the 0-shot
prompt setting to the problems whose reference answer is a number, and joins them to the labels written by
hand in champ_hand_labels.jsonl (problem_id, model, stated_answer, label, note): it writes champ_labels.jsonl
and champ_source.json (the package version and the sha256 of every data file read). The labels are never
computed here; a response without a hand label is refused.

`champ-text` selects, by a fixed rule (CHAMP_TEXT_RULE below), responses of GPT-3.5, GPT-4 and PaLM 2 Medium
under the 5-Shot and 1/3 Soln prompt settings to the problems whose reference is not a plain number, and joins
them to the hand labels of champ_text_hand_labels.tsv (problem_id, model, setting, kind, stated_answer, label,
note): it writes champ_text_labels.jsonl and adds the selection to champ_source.json.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "answer_reading"
TEST_FILES = [
    "tests/test_all.py",
    "tests/test_numina_cases.py",
    "tests/test_open_thoughts.py",
    "tests/test_boxed.py",
]
# In these tests the model's response is the first argument (`gold`) and the reference the second: the
# harness may swap them back so that the response is read as the sample's text.
SWAPPED_TESTS = {"test_boxed.py::test_boxed"}
HELPER = "compare_strings"


def git_show(repo: Path, commit: str, path: str) -> str:
    """A file of a git repository (bare or not) at one commit."""
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def _is_parametrize(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.mark.parametrize"


def _value(node: ast.expr, params: dict[str, Any]) -> Any:
    """An argument of a compare_strings call: a parameter of the test, or an expression evaluated alone."""
    if isinstance(node, ast.Name) and node.id in params:
        return params[node.id]
    # f-strings such as f"{math.sqrt(17):.15f}" need `math`; nothing else is in scope.
    return eval(compile(ast.Expression(node), "<case>", "eval"), {"__builtins__": {}, "math": math})


def helper_defaults(source: str) -> dict[str, Any]:
    """The keyword defaults of compare_strings in tests/test_all.py."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == HELPER:
            args = node.args.args[-len(node.args.defaults) :]
            return {a.arg: ast.literal_eval(d) for a, d in zip(args, node.args.defaults, strict=True)}
    raise SystemExit(f"tests/test_all.py: no def {HELPER}; is this Math-Verify's test suite?")


def _compare_calls(fn: ast.FunctionDef) -> list[tuple[ast.Call, ast.expr]]:
    """Every `compare_strings(...) == X` in a test function, with X."""
    found = []
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Call)
            and isinstance(node.left.func, ast.Name)
            and node.left.func.id == HELPER
        ):
            if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq):
                raise SystemExit(f"{fn.name}: a {HELPER} comparison other than ==: {ast.unparse(node)}")
            found.append((node.left, node.comparators[0]))
    # Every call must be one of those comparisons, or a case would be lost silently.
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == HELPER]
    if len(calls) != len(found):
        raise SystemExit(f"{fn.name}: a {HELPER} call outside `{HELPER}(...) == expected`; read it by hand")
    return found


def extract_cases(file: str, source: str, defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """The (gold, pred, expected, settings) cases of one test file, in source order."""
    short = Path(file).name
    cases: list[dict[str, Any]] = []
    for fn in ast.parse(source).body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
            continue
        marks = [d for d in fn.decorator_list if _is_parametrize(d)]
        if len(marks) > 1:
            raise SystemExit(f"{short}::{fn.name}: stacked parametrize marks; read it by hand")
        rows: list[dict[str, Any]] = [{}]
        if marks:
            mark = marks[0]
            assert isinstance(mark, ast.Call)
            names = [n.strip() for n in ast.literal_eval(mark.args[0]).split(",")]
            values = _value(mark.args[1], {})
            rows = [dict(zip(names, v if len(names) > 1 else (v,), strict=True)) for v in values]
        calls = _compare_calls(fn)
        for params in rows:
            for call, expected in calls:
                kwargs = {k.arg: _value(k.value, params) for k in call.keywords if k.arg is not None}
                settings = {**defaults, **kwargs}
                gold, pred = (_value(a, params) for a in call.args[:2])
                key = f"{short}::{fn.name}"
                case = {
                    "id": f"{key}::{sum(1 for c in cases if c['test'] == fn.name)}",
                    "file": short,
                    "test": fn.name,
                    "gold": gold,
                    "pred": pred,
                    "expected": int(_value(expected, params)),
                    "match_types": settings.pop("match_types"),
                    "precision": settings.pop("precision"),
                    "strict": settings.pop("strict"),
                    "extra_kwargs": settings,
                    "swapped": key in SWAPPED_TESTS,
                }
                cases.append(case)
    return cases


def upstream_helper(source: str) -> Any:
    """compare_strings as tests/test_all.py defines it (its imports and its def, executed)."""
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    keep += [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == HELPER]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "tests/test_all.py", "exec"), namespace)
    return namespace[HELPER]


def math_verify_cases(repo: Path, commit: str, out: Path) -> None:
    """Write math_verify_cases.jsonl (with math-verify's own verdicts) and MATH_VERIFY_LICENSE."""
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    sources = {f: git_show(repo, sha, f) for f in TEST_FILES}
    defaults = helper_defaults(sources["tests/test_all.py"])
    compare = upstream_helper(sources["tests/test_all.py"])
    version = importlib.metadata.version("math-verify")
    cases = [c for f in TEST_FILES for c in extract_cases(f, sources[f], defaults)]
    agree = 0
    for c in cases:
        kwargs = {"match_types": c["match_types"], "precision": c["precision"], "strict": c["strict"]}
        try:
            got: int | str = int(bool(compare(c["gold"], c["pred"], **kwargs, **c["extra_kwargs"])))
        except Exception as e:  # recorded, not swallowed: the file says what math-verify raised
            got = f"{type(e).__name__}: {e}"
        c["math_verify"] = got
        agree += got == c["expected"]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "math_verify_cases.jsonl").open("w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    (out / "MATH_VERIFY_LICENSE").write_text(git_show(repo, sha, "LICENCE"), encoding="utf-8")
    per_file: dict[str, list[int]] = {}
    for c in cases:
        n = per_file.setdefault(c["file"], [0, 0])
        n[0] += c["math_verify"] == c["expected"]
        n[1] += 1
    print(f"Math-Verify {sha}, math-verify {version} installed: {len(cases)} cases")
    for f, (a, n) in per_file.items():
        print(f"  {f:<24} {a:>3}/{n:<3} math-verify agrees with expected")
    print(f"  {'all':<24} {agree:>3}/{len(cases):<3}")
    for c in cases:
        if c["math_verify"] != c["expected"]:
            print(f"  differs: {c['id']} expected {c['expected']} math-verify {c['math_verify']}")


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    mv = sub.add_parser("math-verify", help="Math-Verify's test cases")
    mv.add_argument(
        "--repo", type=Path, required=True, help="a clone (bare or not) of huggingface/Math-Verify"
    )
    mv.add_argument("--commit", default="HEAD")
    mv.add_argument("--out", type=Path, default=OUT)
    ch = sub.add_parser("champ", help="CHAMP's GPT-4 / GPT-4 Turbo 0-shot responses with the hand labels")
    ch.add_argument("--out", type=Path, default=OUT)
    ct = sub.add_parser("champ-text", help="CHAMP's responses to non-numeric answers with the hand labels")
    ct.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.cmd == "math-verify":
        math_verify_cases(args.repo, args.commit, args.out)
    elif args.cmd == "champ":
        champ_labels(args.out)
    else:
        champ_text_labels(args.out)
    return 0


# CHAMP's prompt settings are named in champ_dataset.prompt.PromptGenerator.get_all_prompts; "0-Shot" is the
# problem alone (problem_only); the model's answer is followed by a turn asking for a one-sentence summary.
CHAMP_SETTING = "0-Shot"
CHAMP_MODELS = ("GPT-4", "GPT-4 Turbo")
HAND_LABELS = "champ_hand_labels.tsv"


def is_number(text: str) -> bool:
    """Whether a CHAMP answer is a plain number (float() reads it: '239', '-9', '0')."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def read_hand_labels(
    path: Path, keys: tuple[str, ...] = ("problem_id", "model")
) -> dict[tuple[str, ...], dict[str, Any]]:
    """The hand labels by their key columns: stated_answer, label (0/1), note and any other column."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0].split("\t"), [line.split("\t") for line in lines[1:] if line.strip()]
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for n, row in enumerate(rows, 2):
        if len(row) != len(header):
            raise SystemExit(f"{path}:{n}: {len(row)} fields, the header has {len(header)}; fix the tabs")
        rec = dict(zip(header, row, strict=True))
        if rec["label"] not in ("0", "1"):
            raise SystemExit(f"{path}:{n}: label: {rec['label']!r} is not 0 or 1; fix the line")
        key = tuple(rec.pop(k) for k in keys)
        if key in out:
            raise SystemExit(f"{path}:{n}: {key} labelled twice; keep one line")
        out[key] = {**rec, "label": int(rec["label"]), "note": rec["note"] or None}
    return out


def write_source(out: Path, fields: dict[str, Any]) -> None:
    """Update champ_source.json with fields, keeping what the other CHAMP subcommand wrote."""
    path = out / "champ_source.json"
    source = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    source.update(fields)
    path.write_text(json.dumps(source, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def champ_labels(out: Path) -> None:
    """Write champ_labels.jsonl (CHAMP's responses joined to the hand labels) and champ_source.json."""
    import champ_dataset  # the champ-dataset package: problems, answers and four models' responses

    data_file = Path(champ_dataset.BASE_FOLDER) / "dataset_files" / "v0.json"
    dataset = champ_dataset.load(str(data_file))
    labels = read_hand_labels(out / HAND_LABELS)
    rows = []
    for pid, problem in dataset.problems.items():
        if not is_number(problem.answer):
            continue
        for model in CHAMP_MODELS:
            turns = [m for m in dataset.problems[pid].conversations[f"{model}|{CHAMP_SETTING}"].messages
                     if m.role.startswith("Model.")]  # fmt: skip
            key = (pid, model)
            if key not in labels:
                raise SystemExit(
                    f"{out / HAND_LABELS}: no hand label for {key}; read the response and add one"
                )
            rows.append(
                {
                    "problem_id": pid,
                    "model": model,
                    "reference": problem.answer,
                    "response": turns[0].text,
                    **labels.pop(key),
                    "truncated": turns[0].error == "LENGTH_CURRENT",
                    # The second turn answers "summarize the answer above in one sentence"; not labelled.
                    "summary": turns[1].text if len(turns) > 1 else None,
                }
            )
    if labels:
        raise SystemExit(f"{out / HAND_LABELS}: labels for responses not selected: {sorted(labels)[:3]}")
    with (out / "champ_labels.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    source = {
        "package": "champ-dataset",
        "version": importlib.metadata.version("champ-dataset"),
        "data_file": "champ_dataset/dataset_files/v0.json",
        "data_file_sha256": sha256_file(data_file),
        "prompt_setting": CHAMP_SETTING,
        "models": list(CHAMP_MODELS),
        "problems": len(dataset.problems),
        "numeric_problems": len(rows) // len(CHAMP_MODELS),
        "responses": len(rows),
        "hand_labels_sha256": sha256_file(out / HAND_LABELS),
    }
    write_source(out, source)
    for model in CHAMP_MODELS:
        mine = [r for r in rows if r["model"] == model]
        print(
            f"{model}: {sum(r['label'] for r in mine)} of {len(mine)} responses state the reference (by hand)"
        )


# The responses labelled for non-numeric answers: of the problems whose answer is not a plain number, the
# responses of these (model, setting) pairs, none labelled for the numeric answers; of those candidates, the
# CHAMP_TEXT_COUNT whose sha256 of "problem_id|model|setting" is smallest (a fixed draw that no one chose
# by looking at the responses), written in the package's problem order, then in the order of the pairs.
CHAMP_TEXT_PAIRS = tuple(
    (m, s) for m in ("GPT-3.5", "GPT-4", "PaLM 2 Medium") for s in ("5-Shot", "1/3 Soln")
)
CHAMP_TEXT_COUNT = 230
CHAMP_TEXT_RULE = (
    "candidates: every problem whose answer is not a plain number, times every pair; selected: the "
    "{count} candidates whose sha256 hex digest of 'problem_id|model|setting' is smallest"
)
TEXT_HAND_LABELS = "champ_text_hand_labels.tsv"
ANSWER_KINDS = ("expression", "several", "yesno", "none", "text")


def champ_text_selection(dataset: Any) -> list[tuple[str, str, str]]:
    """The (problem_id, model, setting) responses to label, by CHAMP_TEXT_RULE."""
    candidates = [
        (pid, model, setting)
        for pid, problem in dataset.problems.items()
        if not is_number(problem.answer)
        for model, setting in CHAMP_TEXT_PAIRS
    ]
    drawn = set(
        sorted(candidates, key=lambda c: hashlib.sha256("|".join(c).encode()).hexdigest())[:CHAMP_TEXT_COUNT]
    )
    return [c for c in candidates if c in drawn]


def model_turns(problem: Any, model: str, setting: str) -> list[Any]:
    """The model's own turns of one conversation (the answer, then the one-sentence summary)."""
    return [m for m in problem.conversations[f"{model}|{setting}"].messages if m.role.startswith("Model.")]


def champ_text_labels(out: Path) -> None:
    """Write champ_text_labels.jsonl (the selected responses with their hand labels) and the selection."""
    import champ_dataset  # the champ-dataset package: problems, answers and four models' responses

    data_file = Path(champ_dataset.BASE_FOLDER) / "dataset_files" / "v0.json"
    dataset = champ_dataset.load(str(data_file))
    labels = read_hand_labels(out / TEXT_HAND_LABELS, keys=("problem_id", "model", "setting"))
    rows = []
    for pid, model, setting in champ_text_selection(dataset):
        problem, key = dataset.problems[pid], (pid, model, setting)
        if key not in labels:
            raise SystemExit(
                f"{out / TEXT_HAND_LABELS}: no hand label for {key}; read the response and add one"
            )
        label = labels.pop(key)
        if label["kind"] not in ANSWER_KINDS:
            raise SystemExit(
                f"{out / TEXT_HAND_LABELS}: {key}: kind {label['kind']!r} is not one of {ANSWER_KINDS}"
            )
        turns = model_turns(problem, model, setting)
        rows.append(
            {
                "problem_id": pid,
                "model": model,
                "setting": setting,
                "kind": label.pop("kind"),
                "problem": problem.text,
                "reference": problem.answer,
                "response": turns[0].text,
                **label,
                "truncated": turns[0].error == "LENGTH_CURRENT",
                "summary": turns[1].text if len(turns) > 1 else None,
            }
        )
    if labels:
        raise SystemExit(f"{out / TEXT_HAND_LABELS}: labels for responses not selected: {sorted(labels)[:3]}")
    with (out / "champ_text_labels.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    # CHAMP's people's judgements (first-wrong-step annotations) cover other prompt settings only.
    judged = sum(
        f"{m}|{s}" in dataset.problems[p].fws_annotations for p, m, s in champ_text_selection(dataset)
    )
    write_source(
        out,
        {
            "non_numeric": {
                "rule": CHAMP_TEXT_RULE.format(count=CHAMP_TEXT_COUNT),
                "pairs": [f"{m}|{s}" for m, s in CHAMP_TEXT_PAIRS],
                "non_numeric_problems": sum(not is_number(p.answer) for p in dataset.problems.values()),
                "problems_drawn": len({r["problem_id"] for r in rows}),
                "responses": len(rows),
                "with_people_judgement": judged,
                "hand_labels_sha256": sha256_file(out / TEXT_HAND_LABELS),
            }
        },
    )
    for kind in ANSWER_KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        print(
            f"{kind:<10} {sum(r['label'] for r in mine):>3} of {len(mine):>3} responses state the reference"
        )


if __name__ == "__main__":
    sys.exit(main())
