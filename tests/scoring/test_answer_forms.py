"""Answers beyond numbers, on the real math-verify and sympy: expressions read whole and compared
symbolically, several values, reference forms decided at freeze, yes/no and "none" conclusions, text
conclusions, and the third verdict (undecided) in the scorer."""

from __future__ import annotations

import pytest

from contract.suite import SuiteItem
from pipeline.freeze.references import check_reference, with_forms
from scoring import conclusions, expressions
from scoring.reading import final_statement
from scoring.reference_forms import alternatives
from scoring.verifiers import score


def frozen(reference: str, question: str = "Find it.") -> SuiteItem:
    """The item the freezer makes of a reference with --fallback-verifier exact."""
    from pipeline.freeze.outcome import UnreadableReference

    base = {"item_id": "i", "family": "f", "question": question, "answer": reference}
    item = with_forms(SuiteItem.model_validate({**base, "verifier": {"type": "math"}}))
    try:
        check_reference("suite:1", item)
    except UnreadableReference:
        kept = item.model_dump(exclude_none=True)
        return SuiteItem.model_validate({**kept, "verifier": {"type": "exact", "fallback": True}})
    return item


@pytest.mark.parametrize(
    ("sentence", "want"),
    [
        ("Therefore, the number of diagonals is given by the expression n(n-3)/2.", "n(n-3)/2"),
        ("So the probability is 1/n.", "1/n"),
        ("Solving, the values of a and b are a = 3 and b = -4.", "a = 3 and b = -4"),
        ("The only such polynomial is the zero polynomial, f(x) = 0.", "f(x) = 0"),
        # Numbers, prose and the article 'a' are left to the number rules.
        ("There are 239 strings of length 6.", None),
        ("This is a multiple of 3.", None),
        ("So the total is 5 + 3 = 8.", None),
    ],
)
def test_the_stated_expression_is_read_whole(sentence: str, want: str | None) -> None:
    assert expressions.stated_expression(sentence) == want


@pytest.mark.parametrize(
    ("reference", "text"),
    [
        # Equivalent forms are equal (sympy through math-verify).
        ("n(n-3)/2", "So the number of diagonals is n^2/2 - 3n/2."),
        ("n!/(2n)", "Hence the number of arrangements is (n-1)!/2."),
        ("1/n", "Each of them is equally likely, so the probability is 1/n."),
        # Binomials and roots written in plain text; sums written out or with sum_.
        ("C(n+1, 2m+1)", "The answer is \\boxed{\\binom{n+1}{2m+1}}."),
        ("sqrt(3)/3, or equivalently 1/sqrt(3)", "So the ratio is 1/sqrt(3)."),
        ("sum_(k=1)^n 1/k", "The expected number is 1 + 1/2 + ... + 1/n."),
        ("sum_(i=1)^n i^2, or equivalently n(n+1)(2n+1)/6", "Thus the answer is n(n+1)(2n+1)/6."),
        # Several values: assignments joined by words, sets in any order, a function by its equation.
        ("a=3, b=-4", "Solving, the values of a and b are a = 3 and b = -4."),
        ("f(x)=0 or f(x)=1", "Therefore the solutions are f(x) = 0 and f(x) = 1."),
        ("376 and 625", "So the automorphic numbers are 625 and 376."),
        ("f(x)=0", "The only such polynomial is the zero polynomial, f(x) = 0."),
        # A reference's forms: either stated form is right, the gloss need not be repeated.
        ("C(10, 5), or equivalently 252", "The number of such strings is C(10, 5)."),
        ("C(10, 5), or equivalently 252", "\\boxed{252}"),
        ("1000 (i.e., all values)", "Every value works, so the answer is \\boxed{1000}."),
        ("0 is the only possible value", "\\boxed{0}"),
        # Percent answers and an escaped brace, as math-verify and NeMo-Skills call them.
        ("10", "\\boxed{10\\%}"),
        ("10", "\\boxed{10%}"),
        ("185", "\\boxed{185\\}"),
    ],
)
def test_a_person_reads_these_as_right_and_so_does_the_scorer(reference: str, text: str) -> None:
    assert score(frozen(reference), text, chat=True).score == 1.0


@pytest.mark.parametrize(
    ("reference", "text"),
    [
        ("n(n-3)/2", "So the number of diagonals is n(n-2)/2."),
        ("376 and 625", "The number is \\boxed{625}."),  # half of the set
        ("a=3, b=-4", "The values are a = -4 and b = 3."),
        ("5/14, or approximately 35.7%", "\\boxed{35.7\\%}"),  # an approximation is not a form
        # A sum ending its sentence is the sum, not its last term (math-verify alone reads '1 + 1.' as 1).
        ("1", "\\begin{align*}\n\\frac{1 + 1}{2} &= \\frac{1 + 1}{2} \\\\\n&= 1 + 1.\n\\end{align*}"),
    ],
)
def test_other_values_stay_wrong(reference: str, text: str) -> None:
    verdict = score(frozen(reference), text, chat=True)
    assert verdict.score == 0.0 and not verdict.undecided


