"""A report's files written as one set, and its JSON made stable (floats to 10 significant digits)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from analysis.reports.refusal import Refusal
from contract.atomic import atomic_write_set
from contract.files import PathCheckError, output_dir


def clean(x: Any) -> Any:
    """JSON-ready copy: floats to 10 significant digits (stable across reruns), NaN/inf to None."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        f = float(x)
        if not math.isfinite(f):
            return None
        return float(f"{f:.10g}") + 0.0  # + 0.0 turns -0.0 into 0.0
    return x


def out_folder(path: str | Path, what: str = "--out") -> Path:
    """path as a folder a report can be written to; a Refusal in one line otherwise (contract.files)."""
    try:
        return output_dir(path, what)
    except PathCheckError as e:
        raise Refusal(str(e)) from None


def write_outputs(out_dir: str | Path, files: dict[str, bytes]) -> None:
    """Write a report's files as one set (contract.atomic): a failure or a kill leaves the old set whole,
    never half a file or a mix of old and new; a file that cannot be written is a Refusal naming it."""
    out = Path(out_dir)
    write_set({out / name: data for name, data in files.items()})


def write_set(files: dict[Path, str | bytes]) -> None:
    """atomic_write_set, with an OSError (a full disk, a read-only folder) as a one-line Refusal."""
    try:
        atomic_write_set(files)
    except OSError as e:
        where = e.filename or next(iter(files), "")
        raise Refusal(
            f"{where}: cannot write ({e.strerror or e}); free space or fix the folder and rerun (the "
            "previous files are left as they were)"
        ) from None
