"""Engines behind one contract (pipeline.engines.base): `make_engine(cfg, model)` picks one by cfg["name"]."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.engines.base import Engine

ENGINES = ("vllm", "hf")
# Keys of conf/engine/*.yaml that the runner uses itself (they shape batches, not the engine).
RUNNER_KEYS = frozenset({"name", "chunk_size"})


def make_engine(cfg: Mapping[str, Any], model: str | None = None, revision: str | None = None) -> Engine:
    """Start the engine cfg names (conf/engine/<name>.yaml) on model (or cfg['model']) at revision."""
    name = cfg.get("name")
    kwargs = {k: v for k, v in cfg.items() if k not in RUNNER_KEYS and k != "model"}
    model = model or cfg.get("model")
    if not model:
        raise ValueError("make_engine: no model given (pass model= or set cfg['model'])")
    if name == "vllm":
        from pipeline.engines.vllm_engine import VllmEngine

        return VllmEngine(str(model), revision=revision, **kwargs)
    if name == "hf":
        from pipeline.engines.hf_engine import HfEngine

        return HfEngine(str(model), revision=revision, **kwargs)
    raise ValueError(
        f"engine {name!r} is unknown; known engines: {', '.join(ENGINES)} (conf/engine/<name>.yaml)"
    )
