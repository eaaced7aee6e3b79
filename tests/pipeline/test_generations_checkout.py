"""`dvc checkout --force` without a cache deletes the whole generations folder; nothing of a run is lost.

Real DVC over the real generate command (python -m pipeline.run_arms, the transformers engine on an
untrained tiny checkpoint, two arms): the cache is moved away and one arm's file is gone, `dvc checkout`
refuses and `dvc checkout --force` deletes the folder. The partial shards live outside it, and the next
`dvc repro` puts the intact arm back from its kept link without an engine and regenerates only the arm
whose file is really gone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world
from pipeline.run_paths import RunPaths

pytestmark = pytest.mark.slow


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def _dvc(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, sys.executable, "-m", "dvc", *args)


def test_a_forced_checkout_without_cache_loses_no_arm_and_no_resume_shard(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(
        tmp_path / "w",
        {"base": untrained_checkpoint, "trained": untrained_checkpoint},
        arithmetic_items(3),
        k=2,
        max_tokens=4,
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    cmd = (
        f"python -m pipeline.run_arms --arms base,trained engine=hf progress=false params={w.params} "
        f"pins={w.pins} out_dir=generations"
    )
    stage = {"cmd": cmd, "outs": [{"generations": {"persist": True}}]}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"generate": stage}}))
    (repo / ".gitignore").write_text("generations.work/\n")
    assert _run(repo, "git", "init", "-q").returncode == 0
    assert _dvc(repo, "init", "-q").returncode == 0
    first = _dvc(repo, "repro")
    assert first.returncode == 0, first.stdout + first.stderr
    assert _run(repo, "git", "add", "-A").returncode == 0
    commit = _run(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run")
    assert commit.returncode == 0, commit.stderr
    gens = repo / "generations"
    trained = (gens / "trained.json").read_bytes()
    # A run of a third arm that was interrupted: its resume shard.
    shard = RunPaths(gens, "other").shard
    shard.write_text('{"fingerprint": {}}\n')

    shutil.move(repo / ".dvc" / "cache", tmp_path / "cache")
    shutil.move(gens / "base.json", tmp_path / "base.json")
    RunPaths(gens, "base").kept_dest.unlink()  # gone for good: only this arm must be generated again
    assert _dvc(repo, "checkout").returncode != 0
    forced = _dvc(repo, "checkout", "--force")
    assert forced.returncode != 0  # the cache cannot restore base.json
    assert shard.is_file(), "a resume shard was deleted"
    assert RunPaths(gens, "trained").kept_dest.read_bytes() == trained

    status = _run(repo, sys.executable, *cmd.split()[1:], "--status")
    assert status.returncode == 0, status.stderr
    assert re.search(
        r"^  trained +up to date \(put back from .*kept/trained.json when run\)$", status.stdout, re.M
    )
    assert re.search(r"^  base +to generate: not generated yet$", status.stdout, re.M), status.stdout
    assert not (gens / "trained.json").exists()  # --status writes nothing

    again = _dvc(repo, "repro")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "run_arm: trained: put generations/trained.json back" in again.stdout, again.stdout
    assert "trained: up to date" in again.stdout and "base: generating" in again.stdout, again.stdout
    assert "run_arms: done; 1 engine started" in again.stdout, again.stdout
    assert (gens / "trained.json").read_bytes() == trained
    assert (gens / "trained.provenance.json").is_file()
    assert shard.is_file()
