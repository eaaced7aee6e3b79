"""One run's inputs, read once (resolve) into one frozen ResolvedRun that every later step takes.

The composed settings (pipeline.settings) are made into one frozen object holding the arm, params.yaml, the
checked pins and the run's inputs hash, what its prompts are made of (model folder, prompt template, few-shot
examples, retrieval index), the tool server's budget and the part.

Staleness, planning, generation, merging and provenance take this object and read no file of configuration
again: the arm file, params.yaml and the arm's pin file are each read once per run. The run's own files are
named here too (its shard, lock and resume command), so every message names the files the run writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.files import output_dir
from pipeline.config import Params, arms_of, load_arm, load_params
from pipeline.pins import check_pins, pinned_index, suite_items
from pipeline.plan import Prompting, check_matched_prompting, read_prompting
from pipeline.settings import (
    RunnerError,
    RunSettings,
    ToolServerSettings,
    parse_part,
    part_suffix,
    partial_dir,
    tool_server_settings,
)
from pipeline.staleness import inputs_sha256


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
    part: tuple[int, int] | None

    @property
    def dest(self) -> Path:
        """The arm's generations file: <out_dir>/<arm>.json."""
        return self.settings.out_dir / f"{self.arm.name}.json"

    @property
    def shard(self) -> Path:
        """Where the run appends its finished samples: <out_dir>.work/partial/<arm>[.part-s-of-N].jsonl."""
        return partial_dir(self.settings.out_dir) / f"{self.arm.name}{part_suffix(self.part)}.jsonl"

    @property
    def lock(self) -> Path:
        """The lock that keeps a second run of the same arm (and part) out of the same folder."""
        return partial_dir(self.settings.out_dir) / f"{self.arm.name}{part_suffix(self.part)}.lock"

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
        check_matched_prompting(params, [arm, *others])
    part = parse_part(settings.part)
    output_dir(settings.out_dir, "out_dir")
    index = pinned_index(params) if arm.retrieval else None
    items = suite_items(params)
    pins = check_pins(params, settings.pins, arm, index, items, settings.conf_dir)
    inputs = inputs_sha256(arm, params, pins.file_sha256, settings.engine)
    prompting = read_prompting(params, arm, index, items)
    tools = tool_server_settings(settings.tool_server, settings.conf_dir) if arm.tools else None
    return ResolvedRun(settings, arm, params, pins.flat, inputs, prompting, tools, part)


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
            f"samples are kept in {run.shard}; conf/config.yaml tool_server sets the budget)"
        ) from None
