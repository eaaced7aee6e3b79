"""The settings of one generation run (RunSettings), made once from the composed conf/config.yaml.

Made from the composed conf/config.yaml (the Hydra command line, hydra.compose) or by a caller (tests,
benchmarks), then handed unchanged to the run (pipeline.generate).

The run_arm, run_arms and ray_run commands all make their settings here, and word a file that could not be
written or read the same way (os_error_line). The engine's settings are typed here, by the engine's model
(pipeline.engines.settings). pipeline.resolve turns these settings into the run's resolved configuration;
the run's files are named in pipeline.run_paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.config import CONF_DIR, engine_config, register_swept_arms
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
    # Part s of N (given as "s/N"): generate only the items at suite positions i with i % N == s, for a
    # worker of a sharded run (pipeline.ray_run, a SLURM array); `merge` N then writes the arm's file from
    # N parts. None: the whole arm.
    part: tuple[int, int] | None = None
    merge: int | None = None
    progress: bool = True
    arm_node: dict[str, Any] | None = None
    conf_dir: Path = CONF_DIR
    tool_server: dict[str, Any] | None = None  # None: conf/config.yaml tool_server

    # A ConfigError or RunnerError (one line: the file, the field, the fix) passes through pydantic as it is.
    @field_validator("engine", mode="before")
    @classmethod
    def _typed_engine(cls, value: Any) -> Any:
        return engine_settings(value) if isinstance(value, Mapping) else value

    @field_validator("part", mode="before")
    @classmethod
    def _parsed_part(cls, value: Any) -> Any:
        return parse_part(value) if isinstance(value, str) else value


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
    partial = RunPaths(out_dir, arm="").partial  # the folder every arm's shard is in: no arm named
    kept = (
        f"; the samples already saved in {partial} are kept"
        if partial.is_dir() and any(partial.glob("*.jsonl"))
        else ""
    )
    return (
        f"cannot use {where}: {e.strerror or e}; free space or fix the folder (or pass out_dir=), then "
        f"rerun the same command{kept}"
    )
