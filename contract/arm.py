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
