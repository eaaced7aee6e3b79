"""The hash of what an arm's generation reads (`inputs_sha256`), which every generations file records.

An input of the resolved run (pipeline.resolve); pipeline.staleness compares a file's with the run's.
"""

from __future__ import annotations

import json

from contract.arm import ArmSpec
from contract.digest import text_sha256
from pipeline.config import Params
from pipeline.engines.settings import EngineSettings


def inputs_sha256(arm: ArmSpec, params: Params, pin_sha256: str, engine: EngineSettings) -> str:
    """sha256 of what an arm's generation reads: its pin file (suite questions, model, index, code; given as
    the sha256 of its bytes), the arm, the protocol and the engine settings (EngineSettings.record: all but
    the log level, which changes only what is printed, and how a server is reached)."""
    record = {
        "arm": arm.model_dump(),
        "protocol": params.protocol.model_dump(),
        "pin_sha256": pin_sha256,
        "engine": engine.record(),
    }
    return text_sha256(json.dumps(record, sort_keys=True))
