"""The swept checkpoints' arms as the commands look them up, before they read params.yaml.

contract.sweep expands the glob and pipeline.config makes the models and arms; this names the params file a
command line names, the arms its sweep makes, and why a sweep cannot be expanded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from contract.sweep import Checkpoint, SweepError, expand


def sweep_of(path: str | Path) -> tuple[list[Checkpoint], str | None]:
    """A params file's swept checkpoints and, for a sweep that cannot be expanded, its one-line refusal."""
    p = Path(path)
    if not p.is_file():
        return [], None
    try:
        section = (yaml.safe_load(p.read_text()) or {}).get("sweep")
        return (expand(section, ".", where=str(p)) if section is not None else []), None
    except (yaml.YAMLError, AttributeError):
        return [], None  # load_params refuses the file itself
    except SweepError as e:
        return [], str(e)


def params_arg(overrides: Sequence[str]) -> str:
    """The params file a command line's overrides name (`params=PATH`), params.yaml by default: the swept
    arms are those of the file the run reads."""
    pairs = [o.split("=", 1) for o in overrides if "=" in o]
    named = [value for key, value in pairs if key.lstrip("~+") == "params"]
    return named[-1] if named else "params.yaml"


def swept_arms(path: str | Path = "params.yaml") -> list[str]:
    """The plain arms a params file's sweep makes, in step order; [] when the file or its sweep is absent.

    Read from the file itself (not a Params) because the Hydra commands name an arm before they read
    params.yaml; a sweep that cannot be expanded is refused when load_params reads the file, and named by
    unknown_arm when an arm is looked up.
    """
    return [c.arm for c in sweep_of(path)[0]]


def plain_arm(model: str) -> dict[str, Any]:
    """A swept checkpoint's arm: its model alone, no retrieval, no tools, its delta parametric."""
    return {"model": model, "retrieval": False, "tools": False, "attribution": "parametric"}
