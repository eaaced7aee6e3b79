"""Text from logs (model, arm, family and suite names, claims, notes) as literal markdown.

Every table cell, heading and sentence of the markdown reports that carries such text goes through md():
a '|' in a family name would otherwise open a table column and shift every number after it under the wrong
header, and HTML in a model name would reach a reader's markdown viewer (the HTML page is escaped by
Jinja).
"""

from __future__ import annotations

import re

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
