"""Whether an arm needs generating: its file's inputs compared with the run's.

Every generations file records `inputs_sha256`, the sha256 of what its generation read (pipeline.inputs: the
arm's pin file, the arm, the protocol and the engine settings). A file that loads and has the inputs of this
run is up to date; anything else (missing, stale, unreadable, other inputs) is generated, and the reason is
said. The config and pins are checked before, once, when the run is resolved (pipeline.resolve).
"""

from __future__ import annotations

from pathlib import Path

from contract.generations import GenerationsError, StaleGenerations, load_generations
from pipeline.resolve import ResolvedRun


def up_to_date(dest: Path, inputs: str) -> str | None:
    """Why dest cannot be reused for these inputs, or None when it can (it loads and has them)."""
    if not dest.is_file():
        return "not generated yet"
    try:
        old = load_generations(dest)
    except StaleGenerations as e:
        return f"stale ({e})"
    except GenerationsError as e:
        return f"unreadable ({e})"
    if old.inputs_sha256 != inputs:
        return "its inputs changed"
    return None


def why_stale(run: ResolvedRun) -> str | None:
    """Why the run's arm is to be generated (force=true, or why its file cannot be reused); None: current."""
    return "force=true" if run.settings.force else up_to_date(run.paths.dest, run.inputs)


def reuse(run: ResolvedRun) -> Path:
    """Say that an arm's generations file is up to date, and hand it back."""
    dest = run.paths.dest
    print(f"run_arm: {run.arm.name}: up to date ({dest} has these inputs; force=true regenerates it)")
    return dest
