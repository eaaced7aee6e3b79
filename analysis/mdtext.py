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

from analysis.numbers import pvalue

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


# The item browser (analysis.item_browser) that the report stage writes beside the delta/ and arms/ folders.
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
    if not exact and n_perm and p <= 2.0 / (n_perm + 1) * (1 + 1e-9):
        return f"<= {2.0 / (n_perm + 1):.2g} (floor of {n_perm:,} permutations)"
    return pvalue(p)


def _field(row: Mapping[str, Any] | object, name: str) -> Any:
    """A contrast's field, from a report dict or a typed report row alike (None when it has none)."""
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def significance_text(row: Mapping[str, Any] | object, fdr: float) -> str:
    """'yes', 'yes (negligible)', or 'no' with the reason when the interval alone would suggest yes."""
    if _field(row, "significant"):
        return "yes (negligible)" if _field(row, "negligible") else "yes"
    lo, hi = _field(row, "ci95")
    if lo > 0 or hi < 0:
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
