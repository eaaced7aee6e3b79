"""Answers written as plain-text expressions: the one they state, read whole, in the LaTeX math-verify reads.

math-verify reads LaTeX and most plain expressions (`n(n-3)/2`, `(n-1)!/2`, `a=3, b=-4`), and sympy decides
their equality. It falls short, and these hand-written rules fill in, where a plain text names a function
it reads as a symbol times a bracket (`sqrt(3)` as `sqrt*3`, `C(10, 5)` as a function C, `floor(n/2)`),
writes a sum as `sum_(i=1)^n i^2` (read as 1) or `1 + 1/2 + ... + 1/n` (read as 1), joins several values
with words (`a = 3 and b = -4`, `f(x)=0 or f(x)=1`), or writes a percent sign after a box's number (`10%` is
read as 0.1, `10\\%` as 10). Its `verify` also leaves a `Sum` unevaluated, so `sum_(i=1)^n i^2` never equals
`n(n+1)(2n+1)/6`: equal_sums evaluates both sides once more.

stated_expression finds, in the sentence that states an answer, the whole expression it states ("the
number of diagonals is given by the expression n(n-3)/2." reads `n(n-3)/2`, where a reader of numbers
reads `2`).
"""

from __future__ import annotations

import contextlib
import re
from tokenize import TokenError
from typing import Any

from scoring import mathverify

# Function names a plain text writes with a bracket, as LaTeX writes them.
_FUNCTION = re.compile(r"(?<![\\A-Za-z])(sqrt|floor|ceil)\s*\(")
_BINOMIAL = re.compile(r"(?<![\\A-Za-z])(?:C|binom|nCr)\s*\(([^(),]+),\s*([^(),]+)\)")
_PLAIN_SUM = re.compile(
    r"(?<![\\A-Za-z])sum_\(?\s*([a-z])\s*=\s*([^)^]+?)\)?\s*\^\s*\(?([A-Za-z0-9+\-]+)\)?\s*"
)
_WORD_JOIN = re.compile(r"\s*,?\s+(?:and|or)\s+")
_DOTS = re.compile(r"\.\.\.|\u2026|\\[lc]?dots|\\ldots|\\cdots")
# Words an expression may hold: function names, and `mod` of a congruence.
_MATH_WORDS = frozenset(
    [
        "sqrt",
        "floor",
        "ceil",
        "sum",
        "binom",
        "mod",
        "pmod",
        "log",
        "ln",
        "exp",
        "sin",
        "cos",
        "tan",
        "pi",
        "and",
        "or",
        "frac",
        "cdot",
        "times",
        "pm",
        "le",
        "ge",
        "leq",
        "geq",
        "neq",
        "infty",
        "ldots",
        "cdots",
        "dots",
    ]
)


def _matching_close(text: str, open_at: int) -> int:
    """The index of the bracket closing the one at open_at, or -1."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _functions_as_latex(text: str) -> str:
    """`sqrt(x)` as `\\sqrt{x}`, `floor(x)` as `\\lfloor x \\rfloor` (brackets matched)."""
    while (m := _FUNCTION.search(text)) is not None:
        close = _matching_close(text, m.end() - 1)
        if close == -1:
            return text
        inner = text[m.end() : close]
        name = m.group(1)
        wrapped = {"sqrt": f"\\sqrt{{{inner}}}", "floor": f"{{\\lfloor {inner} \\rfloor}}"}.get(
            name, f"{{\\lceil {inner} \\rceil}}"
        )
        text = text[: m.start()] + wrapped + text[close + 1 :]
    return text


def plain_to_latex(text: str) -> str:
    """A plain-text expression as LaTeX math-verify reads whole; LaTeX already written is left as it is."""
    s = (
        text.replace("\u00b1", "\\pm ")
        .replace("\u2212", "-")
        .replace("\u2264", "\\le ")
        .replace("\u2265", "\\ge ")
    )
    s = _BINOMIAL.sub(lambda m: f"\\binom{{{m.group(1).strip()}}}{{{m.group(2).strip()}}}", s)
    s = _PLAIN_SUM.sub(lambda m: f"\\sum_{{{m.group(1)}={m.group(2).strip()}}}^{{{m.group(3)}}} ", s)
    s = _functions_as_latex(s)
    # A box's percent sign: math-verify reads `10%` as 0.1 and `10\\%` as 10 (its test_percent_notation).
    s = re.sub(r"(?<=\d)\s*(?<!\\)%", r"\\%", s)
    return s


def joined_values(text: str) -> str:
    """Several values joined by words ('a = 3 and b = -4', 'f(x)=0 or f(x)=1') as a comma list."""
    return _WORD_JOIN.sub(", ", text.strip())


def is_prose(text: str) -> bool:
    """Whether a text is a sentence (two words of three letters or more outside LaTeX commands and their
    arguments): 'Always greater than 20' is, '5\\text{ cm}' and 'x(n)<y(n-1)' are not."""
    bare = re.sub(r"\\[A-Za-z]+(?:\{[^{}]*\})?", " ", text)
    return len([w for w in re.findall(r"[A-Za-z]{3,}", bare) if w.lower() not in _MATH_WORDS]) >= 2


def is_expression(text: str) -> bool:
    """Whether a text is an expression (no word but single letters and function names), not prose."""
    words = re.findall(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", text))
    return bool(text.strip()) and all(w.lower() in _MATH_WORDS for w in words)


# One token of a stated expression: a run without spaces of math characters, or an operator or a joiner.
_TOKEN = re.compile(r"\S+")
_OPERATOR_TOKEN = re.compile(
    r"^(?:[-+*/^=<>\u00b1\u2264\u2265\u00d7]|\\pm|\\cdot|\\times|and|or|,|\.\.\.|\u2026)$"
)
_MATHY = re.compile(r"[\d=+*/^!()\u00b1\u221a<>\u2264\u2265\[\]]|\\[A-Za-z]+")


def _math_token(token: str) -> bool:
    core = token.strip(",;:")
    if not core:
        return token == ","
    if _OPERATOR_TOKEN.match(core):
        return True
    letters = re.findall(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", core))
    if any(w.lower() not in _MATH_WORDS for w in letters):
        return False
    return bool(_MATHY.search(core)) or bool(re.fullmatch(r"[A-Za-z](?:_\w+)?", core))


def stated_expression(sentence: str) -> str | None:
    """The last run of math in a sentence that states an answer, when it is more than one number: an
    expression with a variable or several values ('... is given by n(n-3)/2.' -> 'n(n-3)/2', '... are a =
    3 and b = -4.' -> 'a = 3 and b = -4'); None for prose, a bare number or a lone letter in prose."""
    tokens = _TOKEN.findall(sentence.rstrip().rstrip(".").rstrip())
    end = len(tokens)
    while end and not _math_token(tokens[end - 1]):
        end -= 1
    start = end
    while start and _math_token(tokens[start - 1]):
        start -= 1
    run = tokens[start:end]
    while run and run[0].strip(",;:") in ("and", "or", ""):
        run = run[1:]
    while run and run[-1].strip(",;:") in ("and", "or", ""):
        run = run[:-1]
    if not run:
        return None
    text = " ".join(run).strip(",;: ")
    if not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", " ", text)) and not re.search(
        r"\s(?:and|or)\s|,", text
    ):
        return None  # a number or a formula of numbers: the numeric readers read it
    if len(run) == 1 and re.fullmatch(r"[A-Za-z]", text) and (start == 0 or end != len(tokens)):
        return None
    if len(run) == 1 and text in ("a", "A", "I"):
        return None
    return text


