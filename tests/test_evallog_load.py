"""contract.evallog.load on logs with samples: every validator runs, and the cyclic collector stays out.

A log with samples is about a million small Python objects. Left to the collector, each collection while
they are built traverses all built so far, and every later collection traverses them again; load() builds
them with the collector paused and freezes them afterwards. These tests count the collections.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_logs import arm_log
from contract.atomic import atomic_write
from contract.evallog import EvalLogError, load

N_ITEMS, K = 1_500, 16


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of N_ITEMS x K with every sample, written as the scorer writes one."""
    logit = np.random.default_rng(0).normal(0.0, 1.5, N_ITEMS)
    log = arm_log("base", N_ITEMS, K, False, logit, seed=1)
    path = tmp_path_factory.mktemp("logs") / "base.json"
    atomic_write(path, log.model_dump_json(indent=1, exclude_none=True) + "\n")
    return path


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every cyclic collection that starts while the test runs; unfreezes afterwards."""
    started: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
        gc.enable()


def test_loading_a_log_with_samples_runs_no_collection(log_file: Path, collections: list[int]) -> None:
    frozen_before = gc.get_freeze_count()
    log = load(log_file)
    assert collections == []
    assert len(log.items) == N_ITEMS and all(len(it.samples or []) == K for it in log.items)
    # Every sample record (and its dict) is out of reach of later collections.
    assert gc.get_freeze_count() - frozen_before >= N_ITEMS * K
    assert gc.isenabled()


def test_later_collections_do_not_traverse_the_loaded_log(log_file: Path, collections: list[int]) -> None:
    log = load(log_file)
    # gc.get_objects() lists what collections traverse; the frozen generation is not among them.
    tracked = {id(o) for o in gc.get_objects()}
    records = [s for it in log.items for s in it.samples or []]
    assert len(records) == N_ITEMS * K
    assert not any(id(s) in tracked or id(s.__dict__) in tracked for s in records)
    assert id(log) not in tracked and id(log.items) not in tracked


@pytest.mark.parametrize("enabled", [True, False])
def test_load_leaves_the_collector_as_it_found_it(
    log_file: Path, collections: list[int], enabled: bool
) -> None:
    if not enabled:
        gc.disable()
    load(log_file)
    assert gc.isenabled() is enabled


def test_a_failing_log_is_worded_freezes_nothing_and_restores_the_collector(
    log_file: Path, tmp_path: Path, collections: list[int]
) -> None:
    raw = json.loads(log_file.read_text())
    raw["items"][7]["samples"][3]["score"] = 1.0 - raw["items"][7]["scores"][3]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    frozen_before = gc.get_freeze_count()
    with pytest.raises(EvalLogError) as e:
        load(bad)
    assert str(e.value).startswith(f"{bad}: item 'q000007': ")
    assert "samples[3].score" in str(e.value)
    assert gc.get_freeze_count() == frozen_before
    assert gc.isenabled()


def test_load_keeps_every_validator_of_the_log(log_file: Path, tmp_path: Path) -> None:
    raw = json.loads(log_file.read_text())
    cases = {
        "scores[2] = 1.5 is not a finite number in [0, 1]": ("items", 4, "scores", 2, 1.5),
        "samples[5].index: is 9": ("items", 2, "samples", 5, "index", 9),
        "gen_tokens[1] is": ("items", 3, "samples", 1, "gen_tokens", 10_000),
    }
    for want, (*where, value) in cases.items():
        broken = json.loads(json.dumps(raw))
        node = broken
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = value
        path = tmp_path / "broken.json"
        path.write_text(json.dumps(broken))
        with pytest.raises(EvalLogError, match=want.replace("[", r"\[").replace("]", r"\]")):
            load(path)
