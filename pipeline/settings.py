"""The settings of one generation run, made once: from the composed conf/config.yaml (the Hydra command line,
hydra.compose) or by a caller (tests, benchmarks), then handed unchanged to the run (pipeline.generate).

The run_arm, run_arms and ray_run commands all make their settings here, and word a file that could not be
written or read the same way (os_error_line). The engine's settings are typed here, by the engine's model
(pipeline.engines.settings). pipeline.resolve turns these settings into the run's resolved configuration;
the run's files are named in pipeline.run_paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.config import CONF_DIR, ConfigError, engine_config, register_swept_arms
from pipeline.engines.settings import KnownEngineSettings, engine_settings
from pipeline.run_paths import RunPaths
from pipeline.swept import params_arg


class RunnerError(RuntimeError):
    """Bad input for the runner; the message names the file, the field and the fix."""


def parse_part(text: str | None) -> tuple[int, int] | None:
    """'s/N' as (s, N), checked; None for a whole-arm run."""
    if text is None:
        return None
    try:
        s, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise RunnerError(f"part={text!r}: write it as s/N, e.g. part=0/2 (the first of two parts)") from None
    if n < 1 or not 0 <= s < n:
        raise RunnerError(f"part={text!r}: needs N >= 1 and 0 <= s < N")
    return s, n


class RunSettings(BaseModel):
    """Everything one run needs besides params.yaml (what Hydra composes from conf/), made once: frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arm: str
    # The engine: section (conf/engine/<name>.yaml), typed by its engine's model; a dict is checked here.
    engine: KnownEngineSettings = Field(default_factory=lambda: engine_settings(engine_config()))
    params: Path = Path("params.yaml")
    pins: Path = Path("pins")
    out_dir: Path = Path("generations")
    fresh: bool = False
    force: bool = False
    # "s/N": generate only part s of N (items at suite positions i with i % N == s), for a worker of a
    # sharded run (pipeline.ray_run, a SLURM array); `merge` N then writes the arm's file from N parts.
    part: str | None = None
    merge: int | None = None
    progress: bool = True
    arm_node: dict[str, Any] | None = None
    conf_dir: Path = CONF_DIR
    tool_server: dict[str, Any] | None = None  # None: conf/config.yaml tool_server

    @field_validator("engine", mode="before")
    @classmethod
    def _typed_engine(cls, value: Any) -> Any:
        # A ConfigError (one line: the conf file, the field, the fix) passes through pydantic as it is.
        return engine_settings(value) if isinstance(value, Mapping) else value


def settings_from(cfg: Any, arm_name: str, part: str | None = None) -> RunSettings:
    """RunSettings from a composed conf/config.yaml (the Hydra command line or hydra.compose); part, when
    given, wins over the composed one."""
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    return RunSettings(
        arm=arm_name,
        engine=engine_settings(node["engine"]),
        params=Path(node["params"]),
        pins=Path(node["pins"]),
        out_dir=Path(node["out_dir"]),
        fresh=bool(node["fresh"]),
        force=bool(node["force"]),
        part=part if part is not None else None if node.get("part") is None else str(node["part"]),
        merge=None if node.get("merge") is None else int(node["merge"]),
        progress=bool(node["progress"]),
        arm_node=dict(node["arm"]),
        tool_server=dict(node["tool_server"]),
    )


def compose_settings(arm: str, overrides: Sequence[str] = (), part: str | None = None) -> RunSettings:
    """RunSettings of conf/config.yaml for arm with overrides (and a part), as the command line composes."""
    from hydra import compose, initialize_config_dir

    # A swept checkpoint's arm has no conf/arm file: Hydra finds it in its store.
    register_swept_arms(params_arg(overrides))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return settings_from(compose("config", overrides=[f"arm={arm}", *overrides]), arm, part)


def os_error_line(e: OSError, out_dir: Path) -> str:
    """One line for a file that could not be written or read: which, why, and how to go on."""
    where = e.filename or out_dir
    partial = RunPaths(out_dir, arm="").partial
    kept = (
        f"; the samples already saved in {partial} are kept"
        if partial.is_dir() and any(partial.glob("*.jsonl"))
        else ""
    )
    return (
        f"cannot use {where}: {e.strerror or e}; free space or fix the folder (or pass out_dir=), then "
        f"rerun the same command{kept}"
    )


class ToolServerSettings(BaseModel):
    """conf/config.yaml tool_server: the restart budget and the tool timeout of the tool arms' MCP server."""

    model_config = ConfigDict(extra="forbid")
    max_restarts: int = Field(ge=0)
    restart_window: int = Field(ge=1)
    tool_timeout_s: float = Field(gt=0)


def tool_server_settings(
    node: Mapping[str, Any] | None = None, conf_dir: Path = CONF_DIR
) -> ToolServerSettings:
    """The tool_server settings: the composed Hydra node, else conf/config.yaml's; refusals name the field."""
    path = conf_dir / "config.yaml"
    if node is None:
        node = (yaml.safe_load(path.read_text()) or {}).get("tool_server") or {}
    try:
        return ToolServerSettings.model_validate(dict(node))
    except ValidationError as e:
        err = e.errors()[0]
        field_name = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"{path}: tool_server.{field_name}: {err['msg']}") from None
