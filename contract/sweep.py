"""Every checkpoint of a training run (params.yaml `sweep`) made into models, plain arms and a trajectory.

A glob over checkpoint folders, made into models, plain arms and the trajectory without writing each by hand.

    sweep:
      name: grpo                                         # arm prefix: grpo-step-12, grpo-step-24, ...
      glob: runs/grpo/global_step_*/actor/huggingface    # verl; TRL: runs/grpo/checkpoint-*
      base: base                                         # the arm at step 0 (the trajectory's reference)

The glob is read relative to the folder the pipeline runs in (where params.yaml is, as every other path of
params.yaml), or is absolute. Each folder it matches is a checkpoint; its step is the number of the path's
last component that names a step (`global_step_12`, `checkpoint-12`, `step-12`, `step_12`), and the
checkpoints are ordered by it (not by the text: global_step_100 comes after global_step_20). Two folders
with one step, a folder with no step in its path, and a glob that matches no folder are refused. The
pipeline (pipeline.config) adds one model and one plain arm (the model alone, no retrieval, no tools) per
checkpoint, named `<name>-step-<N>`; the trajectory's checkpoints, unless params.yaml names them, are the
base arm and then every swept arm in step order. A model of params.yaml named like a swept arm must be that
checkpoint's folder (it may give it a display name); another folder under that name is refused.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from contract.params import problem

# A path component that names a training step: verl's global_step_N, TRL's checkpoint-N, step-N / step_N.
STEP = re.compile(r"^(?:global_step|checkpoint|step)[-_](\d+)$")


class SweepError(ValueError):
    """A sweep section that cannot be used; the message names the field and the fix."""


@dataclass(frozen=True)
class Checkpoint:
    """One swept checkpoint: its arm (and model) name, its folder and its training step."""

    arm: str
    path: str
    step: int


def step_of(path: str) -> int | None:
    """The training step a checkpoint path names (its last component that names one), or None."""
    for part in reversed(Path(path).parts):
        m = STEP.match(part)
        if m:
            return int(m.group(1))
    return None


_EXAMPLE = {"name": "grpo", "glob": "runs/grpo/global_step_*/actor/huggingface", "base": "base"}


class SweepParams(BaseModel):
    """params.yaml `sweep`: the arm prefix, the glob over checkpoint folders, and the arm at step 0."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # Defaults of None, validated: an absent key is refused in the words of an empty one.
    name: str = Field(default=None, validate_default=True)  # type: ignore[assignment]
    glob: str = Field(default=None, validate_default=True)  # type: ignore[assignment]
    base: str = Field(default=None, validate_default=True)  # type: ignore[assignment]

    @field_validator("name", "glob", "base", mode="before")
    @classmethod
    def _non_empty(cls, v: Any, info: ValidationInfo) -> Any:
        if not isinstance(v, str) or not v:
            raise ValueError(f"must be a non-empty string (e.g. {_EXAMPLE[str(info.field_name)]})")
        return v

    @field_validator("name")
    @classmethod
    def _an_arm_prefix(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v):
            raise ValueError(f"{v!r} must be letters, digits, '.', '_', '-'")
        return v


def check_section(section: Any, where: str = "params.yaml") -> SweepParams:
    """The sweep section as SweepParams; SweepError naming the file and the field otherwise."""
    if isinstance(section, SweepParams):
        return section
    if not isinstance(section, dict):
        raise SweepError(f"{where}: sweep: must be a mapping of {', '.join(SweepParams.model_fields)}")
    try:
        return SweepParams.model_validate(section)
    except ValidationError as e:
        raise SweepError(problem(where, e, SweepParams, ("sweep",))) from None


def expand(section: Any, root: str | Path = ".", where: str = "params.yaml") -> list[Checkpoint]:
    """The checkpoints a sweep section names, in step order (paths as the glob wrote them, under root)."""
    s = check_section(section, where)
    root = Path(root)
    if Path(s.glob).is_absolute():
        # pathlib globs relative patterns only; the standard glob, told to match hidden names and `**` as
        # pathlib does, reads an absolute one (its paths stay absolute, as the glob wrote them).
        hits = glob.glob(s.glob, recursive=True, include_hidden=True)
        found = sorted(h.rstrip("/") for h in hits if Path(h).is_dir())
    else:
        found = sorted(str(p.relative_to(root)) for p in root.glob(s.glob) if p.is_dir())
    if not found:
        raise SweepError(
            f"{where}: sweep.glob: {s.glob!r} matches no folder (read from {root.resolve()}); fix the "
            "glob to match the checkpoint folders, or remove the sweep section"
        )
    by_step: dict[int, str] = {}
    for path in found:
        step = step_of(path)
        if step is None:
            raise SweepError(
                f"{where}: sweep.glob matches {path}, whose path names no step (global_step_N, checkpoint-N, "
                "step-N); narrow the glob"
            )
        if step in by_step:
            raise SweepError(f"{where}: sweep.glob matches {by_step[step]} and {path}, both step {step}")
        by_step[step] = path
    return [Checkpoint(f"{s.name}-step-{n}", by_step[n], n) for n in sorted(by_step)]
