"""Every DVC project here keeps a run's own files out of its generations' hash, and out of git.

A run's provenance records lie beside the generations files and differ on every run (wall-clock times, host):
a project that hashed them would leave `dvc.lock` changed after every `dvc repro` in a fresh clone. The run's
partial shards, finished parts and kept links lie in <generations>.work/ (pipeline.run_paths.RunPaths), beside
the output: never hashed, never deleted by a `dvc checkout --force`, and never shown by `git status`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dvc.repo import Repo

from contract.provenance import provenance_path
from pipeline.run_paths import RunPaths

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = sorted(p.parent for p in [ROOT / ".dvc", *ROOT.glob("examples/*/.dvc")] if p.is_dir())


def run_files(generations: Path) -> list[Path]:
    """The files a run of arm `base` keeps of its own while it generates into generations/."""
    whole, part = RunPaths(generations, "base"), RunPaths(generations, "base", (0, 2))
    return [whole.shard, part.part_file, whole.kept_dest]


def test_there_is_more_than_one_project() -> None:
    assert ROOT in PROJECTS and len(PROJECTS) >= 3, PROJECTS


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_provenance_records_are_not_outputs(project: Path) -> None:
    gens = project / "generations"
    with Repo(str(project)) as repo:
        ignored = repo.dvcignore.is_ignored_file
        record = provenance_path(gens / "base.json")
        assert ignored(str(record)), f"{project / '.dvcignore'}: add *{record.name.removeprefix('base')}"
        assert not ignored(str(gens / "base.json"))


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_runs_own_files_lie_outside_every_output_and_out_of_git(project: Path) -> None:
    gens = project / "generations"
    with Repo(str(project)) as repo:
        outs = [Path(out.fs_path) for out in repo.index.outs]
    assert gens in outs, f"{project / 'dvc.yaml'}: no stage writes generations/ ({outs})"
    for path in run_files(gens):
        inside = [out for out in outs if path.is_relative_to(out)]
        assert not inside, f"{path.relative_to(ROOT)} is inside the DVC output {inside[0].relative_to(ROOT)}"
        shown = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=project).returncode
        assert shown == 0, f"{project / '.gitignore'}: add /{path.relative_to(project).parts[0]}/"
