"""A report's JSON file: written with its format's version first, read back (older versions too) as its model.

Version 2 is version 1 with a top-level `"version": 2` as the first key; a version 1 file (no `version` key,
the reports written before it) reads into the same model, and writing it again gives its bytes with the
version line added. A version newer than this code reads is refused in one line, naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from analysis.reports.refusal import Refusal
from analysis.reports.report_parts import ReportModel
from contract.files import PathCheckError, input_file

REPORT_VERSION = 2
# The versions this code reads: 1 (no `version` key) and the one it writes.
READABLE = (1, REPORT_VERSION)
R = TypeVar("R", bound=ReportModel)


def report_json(report: ReportModel) -> bytes:
    """The report's file: its JSON, `version` first, with json.dumps' options of its model."""
    body = {"version": REPORT_VERSION, **report.model_dump(mode="json")}
    return (json.dumps(body, **report.json_options) + "\n").encode()


def version_of(data: dict[str, Any], where: str | Path) -> int:
    """The format version of a report's JSON (1 where it has no `version` key); a Refusal for any other."""
    version = data.get("version", 1)
    if type(version) is not int or version not in READABLE:
        raise Refusal(
            f"{where}: version: {version!r} is not a report version this code reads ({READABLE[0]} to "
            f"{READABLE[-1]}); update reasoning-delta to the version that wrote it, or rerun the stage "
            "that writes this report"
        )
    return version


def report_from(data: Any, model: type[R], where: str | Path) -> R:
    """A report's parsed JSON (any readable version) as its model; a Refusal naming the file and field."""
    if not isinstance(data, dict):
        raise Refusal(f"{where}: not a {model.__name__} report (no JSON object); rerun its stage")
    version_of(data, where)
    body = {k: v for k, v in data.items() if k != "version"}
    try:
        return model.model_validate(body)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or "(top)"
        raise Refusal(
            f"{where}: not a {model.__name__} report ({field}: {first['msg']}); rerun the stage that writes "
            "it"
        ) from None


def read_report(path: str | Path, model: type[R]) -> R:
    """Read one report file (version 1 or 2) as its model; a Refusal in one line naming the file otherwise."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise Refusal(f"{path}: not found; run the stage that writes it first (dvc repro)")
    try:
        raw = input_file(path, "report").read_text(encoding="utf-8")
    except PathCheckError as e:
        raise Refusal(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise Refusal(f"{path}: cannot read ({e}); rerun the stage that writes it") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise Refusal(f"{path}: not valid JSON (line {e.lineno}): {e.msg}") from None
    return report_from(data, model, path)
