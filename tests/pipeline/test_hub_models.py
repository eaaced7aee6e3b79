"""Hub models `{hf: org/name, revision: <sha>}` offline: read from the local Hugging Face cache, pinned, run.

The cache is a real huggingface_hub cache layout (models--org--name/snapshots/<sha>/) built in the test from
the committed tiny checkpoint, under a temporary HF_HUB_CACHE; nothing reaches the hub.
"""

from __future__ import annotations

import json
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
from pipeline.config import ModelRef, engine_config, load_arm, load_params
from pipeline.hub import model_dir
from pipeline.pins import PinError, check_pins, compute_pins, pinned_index, suite_items, write_pins
from pipeline.plan import load_tokenizer
from tests.helpers.hub import CHECKPOINT, fake_hub_cache

BASE_SHA = "0123456789abcdef0123456789abcdef01234567"
TRAINED_SHA = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HF_HUB_CACHE for this test (environment and huggingface_hub's constant, read at import)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def hub_params(path: Path, suite: Path, models: dict[str, tuple[str, str]]) -> Path:
    """A params.yaml whose models are hub models {hf, revision}."""
    params = {
        "suite": {"path": str(suite), "name": "s", "revision": "1"},
        "models": {k: {"hf": repo, "revision": sha} for k, (repo, sha) in models.items()},
        "protocol": {"k": 2, "max_tokens": 8, "temperature": 1.0, "top_p": 1.0, "seed": 1},
        "arms": ["base"],
    }
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(it) + "\n" for it in arithmetic_items(3)))
    return suite


def test_a_cached_hub_model_is_pinned_by_commit_and_loaded_from_its_snapshot(
    tmp_path: Path, hub_cache: Path
) -> None:
    snapshot = fake_hub_cache(hub_cache, "org/tiny", BASE_SHA)
    params = load_params(
        hub_params(tmp_path / "params.yaml", _suite(tmp_path), {"base": ("org/tiny", BASE_SHA)})
    )
    pins = compute_pins(params)
    assert pins["inputs"]["models"]["base"] == {"hf": "org/tiny", "revision": BASE_SHA}
    ref = params.models["base"]
    assert Path(model_dir(ref, "base")) == snapshot
    # The tokenizer the plan renders prompts with is the snapshot's own.
    tok = load_tokenizer(model_dir(ref, "base"))
    assert Path(tok.name_or_path) == snapshot
    write_pins(params, tmp_path / "pins")
    assert (
        check_pins(
            params, tmp_path / "pins", load_arm("base"), pinned_index(params), suite_items(params)
        ).flat["model"]
        == f"hf:org/tiny@{BASE_SHA}"
    )


def test_a_hub_model_missing_from_the_cache_is_one_line_with_the_fetch_command(
    tmp_path: Path, hub_cache: Path
) -> None:
    # Another commit of the same repository is cached: only the pinned one counts.
    fake_hub_cache(hub_cache, "org/tiny", TRAINED_SHA)
    params_path = hub_params(tmp_path / "params.yaml", _suite(tmp_path), {"base": ("org/tiny", BASE_SHA)})
    cmd = ["pipeline.pins", "--params", str(params_path), "--out", str(tmp_path / "pins")]
    done = subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "models.base: org/tiny at revision " + BASE_SHA in lines[0]
    assert f"`hf download org/tiny --revision {BASE_SHA}`" in lines[0]
    assert "Traceback" not in done.stderr and not (tmp_path / "pins").exists()


def test_a_hub_model_gone_from_the_cache_after_pinning_is_refused_before_generating(
    tmp_path: Path, hub_cache: Path
) -> None:
    snapshot = fake_hub_cache(hub_cache, "org/tiny", BASE_SHA)
    params = load_params(
        hub_params(tmp_path / "params.yaml", _suite(tmp_path), {"base": ("org/tiny", BASE_SHA)})
    )
    write_pins(params, tmp_path / "pins")
    shutil.rmtree(snapshot)
    with pytest.raises(PinError, match=rf"org/tiny at revision {BASE_SHA} is not in the local Hugging Face"):
        check_pins(params, tmp_path / "pins", load_arm("base"), pinned_index(params), suite_items(params))


