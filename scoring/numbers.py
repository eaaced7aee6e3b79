"""Numbers as a text writes them: every number of a text, its value, the first number of an answer."""

from __future__ import annotations

import math
import re

# Thousands groups must be exact (1,234,567) so that "3, 4" reads as 3, not 34.
_NUMBER = re.compile(
    r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+\u2212]?\.\d+(?:[eE][-+]?\d+)?"
)


def written_numbers(text: str) -> list[str]:
    """Every number in text as it is written, in order ('1,436.50 km or 3' -> ['1,436.50', '3'])."""
    return _NUMBER.findall(text)


def number_value(written: str) -> float | None:
    """The value of one number of written_numbers ('1,436.50' -> 1436.5), or None if it is not finite."""
    value = float(written.replace(",", "").replace("\u2212", "-"))
    return value if math.isfinite(value) else None


def parse_number(answer: str) -> float | None:
    """The first number in an answer string ('1,234.5 km' -> 1234.5), or None."""
    m = _NUMBER.search(answer)
    return None if m is None else number_value(m.group(0))
