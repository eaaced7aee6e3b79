"""Time of one GRPO step of the GRPO world's size, on this machine's CPU or GPU, without TRL or the weights.

    python -m benchmarks.bench_grpo_step [--device cuda] [--steps 3] [--generations 4 --prompts 2]

A step as examples/smollm2-grpo/grpo.py runs it: sample `prompts x generations` completions of up to
`max_tokens` tokens from the LoRA-wrapped policy (rank 8 on q and v, T = 0.7), then the policy's and the
reference's (adapter off) token log-probabilities of the completions and one backward pass and optimiser
step. The model is SmolLM2-135M's architecture (the config the world's build writes) with random weights:
the time of a step does not depend on the weights' values, and a machine that cannot reach the package
index (a lent GPU machine) cannot rebuild them. Completions are forced to the full length (no early stop),
the worst case of the run. Prints each part's median time over the timed steps (after one warm-up step).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

# SmolLM2-135M-Instruct's architecture (examples/smollm2-grpo/models/base/config.json after `build.py`).
SMOLLM2_135M = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "vocab_size": 49152,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
}


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def one_step(model: Any, opt: Any, prompt: Any, args: argparse.Namespace) -> dict[str, float]:
    """Run one GRPO-shaped step; the wall time of each part (generate, log-probs, backward and update)."""
    import torch

    times: dict[str, float] = {}
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            prompt.repeat(args.prompts * args.generations, 1),
            do_sample=True,
            temperature=0.7,
            top_p=1.0,
            max_new_tokens=args.max_tokens,
            min_new_tokens=args.max_tokens,
            pad_token_id=0,
        )
    _sync(args.device)
    times["generate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_prompt = prompt.shape[1]
    targets = out[:, n_prompt:]

    def logprobs(m: Any) -> Any:
        logits = m(out).logits[:, n_prompt - 1 : -1].float()
        return torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    with torch.no_grad(), model.disable_adapter():
        ref = logprobs(model)
    _sync(args.device)
    times["reference log-probs"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    policy = logprobs(model)
    advantages = torch.randn(out.shape[0], 1, device=out.device)
    ratio = torch.exp(policy - policy.detach())
    kl = torch.exp(ref - policy) - (ref - policy) - 1
    loss = -(ratio * advantages - 0.02 * kl).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    _sync(args.device)
    times["policy log-probs, backward, update"] = time.perf_counter() - t0
    times["step"] = sum(times.values())
    return times


def main(argv: list[str] | None = None) -> int:
    """Command line: build the model, warm up, time the steps and print the medians."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_grpo_step", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up (default 3)")
    ap.add_argument("--prompts", type=int, default=2, help="problems a step (the world's run: 2)")
    ap.add_argument("--generations", type=int, default=4, help="completions a problem (the world's run: 4)")
    ap.add_argument("--max-tokens", type=int, default=64, help="completion length (the world's run: 64)")
    ap.add_argument("--prompt-tokens", type=int, default=120, help="prompt length (chat template + problem)")
    ap.add_argument("--dtype", default="float32", help="float32 (the world's run) or bfloat16")
    args = ap.parse_args(argv)

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).to(device=args.device, dtype=dtype)
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    model = get_peft_model(model, lora)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    prompt = torch.randint(3, SMOLLM2_135M["vocab_size"], (1, args.prompt_tokens), device=args.device)
    name = (
        torch.cuda.get_device_name() if args.device.startswith("cuda") else f"cpu x {torch.get_num_threads()}"
    )
    size = f"{args.prompts} x {args.generations} completions of {args.max_tokens} tokens"
    print(f"bench_grpo_step: {name}, torch {torch.__version__}, {args.dtype}; {size}", flush=True)
    one_step(model, opt, prompt, args)
    runs = [one_step(model, opt, prompt, args) for _ in range(args.steps)]
    for part in runs[0]:
        values = [r[part] for r in runs]
        print(
            f"  {part:36s} {statistics.median(values):8.3f} s  ("
            + ", ".join(f"{v:.3f}" for v in values)
            + ")"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