def test_the_freezer_records_the_forms_of_a_reference_once() -> None:
    assert alternatives("C(10, 5), or equivalently 252") == ["\\binom{10}{5}", "252"]
    assert alternatives("100 (i.e., all values)") == ["100", "all values"]
    assert alternatives("5/14, or approximately 35.7%") == ["5/14"]
    assert alternatives("376 and 625") == ["\\{376, 625\\}"]
    assert alternatives("n(n-3)/2") is None  # its own form, read as it is
    item = frozen("sum_(i=1)^n i^2, or equivalently n(n+1)(2n+1)/6")
    assert item.verifier.type == "math"
    assert item.alternatives == ["\\sum_{i=1}^{n} i^2", "n(n+1)(2n+1)/6"]
    # A sentence is not read as math (math-verify would read one number of it): the exact fallback.
    prose = frozen("Always greater than 20")
    assert prose.verifier.type == "exact" and prose.verifier.fallback


YES_NO = "Is it possible to label the edges of a cube with 1, 2, ..., 12 so that every face has the same sum?"
FIND_ALL = "Find all integer solutions of x^2 = 3y^2 + 2."


@pytest.mark.parametrize(
    ("reference", "question", "text", "want"),
    [
        ("No", YES_NO, "Thus it is not possible to label the edges in this way.", 1.0),
        ("No", YES_NO, "\\boxed{No}", 1.0),
        ("No", YES_NO, "Yes, it is possible: label them as shown.", 0.0),
        ("Yes", "Is 2n always a sum of two squares?", "Yes, 2n is always a sum of two perfect squares.", 1.0),
        ("No integer solutions", FIND_ALL, "Hence there are no integer solutions to the equation.", 1.0),
        (
            "The sequence is not periodic",
            "Is the sequence periodic?",
            "So the given sequence is not periodic.",
            1.0,
        ),
        ("Monotonically increasing", "Describe the sequence.", "Thus it is monotonically increasing.", 1.0),
        (
            "Monotonically increasing",
            "Describe the sequence.",
            "Thus it is not monotonically increasing.",
            0.0,
        ),
    ],
)
def test_conclusions_in_words_are_read_where_the_question_asks_for_them(
    reference: str, question: str, text: str, want: float
) -> None:
    item = frozen(reference, question)
    assert item.verifier.type == "exact"
    assert score(item, text, chat=True).score == want


def test_a_yes_no_reading_needs_a_yes_no_question() -> None:
    assert conclusions.question_allows(YES_NO, "yes_no")
    assert not conclusions.question_allows("Compute the sum of the first n odd numbers.", "yes_no")
    item = frozen("No", "Compute the number of faces.")
    verdict = score(item, "So it is not possible.", chat=True)
    assert verdict.score == 0.0 and verdict.undecided


def test_what_the_reader_cannot_settle_is_undecided_not_wrong() -> None:
    no = frozen("No", YES_NO)
    unread = score(no, "We tried several labellings and computed the face sums.", chat=True)
    assert unread.score == 0.0 and unread.undecided
    opposite = score(no, "\\boxed{Yes}", chat=True)
    assert opposite.score == 0.0 and not opposite.undecided
    math = frozen("n(n-3)/2")
    nothing = score(math, "<think>counting", chat=True)
    assert nothing.answer is None and nothing.undecided
    # An exact verifier chosen by the suite (not the fallback) still calls other words wrong.
    chosen = SuiteItem(item_id="c", family="f", question="q", answer="SDA-17", verifier={"type": "exact"})
    verdict = score(chosen, "\\boxed{SDA-18}", chat=True)
    assert verdict.score == 0.0 and not verdict.undecided


def test_a_final_sentence_keeps_reading_numbers_as_before() -> None:
    assert (
        final_statement("So the smallest value of the expression is 0, achieved when \\( a = b = c \\).")
        == "0"
    )
    numeric = SuiteItem(item_id="n", family="f", question="q", answer=239, verifier={"type": "numeric"})
    chain = "Summing, a_6(1) + a_6(2) + a_6(3) = 70 + 99 + 70 = 239."
    assert score(numeric, chain, chat=True).score == 1.0
    five = SuiteItem(item_id="n", family="f", question="q", answer=5, verifier={"type": "numeric"})
    assert score(five, "So the leading term is x^5.", chat=True).score == 0.0


@pytest.mark.parametrize(
    ("reference", "text", "want"),
    [
        # A value stated of the reference's subject, by its word or its notation: right.
        (
            "The limit exists and is equal to 4",
            "So a_n increases and is bounded.\nHence the limit is 4.",
            1.0,
        ),
        ("The limit exists and is equal to 4", "Taking limits, L = 3L/4 + 1.\nSo $\\lim a_n = 4$.", 1.0),
        ("The only possible value for the limit is sqrt(a)", "Thus the limits are $\\sqrt{a}$.", 1.0),
        # The same value stated of something else, or a number of the working: not read as the limit.
        ("The limit exists and is equal to 4", "The terms repeat: 1, 1, 0, 0.\nThe period is 4.", 0.0),
        (
            "The limit exists and is equal to 2",
            "We add the terms.\nTherefore the sum is at most 2^{99}.",
            0.0,
        ),
    ],
)
def test_a_value_of_a_named_subject_is_read_only_where_the_conclusion_names_it(
    reference: str, text: str, want: float
) -> None:
    item = frozen(reference, "Does the limit exist, and if so, what is it?")
    verdict = score(item, text, chat=True)
    assert verdict.score == want
    assert verdict.undecided == (want == 0.0)
