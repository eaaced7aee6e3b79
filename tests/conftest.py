"""Shared fixtures (tiny checkpoints of the demo model family, one vLLM engine, the SmolLM2 checkpoints, a
headless browser) and the pytest-xdist groups. What the tests share besides fixtures is in tests/helpers/.

Engines are expensive (vLLM starts in 30-60 s on two cores), so a session holds at most one, through
pipeline.engines.get_engine, which swaps it only when a test asks for another model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# The test command runs two workers on two cores, each with its own engines and subprocesses: OpenMP
# threads that spin while they wait (the default policy) burn the core the other worker needs. Set before
# anything loads torch, and inherited by every command a test starts; a value the caller set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from demo.tiny_models import TINY_RECIPE, TINY_SIZE, build_tiny_checkpoint
from demo.worlds import DEMO_BASE, ROOT

# A fixture shared by the page tests and the judge's labelling sheet: headless Chromium, one per module.
from tests.helpers.browser import browser as browser
from tests.helpers.checkpoints import cache_dir, cached_checkpoint, committed_or_cached
from tests.helpers.worlds import smollm2_build_key, world_env

# The test modules that drive a vLLM engine in the test process. The test command (--dist loadgroup) runs
# them one after another on one pytest-xdist worker: vLLM's import (about 15 s of a CPU) and each
# checkpoint's engine start are paid once, not once per worker (test_served_engine compares vLLM's server
# with that engine). Every other module is a group of its own,
# as --dist loadfile would make it (module-scoped fixtures stay on one worker). test_vllm_engine is not
# one of them: it checks that a released engine is collected, which another module's engine kept alive in
# the same process (test_loop holds one for the session) would defeat.
# In this order, so that the session's one engine (pipeline.engines.get_engine) changes checkpoint as
# seldom as it can: test_loop's own engine first and closed, then the demo checkpoints (test_demo_world
# leaves the base one running for test_runner_engine's parity tests), the chat copy, and last the tiny
# checkpoint the remaining tests share (test_lm_eval_parity's among them, which started it again on a
# worker of its own): five vLLM engine starts in the process, where the alphabetical order and a module
# engine of test_demo_world's own made seven, and an eighth on another worker.
IN_PROCESS_ENGINE = (
    "test_layers",
    "test_loop",
    "test_demo_world",
    "test_runner_engine",
    "test_ray_run",
    "test_served_engine",
    "test_lm_eval_parity",
    "test_contamination",
)
# The modules that use the SmolLM2 world's float32 checkpoints (smollm2_checkpoints): on one worker, one after
# another, the checkpoints are built once (about 40 s of a CPU), not once on each worker at the same time.
SMOLLM2_CHECKPOINTS = {"test_smollm2_world", "test_plain_world", "test_smollm2_grpo_world", "test_judge_vllm"}
# The longest groups, longest first: the first three take a few minutes of a CPU each, the others 15-50 s
# (benchmarks/bench_tests.py prints each group's CPU time); every other group takes under 15 s. The test
# command's pytest-xdist hands groups to its two workers in collection order (--no-loadscope-reorder, in
# pyproject.toml), each worker taking the next group as it nears the end of one: longest first, the short
# ones even the two workers out at the end, where one long group collected last (test_answer_reading, under
# tests/scoring/, came after almost every other) would leave the other worker idle while it runs.
LONGEST_GROUPS = (
    "test_dvc_pipeline",
    "smollm2-checkpoints",
    "vllm-in-process",
    "test_answer_reading",
    "test_delta",
    "test_shards",
    "test_tool_arm_faults",
    "test_served_faults",
    "test_trajectory",
    "test_run_arms",
)


# First: pytest-xdist reads the marks in its own hook of the same name, on each worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """xdist groups for --dist loadgroup: the in-process engine modules together, the SmolLM2 checkpoint
    modules together, any other by module."""
    grouping = getattr(config.option, "loadgroup", False)  # set on pytest-xdist's workers under loadgroup
    groups = {item: _group(item.path.stem) for item in items}
    # Stable: each module keeps its own order (its tests run top to bottom).
    items.sort(key=lambda item: (_rank(groups[item]), _module_rank(item.path.stem)))
    for item in items:
        group = groups[item]
        item.add_marker(pytest.mark.xdist_group(group))
        if grouping and hasattr(item, "_id"):
            # pytest-xdist 3.8 tells the controller an item's group by suffixing its node id, which it sets
            # as Item._nodeid; pytest 9 reads a node id from Item._id, so the suffix is set there too (else
            # every test is a group of its own and module fixtures are set up once per worker).
            from _pytest.nodeid import coerce_node_id

            item._id = coerce_node_id(f"{item.nodeid}@{group}")


def _group(module: str) -> str:
    """The xdist group of a test module."""
    if module in IN_PROCESS_ENGINE:
        return "vllm-in-process"
    return "smollm2-checkpoints" if module in SMOLLM2_CHECKPOINTS else module


def _module_rank(module: str) -> int:
    """Where a module goes within its group: the in-process engine modules in IN_PROCESS_ENGINE's order."""
    return IN_PROCESS_ENGINE.index(module) if module in IN_PROCESS_ENGINE else 0


