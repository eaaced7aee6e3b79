"""An arm of the comparison: which model it runs and which augmentations it adds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contract.names import Name


class ArmSpec(BaseModel):
    """An arm (conf/arm/<name>.yaml): model, augmentations, and what a gain over its reference is due to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Name
    model: Name
    retrieval: bool
    tools: bool
    attribution: str
    description: str | None = None


def arm_list_problem(arms: list[str]) -> str | None:
    """Why a params file's arm list cannot be run (empty, an arm listed twice), in a few words; else None."""
    if not arms:
        return "the list is empty; name the arms to run, at least [base, trained] (conf/arm/<name>.yaml each)"
    twice = next((a for i, a in enumerate(arms) if a in arms[:i]), None)
    if twice is not None:
        return f"{twice!r} is listed twice; list each arm once"
    return None
