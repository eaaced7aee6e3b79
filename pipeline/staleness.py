"""Whether an arm needs generating: config and pins checked, its file's inputs compared with the run's.

Every generations file records `inputs_sha256`, the sha256 of what its generation read (the arm's pin file,
the arm, the protocol and the engine settings). A file that loads and has the inputs of this run is up to
date; anything else (missing, stale, unreadable, other inputs) is generated, and the reason is said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.digest import file_sha256, text_sha256
from contract.files import output_dir
from contract.generations import GenerationsError, StaleGenerations, load_generations
from pipeline.config import Params, load_arm, load_params
from pipeline.engines import settings_record
from pipeline.pins import check_pins
from pipeline.settings import RunSettings


@dataclass(frozen=True)
class RunState:
    """One run's checked inputs: the arm, params.yaml, the pins its file records, the inputs sha256, why
    the arm is to be generated (None: its file is up to date), and the part it generates (None: all)."""

    settings: RunSettings
    arm: ArmSpec
    params: Params
    pins: dict[str, str]
    inputs: str
    stale: str | None
    part: tuple[int, int] | None = None

    @property
    def dest(self) -> Path:
        """The arm's generations file."""
        return self.settings.out_dir / f"{self.arm.name}.json"


def inputs_sha256(arm: ArmSpec, params: Params, pins_dir: Path, engine: dict[str, Any]) -> str:
    """sha256 of what an arm's generation reads: its pin file (suite questions, model, index, code), the
    arm, the protocol and the engine settings (all but the log level, which changes only what is printed)."""
    record = {
        "arm": arm.model_dump(),
        "protocol": params.protocol.model_dump(),
        "pin_sha256": file_sha256(pins_dir / "arms" / f"{arm.name}.json"),
        "engine": settings_record(engine),
    }
    return text_sha256(json.dumps(record, sort_keys=True))


def up_to_date(dest: Path, inputs: str) -> str | None:
    """Why dest cannot be reused for these inputs, or None when it can (it loads and has them)."""
    if not dest.is_file():
        return "not generated yet"
    try:
        old = load_generations(dest)
    except StaleGenerations as e:
        return f"stale ({e})"
    except GenerationsError as e:
        return f"unreadable ({e})"
    if old.inputs_sha256 != inputs:
        return "its inputs changed"
    return None


def staleness(
    settings: RunSettings,
    part: tuple[int, int] | None = None,
    arm: ArmSpec | None = None,
    params: Params | None = None,
) -> RunState:
    """Check the arm's config and pins (arm and params: already loaded by the caller, else read here)."""
    if arm is None:
        arm = load_arm(settings.arm, settings.conf_dir, settings.arm_node)
    if params is None:
        params = load_params(settings.params)
    output_dir(settings.out_dir, "out_dir")
    pins = check_pins(params, settings.pins, arm, settings.conf_dir)
    inputs = inputs_sha256(arm, params, settings.pins, settings.engine)
    stale = "force=true" if settings.force else up_to_date(settings.dest, inputs)
    return RunState(settings, arm, params, pins, inputs, stale, part)


def reuse(state: RunState) -> Path:
    """Say that an arm's generations file is up to date, and hand it back."""
    print(f"run_arm: {state.arm.name}: up to date ({state.dest} has these inputs; force=true regenerates it)")
    return state.dest