def _rank(group: str) -> int:
    """Where a group goes in the collection: the longest first, every other after them."""
    return LONGEST_GROUPS.index(group) if group in LONGEST_GROUPS else len(LONGEST_GROUPS)


@pytest.fixture(autouse=True)
def _environment_as_it_was() -> Any:
    """Each test's changes to os.environ are undone after it.

    Starting a vLLM engine sets some twenty variables in the process (LD_PRELOAD and LD_LIBRARY_PATH among
    them), which every subprocess a later test starts would inherit: a command-line run of the transformers
    engine would then behave as it never does for a user. An engine the process keeps needs none of them
    after its start.
    """
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def tiny_checkpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained tiny checkpoint (see build_tiny_checkpoint): the committed one, or trained and cached."""
    return committed_or_cached(TINY_RECIPE, request, tmp_path_factory, build_tiny_checkpoint)


@pytest.fixture(scope="session")
def untrained_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-init tiny checkpoint: loads like a real one, for tests that never generate."""
    from demo.charmodel import new_model, save_checkpoint

    return save_checkpoint(new_model(seed=0, **TINY_SIZE), tmp_path_factory.mktemp("untrained") / "ckpt")


@pytest.fixture(scope="session")
def demo_base() -> Path | None:
    """demo/models/base when the demo world's checkpoint is there, else None."""
    return (
        DEMO_BASE
        if (DEMO_BASE / "config.json").is_file() and (DEMO_BASE / "model.safetensors").is_file()
        else None
    )


@pytest.fixture
def vllm_for() -> Any:
    """vllm_for(checkpoint_dir): the process's vLLM engine on that checkpoint (started or swapped)."""
    from pipeline.config import engine_config
    from pipeline.engines import get_engine

    return lambda path: get_engine(engine_config("vllm"), str(path))


@pytest.fixture
def vllm_engine(vllm_for: Any, tiny_checkpoint: Path) -> Any:
    """The vLLM engine on the tiny checkpoint (conf/engine/vllm.yaml settings), one per session."""
    return vllm_for(tiny_checkpoint)


@pytest.fixture(scope="session")
def smollm2_checkpoints(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """models/ with base/ and trained/ as examples/smollm2/build.py makes them: built once a session (and
    kept in pytest's cache across sessions, per build script and adapter)."""
    import subprocess
    import sys

    def build(out: Path) -> None:
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "smollm2" / "build.py"), "--models", str(out)],
            env=world_env(), capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]

    return cached_checkpoint(cache_dir(request, tmp_path_factory, f"smollm2-{smollm2_build_key()}"), build)
