"""The scorer's answer reading against outside judgements: Math-Verify's own test cases and CHAMP hand labels.

    .venv/bin/python benchmarks/bench_answer_reading.py [--swap-roles] [--only mv|champ|champ-text]

Each case is scored the way `pipeline.score` scores one sample of a chat arm: the case's text is the
sample's text and its reference the item's answer, judged by `scoring.verifiers.score(item, text,
chat=True)`, so the answer reading of chat output and the verifier both count.

- Math-Verify (tests/data/answer_reading/math_verify_cases.jsonl): the prediction is the sample's text and
  the gold the reference of an item with the `math` verifier; agreement is the scorer's verdict (0/1) equal
  to the test's `expected`. A test's decimal places (`precision`) are the math verifier's `decimals`; its
  other settings (match_types, strict, allow_set_relation_comp) have no counterpart in the scorer. A
  reference the verifier refuses (VerifierError) is a disagreement, listed
  as refused. `--swap-roles` reads the cases whose response is the test's first argument (test_boxed) with
  their roles swapped back: the response as the text, the short answer as the reference.
- CHAMP (tests/data/answer_reading/champ_labels.jsonl): each GPT-4 / GPT-4 Turbo 0-shot response is the text
  and the problem's numeric answer the reference of an item with the `numeric` verifier (rel_tol 0, abs_tol
  0: every reference is an integer, and a response that rounds states another number), and again with the
  `math` verifier; agreement is the scorer's verdict equal to the hand label, and per model the accuracy by
  each. `--champ-verifier math` lists the math verifier's disagreements instead of the numeric one's.

- CHAMP non-numeric (`--only champ-text`, tests/data/answer_reading/champ_text_labels.jsonl; benchmarks/
  champ_text.py): 230 responses of GPT-3.5, GPT-4 and PaLM 2 to problems whose answer is an expression,
  several values, yes/no, "none" or text, each item made as `pipeline.freeze --fallback-verifier exact`
  makes it; per kind the agreement, recall on right, false right on wrong and undecided samples, and the
  false rights against another problem's reference.

Printed first: the Math-Verify agreement per test file; then CHAMP's agreement and accuracy per model; then
every disagreement (id, reference, text, expected, what the scorer read and why). The scoring functions
(score_math_verify_cases, score_champ, agreement) are importable, so that a test can assert the rates.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import champ_text
from contract.jsonl import read_jsonl
from scoring.timelimit import DEFAULT_TIMEOUT_S

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "answer_reading"
MATH_VERIFY_CASES = DATA / "math_verify_cases.jsonl"
CHAMP_LABELS = DATA / "champ_labels.jsonl"


@dataclass(frozen=True)
class CaseResult:
    """One case scored: the expected verdict (0/1), the scorer's (None: the reference was refused), what it
    read and why."""

    id: str
    group: str
    reference: str
    text: str
    expected: int
    got: int | None
    answer: str | None
    reason: str | None

    @property
    def agrees(self) -> bool:
        """Whether the scorer's verdict is the expected one (a refused reference never agrees)."""
        return self.got == self.expected


