"""A tool arm whose server keeps dying: the real runner, tool loop, MCP server and scorer, under faults.

The engine is scripted (every sample calls a tool, then answers with the number the tool returned), so the
calls are known in advance and each fault lands on a known call; tests/augment/test_loop.py drives the same
faults through the real vLLM engine. The server is killed from the engine between rounds, or exits by itself
on every N-th call (augment.tools.server EXIT_EVERY_ENV, which only tests set).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from analysis.reports import arm_comparison
from analysis.reports.settings import AnalysisSettings
from augment.tools.server import EXIT_EVERY_ENV
from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from contract.evallog import FORMAT_VERSION, load
from contract.generations import load_generations
from contract.textformat import TOOL_RESPONSE_CLOSE, TOOL_RESPONSE_OPEN, format_tool_call
from demo.charmodel import build_tokenizer
from demo.tiny_models import arithmetic_items
from demo.worlds import World, make_world
from pipeline.config import engine_config
from pipeline.generate import run
from pipeline.run_paths import RunPaths
from pipeline.settings import RunnerError

N_ITEMS, K, CHUNK = 6, 2, 4  # 12 samples, one call each, in 3 chunks
FAST = AnalysisSettings(n_boot=200, n_perm=200, seed=1)


class CallingEngine:
    """Round 0 of every sample calls orbital_period; the next round answers the tool's number or 'unknown'."""

    info = EngineInfo(name="scripted", version="test", device="cpu", dtype="none")
    chat = False
    max_model_len = None
    resumes_per_sample = False

    def __init__(self, before_batch: Callable[[Sequence[GenRequest]], None] | None = None) -> None:
        self.tokenizer = build_tokenizer()
        self.before_batch = before_batch

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def close(self) -> None:
        pass

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        if self.before_batch is not None:
            self.before_batch(requests)
        out = []
        for r in requests:
            if TOOL_RESPONSE_OPEN not in r.prompt:
                text = "Let me compute. " + format_tool_call(
                    "orbital_period", {"altitude_km": 400 + 100 * r.key[1]}
                )
            else:
                body = r.prompt.rsplit(TOOL_RESPONSE_OPEN, 1)[1].split(TOOL_RESPONSE_CLOSE, 1)[0]
                text = f"Answer: {json.loads(body).get('period_min', 'unknown')}\n"
            res = GenResult(r.key, text, "stop", self.count_tokens(r.prompt), self.count_tokens(text), [])
            out.append(res)
            if on_result is not None:
                on_result(res)
        return out


def tool_world(root: Path, checkpoint: Path, n_items: int = N_ITEMS) -> World:
    """A runner world of n_items arithmetic items whose expected tool is orbital_period."""
    items = [{**it, "tool": "orbital_period"} for it in arithmetic_items(n_items)]
    return make_world(root, {"base": checkpoint, "trained": checkpoint}, items, k=K, max_tokens=200)


@pytest.fixture
def world(tmp_path: Path, untrained_checkpoint: Path) -> World:
    return tool_world(tmp_path / "w", untrained_checkpoint)


def generate(world: World, out: str, engine: Any = None, **tool_server: int) -> Path:
    """Run +tools into out_dir `out` with the scripted engine and a restart budget (default 3 per 100)."""
    budget = {"max_restarts": 3, "restart_window": 100, "tool_timeout_s": 10, **tool_server}
    settings = world.settings(
        "+tools",
        engine=engine_config("vllm", chunk_size=CHUNK),
        out_dir=world.root / out,
        tool_server=budget,
    )
    return run(settings, engine=engine or CallingEngine())


def items_of(path: Path) -> list[dict]:
    return json.loads(path.read_text())["items"]


def kill_tool_servers() -> int:
    """Kill every tool-server process this test started (what an OOM killer or a crash would do)."""
    psutil = pytest.importorskip("psutil")
    killed = 0
    for p in psutil.Process().children(recursive=True):
        if "augment.tools.server" in " ".join(p.cmdline()):
            p.kill()
            p.wait(10)
            killed += 1
    return killed


def test_an_undisturbed_run_counts_every_call_answered(world: World) -> None:
    gens = load_generations(generate(world, "calm"))
    assert gens.tool_calls is not None
    assert gens.tool_calls.model_dump() == {"answered": N_ITEMS * K, "failed": 0, "restarts": 0}
    texts = [s.text for it in gens.items for s in it.samples]
    assert all(t.endswith(("Answer: 92.56\n", "Answer: 94.62\n")) for t in texts), texts
    records = [c for it in gens.items for s in it.samples for c in s.tool_calls or []]
    assert len(records) == N_ITEMS * K and all(c.failed is None and c.result for c in records)