def test_a_branch_or_tag_stays_refused() -> None:
    with pytest.raises(ValueError, match="'v1.0' is not a full 40-hex commit sha"):
        ModelRef(hf="org/tiny", revision="v1.0")


@pytest.mark.slow
def test_an_arm_generates_from_the_cached_snapshot(tmp_path: Path, hub_cache: Path, capsys) -> None:
    from contract.generations import load_generations
    from pipeline.generate import run

    snapshot = fake_hub_cache(hub_cache, "org/tiny", BASE_SHA)
    world = make_world(tmp_path / "w", {"base": CHECKPOINT}, arithmetic_items(2), max_tokens=8)
    raw = yaml.safe_load(world.params.read_text())
    raw["models"] = {"base": {"hf": "org/tiny", "revision": BASE_SHA}}
    world.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    world.repin()
    dest = run(world.settings("base", engine=engine_config("hf")))
    assert f"starting the hf engine on {snapshot}" in capsys.readouterr().out
    gens = load_generations(dest)
    assert gens.model == f"org/tiny@{BASE_SHA}" and gens.pins["model"] == f"hf:org/tiny@{BASE_SHA}"
    assert all(len(it.samples) == 2 for it in gens.items)


def _env(cache: Path) -> dict[str, str]:
    """The environment of a DVC run: this interpreter's `python`, the given hub cache, never the network."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_CACHE"] = str(cache)
    env["HF_HUB_OFFLINE"] = "1"
    return env


@pytest.mark.slow
def test_dvc_parses_and_lists_every_stage_with_two_hub_models(tmp_path: Path) -> None:
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    params_path = clone / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params["models"] = {
        "base": {"hf": "org/tiny", "revision": BASE_SHA},
        "trained": {"hf": "org/tiny-grpo", "revision": TRAINED_SHA},
    }
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    fake_hub_cache(cache, "org/tiny", BASE_SHA)
    fake_hub_cache(cache, "org/tiny-grpo", TRAINED_SHA)

    def dvc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "dvc", *args], cwd=clone, env=env or _env(cache),
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    stages = set(yaml.safe_load((clone / "dvc.yaml").read_text())["stages"]) - {"score"}
    every = stages | {f"score@{a}" for a in params["arms"]}
    listed = dvc("stage", "list", "--name-only")
    assert listed.returncode == 0, listed.stderr
    assert set(listed.stdout.split()) == every
    # A fresh clone: the stages whose outputs are not committed are out of date; the pin stage names the
    # changed models (the report stage's inputs and outputs are committed: it is up to date by itself).
    status = dvc("status", "--json")
    assert status.returncode == 0, status.stderr
    stale = json.loads(status.stdout)
    assert every - {"report"} <= set(stale) <= every, stale
    assert stale["pin"][0]["changed deps"]["params.yaml"] == {"models": "modified"}
    # A fresh clone has no generations yet: DVC's dry run hashes the dependencies of stages it did not run
    # unless -f skips its run-cache lookup, so the clone lists every stage with -f.
    dry = dvc("repro", "--dry", "-f")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert set(re.findall(r"Running stage '([^']+)'", dry.stdout)) == every
    # The pin stage runs for real and pins both hub models by commit.
    pinned = dvc("repro", "pin")
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    models = json.loads((clone / "pins" / "inputs.json").read_text())["models"]
    assert models == {
        "base": {"hf": "org/tiny", "revision": BASE_SHA},
        "trained": {"hf": "org/tiny-grpo", "revision": TRAINED_SHA},
    }
    # On a machine whose cache lacks the trained model, the pin stage stops with the one line.
    shutil.rmtree(cache / "models--org--tiny-grpo")
    missing = dvc("repro", "pin")
    assert missing.returncode != 0
    assert f"`hf download org/tiny-grpo --revision {TRAINED_SHA}`" in missing.stdout + missing.stderr
