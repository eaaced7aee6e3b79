"""The trained model: a short rejection-sampling fine-tune of base, saved as a small LoRA adapter.

    python finetune.py            (from examples/smollm2/, after `python build.py --only base`)

1. Problems from the suite's templates with another seed (problems.TRAIN_SEED), none of them a suite question.
2. k samples of each from base with the project's vllm engine, prompted as the pipeline prompts a chat
   model (pipeline.prompts.make_prompt), at the suite protocol's temperature and budget.
3. The samples the project's oracle (scoring.verifiers, the `math` verifier) marks right, at most
   `--keep` distinct ones per problem, are the training set (rejection sampling: the verifier is the reward).
4. A LoRA adapter (peft; attention projections, small rank) trained on them, the loss on the answer tokens
   only; adapter/ gets the adapter, the accepted samples and the log with the times of both phases.

build.py merges the adapter into base to make models/trained. The adapter is a few MB and committed;
sampling and training are seeded, but threads on other CPUs may round differently, so the committed
adapter, not a rerun, is what `python build.py` rebuilds the trained model from.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.engine import Decoding, GenRequest
from contract.jsonl import read_jsonl
from contract.seeds import sample_seed
from contract.suite import SuiteItem
from pipeline.config import engine_config, load_params
from pipeline.engines import make_engine
from pipeline.prompts import make_prompt
from scoring import verifiers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import problems as world  # noqa: E402  (this folder's own module, not a package of the project)

HERE = Path(__file__).resolve().parent
# The LoRA targets: the attention projections of every layer (rank 8: 0.92 M parameters, 3.7 MB).
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


class Log:
    """Print a line and keep it for the log file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, msg: str) -> None:
        print(msg, flush=True)
        self.lines.append(msg)


def sample_and_verify(
    base: Path, train: list[dict[str, Any]], k: int, max_tokens: int, temperature: float, seed: int, log: Log
) -> list[dict[str, Any]]:
    """Every problem's k samples from base with the verdict of the project's oracle on each."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    prompts = {p["item_id"]: make_prompt(tokenizer, True, p["question"], [], []) for p in train}
    requests = [
        GenRequest(
            key=(p["item_id"], j),
            prompt=prompts[p["item_id"]],
            seed=sample_seed(seed, p["item_id"], j),
            max_tokens=max_tokens,
        )
        for p in train
        for j in range(k)
    ]
    t0 = time.perf_counter()
    engine = make_engine(engine_config("vllm"), str(base))
    started = time.perf_counter() - t0
    t1 = time.perf_counter()
    results = engine.generate(requests, Decoding(temperature=temperature, top_p=1.0))
    gen_s = time.perf_counter() - t1
    engine.close()
    tokens = sum(r.gen_tokens for r in results)
    log(
        f"sampling: {len(requests)} samples of {len(train)} problems, engine start {started:.1f} s, "
        f"generation {gen_s:.1f} s, {tokens} tokens, {tokens / gen_s:.0f} tokens/s"
    )
    by_id = {p["item_id"]: p for p in train}
    out = []
    for r in results:
        problem = by_id[r.key[0]]
        item = SuiteItem.model_validate(
            {k_: problem[k_] for k_ in ("item_id", "family", "question", "answer", "verifier")}
        )
        verdict = verifiers.score(item, r.text, chat=True)
        out.append(
            {
                "item_id": r.key[0],
                "j": r.key[1],
                "prompt": prompts[r.key[0]],
                "text": r.text,
                "finish_reason": r.finish_reason,
                "answer": problem["answer"],
                "read": verdict.answer,
                "right": verdict.score == 1.0,
                "family": problem["family"],
            }
        )
    return out


def select(samples: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """The right samples that finished (not cut at the budget), at most keep distinct texts per problem."""
    chosen: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        texts = [c["text"] for c in chosen.get(s["item_id"], [])]
        if s["right"] and s["finish_reason"] == "stop" and s["text"] not in texts and len(texts) < keep:
            chosen.setdefault(s["item_id"], []).append(s)
    return [s for group in chosen.values() for s in group]


def train_lora(base: Path, data: list[dict[str, Any]], args: argparse.Namespace, log: Log) -> Any:
    """A LoRA adapter on base fitted to data (prompt -> text), the loss on the text and its end token only."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    config = LoraConfig(
        r=args.rank, lora_alpha=2 * args.rank, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM"
    )
    model = get_peft_model(model, config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(
        f"training: {len(data)} samples, LoRA rank {args.rank} on {', '.join(TARGETS)}: "
        f"{trainable} parameters"
    )
    rows = []
    for s in data:
        p = tokenizer(s["prompt"], add_special_tokens=False)["input_ids"]
        # The model must learn to stop after its answer: the chat turn's end token is part of the target.
        c = tokenizer(s["text"] + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        rows.append((p + c, [-100] * len(p) + c))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    rng = random.Random(args.seed)
    steps = args.epochs * ((len(rows) + args.batch - 1) // args.batch)
    step, t0 = 0, time.perf_counter()
    model.train()
    for epoch in range(args.epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        for at in range(0, len(order), args.batch):
            batch = [rows[i] for i in order[at : at + args.batch]]
            width = max(len(ids) for ids, _ in batch)
            ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x, _ in batch])
            labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
            mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in batch])
            for group in opt.param_groups:
                group["lr"] = args.lr * min(1.0, (step + 1) / 10) * (1 - step / steps)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            step += 1
            if step % 10 == 0 or step == steps:
                log(
                    f"  epoch {epoch + 1} step {step}/{steps} loss {loss.item():.4f} "
                    f"({time.perf_counter() - t0:.0f} s)"
                )
    log(f"training: {steps} steps in {time.perf_counter() - t0:.1f} s")
    return model


