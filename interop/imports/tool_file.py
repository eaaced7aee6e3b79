"""One file of another tool, read (`ToolFile`): its settings and its documents as drafts, and the refusal.

An importer reads one import file (the file another tool wrote, given as SRC) into a `ToolFile`: its run
settings and, per document, an `ItemDraft` with the samples in order, the document's name (its own id, else
the tool's position) and a hash of its content. The checks here are those of one value of one row: a
decoding setting, a text, a score; each refusal names the file, the row and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.files import input_file
from contract.suite import SuiteError, SuiteItem, load_suite

# What an import command exits with when it refuses its input (nothing written).
EXIT_REFUSED = 2
# The decoding settings two runs of one log must share (EvalLog field names).
DECODING = ("temperature", "top_p", "max_tokens")


class ImportRefusal(ValueError):
    """An import file the importer will not turn into a log; str() is the one line the CLI prints."""


@dataclass
class ItemDraft:
    """One document of one import file: prompt, family, reference, samples and what identifies it.

    samples: SampleRecord fields without index and score, plus `tool_score` (the tool's own score of that
    sample, None where the tool scored the document once over all its samples).
    """

    prompt: str | None = None
    family: str | None = None
    reference: Any = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    # A hash of the document's content (lm-eval's doc_hash), to align files that name documents by position.
    content: str | None = None
    # The document's texts (its question among them), to match it with a suite item.
    texts: tuple[str, ...] = ()
    where: str = ""


@dataclass(frozen=True)
class SuiteFile:
    """The suite the documents are of (--suite): its file and items."""

    path: Path
    items: list[SuiteItem]


def read_suite(path: str | None) -> SuiteFile | None:
    """The --suite file's items, or None when no suite is given."""
    if path is None:
        return None
    try:
        items = load_suite(input_file(path, "--suite"))
    except SuiteError as e:
        raise ImportRefusal(str(e)) from None
    return SuiteFile(Path(path), items)


@dataclass
class ToolFile:
    """One import file (another tool's), read: who made it, its settings, and its documents' samples."""

    path: Path
    tool: str
    version: str
    model_name: str
    suite: str
    suite_revision: str
    measured_at: str
    # The tool's metric that scored each sample ("exact_match", Inspect's scorer), None when the tool kept
    # one score per document of several samples; what else says how the tool scored (filter, epochs).
    metric: str | None
    metric_settings: dict[str, Any]
    decoding: dict[str, float | int | None]
    seed: int | None = None
    items: dict[str, ItemDraft] = field(default_factory=dict)
    # How the documents are named: "doc.item_id" (their own id) or "doc_id (position)", ...
    named_by: str = "id"
    positional: bool = False
    # Where the tool recorded the model (results file, the log, the folder it wrote into).
    model_from: str = ""
    # Whether samples per document are a setting of the run (lm-eval repeats, lighteval num_samples): files
    # of one log must then share it. Inspect's epochs are not: logs of some epochs each append.
    k_is_setting: bool = True


def text_hash(text: str) -> str:
    """sha256 of a text, for documents whose tool records no content hash."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def one_setting(path: Path, where: str, name: str, value: Any, seen: dict[str, Any]) -> None:
    """Record a decoding setting of one row; refuse a row that differs from the file's earlier rows."""
    if name in seen and seen[name] != value:
        raise ImportRefusal(
            f"{path}: {where}: {name} is {value!r}, earlier rows have {seen[name]!r}; mixed decoding "
            "settings are not one protocol: import each setting into its own log"
        )
    seen[name] = value


def checked_decoding(path: Path, where: str, name: str, value: Any) -> Any:
    """A decoding setting a log may record: temperature >= 0, top_p in (0, 1], max_tokens an int >= 1."""
    if value is None:
        return None
    if name == "max_tokens":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if not ok:
            raise ImportRefusal(f"{path}: {where}: {value!r} is not a token budget (a whole number >= 1)")
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name == "temperature" and not (number and value >= 0):
        raise ImportRefusal(f"{path}: {where}: {value!r} is not a temperature (a number >= 0)")
    if name == "top_p" and not (number and 0 < value <= 1):
        raise ImportRefusal(f"{path}: {where}: {value!r} is not a top_p (a number in (0, 1])")
    return value


def plain_text(path: Path, where: str, value: Any) -> str:
    """A string the log can hold: refuse one with a lone surrogate (JSON allows it, UTF-8 does not)."""
    if not isinstance(value, str):
        raise ImportRefusal(f"{path}: {where}: is {type(value).__name__} {value!r:.60}, not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ImportRefusal(
            f"{path}: {where}: holds a lone surrogate ({value[e.start]!r} at character {e.start}), which is "
            "not text; the file was damaged or written by a broken encoder: fix or regenerate it"
        ) from None
    return value


def unit_score(path: Path, where: str, value: Any) -> float:
    """A score as a float in [0, 1], or a refusal naming the row and field."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ImportRefusal(
            f"{path}: {where}: {value!r} is not a score in [0, 1]; choose a 0/1 or [0, 1] metric (--metric)"
        )
    return float(value)
