"""Text of the reports: names from logs escaped as literal markdown, and the wording of p, q and intervals.

Text from logs (model, arm, family and suite names, claims, notes) as literal markdown.

Every table cell, heading and sentence of the markdown reports that carries such text goes through md():
a '|' in a family name would otherwise open a table column and shift every number after it under the wrong
header, and HTML in a model name would reach a reader's markdown viewer (the HTML page is escaped by
Jinja).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from analysis.estimators.estimate import excludes
from analysis.reports.number_text import at_floor, p_bound, pvalue

# Backslash-escaped: CommonMark reads any escaped ASCII punctuation as the character itself. These open
# code, emphasis, links, HTML and entities, table cells, headings, strikethrough and (GitHub) math.
_SPECIAL = re.compile(r"([\\`*\[\]<>|$~&#])")
# '_' between two letters or digits never opens or closes emphasis; escaping only the others keeps
# names such as tool_access readable in the raw file.
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_LINE_BREAK = re.compile(r"\s*[\r\n]+\s*")


def md(text: object) -> str:
    """text on one line with every markdown-active character escaped, so it renders as written."""
    s = _LINE_BREAK.sub(" ", str(text))
    return _UNDERSCORE.sub(r"\\_", _SPECIAL.sub(r"\\\1", s))


# The item browser (analysis.rendering.item_browser) that the report stage writes beside the delta/ and arms/
# folders.
ITEMS_PAGE = "items.html"


def items_href(ref: str, arm: str, family: str | None = None, page: str = f"../{ITEMS_PAGE}") -> str:
    """The item browser's address showing the items that flipped from ref to arm (within one family).

    Names are percent-encoded (arm names hold '+', which a query would read as a space), so the address is
    one literal token in a markdown link and in an HTML attribute.
    """
    parts = [("a", ref), ("b", arm)] + ([("family", family)] if family is not None else [])
    return page + "#" + "&".join(f"{k}={quote(v, safe='')}" for k, v in parts)


def ci_percent(alpha: float) -> str:
    """The confidence level of an interval at this alpha, as a label ('95%' at alpha 0.05)."""
    return f"{100 * (1 - alpha):.4g}%"


def p_text(p: float | None, n_perm: int | None = None, exact: bool = True) -> str:
    """A p-value; one at the floor of a Monte Carlo test is printed as the bound it is, not as exact."""
    if p is None:
        return "n/a"
    if at_floor(p, n_perm, exact):
        return f"{p_bound(p, n_perm, exact)} (floor of {n_perm:,} permutations)"
    return pvalue(p)


# The mark of a p at its floor in a table cell; the note under the table says what the floor is.
FLOOR_MARK = "\\*"


def p_cell(p: float | None, n_perm: int | None = None, exact: bool = True) -> str:
    """A p-value for a table cell: one at the floor is '<= 0.0002*', with floor_note under the table."""
    if at_floor(p, n_perm, exact):
        # A no-break space: the cell stays one line.
        return f"<=\u00a0{pvalue(2.0 / (n_perm + 1))}{FLOOR_MARK}"  # type: ignore[operator]
    return p_text(p)


def floor_notes(text: str, n_perm: int) -> str:
    """Markdown with floor_note after every table that has a p at its floor (so the cells stay short)."""
    out: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        out.append(line)
        in_table = line.startswith("|")
        table_ends = in_table and (i + 1 == len(lines) or not lines[i + 1].startswith("|"))
        if table_ends:
            start = i
            while start > 0 and lines[start - 1].startswith("|"):
                start -= 1
            if any(FLOOR_MARK in row for row in lines[start : i + 1]):
                out += ["", floor_note(n_perm)]
    return "\n".join(out)


def floor_note(n_perm: int) -> str:
    """The footnote of a table whose p cells carry FLOOR_MARK."""
    return (
        f"{FLOOR_MARK}: the floor of the sign-flip test at {n_perm:,} permutations, "
        f"{pvalue(2.0 / (n_perm + 1))}: no permutation gave a delta as large as the observed one, and more "
        "permutations would go lower."
    )


def _field(row: Mapping[str, Any] | object, name: str) -> Any:
    """A contrast's field, from a report dict or a typed report row alike (None when it has none)."""
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def significance_text(row: Mapping[str, Any] | object, fdr: float) -> str:
    """'yes', 'yes (negligible)', or 'no' with the reason when the interval alone would suggest yes."""
    if _field(row, "significant"):
        return "yes (negligible)" if _field(row, "negligible") else "yes"
    # The one rule of every report (analysis.estimators.estimate), on the [lo, hi] the report holds.
    if excludes(*_field(row, "ci95")):
        decided_by = _field(row, "decided_by")
        if str(decided_by or "").startswith(("Holm", "sign-flip")):
            # The primary contrast: its q is the Holm-adjusted p of the claim's family, tested at alpha.
            return f"no (Holm p {_field(row, 'q_value'):.3g} > alpha; {decided_by})"
        return f"no (q {_field(row, 'q_value'):.3g} > fdr {fdr})"
    return "no"


SIGNIFICANT = (
    "significant means q <= fdr and the {pct} CI excludes 0 (trained vs base: its Holm-adjusted p "
    "<= alpha over pass@1 and pass@K, the delta report's claim family, and the CI excludes 0)"
)
