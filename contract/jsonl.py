"""The one JSONL reader of the project: lines split on "\\n" only, one wording for every error.

`str.splitlines()` also splits on U+2028, U+2029, U+0085 and other separators that JSON allows raw inside a
string (lm-eval writes its files with `ensure_ascii=False`, so a model's text can hold them): a reader that
used it would cut a valid record in two and refuse it as "not JSON".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class JsonlError(ValueError):
    """A JSONL file that cannot be read: the message names the file, the line and the fix."""


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of each non-blank line of a JSONL text, split on "\\n" only ("\\r\\n" too)."""
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if line.strip():
            yield n, line


def parse_jsonl_line(src: str | Path, n: int, line: str) -> Any:
    """One line's JSON value; JsonlError naming src:n when it is not JSON."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise JsonlError(
            f"{src}:{n}: not JSON ({e.msg} at column {e.colno}); each line must be one JSON value"
        ) from None
    except RecursionError:
        raise JsonlError(f"{src}:{n}: JSON nested too deeply to read; fix or remove that line") from None


def read_jsonl_text(path: str | Path) -> str:
    """A JSONL file's text (UTF-8); JsonlError naming the file when it is missing, a folder or not UTF-8."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JsonlError(f"{p}: file not found; check the path") from None
    except IsADirectoryError:
        raise JsonlError(f"{p}: is a folder, not a JSONL file; give the file's path") from None
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise JsonlError(f"{p}:{line}: not UTF-8 text ({e.reason}); save the file as UTF-8") from None
    except OSError as e:
        raise JsonlError(f"{p}: cannot be read ({e.strerror or type(e).__name__})") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line of a JSONL file; JsonlError on the first bad line."""
    text = read_jsonl_text(path)
    for n, line in jsonl_lines(text):
        yield n, parse_jsonl_line(path, n, line)


def read_jsonl(path: str | Path) -> list[tuple[int, Any]]:
    """Every (line number, JSON value) of a JSONL file, read whole before anything is returned."""
    return list(iter_jsonl(path))
