"""A runner world in a folder (suite, params.yaml, pins) for given checkpoints, without DVC.

What the tests and the benchmarks run the pipeline's own functions on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO_BASE = ROOT / "demo" / "models" / "base"
DEMO_SUITE = ROOT / "demo" / "suite" / "sda-mini-v1.jsonl"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write rows as JSON lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


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
        from pipeline.settings import RunSettings

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
        from augment.retrieval import build_index

        corpus_path = write_jsonl(root / "corpus.jsonl", corpus)
        build_index(corpus_path, root / "index")
        params["rag"] = {"corpus": str(corpus_path), "index": str(root / "index"), "top_k": 2}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    world = World(root, root / "params.yaml", root / "pins", suite, root / "generations", dict(models), proto)
    world.repin()
    return world
