"""A reference as people write it, cut into the forms an answer may state; decided once, at freeze time.

"X, or equivalently Y" and "X, or an equivalent form such as Y": X and Y each right. "X (i.e., Y)", "X (Y)":
X, and the gloss Y (not required, but right where stated). "X, or approximately Y": X only (an
approximation is not the answer). "X is the only possible value", "The only possible value for the limit
is X": X. "The limit exists and is equal to X": X, and the whole sentence. "N values" (a count with its
noun): N. Several values joined by words ("376 and 625") as a list math-verify reads whole (it reads
"376 and 625" as 625). The freezer records the forms in the suite item's `alternatives`, so the scorer
never re-guesses them per sample; the first form is the main answer, which its verifier must read.
"""

from __future__ import annotations

import re

from scoring.expressions import is_expression, joined_values, plain_to_latex

_EQUIVALENTLY = re.compile(r",?\s+or\s+(?:equivalently|an\s+equivalent\s+form\s+such\s+as)\s+", re.I)
_APPROXIMATELY = re.compile(r",?\s+or\s+approximately\s+.*$", re.I | re.S)
_GLOSS = re.compile(r"^(?P<main>.+?)\s*\((?:i\.e\.,?\s*)?(?P<gloss>[^()]+)\)\s*$", re.S)
_ONLY_VALUE = re.compile(
    r"^(?:(?P<a>.+?)\s+is\s+the\s+only\s+possible\s+value|the\s+only\s+possible\s+value\s+(?:for|of)\s+[\w\s]+?"
    r"\s+is\s+(?P<b>.+?)|the\s+\w+\s+exists\s+and\s+is\s+equal\s+to\s+(?P<c>.+?))\.?$",
    re.I | re.S,
)
# A reference that names what its value is of ("The limit exists and is equal to 4", "The only possible
# value for the limit is sqrt(a)"): the value is right only where the conclusion states it of that thing.
_SUBJECT = re.compile(
    r"^(?:the\s+only\s+possible\s+value\s+(?:for|of)\s+the\s+(?P<b>\w+)\s+is\s|"
    r"the\s+(?P<c>\w+)\s+exists\s+and\s+is\s+equal\s+to\s)",
    re.I,
)
_COUNT = re.compile(r"^(?P<n>-?\d+|[a-z])\s+(?:values|pairs|roots|inequalities|times|zeros|solutions)$", re.I)


def _forms_of(part: str) -> list[str]:
    """The forms of one part (a main answer and its gloss, a value stated in words)."""
    part = part.strip()
    if part.endswith(".") and not part.endswith(".."):
        part = part[:-1].strip()
    gloss = _GLOSS.match(part)
    if gloss is not None and not re.search(r"[,(]\s*$", gloss.group("main")):
        main = gloss.group("main").strip()
        # Brackets of math ('(x=8, y=2), (x=2, y=8)', 'f(x)') are not a gloss: a gloss holds words.
        if re.search(r"[A-Za-z]{3,}", gloss.group("gloss")) and not main.endswith(("(", ",")):
            return [*_forms_of(main), gloss.group("gloss").strip().removeprefix("i.e.").strip(" ,")]
    only = _ONLY_VALUE.match(part)
    if only is not None:
        value = next(g for g in only.groups() if g is not None).strip()
        return [value, part] if only.group("c") is not None else [value]
    count = _COUNT.match(part)
    if count is not None:
        return [count.group("n")]
    return [_as_list(part)]


def _as_list(part: str) -> str:
    """Several values joined by words as the list math-verify reads whole ('376 and 625' -> '376, 625',
    'f(x)=0 or f(x)=1' -> 'f(x)=0, f(x)=1'); values that are groups ('x=0, y=2 and x=9, y=11') are kept."""
    pieces = re.split(r"\s+(?:and|or)\s+", part)
    if len(pieces) < 2 or any("," in p for p in pieces):
        return part
    joined = joined_values(part)
    if all(re.fullmatch(r"-?\d+(?:\.\d+)?", p.strip()) for p in pieces):
        # A bare '376, 625' would be read as the number 376625 (a thousands comma): write the set.
        return "\\{" + joined + "\\}"
    return joined if is_expression(joined) else part


def alternatives(reference: str) -> list[str] | None:
    """Every form an answer may state to be right, the main answer first; None where the reference has
    only its own form."""
    text = _APPROXIMATELY.sub("", reference.strip())
    forms: list[str] = []
    for part in _EQUIVALENTLY.split(text):
        for form in _forms_of(part):
            # An expression as the LaTeX math-verify reads whole ('sqrt(3)/3' -> '\\sqrt{3}/3').
            form = plain_to_latex(form) if is_expression(form) else form
            if form and form not in forms:
                forms.append(form)
    return None if forms == [reference.strip()] else forms


def named_subject(reference: str) -> str | None:
    """What a reference's value is of, where its sentence names it ('limit' in "The limit exists and is
    equal to 4"); None for a reference that is the value alone."""
    m = _SUBJECT.match(reference.strip())
    return None if m is None else (m.group("b") or m.group("c")).casefold()
