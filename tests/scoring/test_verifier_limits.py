"""Verifiers under a time limit: a hanging `python` verifier or math-verify on adversarial LaTeX scores 0 with
its reason and is counted in the log; a verifier that exits or is interrupted ends scoring in one line.

Every case runs `python -m pipeline.score` on real files, as a user runs it.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from contract.evallog import load
from contract.suite import SuiteItem
from scoring.timelimit import AnswerTimeout, time_limit
from scoring.verifiers import score
from tests.helpers.scoring import SLOW_LATEX, chat_world, score_cli

HANGS = "import time\n\ndef hangs(answer, reference):\n    while True:\n        time.sleep(0.01)\n"


def _own(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body)


def test_a_hanging_python_verifier_scores_0_with_its_reason_and_is_counted(tmp_path: Path) -> None:
    _own(tmp_path, "hang_checks", HANGS)
    suite = [
        {"item_id": "own", "family": "f", "question": "q?", "answer": "x",
         "verifier": {"type": "python", "function": "hang_checks:hangs", "timeout_s": 0.3}},
        {"item_id": "n", "family": "f", "question": "2+2?", "answer": 4, "verifier": {"type": "numeric"}},
    ]  # fmt: skip
    suite_path, gens = chat_world(tmp_path, suite, {"own": ["\\boxed{x}"] * 2, "n": ["\\boxed{4}"] * 2})
    out = tmp_path / "log.json"
    t0 = time.monotonic()
    res = score_cli(gens, suite_path, out)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 < 30
    log = load(out)
    assert [it.scores for it in log.items] == [[0.0, 0.0], [1.0, 1.0]]
    reasons = [s.no_answer_reason for s in log.items[0].samples or []]
    assert (
        reasons
        == [
            "python verifier hang_checks:hangs took longer than 0.3 s on this answer (the time limit: the "
            "verifier's timeout_s); scored 0"
        ]
        * 2
    )
    assert log.scorer is not None and log.scorer.timeouts == 2
    assert log.scorer.settings["verifier_timeout_s"] == 30.0
    assert "2 answers ran out of the verifier time limit" in res.stderr and res.stderr.count("\n") == 1


def test_the_scorers_time_limit_is_set_on_the_command_line_and_math_verify_is_held_to_it(
    tmp_path: Path,
) -> None:
    suite = [{"item_id": "m", "family": "f", "question": "q?", "answer": "\\frac{1}{2}",
              "verifier": {"type": "math"}}]  # fmt: skip
    # Eight samples of the same adversarial answer: judged once, not eight times.
    suite_path, gens = chat_world(tmp_path, suite, {"m": [f"\\boxed{{{SLOW_LATEX}}}"] * 8})
    out = tmp_path / "log.json"
    t0 = time.monotonic()
    res = score_cli(gens, suite_path, out, "--verifier-timeout-s", "1")
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    assert took < 25, took
    assert len(res.stderr) < 2000, res.stderr[:300]  # one line, not the prediction per warning
    log = load(out)
    assert log.scorer is not None and log.scorer.timeouts == 8 and log.items[0].scores == [0.0] * 8
    samples = log.items[0].samples or []
    # Reading the response is math-verify's work too, held to the same limit.
    assert all("math-verify took longer than 1 s" in (s.no_answer_reason or "") for s in samples)


def test_a_sum_math_verify_reads_only_in_part_scores_0_with_a_reason() -> None:
    item = SuiteItem.model_validate({"item_id": "s", "family": "f", "question": "q", "answer": "500500",
                                     "verifier": {"type": "math"}})  # fmt: skip
    # The verdict depends on the process's recursion limit, which libraries (torch's compiler, hypothesis)
    # may raise for the rest of a process when an earlier test on the same worker uses them: pin Python's
    # default, the limit a fresh `python -m pipeline.score` runs with.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        verdict = score(item, "\\boxed{" + "+".join(str(i) for i in range(1, 1001)) + "}", chat=True)
    finally:
        sys.setrecursionlimit(limit)
    # math-verify's LaTeX parser gives up on it (too deep for Python's recursion limit): no math read.
    assert verdict.score == 0.0
    assert (verdict.reason or "").startswith("math-verify could not read the answer as math (1+2+3")
    wrong = score(item, "\\boxed{500501}", chat=True)
    assert wrong.score == 0.0 and wrong.reason == "math-verify read the answer as 500501, not the reference"
    prose = score(item, "\\boxed{the cat sat}", chat=True)
    # Read in its box as math-verify reads a whole response: as a product of letters, not the reference.
    assert prose.score == 0.0 and (prose.reason or "").startswith("math-verify read the answer as ")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("import sys\n\ndef check(answer, reference):\n    sys.exit(3)\n",
         "verifier 'quits:check' called sys.exit(3) on the answer 'x'"),
        ("def check(answer, reference):\n    raise KeyboardInterrupt\n",
         "verifier 'quits:check' was interrupted (KeyboardInterrupt) on the answer 'x'"),
    ],
)  # fmt: skip
def test_a_verifier_that_exits_or_is_interrupted_ends_scoring_in_one_line(
    tmp_path: Path, body: str, message: str
) -> None:
    _own(tmp_path, "quits", body)
    suite = [{"item_id": "own", "family": "f", "question": "q?", "answer": "x",
              "verifier": {"type": "python", "function": "quits:check"}}]  # fmt: skip
    suite_path, gens = chat_world(tmp_path, suite, {"own": ["\\boxed{x}"]})
    out = tmp_path / "log.json"
    res = score_cli(gens, suite_path, out)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and not out.exists(), res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr


def test_the_time_limit_keeps_an_outer_timer_and_its_handler() -> None:
    fired: list[int] = []
    old = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with time_limit(5):
            pass
        with pytest.raises(AnswerTimeout), time_limit(0.05):
            while True:
                time.sleep(0.001)
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.5
        time.sleep(0.6)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_suite_verifier_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SuiteItem.model_validate(
            {
                "item_id": "m",
                "family": "f",
                "question": "q",
                "answer": "1",
                "verifier": {"type": "math", "timeout_s": 0},
            }  # fmt: skip
        )


def test_a_verifier_that_swallows_the_timeout_is_stopped_all_the_same() -> None:
    """Code that catches everything (a bare `except:`, as sympy has) swallows one AnswerTimeout; the alarm
    fires again until the body ends."""
    swallowed = 0
    with pytest.raises(AnswerTimeout), time_limit(0.2):
        while swallowed < 3:
            try:
                while True:
                    pass
            except BaseException:
                swallowed += 1
        while True:
            pass
    assert swallowed == 3
