"""The frozen task suite: one JSON object per line with item_id, family, question, answer and verifier.

{"item_id": "period-001", "family": "period", "question": "...", "answer": 92.68,
 "verifier": {"type": "numeric", "rel_tol": 0.01, "abs_tol": 0.0}, "tool": "orbital_period"}
{"item_id": "catalog-007", "family": "catalog", "question": "...", "answer": "SDA-17",
 "verifier": {"type": "exact"}}
{"item_id": "math-042", "family": "algebra", "question": "...", "answer": "\\frac{1}{2}",
 "verifier": {"type": "math"}}
{"item_id": "mcq-003", "family": "mcq", "question": "...", "answer": "B", "verifier": {"type": "choice"}}
{"item_id": "own-001", "family": "own", "question": "...", "answer": "x", "verifier": {"type": "python",
 "function": "my_checks:same_molecule"}}

Verifier types: `numeric` (tolerances), `exact` (casefolded string), `math` (math-verify: LaTeX, fractions,
intervals, sets), `choice` (a letter A-E) and `python` (a user's `module:function`, called with the
extracted answer and the item's answer, returning True or False). scoring/verifiers.py judges them. `math`
and `python` take `timeout_s`, the seconds one answer may take (default: the scorer's, 30 s); an answer
that takes longer scores 0 with the reason in the log.

`tool` (optional) names the tool a tool arm is expected to call for the item; the path evaluation then
counts a sample as clean only when that tool's result reaches the answer. `metadata` (optional) holds
anything else a suite wants to keep with an item; nothing reads it.

Generation reads only each item's id and question; answers, verifiers and metadata belong to scoring. So
`questions_sha256` pins what generation depends on, and a fix to an answer regenerates nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contract.digest import text_sha256
from contract.jsonl import JsonlError, read_jsonl
from contract.names import Name


class SuiteError(ValueError):
    """A suite file that cannot be used; the message names the file, the line and the field."""


class NumericVerifier(BaseModel):
    """Right when the first number of the answer is within max(rel_tol * |answer|, abs_tol) of the answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["numeric"]
    rel_tol: float = Field(default=0.0, ge=0)
    abs_tol: float = Field(default=0.0, ge=0)


class ExactVerifier(BaseModel):
    """Right when the answer equals the reference after stripping, collapsing spaces and casefolding."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["exact"]
    # True: the freezer gave this item `exact` because math-verify could not read its reference
    # (--fallback-verifier exact); an answer whose words differ is then undecided, not wrong, since the
    # words alone cannot tell a wrong answer from the right one written otherwise.
    fallback: bool | None = None


class MathVerifier(BaseModel):
    """Right when math-verify finds the answer equal to the reference (LaTeX, fractions, sets, intervals)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["math"]
    # Seconds math-verify may spend on one answer (None: the scorer's, conf/score.yaml verifier_timeout_s).
    timeout_s: float | None = Field(default=None, gt=0)
    # Decimal places numbers are compared to (math-verify's float_rounding; None: its default, 6): 2 lets
    # an answer of 0.33 equal a reference of 1/3.
    decimals: int | None = Field(default=None, ge=0, le=15)


class ChoiceVerifier(BaseModel):
    """Right when the letter read from the answer ('(B)', 'B.', '\\boxed{B}') is the reference letter A-E."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["choice"]


class PythonVerifier(BaseModel):
    """Right when the user's function `module:function` returns True for (answer, reference)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["python"]
    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    # Seconds the function may spend on one answer (None: the scorer's, conf/score.yaml verifier_timeout_s).
    timeout_s: float | None = Field(default=None, gt=0)


Verifier = Annotated[
    NumericVerifier | ExactVerifier | MathVerifier | ChoiceVerifier | PythonVerifier,
    Field(discriminator="type"),
]
CHOICE_LETTERS = "ABCDE"


class SuiteItem(BaseModel):
    """One item of the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    item_id: str = Field(min_length=1)
    family: Name
    question: str = Field(min_length=1)
    answer: str | float | int
    verifier: Verifier
    tool: str | None = Field(default=None, min_length=1)
    # Every form of the reference an answer may state to be right ("C(10, 5), or equivalently 252" holds
    # C(10, 5) and 252; "100 (i.e., all values)" holds 100 and its gloss), the main answer first: decided
    # once by the freezer (scoring.reference_forms), so the scorer never re-guesses them. None: `answer`.
    alternatives: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    metadata: dict[str, Any] | None = None

    @field_validator("answer", mode="before")
    @classmethod
    def _not_a_bool(cls, v: Any) -> Any:
        # JSON true would otherwise become the answer 1.
        if isinstance(v, bool):
            raise ValueError(f"{v!r} is not an answer; write the number or the string")
        return v


def questions_sha256(items: Sequence[SuiteItem]) -> str:
    """sha256 of what generation reads of a suite: the item ids and questions, sorted by id.

    Sorted, so that reordering the suite's lines (which changes no prompt, seed or sample: each sample's seed
    is derived from its item id) regenerates nothing; the scores are matched to items by id.
    """
    pairs = sorted([it.item_id, it.question] for it in items)
    body = json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))
    return text_sha256(body)


def load_suite(path: str | Path) -> list[SuiteItem]:
    """Read and validate a suite file; raise SuiteError naming file, line and field on the first problem."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise SuiteError(f"{p}: suite file not found; point suite.path of the params file (or --suite) at it")
    items: list[SuiteItem] = []
    seen: dict[str, int] = {}
    asked: dict[str, tuple[int, str]] = {}
    try:
        records = read_jsonl(p)
    except JsonlError as e:
        raise SuiteError(str(e)) from None
    for n, raw in records:
        try:
            item = SuiteItem.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "item"
            raise SuiteError(f"{p}:{n}: {field}: {str(err['msg']).removeprefix('Value error, ')}") from None
        if item.verifier.type == "numeric" and not is_finite_number(item.answer):
            raise SuiteError(
                f"{p}:{n}: item {item.item_id!r}: answer: a numeric verifier needs a finite number, got "
                f"{item.answer!r}"
            )
        if item.verifier.type == "choice" and str(item.answer) not in set(CHOICE_LETTERS):
            raise SuiteError(
                f"{p}:{n}: item {item.item_id!r}: answer: a choice verifier needs one letter of "
                f"{CHOICE_LETTERS}, got {item.answer!r}"
            )
        if item.item_id in seen:
            raise SuiteError(f"{p}:{n}: item_id: {item.item_id!r} already used on line {seen[item.item_id]}")
        seen[item.item_id] = n
        # One question under two ids is one item counted twice: its outcomes are not independent, and the
        # intervals would claim more items than were asked.
        question = " ".join(item.question.split())
        if question in asked:
            line, first = asked[question]
            raise SuiteError(
                f"{p}:{n}: question: item {item.item_id!r} asks what item {first!r} asks on line {line}; "
                "keep one of them"
            )
        asked[question] = (n, item.item_id)
        items.append(item)
    if not items:
        raise SuiteError(f"{p}: the suite has no items")
    return items


def is_finite_number(v: object) -> bool:
    """Whether v is a finite number or a string that float() reads as one (never a bool)."""
    # float() reads "NaN" and "inf", and no answer can ever be within a tolerance of them.
    if isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False
