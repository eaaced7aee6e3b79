"""The typed settings of each engine (conf/engine/<name>.yaml), checked where the `engine:` section is read.

`engine_settings` makes the composed `engine:` node (or conf/engine/<name>.yaml as a dict) the model of the
engine it names, refusing a bad value in one line that names the file, the field and the fix; the runner and
the engines then read typed attributes. The defaults are the conf files' own (a test holds them equal).
Numbers the conf files write as whole numbers stay whole (`Number`): the settings are hashed into a run's
inputs (`record`), and 1 and 1.0 hash differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from pipeline.config import ConfigError

Number = int | float
Auto = Literal["auto"]


class EngineSettings(BaseModel):
    """What every engine's settings hold: its name, the runner's chunk size and the engine's log level."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    # Requests per engine call: the runner's own (it shapes batches, not the engine).
    chunk_size: int = Field(4096, ge=1)

    # Keys that say how to reach a server, not what it generates: out of a run's fingerprint, so a run
    # started on one server resumes on another of the same model.
    SERVING_KEYS: ClassVar[frozenset[str]] = frozenset()

    def record(self) -> dict[str, Any]:
        """The settings a run's fingerprint holds: all but the log level (it changes what is printed) and
        how a server is reached (SERVING_KEYS), max_model_len auto recorded as null, the earlier default it
        replaces: neither changes a text, since auto always holds the run's longest prompt and budget."""
        record = self.model_dump(exclude={"log_level", *self.SERVING_KEYS})
        if record.get("max_model_len") == "auto":
            record["max_model_len"] = None
        return record

    def engine_only(self) -> dict[str, Any]:
        """The settings that change the started engine (all but chunk_size): a new chunk size reuses it."""
        return self.model_dump(exclude={"chunk_size"})

    def fits_context(self) -> bool:
        """Whether max_model_len auto is fitted to the run's plan (pipeline.engines.fit_context)."""
        return False


class VllmArgs(EngineSettings):
    """The vllm.LLM settings (conf/engine/vllm.yaml explains each): the offline engine's, and those the
    openai engine starts its own server with."""

    dtype: str = "auto"
    seed: int = 0
    # vLLM's own log: error (quiet), warning, info or debug.
    log_level: str = "error"
    max_model_len: Annotated[int, Field(ge=1)] | Auto | None = "auto"
    enable_prefix_caching: bool = True
    enable_chunked_prefill: bool | Auto = "auto"
    gpu_memory_utilization: Number = Field(0.9, gt=0, le=1)
    tensor_parallel_size: int = Field(1, ge=1)
    cpu_kvcache_space_gib: Number = Field(1, gt=0)
    batch_invariant: bool = False
    enforce_eager: bool | Auto = "auto"
    llm_kwargs: dict[str, Any] = Field(default_factory=dict)

    def llm_args(self) -> dict[str, Any]:
        """The keyword arguments of pipeline.engines.vllm_engine.llm_settings."""
        return self.model_dump(include=set(LLM_ARGS))


# The settings llm_settings takes (the others are the runner's, the log level or how to reach a server).
LLM_ARGS = tuple(k for k in VllmArgs.model_fields if k not in {*EngineSettings.model_fields, "log_level"})


class VllmSettings(VllmArgs):
    """conf/engine/vllm.yaml: offline vllm.LLM in the runner's process."""

    name: Literal["vllm"] = "vllm"
    # Requests per engine batch within a chunk (the offline engine's sub-batches).
    save_every: int = Field(4096, ge=1)

    def fits_context(self) -> bool:
        """The offline engine sizes its context itself."""
        return True


class HfSettings(EngineSettings):
    """conf/engine/hf.yaml: transformers generate, one request at a time."""

    name: Literal["hf"] = "hf"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = "auto"
    chunk_size: int = Field(64, ge=1)


class OpenAISettings(VllmArgs):
    """conf/engine/openai.yaml: an OpenAI-compatible server, the runner's own (base_url null, started with
    the vllm settings) or attached ones."""

    name: Literal["openai"] = "openai"
    base_url: str | list[str] | dict[str, str | list[str] | None] | None = None
    served_model: str | None = None
    api_key_env: str | None = None
    concurrency: int = Field(256, ge=1)
    timeout_s: Number = Field(3600, gt=0)
    retries: int = Field(3, ge=0)
    start_timeout_s: Number = Field(600, gt=0)

    SERVING_KEYS: ClassVar[frozenset[str]] = frozenset(
        {"base_url", "served_model", "api_key_env", "concurrency", "timeout_s", "retries", "start_timeout_s"}
    )

    def fits_context(self) -> bool:
        """The runner's own server is sized as the offline engine; an attached server has its own."""
        return self.base_url is None


# The settings of one of the known engines (pipeline.engines.ENGINES starts each).
KnownEngineSettings = VllmSettings | HfSettings | OpenAISettings
_ADAPTER: TypeAdapter[KnownEngineSettings] = TypeAdapter(
    Annotated[KnownEngineSettings, Field(discriminator="name")]
)
ENGINE_NAMES = ("vllm", "hf", "openai")


def engine_settings(
    node: Mapping[str, Any] | EngineSettings, where: str | None = None
) -> KnownEngineSettings:
    """The typed settings of the engine node names (conf/engine/<name>.yaml); refused in one line naming
    the file (where, when the node holds settings of another file too), the field and the fix."""
    if isinstance(node, KnownEngineSettings):
        return node
    if isinstance(node, EngineSettings):
        raise TypeError(f"{type(node).__name__}: not the settings of a known engine")
    name = node.get("name")
    if name not in ENGINE_NAMES:
        raise ConfigError(
            f"engine {name!r} is unknown; known engines: {', '.join(ENGINE_NAMES)} (conf/engine/<name>.yaml, "
            "chosen with engine=<name>)"
        )
    try:
        return _ADAPTER.validate_python(dict(node))
    except ValidationError as e:
        fix = "fix it there" if where else "fix it there or on the command line (engine.<field>=...)"
        raise ConfigError(_refusal(str(name), e, where or f"conf/engine/{name}.yaml", fix)) from None


def _refusal(name: str, e: ValidationError, where: str, fix: str) -> str:
    """One line for the first bad field of the settings of engine name, read from where."""
    err = e.errors()[0]
    # The field alone: the location starts with the engine's name (the union's tag) and may go on with
    # pydantic's names of a field's union members, which are no settings.
    loc = list(err["loc"][1:] if err["loc"][:1] == (name,) else err["loc"])
    field = str(loc[0]) if loc else "engine"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return f"{where}: {field}: not a setting of the {name} engine; remove it (or fix its spelling)"
    return f"{where}: {field} = {err.get('input')!r}: {msg}; {fix.replace('<field>', field)}"
