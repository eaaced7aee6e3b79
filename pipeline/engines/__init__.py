"""Engines behind one interface (contract.engine): `make_engine(cfg, model)` picks one by cfg["name"].

`get_engine` keeps one started engine per process and reuses it while the model and settings stay the
same (the arms of one model in a Hydra multirun, or a test session).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contract.engine import Engine

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


_ENGINE: dict[str, Any] = {}
_STARTS = [0]


def _key(cfg: Mapping[str, Any], model: str, revision: str | None) -> str:
    # Runner-only keys (chunk_size) do not change the engine, so a new chunk size reuses it.
    engine_only = {k: v for k, v in cfg.items() if k not in RUNNER_KEYS or k == "name"}
    return json.dumps([engine_only, model, revision], sort_keys=True)


def is_running(cfg: Mapping[str, Any], model: str, revision: str | None = None) -> bool:
    """Whether get_engine would reuse the engine this process already started."""
    return _ENGINE.get("key") == _key(cfg, model, revision)


def get_engine(cfg: Mapping[str, Any], model: str, revision: str | None = None) -> Engine:
    """Start the engine for model, or reuse the running one if it has the same model and settings."""
    key = _key(cfg, model, revision)
    if _ENGINE.get("key") == key:
        return _ENGINE["engine"]
    old = _ENGINE.pop("engine", None)
    if old is not None and hasattr(old, "close"):
        old.close()
    engine = make_engine(cfg, model, revision)
    _STARTS[0] += 1
    _ENGINE.update(key=key, engine=engine)
    return engine


def engines_started() -> int:
    """How many engines get_engine has started in this process."""
    return _STARTS[0]


def release_engine() -> None:
    """Close the engine get_engine keeps, if any (before a process ends, or to free its memory)."""
    old = _ENGINE.pop("engine", None)
    _ENGINE.pop("key", None)
    if old is not None and hasattr(old, "close"):
        old.close()