def plain_parse(text: str) -> tuple[Any, ...]:
    """math-verify's parse of a plain-text answer read whole: a written-out sum as a Sum, several values
    joined by words as a list, plain function names as LaTeX."""
    summed = written_sum(text)
    if summed is not None:
        return (summed, text)
    return mathverify.parse_answer(plain_to_latex(joined_values(text)))


def written_sum(text: str) -> Any | None:
    """A sum written out with dots ('1 + 1/2 + ... + 1/n') as sympy's Sum of its last term's form, when its
    first terms are that form at consecutive integers; None otherwise."""
    import sympy
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    parts = [p.strip() for p in _DOTS.split(text.replace("$", ""))]
    if len(parts) != 2 or not parts[0].endswith("+") or not parts[1].startswith("+"):
        return None
    transforms = (*standard_transformations, implicit_multiplication_application, convert_xor)
    try:
        head = [
            parse_expr(t, transformations=transforms) for t in parts[0].rstrip("+").split("+") if t.strip()
        ]
        last = parse_expr(parts[1].lstrip("+"), transformations=transforms)
    except (SyntaxError, TypeError, ValueError, sympy.SympifyError, TokenError):
        return None
    free = sorted(last.free_symbols, key=str)
    if len(free) != 1 or not head:
        return None
    n, k = free[0], sympy.Symbol("k")
    for start in (0, 1, 2):
        if all(sympy.simplify(last.subs(n, start + j) - t) == 0 for j, t in enumerate(head)):
            return sympy.Sum(last.subs(n, k), (k, start, n))
    return None


def evaluated(parsed: tuple[Any, ...]) -> tuple[Any, ...]:
    """A parse with every sympy Sum evaluated (math-verify compares a Sum unevaluated)."""
    import sympy

    out = []
    for x in parsed:
        if isinstance(x, sympy.Basic) and x.has(sympy.Sum):
            # Symbols by name alone: two parsers give one `n` other assumptions, and sympy keeps them apart.
            x = x.xreplace({s: sympy.Symbol(s.name) for s in x.atoms(sympy.Symbol)})
            # A sum sympy cannot evaluate is left as written: then only an equal Sum equals it.
            with contextlib.suppress(TypeError, ValueError, NotImplementedError):
                x = x.doit()
        out.append(x)
    return tuple(out)


def plain_equal(
    answer: str, reference: str, gold: tuple[Any, ...], got: tuple[Any, ...], decimals: int | None
) -> bool:
    """The second reading of an answer math-verify found unequal: both read as plain-text expressions
    (scoring.expressions: sqrt(), C(n, k), sums, several values joined by words, a box's percent sign),
    and sums evaluated."""
    golds = [gold]
    plain_reference = plain_to_latex(joined_values(reference))
    if plain_reference != reference:
        with contextlib.suppress(mathverify.UnreadableReference):
            golds.append(mathverify.parse_reference(plain_reference))
    gots = [got, plain_parse(answer)]
    for g in golds:
        for a in gots:
            if not mathverify.has_math(a):
                continue
            if mathverify.equal(g, a, decimals):
                return True
            sums = evaluated(g), evaluated(a)
            if sums != (g, a) and mathverify.equal(*sums, decimals):
                return True
    return False