def read_cases(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a data file."""
    return [row for _, row in read_jsonl(path)]


def score_text(
    case_id: str,
    reference: str | float | int,
    text: str,
    verifier: dict[str, Any],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> tuple:
    """(verdict 0/1 or None when refused, the answer read, the reason) of one chat sample, read under the
    score stage's time limit (conf/score.yaml verifier_timeout_s) unless timeout_s says otherwise."""
    from contract.suite import SuiteItem
    from scoring import verifiers

    item = SuiteItem.model_validate(
        {"item_id": case_id, "family": "answer-reading", "question": "(none)", "answer": reference,
         "verifier": verifier}
    )  # fmt: skip
    try:
        verdict = verifiers.score(item, text, chat=True, timeout_s=timeout_s)
    except verifiers.VerifierError as e:
        return None, None, f"refused: {e}"
    return int(verdict.score), verdict.answer, verdict.reason


def score_math_verify_cases(path: Path = MATH_VERIFY_CASES, swap_roles: bool = False) -> list[CaseResult]:
    """Every Math-Verify test case scored as a chat sample (pred: text, gold: reference of a math item)."""
    results = []
    for c in read_cases(path):
        reference, text = (c["pred"], c["gold"]) if swap_roles and c["swapped"] else (c["gold"], c["pred"])
        # A test's decimal places are the verifier's `decimals` (math-verify's float_rounding), 6 its default.
        verifier = {"type": "math", **({"decimals": c["precision"]} if c["precision"] != 6 else {})}
        got, answer, reason = score_text(c["id"], reference, text, verifier)
        results.append(CaseResult(c["id"], c["file"], reference, text, c["expected"], got, answer, reason))
    return results


def score_champ(
    path: Path = CHAMP_LABELS,
    verifier_type: str = "numeric",
    rel_tol: float = 0.0,
    abs_tol: float = 0.0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[CaseResult]:
    """Every labelled CHAMP response scored as a chat sample of an item with a numeric (or math) verifier."""
    verifier: dict[str, Any] = {"type": verifier_type}
    if verifier_type == "numeric":
        verifier |= {"rel_tol": rel_tol, "abs_tol": abs_tol}
    results = []
    for c in read_cases(path):
        case_id = f"{c['problem_id']}::{c['model']}"
        got, answer, reason = score_text(case_id, c["reference"], c["response"], verifier, timeout_s)
        results.append(CaseResult(case_id, c["model"], str(c["reference"]), c["response"], c["label"], got,
                                  answer, reason))  # fmt: skip
    return results


def agreement(results: Iterable[CaseResult]) -> tuple[int, int]:
    """(cases whose verdict is the expected one, cases)."""
    rs = list(results)
    return sum(r.agrees for r in rs), len(rs)


def _groups(results: list[CaseResult]) -> dict[str, list[CaseResult]]:
    out: dict[str, list[CaseResult]] = {}
    for r in results:
        out.setdefault(r.group, []).append(r)
    return out


def math_verify_table(results: list[CaseResult]) -> str:
    """Agreement per test file and overall, refused references counted apart."""
    lines = [f"{'Math-Verify test file':<24} {'agree':>7} {'cases':>5} {'rate':>7} {'refused':>7}"]
    for name, rs in [*_groups(results).items(), ("all", results)]:
        a, n = agreement(rs)
        refused = sum(r.got is None for r in rs)
        lines.append(f"{name:<24} {a:>7} {n:>5} {a / n:>7.1%} {refused:>7}")
    return "\n".join(lines)


def champ_table(results: list[CaseResult], verifier_type: str = "numeric") -> str:
    """Agreement with the hand labels and accuracy by the scorer and by the labels, per model."""
    head = f"CHAMP 0-shot, {verifier_type}"
    lines = [f"{head:<24} {'agree':>7} {'cases':>5} {'rate':>7} {'scorer acc':>11} {'label acc':>10}"]
    for name, rs in [*_groups(results).items(), ("all", results)]:
        a, n = agreement(rs)
        by_scorer = sum(r.got == 1 for r in rs)
        by_label = sum(r.expected for r in rs)
        lines.append(
            f"{name:<24} {a:>7} {n:>5} {a / n:>7.1%} {by_scorer:>4} {by_scorer / n:>6.1%} "
            f"{by_label:>3} {by_label / n:>6.1%}"
        )
    return "\n".join(lines)


def _one_line(text: str, n: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else f"{flat[: n - 60]} [...] {flat[-55:]}"


def disagreements(results: list[CaseResult]) -> str:
    """Every case whose verdict differs from the expected one, with what the scorer read."""
    lines = []
    for r in results:
        if r.agrees:
            continue
        got = "REFUSED" if r.got is None else r.got
        lines.append(f"- {r.id}: expected {r.expected}, scorer {got}")
        lines.append(f"    reference: {_one_line(r.reference)}")
        lines.append(f"    text:      {_one_line(r.text)}")
        lines.append(f"    read:      {r.answer!r}" + (f" ({_one_line(r.reason, 200)})" if r.reason else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the tables, then every disagreement."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--swap-roles", action="store_true", help="read test_boxed's response as the text")
    ap.add_argument("--only", choices=["mv", "champ", "champ-text"], help="one data set only")
    ap.add_argument(
        "--champ-verifier",
        choices=["numeric", "math"],
        default="numeric",
        help="the verifier of CHAMP's items whose disagreements are listed (both are tabled)",
    )
    args = ap.parse_args(argv)
    if args.only == "champ-text":
        own, other = champ_text.score_champ_text()
        print(champ_text.table(own, other))
        print("\nDisagreements with the hand labels:")
        print(champ_text.listing(own))
        print("\nFalse rights against another problem's reference:")
        print(champ_text.listing([r for r in other if r.got]))
        return 0
    mv = [] if args.only in ("champ", "champ-text") else score_math_verify_cases(swap_roles=args.swap_roles)
    with_champ = args.only != "mv" and CHAMP_LABELS.exists()
    champ = score_champ(verifier_type=args.champ_verifier) if with_champ else []
    other = "math" if args.champ_verifier == "numeric" else "numeric"
    if mv:
        print(math_verify_table(mv))
    if champ:
        print()
        print(champ_table(champ, args.champ_verifier))
        print(champ_table(score_champ(verifier_type=other), other))
    if mv:
        print(f"\nMath-Verify disagreements ({len(mv) - agreement(mv)[0]}):")
        print(disagreements(mv))
    if champ:
        n = len(champ) - agreement(champ)[0]
        print(f"\nCHAMP disagreements with the hand labels, {args.champ_verifier} verifier ({n}):")
        print(disagreements(champ))
    from scoring import verifiers

    print(f"\nScorer: {verifiers.__file__}, {verifiers.BUILTIN_NAME} {verifiers.BUILTIN_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
