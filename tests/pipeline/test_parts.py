"""An arm generated in parts (part=s/N) and merged equals the arm generated whole; bad parts are refused.

The engine is the transformers one on an untrained tiny checkpoint (a real engine that starts in a second);
tests/pipeline/test_ray_run.py runs the parts as Ray tasks on vLLM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.tiny_models import arithmetic_items
from demo.worlds import make_world
from pipeline.config import engine_config
from pipeline.engines import release_engine
from pipeline.generate import run
from pipeline.parts import merge_parts, part_of
from pipeline.plan import plan_arm
from pipeline.run_paths import RunPaths
from pipeline.settings import RunnerError


@pytest.fixture
def world(tmp_path: Path, untrained_checkpoint: Path):
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(7), k=3, max_tokens=6)
    yield w
    release_engine()


def test_parts_cover_every_item_once_by_a_fixed_rule(world) -> None:
    from contract.arm import ArmSpec
    from pipeline.config import load_params

    arm = ArmSpec(name="base", model="base", retrieval=False, tools=False, attribution="reference")
    plan = plan_arm(load_params(world.params), arm, [])
    parts = [part_of(plan, s, 3) for s in range(3)]
    assert [len(p.items) for p in parts] == [3, 2, 2]
    assert sorted(r.key for p in parts for r in p.requests) == sorted(r.key for r in plan.requests)
    assert [it.item_id for it in parts[1].items] == [plan.items[1].item_id, plan.items[4].item_id]


def test_two_parts_merged_equal_the_whole_arm_byte_for_byte(world, tmp_path: Path) -> None:
    hf = engine_config("hf")
    whole = run(world.settings("base", engine=hf, out_dir=tmp_path / "whole"))
    out = tmp_path / "parts"
    for s in (1, 0):
        done = run(world.settings("base", engine=hf, out_dir=out, part=f"{s}/2"))
        assert done == RunPaths(out, "base", (s, 2)).part_file
        assert done == out.parent / "parts.work" / "parts" / f"base.part-{s}-of-2.jsonl"
    merged = merge_parts(world.settings("base", engine=hf, out_dir=out), 2)
    assert merged.read_bytes() == whole.read_bytes()
    paths = RunPaths(out, "base")
    assert not list((paths.work / "parts").iterdir()) and not list(paths.partial.iterdir())
    # A rerun of the merge finds the arm up to date.
    assert merge_parts(world.settings("base", engine=hf, out_dir=out), 2) == merged


def test_a_missing_or_foreign_part_is_refused_naming_the_file(world, tmp_path: Path) -> None:
    hf = engine_config("hf")
    out = tmp_path / "parts"
    run(world.settings("base", engine=hf, out_dir=out, part="0/2"))
    with pytest.raises(RunnerError, match=r"base.part-1-of-2.jsonl: part 1/2 of arm 'base' is missing"):
        merge_parts(world.settings("base", engine=hf, out_dir=out), 2)
    # Part 0 of 2 renamed as part 1 of 2: its fingerprint names another part, the merge refuses it.
    RunPaths(out, "base", (0, 2)).part_file.rename(RunPaths(out, "base", (1, 2)).part_file)
    run(world.settings("base", engine=hf, out_dir=out, part="0/2"))
    with pytest.raises(Exception, match=r"base.part-1-of-2.jsonl: .*other settings \(part"):
        merge_parts(world.settings("base", engine=hf, out_dir=out), 2)
    assert not (out / "base.json").exists()
    with pytest.raises(RunnerError, match=r"part='2/2': needs N >= 1 and 0 <= s < N"):
        run(world.settings("base", engine=hf, out_dir=out, part="2/2"))
