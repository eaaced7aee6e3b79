"""The settings of one generation run (RunSettings), made once from the composed conf/config.yaml.

Made from the composed conf/config.yaml (the Hydra command line, hydra.compose) or by a caller (tests,
benchmarks), then handed unchanged to the run (pipeline.generate).

The run_arm, run_arms and ray_run commands all make their settings here, and word a file that could not be
written or read the same way (os_error_line). A part's settings name its shard, lock and finished file
(part_suffix, part_path). pipeline.resolve turns these settings into the run's resolved configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.config import CONF_DIR, ConfigError, engine_config, register_swept_arms
from pipeline.swept import params_arg


def work_dir(out_dir: Path) -> Path:
    """The run's own files beside out_dir, never inside it: <out_dir>.work/ (partial shards, finished
    parts, kept links of the finished files).

    DVC owns out_dir as one output: a `dvc checkout --force` that cannot restore it from the cache deletes the
    whole folder, so what a resume needs must live where DVC never deletes (pipeline.keep).
    """
    return out_dir.parent / f"{out_dir.name}.work"


def partial_dir(out_dir: Path) -> Path:
    """Where a run appends its finished samples (<out_dir>.work/partial/<arm>.jsonl) and keeps its lock."""
    return work_dir(out_dir) / "partial"


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


def part_suffix(part: tuple[int, int] | None) -> str:
    """'.part-0-of-2' for a part, '' for a whole arm: in the names of a part's shard, lock and file."""
    return "" if part is None else f".part-{part[0]}-of-{part[1]}"


def part_path(out_dir: Path, arm: str, part: tuple[int, int]) -> Path:
    """Where a finished part waits for the merge: <out_dir>.work/parts/<arm>.part-s-of-N.jsonl."""
    return work_dir(out_dir) / "parts" / f"{arm}{part_suffix(part)}.jsonl"


@dataclass
class RunSettings:
    """Everything one run needs besides params.yaml (what Hydra composes from conf/)."""

    arm: str
    engine: dict[str, Any] = field(default_factory=engine_config)
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

    @property
    def dest(self) -> Path:
        """The arm's generations file: <out_dir>/<arm>.json."""
        return self.out_dir / f"{self.arm}.json"


def settings_from(cfg: Any, arm_name: str) -> RunSettings:
    """RunSettings from a composed conf/config.yaml (the Hydra command line or hydra.compose)."""
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    return RunSettings(
        arm=arm_name,
        engine=dict(node["engine"]),
        params=Path(node["params"]),
        pins=Path(node["pins"]),
        out_dir=Path(node["out_dir"]),
        fresh=bool(node["fresh"]),
        force=bool(node["force"]),
        part=None if node.get("part") is None else str(node["part"]),
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
        settings = settings_from(compose("config", overrides=[f"arm={arm}", *overrides]), arm)
    if part is not None:
        settings.part = part
    return settings


def os_error_line(e: OSError, out_dir: Path) -> str:
    """One line for a file that could not be written or read: which, why, and how to go on."""
    where = e.filename or out_dir
    partial = partial_dir(out_dir)
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
