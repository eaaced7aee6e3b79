"""Every DVC project here leaves a run's provenance records and partial shards out of its generations' hash.

They differ on every run (wall-clock times, host), so a project that hashed them would leave `dvc.lock`
changed after every `dvc repro` in a fresh clone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dvc.repo import Repo

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = sorted(p.parent for p in [ROOT / ".dvc", *ROOT.glob("examples/*/.dvc")] if p.is_dir())


def test_there_is_more_than_one_project() -> None:
    assert ROOT in PROJECTS and len(PROJECTS) >= 3, PROJECTS


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_provenance_and_partial_shards_are_not_outputs(project: Path) -> None:
    with Repo(str(project)) as repo:
        ignored = repo.dvcignore.is_ignored_file
        gens = project / "generations"
        assert ignored(str(gens / "base.provenance.json")), f"{project / '.dvcignore'}: add *.provenance.json"
        assert ignored(str(gens / ".partial" / "base.0.jsonl")), f"{project / '.dvcignore'}: add .partial/"
        assert not ignored(str(gens / "base.json"))
