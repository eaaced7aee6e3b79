"""One run's inputs, read once (resolve) into one frozen ResolvedRun that every later step takes.

The composed settings (pipeline.settings) are made into one frozen object holding the arm, params.yaml, the
checked pins and the run's inputs hash, what its prompts are made of (model folder, prompt template, few-shot
examples, retrieval index), the tool server's budget and the part.

Staleness, planning, generation, merging and provenance take this object and read no file of configuration
again: the arm file, params.yaml, the arm's pin file and the chat template are each read once per run. The
run's files (pipeline.run_paths) and its resume command come with it, so every message names the files the
run writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contract.arm import ArmSpec
from contract.files import output_dir
from pipeline.config import CONF_DIR, ConfigError, Params, arms_of, load_arm, load_params
from pipeline.inputs import inputs_sha256
from pipeline.pins import check_pins, pinned_index, suite_items
from pipeline.plan import Prompting, check_matched_prompting, prompt_formats, read_prompting
from pipeline.run_paths import RunPaths
from pipeline.settings import RunnerError, RunSettings


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


@dataclass(frozen=True)
class ResolvedRun:
    """Everything one run reads, read and checked once (module docstring)."""

    settings: RunSettings
    arm: ArmSpec
    params: Params
    pins: dict[str, str]
    inputs: str
    prompting: Prompting
    # conf/config.yaml tool_server of a tool arm (None for the others, which start no server).
    tool_server: ToolServerSettings | None

    @property
    def part(self) -> tuple[int, int] | None:
        """Part s of N of the arm (RunSettings.part), None for the whole arm."""
        return self.settings.part

    @property
    def paths(self) -> RunPaths:
        """The run's files (pipeline.run_paths): generations file, shard, lock, part file, kept links."""
        return RunPaths(self.settings.out_dir, self.arm.name, self.part)

    @property
    def command(self) -> str:
        """The command that runs this arm (and part) again, to resume it."""
        part = "" if self.part is None else f" part={self.part[0]}/{self.part[1]}"
        return f"python -m pipeline.run_arm arm={self.arm.name}{part}"


def resolve(settings: RunSettings, *, matched_prompting: bool) -> ResolvedRun:
    """Read and check everything the run of settings reads; refusals name the file, the field and the fix.

    matched_prompting: also refuse when params.yaml's arms would prompt their models in different formats
    (the run_arm command checks it per arm; run_arms checks it once for all its arms).
    """
    # The arm first (its own refusals come before the params file's).
    arm = load_arm(settings.arm, settings.conf_dir, settings.arm_node, settings.params)
    params = load_params(settings.params)
    if matched_prompting:
        # Before any engine starts: this arm's model must be prompted in the format of the others'.
        others = [
            load_arm(a, settings.conf_dir, params=settings.params)
            for a in arms_of(params, settings.conf_dir)
            if a != arm.name
        ]
        formats = check_matched_prompting(params, [arm, *others])
    else:
        formats = prompt_formats(params, [arm])
    output_dir(settings.out_dir, "out_dir")
    index = pinned_index(params) if arm.retrieval else None
    items = suite_items(params)
    pins = check_pins(params, settings.pins, arm, index, items, settings.conf_dir)
    inputs = inputs_sha256(arm, params, pins.file_sha256, settings.engine)
    prompting = read_prompting(params, arm, index, items, formats[arm.model])
    tools = tool_server_settings(settings.tool_server, settings.conf_dir) if arm.tools else None
    return ResolvedRun(settings, arm, params, pins.flat, inputs, prompting, tools)


@contextmanager
def tool_session(run: ResolvedRun) -> Iterator[Any]:
    """The run's tool session (augment.tools.session.open_tools) under its tool_server budget.

    A server that does not start, or dies beyond the budget, becomes the one-line RunnerError that says
    how to resume: the run's own command (with its part) and the shard that keeps its finished samples.
    """
    from augment.tools.session import ToolSessionError, open_tools

    cfg = run.tool_server
    if cfg is None:
        raise RunnerError(
            f"arm {run.arm.name!r} uses no tools (conf/arm/{run.arm.name}.yaml): no tool session"
        )
    try:
        with open_tools(cfg.tool_timeout_s, cfg.max_restarts, cfg.restart_window) as client:
            yield client
    except ToolSessionError as e:
        if e.deaths is None:
            raise RunnerError(str(e)) from None
        raise RunnerError(
            f"tool server died {e.deaths} times; rerun `{run.command}` to resume ({e}; the finished "
            f"samples are kept in {run.paths.shard}; conf/config.yaml tool_server sets the budget)"
        ) from None