def test_a_tool_arms_parts_merge_into_the_whole_arm_without_starting_a_tool_server(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import augment.tools.session
    from pipeline.parts import merge_parts

    whole = generate(world, "whole")
    budget = {"max_restarts": 3, "restart_window": 100, "tool_timeout_s": 10}
    engine = engine_config("vllm", chunk_size=CHUNK)
    out = world.root / "parts"
    for s in (1, 0):
        settings = world.settings("+tools", engine=engine, out_dir=out, tool_server=budget, part=f"{s}/2")
        run(settings, engine=CallingEngine())

    def no_server(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the merge started a tool server")

    # The parts recorded the tool specs their prompts showed: the merge plans the arm with those.
    monkeypatch.setattr(augment.tools.session, "open_tools", no_server)
    merged = merge_parts(world.settings("+tools", engine=engine, out_dir=out, tool_server=budget), 2)
    assert merged.read_bytes() == whole.read_bytes()


def test_a_server_killed_at_every_chunk_is_restarted_and_the_run_is_an_undisturbed_one(world: World) -> None:
    """Killed three times mid-run (before each chunk): each call that finds it dead restarts it and is
    answered, so the arm's samples are byte for byte those of a run whose server never died."""
    calm = generate(world, "calm")
    kills: list[int] = []

    def before(requests: Sequence[GenRequest]) -> None:
        if all(TOOL_RESPONSE_OPEN not in r.prompt for r in requests):
            kills.append(kill_tool_servers())

    dest = generate(world, "killed", CallingEngine(before))
    assert kills == [1, 1, 1]
    gens = load_generations(dest)
    assert gens.tool_calls is not None
    assert gens.tool_calls.model_dump() == {"answered": N_ITEMS * K, "failed": 0, "restarts": 3}
    assert items_of(dest) == items_of(calm)


def test_a_server_that_exits_every_few_calls_finishes_under_the_budget_with_every_call_answered(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    calm = generate(world, "calm")
    monkeypatch.setenv(EXIT_EVERY_ENV, "3")
    dest = generate(world, "flaky", max_restarts=6, restart_window=12)
    counts = load_generations(dest).tool_calls
    assert counts is not None and (counts.answered, counts.failed) == (N_ITEMS * K, 0)
    # Each server answers two calls, dies on its third, which the next one answers: 12 calls, 5 restarts.
    assert counts.restarts == 5
    assert items_of(dest) == items_of(calm)


def test_a_server_dying_beyond_the_budget_stops_the_run_and_the_resume_finishes_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    calm = generate(world, "calm")
    monkeypatch.setenv(EXIT_EVERY_ENV, "2")
    with pytest.raises(RunnerError) as stopped:
        generate(world, "broken", max_restarts=3)
    message = str(stopped.value)
    assert "\n" not in message
    assert message.startswith(
        "tool server died 4 times; rerun `python -m pipeline.run_arm arm=+tools` to resume (tool server "
        "died 4 times in 5 calls, more than the restart budget of 3 restarts per 100 calls"
    ), message
    assert not (world.root / "broken" / "+tools.json").exists()
    shard = RunPaths(world.root / "broken", "+tools").shard
    lines = [json.loads(line) for line in shard.read_text().splitlines()[1:]]
    # Each server answers one call and dies on the next, which a new one answers: the first chunk's four
    # calls cost three restarts, the second chunk's first call a fourth, beyond the budget. The first
    # chunk's samples are saved, and so are the restarts.
    saved = [(r["item_id"], r["index"]) for r in lines if "item_id" in r]
    assert saved == [("arith-000", 0), ("arith-000", 1), ("arith-001", 0), ("arith-001", 1)]
    assert [
        r["meta"]["tool_server_restarts"]
        for r in lines
        if "meta" in r and "tool_server_restarts" in r["meta"]
    ] == [3]
    # Resumed once the server is sound: the arm is the undisturbed one, and the restart is still counted.
    monkeypatch.delenv(EXIT_EVERY_ENV)
    dest = generate(world, "broken")
    assert items_of(dest) == items_of(calm)
    counts = load_generations(dest).tool_calls
    assert counts is not None and counts.model_dump() == {"answered": N_ITEMS * K, "failed": 0, "restarts": 3}
    assert not shard.exists()


def test_calls_that_kill_every_server_are_failed_counted_scored_and_the_arm_left_out(
    tmp_path: Path,
    untrained_checkpoint: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every server exits on its first call: each call dies twice and is failed. With a budget that allows
    it the run finishes, but says so: a warning, failed records, the counts in the generations and the
    EvalLog, and an arm comparison that leaves the arm out instead of calling it a tool-access effect."""
    world = tool_world(tmp_path / "w", untrained_checkpoint, n_items=2)  # 4 calls: each server start costs
    run(world.settings("base", engine=engine_config("vllm", chunk_size=CHUNK)), engine=CallingEngine())
    monkeypatch.setenv(EXIT_EVERY_ENV, "1")
    generate(world, "generations", max_restarts=100, restart_window=100)
    assert "run_arm: warning: 4 of 4 tool calls of +tools failed" in capsys.readouterr().err
    logs = {arm: load(world.score(arm)) for arm in ("base", "+tools")}
    log = logs["+tools"]
    assert log.format_version == FORMAT_VERSION
    assert log.tool_calls is not None
    # Every call but the first restarts the server its predecessor's retry left dead, and each restarts it
    # again for its own retry.
    assert log.tool_calls.model_dump() == {"answered": 0, "failed": 4, "restarts": 7}
    records = [c for it in log.items for s in it.samples or [] for c in s.tool_calls or []]
    assert all(c.failed and "died during the call, and again when it was retried" in c.error for c in records)
    assert {s.path for it in log.items for s in it.samples or []} == {"tool_error"}

    report = arm_comparison.build(str(world.logs_dir), FAST, ["base", "+tools"]).model_dump()
    assert report["arms_found"] == ["base"] and report["contrasts"] == []
    (left_out,) = report["arms_unusable"]
    assert left_out["arm"] == "+tools" and left_out["tool_calls"]["failed"] == 4
    assert left_out["reason"].startswith("4 of 4 tool calls failed (100.0%")
    assert "analysis.max_failed_tool_calls = 0.0" in left_out["reason"]
    # A threshold that tolerates them compares the arm, with its counts on the row.
    lenient = dataclasses.replace(FAST, max_failed_tool_calls=1.0)
    tolerant = arm_comparison.build(str(world.logs_dir), lenient, ["base", "+tools"]).model_dump()
    (row,) = tolerant["contrasts"]
    assert row["arm"] == "+tools" and row["tool_calls"]["failed"] == 4 and tolerant["arms_unusable"] == []
