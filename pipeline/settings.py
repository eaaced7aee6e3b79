"""The settings of one generation run, made once: from the composed conf/config.yaml (the Hydra command line,
hydra.compose) or by a caller (tests, benchmarks), then handed unchanged to the run (pipeline.generate).

The run_arm, run_arms and ray_run commands all make their settings here, and word a file that could not be
written or read the same way (os_error_line). A tool arm's run holds one tool session (arms.tools.session)
under the budget of its settings' tool_server (tool_session).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config import CONF_DIR, engine_config, register_swept_arms, tool_server_settings


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

    register_swept_arms()  # a swept checkpoint's arm has no conf/arm file: Hydra finds it in its store
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


@contextmanager
def tool_session(settings: RunSettings, arm: str) -> Iterator[Any]:
    """The run's tool session (arms.tools.session.open_tools) under settings' tool_server budget.

    A server that does not start, or dies beyond the budget, becomes the one-line RunnerError that says
    how to resume.
    """
    from arms.tools.session import ToolSessionError, open_tools

    cfg = tool_server_settings(settings.tool_server, settings.conf_dir)
    try:
        with open_tools(cfg.tool_timeout_s, cfg.max_restarts, cfg.restart_window) as client:
            yield client
    except ToolSessionError as e:
        if e.deaths is None:
            raise RunnerError(str(e)) from None
        # A part's own shard and command (pipeline.parts.part_suffix spells the same name).
        part = settings.part
        suffix = "" if part is None else ".part-{}-of-{}".format(*(int(x) for x in part.split("/")))
        shard = partial_dir(settings.out_dir) / f"{arm}{suffix}.jsonl"
        again = f"arm={arm}" if part is None else f"arm={arm} part={part}"
        raise RunnerError(
            f"tool server died {e.deaths} times; rerun `python -m pipeline.run_arm {again}` to resume "
            f"({e}; the finished samples are kept in {shard}; conf/config.yaml tool_server sets the budget)"
        ) from None
