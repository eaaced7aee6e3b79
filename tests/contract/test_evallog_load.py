"""Logs with samples and the cyclic collector: no collection while a log is built or an analysis runs.

A log with samples is about a million small Python objects. Every collection while they are built
traverses all built so far, and every later one all of them again; contract.evallog.load builds them with
the collector paused, and the analyses' commands run with it paused (collector_paused): what remains is the
one collection the first allocation after a pause starts. These tests count the collections, and check
that every validator still runs and the collector is left as it was.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from analysis.commands import arm_comparison as arm_comparison_command
from analysis.commands import delta as delta_command
from benchmarks.bench_logs import arm_log
from contract.atomic import atomic_write
from contract.evallog import EvalLogError, collector_paused, load

N_ITEMS, K = 1_500, 16


def write(path: Path, name: str, seed: int) -> Path:
    """A log of N_ITEMS x K with every sample, written as the scorer writes one."""
    logit = np.random.default_rng(0).normal(0.0, 1.5, N_ITEMS)
    atomic_write(
        path, arm_log(name, N_ITEMS, K, False, logit, seed).model_dump_json(indent=1, exclude_none=True)
    )
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base.json and trained.json with samples in one folder."""
    folder = tmp_path_factory.mktemp("logs")
    write(folder / "base.json", "base", 1)
    write(folder / "trained.json", "trained", 2)
    return folder


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every cyclic collection that starts while the test runs."""
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
        gc.enable()


def test_loading_a_log_with_samples_runs_one_collection_not_one_per_700_objects(
    logs: Path, collections: list[int]
) -> None:
    log = load(logs / "base.json")
    during = len(collections)  # an int: reading it allocates nothing the collector tracks
    assert during <= 1
    assert len(log.items) == N_ITEMS and all(len(it.samples or []) == K for it in log.items)
    assert gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_load_leaves_the_collector_as_it_found_it(logs: Path, collections: list[int], enabled: bool) -> None:
    if not enabled:
        gc.disable()
    load(logs / "base.json")
    assert gc.isenabled() is enabled
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled


def test_the_delta_and_arms_commands_run_one_collection_each(
    logs: Path, tmp_path: Path, collections: list[int]
) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("analysis: {n_boot: 200, n_perm: 200, seed: 1}\n")
    cli = ["--pre", str(logs / "base.json"), "--post", str(logs / "trained.json"), "--params", str(params)]
    assert delta_command.main([*cli, "--out", str(tmp_path / "d")]) == 0
    after_delta = len(collections)  # an int: reading it allocates nothing the collector tracks
    assert (
        arm_comparison_command.main(
            ["--logs", str(logs), "--out", str(tmp_path / "a"), "--params", str(params)]
        )
        == 0
    )
    after_arms = len(collections)
    assert after_delta <= 1 and after_arms - after_delta <= 1
    assert gc.isenabled()
    assert (tmp_path / "d" / "delta_report.json").is_file() and (tmp_path / "a" / "arm_deltas.png").is_file()


def test_a_failing_log_is_worded_and_restores_the_collector(
    logs: Path, tmp_path: Path, collections: list[int]
) -> None:
    raw = json.loads((logs / "base.json").read_text())
    raw["items"][7]["samples"][3]["score"] = 1.0 - raw["items"][7]["scores"][3]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(EvalLogError) as e:
        load(bad)
    assert str(e.value).startswith(f"{bad}: item 'q000007': ")
    assert "samples[3].score" in str(e.value)
    assert gc.isenabled()


def test_load_keeps_every_validator_of_the_log(logs: Path, tmp_path: Path) -> None:
    raw = json.loads((logs / "base.json").read_text())
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
