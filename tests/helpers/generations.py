"""Generations files written by hand, sealed as the runner seals them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_generations(path: Path, raw: dict[str, Any]) -> None:
    """Write a hand-made generations file sealed as the runner writes it (contract.generations).

    A record that does not validate is written as it is: a file the test means to be refused for that.
    """
    from pydantic import ValidationError

    from contract.generations import Generations, dump_generations

    try:
        path.write_text(dump_generations(Generations.model_validate(raw)), encoding="utf-8")
    except ValidationError:
        path.write_text(json.dumps(raw), encoding="utf-8")
