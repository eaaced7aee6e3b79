"""json.loads for text a model or a client wrote: standard JSON only, and every value storable.

Python's json module reads more than JSON and more than the project can store: NaN and Infinity (not JSON;
a generations file written with them is not JSON either), numbers beyond a float (1e999 reads as inf), an
integer of more than 4,300 digits (a ValueError of Python's int-string limit, not a JSONDecodeError), and a
string escape of a lone surrogate ("\\ud800", which UTF-8 cannot encode, so the file write would fail).
`loads` refuses each with a ValueError naming it, so a caller that answers "not JSON" for a ValueError
answers all of these the same way instead of dying on them.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Far above any real argument or id, far below Python's own limit (4,300 digits, a ValueError past it).
MAX_INT_DIGITS = 1000


class NotStrictJSON(ValueError):
    """Text that json.loads may read but the project cannot use: the message says what and where."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise NotStrictJSON(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotStrictJSON(f"the number {text[:40]} is beyond a float's range")
    return value


def _constant(name: str) -> Any:
    raise NotStrictJSON(f"{name} is not JSON")


def _check_strings(value: Any) -> None:
    """Refuse a string (or key) that UTF-8 cannot encode; iterative, so any depth is walked."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise NotStrictJSON(f"a string with a lone surrogate escape ({v[:40]!r})") from None
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def loads(text: str | bytes) -> Any:
    """Parse standard JSON whose every value can be stored; ValueError (a JSONDecodeError, NotStrictJSON)
    otherwise. RecursionError (nesting deeper than the parser's stack) is left to the caller."""
    value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    _check_strings(value)
    return value
