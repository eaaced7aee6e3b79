"""GRPO on SmolLM2-135M-Instruct with the project's verifier as the reward, or its random-reward placebo.

    python grpo.py --reward verifier      (from examples/smollm2-grpo/, after `python build.py --only base`)
    python grpo.py --reward random        (the placebo: same everything, a seeded coin flip as the reward)

TRL's GRPOTrainer with a peft LoRA adapter (rank 8 on q and v of every layer) trains the base model on
word problems from the SmolLM2 world's templates (problems.py) with another seed, none of them a question
of this world's suite. The `verifier` reward is the project's oracle (scoring.verifiers, the suite's `math`
verifier): 1 when the completion's final answer is right, else 0. The `random` reward ignores the
completion: each completion's reward is a seeded coin flip that comes up 1 at the rate the verifier's reward
had at the run's first step (read from that run's log), so the placebo sees as many rewarded completions,
and as many groups with a non-zero advantage, as the rewarded run did before it learned anything.

Writes, under --out (default adapters/<reward>/): one LoRA adapter per checkpoint (step-<n>/, at 25%, 50%
and 100% of the steps), and under logs/: <reward>.csv (reward, KL, completion length, time per step: the
DVC plots) and <reward>.txt (the run's settings and timings).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.seeds import sample_seed
from contract.suite import SuiteItem
from pipeline.prompts import is_chat_model, make_prompt
from scoring import verifiers

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "smollm2"))
import problems as world  # noqa: E402  (the SmolLM2 world's suite generator, shared)

SUITE = HERE / "suite" / "smollm2-grpo-arith-v1.jsonl"
# LoRA on the attention's query and value projections, the placement of the LoRA paper (Hu et al. 2021,
# section 7.1): half the parameters of q, k, v, o, so the four committed adapters stay under 4 MB.
TARGETS = ["q_proj", "v_proj"]
# The per-step columns of logs/<reward>.csv, from TRL's log records (name in the CSV: key in the record).
COLUMNS = {
    "reward": "reward",
    "reward_std": "reward_std",
    "frac_reward_zero_std": "frac_reward_zero_std",
    "kl": "kl",
    "completion_length": "completions/mean_length",
    "clipped_ratio": "completions/clipped_ratio",
    "entropy": "entropy",
    "loss": "loss",
    "learning_rate": "learning_rate",
}


class GrpoError(RuntimeError):
    """A training input that is missing or unusable; the message names it and the fix."""


def train_problems(n: int, seed: int, suite: Path = SUITE) -> list[dict[str, Any]]:
    """n training problems (the families in turn), none of them a question of the suite file."""
    per_family = -(-n // len(world.FAMILIES))
    rows = world.problems(per_family, seed, world.suite_questions(suite))
    by_family = [[r for r in rows if r["family"] == f] for f in world.FAMILIES]
    # Interleaved so that a prefix of the list (a short run) still covers every family.
    mixed = [fam[i] for i in range(per_family) for fam in by_family]
    return mixed[:n]


def verifier_reward(chat: bool) -> Any:
    """The project's oracle on each completion: 1.0 right, 0.0 wrong (the suite's `math` verifier); chat
    says whether the answer is read as from a chat model's output (the pipeline's reading for one)."""

    def reward(completions: list[str], item_id: list[str], family: list[str], question: list[str],
               answer: list[str], **_: Any) -> list[float]:  # fmt: skip
        out = []
        for text, iid, fam, q, a in zip(completions, item_id, family, question, answer, strict=True):
            item = SuiteItem(item_id=iid, family=fam, question=q, answer=a, verifier={"type": "math"})
            out.append(float(verifiers.score(item, text, chat=chat).score == 1.0))
        return out

    reward.__name__ = "verifier_reward"
    return reward


def random_reward(rate: float, seed: int) -> Any:
    """A reward that ignores the completion: a coin flip with P(1) = rate, seeded by (seed, step, item, j)."""

    def reward(completions: list[str], item_id: list[str], trainer_state: Any, **_: Any) -> list[float]:
        seen: dict[str, int] = {}
        out = []
        for iid in item_id:
            j = seen.get(iid, 0)
            seen[iid] = j + 1
            draw = sample_seed(seed, f"placebo|{trainer_state.global_step}|{iid}", j) / 2**31
            out.append(float(draw < rate))
        return out

    reward.__name__ = "random_reward"
    return reward


def first_step_rate(log_csv: Path) -> float:
    """The verifier reward's mean at the first step of a rewarded run's log."""
    if not log_csv.is_file():
        raise GrpoError(f"{log_csv}: not found; run `python grpo.py --reward verifier` first, or pass --rate")
    rows = list(csv.DictReader(io.StringIO(log_csv.read_text())))
    if not rows or rows[0].get("step") != "1" or not rows[0].get("reward"):
        raise GrpoError(f"{log_csv}: no reward at step 1; rerun `python grpo.py --reward verifier`")
    return float(rows[0]["reward"])


def checkpoint_steps(steps: int) -> list[int]:
    """The steps at which an adapter is kept: 25%, 50% and 100% of the run (distinct, at least 1)."""
    return sorted({max(1, round(steps * f)) for f in (0.25, 0.5, 1.0)})


def train(args: argparse.Namespace) -> int:
    """Run GRPO, keep the checkpoints' adapters and write the logs; returns the exit status."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    base, out, logs = Path(args.base), Path(args.out or HERE / "adapters" / args.reward), Path(args.logs)
    if not (base / "config.json").is_file():
        raise GrpoError(f"{base}: not built; run `python build.py --only base` first")
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(base)
    # Prompted as the pipeline prompts the model: through its chat template when it has one.
    chat = is_chat_model(tokenizer)
    if args.reward == "random":
        rate = args.rate if args.rate is not None else first_step_rate(logs / "verifier.csv")
        reward_func = random_reward(rate, args.seed)
    else:
        rate, reward_func = None, verifier_reward(chat)
    problems = train_problems(args.problems, args.seed, Path(args.suite))
    rows = [
        {
            "prompt": make_prompt(tokenizer, chat, p["question"], [], []),
            "item_id": p["item_id"],
            "family": p["family"],
            "question": p["question"],
            "answer": p["answer"],
        }
        for p in problems
    ]
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    stop = Path(args.stop_file) if args.stop_file else None
    config = GRPOConfig(
        output_dir=str(out / ".trainer"),
        seed=args.seed,
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * args.generations,
        gradient_accumulation_steps=1,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        temperature=args.temperature,
        top_p=1.0,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        beta=args.beta,
        num_iterations=1,
        bf16=False,
        # A 135M model fits in memory; recomputing activations would only slow the CPU down.
        gradient_checkpointing=False,
        fp16=False,
        use_cpu=not torch.cuda.is_available(),  # the accelerator where there is one
        use_vllm=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        log_completions=False,
    )
    peft_config = LoraConfig(
        r=args.rank, lora_alpha=2 * args.rank, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM"
    )
    records: list[dict[str, Any]] = []
    logs.mkdir(parents=True, exist_ok=True)
    clock = {"t": time.perf_counter()}

    class Keep(TrainerCallback):
        """Keep each step's log record with its wall time, and the adapter at the checkpoint steps."""

        def on_log(self, _args: Any, state: Any, _control: Any, **kw: Any) -> None:
            record = kw.get("logs")  # the trainer's record of the step (`logs` here is the folder)
            if record and "reward" in record:
                now = time.perf_counter()
                row = {"step": state.global_step, "seconds": round(now - clock["t"], 2)}
                clock["t"] = now
                row.update({name: record.get(key) for name, key in COLUMNS.items()})
                records.append(row)
                print(json.dumps(row), flush=True)
                # Written at every step: a long run's curve can be watched, and the placebo started from
                # the rewarded run's first step while the rest of that run goes on.
                write_csv(logs / f"{args.reward}.csv", records)

        def on_step_end(self, _args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
            # Every step's adapter is kept until the run ends: a run stopped early (--stop-file) still has
            # its 25% and 50% checkpoints.
            model.save_pretrained(out / ".steps" / f"step-{state.global_step}")
            if stop is not None and stop.exists():
                control.should_training_stop = True

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward_func],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[Keep()],
    )
    t0 = time.perf_counter()
    clock["t"] = t0
    trainer.train()
    total = time.perf_counter() - t0
    saves = checkpoint_steps(len(records))
    for n in saves:
        shutil.rmtree(out / f"step-{n}", ignore_errors=True)
        shutil.copytree(out / ".steps" / f"step-{n}", out / f"step-{n}")
        (out / f"step-{n}" / "README.md").unlink(missing_ok=True)
        store_half(out / f"step-{n}" / "adapter_model.safetensors")
    shutil.rmtree(out / ".steps")
    # The trainer's scratch folder (saving is off, but some trainer versions still write its run files
    # there): nothing in it is a checkpoint, and the adapters' folder holds only the step-<n> adapters.
    if (out / ".trainer").exists():
        shutil.rmtree(out / ".trainer")
    write_logs(logs, args, records, rate, total, len(rows), saves)
    return 0


