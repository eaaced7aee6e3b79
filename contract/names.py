"""Names a reader tells apart by eye (arm, model, family, suite): NFC-normalised, nothing invisible in them.

`base` and `base\u200b` (a zero-width space) print alike but are two arms to a program; `café` typed on two
keyboards can be two strings (composed é, or e and a combining accent). A name is therefore normalised to
NFC, and refused when it holds a control, format (zero-width, direction marks), private-use, surrogate,
unassigned or line/paragraph separator character, any whitespace but the plain space, or leading or
trailing spaces.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

# Control, format (zero-width and bidi marks), surrogate, private use, unassigned, line and paragraph sep.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def clean_name(value: str) -> str:
    """value in NFC; ValueError naming the character when it holds one a reader cannot see (see module)."""
    name = unicodedata.normalize("NFC", value)
    for i, ch in enumerate(name):
        if unicodedata.category(ch) in _HIDDEN or (ch.isspace() and ch != " "):
            what = unicodedata.name(ch, f"(category {unicodedata.category(ch)})")
            raise ValueError(
                f"{value!r} holds an invisible or control character, U+{ord(ch):04X} {what}, at position "
                f"{i}; remove it (a name must read as it prints)"
            )
    if name != name.strip(" "):
        raise ValueError(f"{value!r} begins or ends with a space; remove it")
    if not name:
        raise ValueError("a name cannot be empty")
    return name


Name = Annotated[str, AfterValidator(clean_name)]