def main(argv: list[str] | None = None) -> int:
    """Command line: sample, verify, fine-tune, write adapter/."""
    ap = argparse.ArgumentParser(prog="python finetune.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--base",
        default=str(HERE / "models" / "base"),
        help="the base checkpoint (python build.py --only base)",
    )
    ap.add_argument(
        "--out", default=str(HERE / "adapter"), help="the adapter folder to write (default adapter/)"
    )
    ap.add_argument("--per-family", type=int, default=6, help="training problems per family (default 6)")
    ap.add_argument("--k", type=int, default=4, help="samples per problem (default 4)")
    ap.add_argument("--keep", type=int, default=2, help="right samples kept per problem at most (default 2)")
    ap.add_argument("--rank", type=int, default=8, help="LoRA rank (default 8)")
    ap.add_argument("--epochs", type=int, default=8, help="passes over the accepted samples (default 8)")
    ap.add_argument("--batch", type=int, default=4, help="samples per step (default 4)")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (default 1e-3)")
    ap.add_argument("--seed", type=int, default=world.TRAIN_SEED, help="sampling and training seed")
    ap.add_argument(
        "--samples", help="train on these accepted samples (an rft_samples.jsonl) instead of sampling again"
    )
    args = ap.parse_args(argv)
    base, out = Path(args.base), Path(args.out)
    if not (base / "config.json").is_file():
        print(f"finetune: {base}: not built; run `python build.py --only base` first", file=sys.stderr)
        return 2
    protocol = load_params(HERE / "params.yaml").protocol
    log = Log()
    out.mkdir(parents=True, exist_ok=True)
    if args.samples:
        data = [row for _, row in read_jsonl(args.samples)]
        log(f"finetune: {len(data)} accepted samples read from {args.samples} (no sampling)")
    else:
        train = world.problems(args.per_family, args.seed, world.suite_questions())
        log(
            f"finetune: {len(train)} problems (seed {args.seed}, none a suite question), k={args.k}, "
            f"temperature {protocol.temperature}, max_tokens {protocol.max_tokens}"
        )
        samples = sample_and_verify(
            base, train, args.k, protocol.max_tokens, protocol.temperature, args.seed, log
        )
        right = sum(s["right"] for s in samples)
        log(f"verified: {right} of {len(samples)} samples right ({right / len(samples):.1%})")
        for fam in world.FAMILIES:
            fs = [s for s in samples if s["family"] == fam]
            log(f"  {fam:<9} {sum(s['right'] for s in fs)}/{len(fs)} right")
        data = select(samples, args.keep)
        log(f"accepted: {len(data)} samples of {len({s['item_id'] for s in data})} problems")
        # Saved before training, so that a failed training run retrains from them (--samples).
        atomic_write(out / "rft_samples.jsonl", "".join(json.dumps(s, sort_keys=True) + "\n" for s in data))
    model = train_lora(base, data, args, log)
    model.save_pretrained(out)
    (out / "README.md").unlink(missing_ok=True)  # peft's model-card stub; this folder is described in README
    atomic_write(out / "train_log.txt", "\n".join(log.lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