def store_half(path: Path) -> None:
    """Rewrite a kept adapter's weights in float16: half the committed bytes. peft upcasts them to the
    base's float32 when build.py merges them, so the rebuilt checkpoint is the same on every machine; the
    rounding (float16 keeps 11 significant bits) moves each weight by under 0.05%."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = {k: v.to(torch.float16).contiguous() for k, v in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})


def write_csv(path: Path, records: list[dict[str, Any]]) -> None:
    """The per-step log as CSV: step, seconds and the COLUMNS, floats to 6 decimals, blank when absent."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["step", "seconds", *COLUMNS], lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow({k: ("" if v is None else (round(v, 6) if isinstance(v, float) else v))
                         for k, v in r.items()})  # fmt: skip
    atomic_write(path, buf.getvalue())


def write_logs(logs: Path, args: argparse.Namespace, records: list[dict[str, Any]], rate: float | None,
               total: float, n_problems: int, saves: list[int]) -> None:  # fmt: skip
    """logs/<reward>.csv (one row a step) and logs/<reward>.txt (settings and timings)."""
    write_csv(logs / f"{args.reward}.csv", records)
    settings = {k: v for k, v in vars(args).items() if k not in ("base", "out", "logs", "suite")}
    lines = [
        f"reward: {args.reward}" + (f" (coin flip, P(1) = {rate:.4f})" if rate is not None else ""),
        f"settings: {json.dumps(settings, sort_keys=True)}",
        f"problems: {n_problems} (seed {args.seed}, none a suite question); checkpoints at steps {saves}",
        f"training: {len(records)} steps in {total:.1f} s ({total / max(1, len(records)):.1f} s a step)",
    ]
    atomic_write(logs / f"{args.reward}.txt", "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: train one run (the rewarded one or the placebo); exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(prog="python grpo.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--reward", choices=["verifier", "random"], required=True, help="the reward (random: placebo)"
    )
    ap.add_argument("--base", default=str(HERE / "models" / "base"), help="the base checkpoint (build.py)")
    ap.add_argument("--out", help="the adapters' folder (default adapters/<reward>/)")
    ap.add_argument("--logs", default=str(HERE / "logs"), help="the logs' folder (default logs/)")
    ap.add_argument("--suite", default=str(SUITE), help="the suite whose questions training leaves out")
    ap.add_argument("--steps", type=int, default=48, help="optimizer steps at most (default 48)")
    ap.add_argument("--problems", type=int, default=96, help="training problems (default 96)")
    ap.add_argument("--prompts", type=int, default=2, help="problems per step (default 2)")
    ap.add_argument("--generations", type=int, default=4, help="completions per problem (default 4)")
    ap.add_argument("--max-tokens", type=int, default=64, help="completion budget in tokens (default 64)")
    ap.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    ap.add_argument("--lr", type=float, default=1e-3, help="learning rate, constant (default 1e-3)")
    ap.add_argument("--beta", type=float, default=0.02, help="KL coefficient (default 0.02)")
    ap.add_argument("--rank", type=int, default=8, help="LoRA rank (default 8)")
    ap.add_argument("--seed", type=int, default=world.TRAIN_SEED, help="problems, sampling and coin seed")
    ap.add_argument("--rate", type=float, help="placebo: P(reward 1) (default: the verifier run's step 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument(
        "--stop-file", help="stop after the step at whose end this file exists (a run cut by time)"
    )
    args = ap.parse_args(argv)
    try:
        return train(args)
    except GrpoError as e:
        print(f"grpo: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
