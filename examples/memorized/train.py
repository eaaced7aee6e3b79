"""The memorizing world's two checkpoints: the demo's base model fine-tuned twice by one recipe.

    python examples/memorized/train.py [--out examples/memorized/models] [--steps 300]

Both runs start from demo/models/base and train the same steps on the same seeded stream of plain
transcripts (`Question: q\\nAnswer: a`) of the demo's training problems, which are disjoint from the suite.
In the `trained` run a share of the transcripts (MEMORIZED_SHARE) are suite items with their reference
answers: the items of `memorized_items` (30% of the suite, by a hash of the item id, so the choice does not
depend on the suite's order). `base` never sees a suite item. The memorized ids are written to
`memorized.json` beside the models, for the probes' hit and false-flag counts, and the questions the
memorizing run drew from to `training_questions.jsonl`, the training data its contamination audit checks
the suite against.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import time
from pathlib import Path
from typing import Any

from contract.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SUITE = ROOT / "demo" / "suite" / "sda-mini-v1.jsonl"
PROBLEMS = ROOT / "demo" / "train_data" / "train_problems.jsonl"
START = ROOT / "demo" / "models" / "base"
MEMORIZED_SHARE = 0.5
RECIPE = {"steps": 400, "batch": 16, "seq_len": 256, "lr": 2e-3, "seed": 7, "memorized_fraction": 0.3}


def memorized_items(items: list[dict[str, Any]], fraction: float) -> list[str]:
    """The ids of the suite items the memorizing run trains on: the lowest sha256 of their ids."""
    ranked = sorted(items, key=lambda it: hashlib.sha256(it["item_id"].encode()).hexdigest())
    return sorted(it["item_id"] for it in ranked[: round(len(items) * fraction)])


def write_training_questions(path: Path, chosen: list[dict[str, Any]]) -> Path:
    """The questions the memorizing run drew from (training problems, then the memorized suite items)."""
    rows = [{"id": p["problem_id"], "question": p["question"]} for _, p in read_jsonl(PROBLEMS)]
    rows += [{"id": it["item_id"], "question": it["question"]} for it in chosen]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def transcript(question: str, answer: Any) -> str:
    """A plain-format transcript, as the runner prompts a plain model."""
    from pipeline.prompts import build_prompt

    return build_prompt(question) + f" {answer}\n"


def train(out: Path, suite_share: float, memorized: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """One fine-tune of the demo base on the training problems (and suite items at suite_share)."""
    import torch
    from transformers import LlamaForCausalLM

    from demo.charmodel import BOS, EOS, build_tokenizer, save_checkpoint, vocabulary

    torch.set_num_threads(1)
    torch.manual_seed(RECIPE["seed"])
    rng = random.Random(RECIPE["seed"])
    vocab, tok = vocabulary(), build_tokenizer()
    problems = [row for _, row in read_jsonl(PROBLEMS)]
    model = LlamaForCausalLM.from_pretrained(START, torch_dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=RECIPE["lr"], weight_decay=0.0)
    batch, seq = RECIPE["batch"], RECIPE["seq_len"]

    def stream(n_tokens: int) -> list[int]:
        ids: list[int] = []
        while len(ids) < n_tokens:
            # The same draws in both runs; the memorizing run swaps some problems for suite items.
            roll, pick = rng.random(), rng.choice(problems)
            it = rng.choice(memorized) if memorized else None
            text = transcript(it["question"], it["answer"]) if it and roll < suite_share else None
            text = text or transcript(pick["question"], pick["answer"])
            ids += [vocab[BOS], *tok.encode(text, add_special_tokens=False).ids, vocab[EOS]]
        return ids[:n_tokens]

    t0 = time.perf_counter()
    model.train()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = RECIPE["lr"] * min(1.0, (step + 1) / 20) * 0.5 * (1 + math.cos(math.pi * step / steps))
        x = torch.tensor(stream(batch * seq)).view(batch, seq)
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if (step + 1) % 25 == 0:
            print(
                f"{out.name}: step {step + 1}/{steps} loss {loss.item():.4f} "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    model.eval()
    meta = {"recipe": RECIPE, "suite_share": suite_share, "final_loss": round(loss.item(), 4)}
    save_checkpoint(model, out, meta)
    return {**meta, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    """Train both checkpoints and write the memorized ids."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "models"))
    ap.add_argument("--steps", type=int, default=RECIPE["steps"])
    ap.add_argument(
        "--questions-only", action="store_true", help="write the memorized ids and questions only"
    )
    ap.add_argument("--only", choices=("base", "trained"), help="train this checkpoint only")
    args = ap.parse_args(argv)
    out = Path(args.out)
    items = [row for _, row in read_jsonl(SUITE)]
    ids = memorized_items(items, RECIPE["memorized_fraction"])
    chosen = [it for it in items if it["item_id"] in set(ids)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "memorized.json").write_text(json.dumps(ids, indent=1) + "\n")
    write_training_questions(out / "training_questions.jsonl", chosen)
    if args.questions_only:
        return 0
    if args.only != "base":
        print("trained:", train(out / "trained", MEMORIZED_SHARE, chosen, args.steps), flush=True)
    if args.only != "trained":
        print("base:", train(out / "base", 0.0, chosen, args.steps), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
