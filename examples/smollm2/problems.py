"""Grade-school word problems with integer and fraction answers, generated from templates by a seed.

The suite (`python problems.py suite`) and the fine-tune's training problems (`finetune.py`) come from the
same templates with different seeds; a training problem whose question is a suite question is dropped, so
the two are disjoint by construction (tests/test_smollm2_world.py checks it on the files).

Families: `add`, `sub`, `mul`, `div` (one step), `two_step`, `fraction` (the answer is a fraction in
lowest terms, written in LaTeX as `\\frac{a}{b}`, or a whole number when it reduces to one). Every answer
is checked by the `math` verifier (math-verify), so `\\frac{3}{4}`, `3/4` and `0.75` all count.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from contract.jsonl import read_jsonl

HERE = Path(__file__).resolve().parent
SUITE_PATH = HERE / "suite" / "smollm2-arith-v1.jsonl"
SUITE_SEED = 2024
TRAIN_SEED = 7
FAMILIES = ("add", "sub", "mul", "div", "two_step", "fraction")

NAMES = ["Maria", "Tom", "Aisha", "Leo", "Priya", "Sam", "Chen", "Olga", "Ben", "Zara", "Ivan", "Nora"]
THINGS = ["apples", "stickers", "marbles", "pencils", "cookies", "books", "stamps", "shells", "cards", "eggs"]
Problem = tuple[str, str]


def latex(value: Fraction) -> str:
    """A value as the suite writes answers: an integer, or \\frac{a}{b} in lowest terms."""
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _add(r: random.Random) -> Problem:
    n, t, a, b = r.choice(NAMES), r.choice(THINGS), r.randint(2, 20), r.randint(2, 9)
    return f"{n} has {a} {t}. {n} gets {b} more {t}. How many {t} does {n} have now?", str(a + b)


def _sub(r: random.Random) -> Problem:
    n, t, a, b = r.choice(NAMES), r.choice(THINGS), r.randint(10, 20), r.randint(1, 9)
    return f"{n} has {a} {t} and gives away {b} of them. How many {t} does {n} have left?", str(a - b)


def _mul(r: random.Random) -> Problem:
    t, a, b = r.choice(THINGS), r.randint(2, 5), r.randint(2, 6)
    return f"There are {b} boxes with {a} {t} in each box. How many {t} are there in all?", str(a * b)


def _div(r: random.Random) -> Problem:
    t, each, kids = r.choice(THINGS), r.randint(2, 5), r.randint(2, 4)
    return f"{each * kids} {t} are shared equally by {kids} children. How many {t} does each child get?", str(
        each
    )


def _two_step(r: random.Random) -> Problem:
    n, t, a, b = r.choice(NAMES), r.choice(THINGS), r.randint(3, 12), r.randint(2, 8)
    c = r.randint(1, a + b - 1)
    return (
        f"{n} has {a} {t}, gets {b} more, and then gives away {c}. How many {t} does {n} have now?",
        str(a + b - c),
    )


def _fraction(r: random.Random) -> Problem:
    if r.random() < 0.6:
        n, slices = r.choice(NAMES), r.choice([2, 3, 4, 5, 6, 8])
        eaten = r.randint(1, slices - 1)
        return (
            f"A pizza is cut into {slices} equal slices. {n} eats {eaten} of them. "
            f"What fraction of the pizza did {n} eat?",
            latex(Fraction(eaten, slices)),
        )
    a, b = Fraction(1, r.choice([2, 4])), Fraction(1, r.choice([2, 4]))
    return f"What is $\\frac{{1}}{{{a.denominator}}} + \\frac{{1}}{{{b.denominator}}}$?", latex(a + b)


MAKERS: dict[str, Callable[[random.Random], Problem]] = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "two_step": _two_step,
    "fraction": _fraction,
}


def problems(per_family: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """per_family distinct problems of each family, as suite items; questions in exclude are skipped."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    seen = set(exclude)
    for family in FAMILIES:
        made = 0
        while made < per_family:
            question, answer = MAKERS[family](rng)
            if question in seen:
                continue
            seen.add(question)
            made += 1
            items.append(
                {
                    "item_id": f"{family}-{made:03d}",
                    "family": family,
                    "question": question,
                    "answer": answer,
                    "verifier": {"type": "math"},
                }
            )
    return items


def suite_questions(path: Path = SUITE_PATH) -> frozenset[str]:
    """The questions of the frozen suite file."""
    return frozenset(row["question"] for _, row in read_jsonl(path))


def main(argv: list[str] | None = None) -> int:
    """Command line: write the frozen suite (`suite`), or print training problems (`train`)."""
    ap = argparse.ArgumentParser(prog="python problems.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "what", choices=["suite", "train"], help="suite: write the suite file; train: print problems"
    )
    ap.add_argument("--per-family", type=int, default=8, help="problems per family (default 8)")
    ap.add_argument("--out", default=str(SUITE_PATH), help="suite file to write (suite only)")
    args = ap.parse_args(argv)
    if args.what == "suite":
        rows = problems(args.per_family, SUITE_SEED)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        print(f"{out}: {len(rows)} items")
    else:
        for row in problems(args.per_family, TRAIN_SEED, suite_questions()):
            print(json.dumps(row, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
