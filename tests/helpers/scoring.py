"""Generations and suites written by hand for the scorer, and the score command on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from contract.generations import prompt_sha256
from contract.suite import load_suite, questions_sha256
from demo.worlds import ROOT
from pipeline.prompts import CHAT_INSTRUCTION
from tests.helpers.generations import write_generations

SUITE = [
    {"item_id": "period-1", "family": "compute", "question": "Period of a 400 km circular orbit in minutes?",
     "answer": 92.56, "verifier": {"type": "numeric", "rel_tol": 0.01}, "tool": "orbital_period"},
    {"item_id": "name-1", "family": "lookup", "question": "Which satellite flies at 705 km?",
     "answer": "SDA-17", "verifier": {"type": "exact"}},
    {"item_id": "speed-1", "family": "compute", "question": "Circular speed at 400 km in km/s?",
     "answer": 7.67, "verifier": {"type": "numeric", "rel_tol": 0.01}},
]  # fmt: skip


PERIOD = {"name": "orbital_period", "arguments": {"altitude_km": 400}, "result": {"period_min": 92.56}}


SPEED = {"name": "circular_speed", "arguments": {"altitude_km": 400}, "result": {"speed_km_s": 7.67}}


def sample(j: int, text: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One hand-written sample."""
    s = {"index": j, "seed": 100 + j, "text": text, "finish_reason": "stop", "prompt_tokens": 20,
         "gen_tokens": 5 + j, "rounds": 1 + len(calls or [])}  # fmt: skip
    if calls is not None:
        s["tool_calls"] = calls
    return s


def write_world(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A suite, a params.yaml naming it, and a +tools generations file written by hand."""
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(i) + "\n" for i in SUITE))
    items = load_suite(suite)
    prompts = {
        i["item_id"]: f"Tools: circular_speed, orbital_period\nQuestion: {i['question']}\n" for i in SUITE
    }
    texts = {
        # right, through the item's tool; then right without any tool
        "period-1": [
            sample(0, "<tool_call>...</tool_call>\nAnswer: 92.6", [PERIOD]),
            sample(1, "Answer: 92.5"),
        ],
        # right without a tool; then wrong (exact verifier, another string)
        "name-1": [sample(0, "Answer: sda-17"), sample(1, "Answer: SDA-18")],
        # the item names no tool: any tool's carried value counts; then no answer at all
        "speed-1": [
            sample(0, "<tool_call>...</tool_call>\nAnswer: 7.67", [SPEED]),
            sample(1, "I do not know"),
        ],
    }
    gens = {
        "format_version": 1,
        "arm": {
            "name": "+tools",
            "model": "base",
            "retrieval": False,
            "tools": True,
            "attribution": "tool_access",
        },
        "model": "hand/written",
        "chat": False,
        "tools": ["circular_speed", "orbital_period"],
        "protocol": {
            "k": 2,
            "max_tokens": 64,
            "temperature": 1.0,
            "top_p": 1.0,
            "seed": 7,
            "max_tool_calls": 2,
        },
        "pins": {"questions": f"sha256:{questions_sha256(items)}", "model": "sha256:hand"},
        "engine": {"name": "by-hand"},
        "finished_at": "2026-01-01T00:00:00+00:00",
        "items": [
            {"item_id": k, "prompt": prompts[k], "prompt_sha256": prompt_sha256(prompts[k]), "samples": v}
            for k, v in texts.items()
        ],
    }
    gdir = tmp_path / "generations"
    gdir.mkdir()
    write_generations(gdir / "+tools.json", gens)
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {
                "suite": {"path": str(suite), "name": "hand-suite", "revision": "r1"},
                "models": {"base": {"path": str(tmp_path)}},
                "protocol": gens["protocol"],
            }
        )
    )
    return suite, gdir / "+tools.json", params


CHAT = CHAT_INSTRUCTION  # "Give the final answer as \\boxed{...}.", which models copy literally


def chat_world(tmp_path: Path, suite: list[dict[str, Any]], texts: dict[str, list[str]]) -> tuple[Path, Path]:
    """A suite and a chat arm's generations file written by hand (one prompt per item, its samples)."""
    suite_path = tmp_path / "suite.jsonl"
    suite_path.write_text("".join(json.dumps(i) + "\n" for i in suite))
    items = load_suite(suite_path)
    k = len(next(iter(texts.values())))
    gens = {
        "format_version": 1,
        "arm": {
            "name": "base",
            "model": "base",
            "retrieval": False,
            "tools": False,
            "attribution": "baseline",
        },
        "model": "hand/chat",
        "chat": True,
        "protocol": {
            "k": k,
            "max_tokens": 256,
            "temperature": 1.0,
            "top_p": 1.0,
            "seed": 7,
            "max_tool_calls": 0,
        },
        "pins": {"questions": f"sha256:{questions_sha256(items)}", "model": "sha256:hand"},
        "engine": {"name": "by-hand"},
        "items": [],
    }
    for it in suite:
        prompt = f"<|user|>{it['question']}\n{CHAT}<|assistant|>"
        samples = [
            {"index": j, "seed": j, "text": t, "finish_reason": "stop", "prompt_tokens": 20, "gen_tokens": 10}
            for j, t in enumerate(texts[it["item_id"]])
        ]
        gens["items"].append(
            {
                "item_id": it["item_id"],
                "prompt": prompt,
                "prompt_sha256": prompt_sha256(prompt),
                "samples": samples,
            }
        )
    path = tmp_path / "gens.json"
    write_generations(path, gens)
    return suite_path, path


def score_cli(gens: Path, suite: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """python -m pipeline.score in its explicit-files form, run in the folder of the files."""
    args = ["--generations", str(gens), "--suite", str(suite), "--out", str(out), *extra]
    return subprocess.run(
        [sys.executable, "-m", "pipeline.score", *args, "--params", str(out.parent / "none.yaml")],
        cwd=out.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


# A 1,000-term polynomial: math-verify's LaTeX parser takes tens of seconds on it (47 s measured).
SLOW_LATEX = "+".join(f"x^{{{i}}}" for i in range(1, 1001))
