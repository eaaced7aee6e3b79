"""The demo's two training stages: base (SFT from scratch) and trained (expert iteration from base).

Base is trained in phases; trained's reward is the oracle or a seeded random coin."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from demo.oracle_sampling import judge, make_probe, sample
from demo.token_stream import TokenStream
from demo.train_loop import Log, TrainConfig, train_loop
from demo.transcripts import FORMATS_MIXTURE, SKILLS_MIXTURE, TOOLS_MIXTURE, load_world, sft_transcripts
from pipeline.prompts import build_prompt


def stage_base(cfg: TrainConfig, work: Path, out: Path, log: Log) -> None:
    """SFT from scratch on the mixture of formats."""
    import torch

    from demo.charmodel import new_model, save_checkpoint

    problems, docs = load_world()
    rng = random.Random(cfg.seed)
    t0 = time.time()
    texts = sft_transcripts(problems, docs, cfg.n_transcripts, rng, SKILLS_MIXTURE)
    stream = TokenStream(texts)
    log(
        f"base phase 1 (skills): {len(texts)} transcripts, {len(stream)} tokens, longest {stream.max_len}, "
        f"built in {time.time() - t0:.1f}s"
    )
    model = new_model(
        seed=cfg.seed, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, intermediate=cfg.intermediate
    )
    log(f"base: {sum(p.numel() for p in model.parameters())} parameters, config {asdict(cfg)}")
    probe = make_probe(problems, random.Random(cfg.seed + 7))
    t1 = time.time()
    train_loop(model, stream, cfg, cfg.steps, cfg.lr, work / "base_state.pt", log, "base", probe)
    pairs = sft_transcripts(
        problems, docs, cfg.phase2_transcripts, random.Random(cfg.seed + 3), FORMATS_MIXTURE
    )
    stream2 = TokenStream(pairs)
    log(f"base phase 2 (formats): {len(pairs)} transcripts, {len(stream2)} tokens")
    train_loop(
        model, stream2, cfg, cfg.phase2_steps, cfg.phase2_lr, work / "base2_state.pt", log, "base2", probe
    )
    if cfg.phase3_steps > 0:
        pairs = sft_transcripts(
            problems, docs, cfg.phase3_transcripts, random.Random(cfg.seed + 4), TOOLS_MIXTURE
        )
        stream3 = TokenStream(pairs)
        log(f"base phase 3 (tool calls): {len(pairs)} transcripts, {len(stream3)} tokens")
        train_loop(
            model, stream3, cfg, cfg.phase3_steps, cfg.phase3_lr, work / "base3_state.pt", log, "base3", probe
        )
    wall = time.time() - t1
    log(f"base: training loop took {wall:.0f}s this session")
    save_checkpoint(
        model, out, {"stage": "base", "config": asdict(cfg), "loop_seconds_last_session": round(wall)}
    )
    torch.save(model.state_dict(), work / "base_final.pt")
    log(f"base: saved {out}")


def _save_iteration(
    model: Any, cfg: TrainConfig, base_dir: Path, iteration_out: str | None, it: int, log: Log
) -> None:
    """Save the model after RFT iteration it as a checkpoint of its own (iteration_out with {step}), but
    after the last (that is the stage's output)."""
    from demo.charmodel import save_checkpoint

    if iteration_out is None or it == cfg.rft_iterations - 1:
        return
    step = (it + 1) * cfg.rft_steps
    where = Path(iteration_out.format(step=step))
    meta = {"stage": "trained", "config": asdict(cfg), "base": str(base_dir), "step": step}
    save_checkpoint(model, where, meta)
    log(f"trained: iteration {it} (step {step}) saved {where}")


def _kept_completions(
    model: Any, cfg: TrainConfig, batch: list[dict[str, Any]], it: int, log: Log
) -> list[list[str]]:
    """Sample rft_k completions per problem of the iteration's batch and keep the rewarded ones, as
    [prompt, completion] pairs: those the oracle verifies, or (the placebo) those a seeded coin picks."""
    t0 = time.time()
    prompts = [build_prompt(p["question"]) for p in batch]
    outs = sample(model, prompts, cfg.rft_k, 12, cfg.seed + 100 + it)
    kept: list[list[str]] = []
    n_ok = 0
    by_fam: dict[str, list[int]] = {}
    coin = random.Random(cfg.seed + 200 + it)
    for p, prompt, comps in zip(batch, prompts, outs, strict=True):
        verdicts = {c: judge(p, prompt, c) for c in comps}
        if cfg.reward == "oracle":
            good = sorted(c for c, v in verdicts.items() if v.score == 1.0)
        else:
            # The placebo ignores correctness; a completion must still have an answer to be kept.
            drawn = [c for c in sorted(verdicts) if coin.random() < cfg.random_accept]
            good = [c for c in drawn if verdicts[c].answer is not None]
        n_right = sum(verdicts[c].score == 1.0 for c in comps)
        n_ok += n_right
        f = by_fam.setdefault(p["family"], [0, 0])
        f[0] += n_right
        f[1] += len(comps)
        # The kept completion is re-ended with exactly one newline; EOS comes from the stream.
        kept += [[prompt, f" {verdicts[c].answer}\n"] for c in good[: cfg.rft_keep_per_problem]]
    log(
        f"trained: iteration {it}: sampled {len(batch)}x{cfg.rft_k} in {time.time() - t0:.0f}s, "
        f"accuracy at T=1 {n_ok / (len(batch) * cfg.rft_k):.3f} "
        + " ".join(f"{f} {a}/{b}" for f, (a, b) in sorted(by_fam.items()))
        + f", kept {len(kept)} ({cfg.reward} reward)"
    )
    return kept


def stage_trained(
    cfg: TrainConfig, work: Path, base_dir: Path, out: Path, log: Log, iteration_out: str | None = None
) -> None:
    """Expert iteration from the base checkpoint on plain raise and compute problems.

    iteration_out: a path template with {step}; the model after every iteration but the last is saved there
    as a checkpoint of its own (a point of the training trajectory).
    """
    import torch
    from transformers import LlamaForCausalLM

    from demo.charmodel import save_checkpoint

    problems, docs = load_world()
    rng = random.Random(cfg.seed + 1)
    model = LlamaForCausalLM.from_pretrained(base_dir, dtype="float32")
    model.eval()
    replay = sft_transcripts(problems, docs, 10000, random.Random(cfg.seed + 2), FORMATS_MIXTURE)
    plain = [p for p in problems if p["family"] in ("raise", "compute")]
    rng.shuffle(plain)
    probe = make_probe(problems, random.Random(cfg.seed + 7))
    log(f"trained: from {base_dir}; probe {probe(model)}")
    t_all = time.time()
    for it in range(cfg.rft_iterations):
        state_path = work / f"rft{it}_state.pt"
        kept_path = work / f"rft{it}_kept.json"
        done_path = work / f"rft{it}_done.pt"
        if done_path.exists():
            model.load_state_dict(torch.load(done_path))
            log(f"trained: iteration {it} already done, loaded {done_path}")
            _save_iteration(model, cfg, base_dir, iteration_out, it, log)
            continue
        if kept_path.exists():
            kept = json.loads(kept_path.read_text())
        else:
            batch = plain[it * cfg.rft_problems : (it + 1) * cfg.rft_problems]
            kept = _kept_completions(model, cfg, batch, it, log)
            kept_path.write_text(json.dumps(kept))
        if not kept:
            log(f"trained: iteration {it} kept nothing; no update this iteration")
            torch.save(model.state_dict(), done_path)
            continue
        n_replay = int(len(kept) * cfg.rft_replay / (1 - cfg.rft_replay))
        replayed = random.Random(cfg.seed + 10 + it).sample(replay, min(n_replay, len(replay)))
        mix = [(k[0], k[1]) for k in kept] + replayed
        random.Random(cfg.seed + 20 + it).shuffle(mix)
        stream = TokenStream(mix)
        train_loop(model, stream, cfg, cfg.rft_steps, cfg.rft_lr, state_path, log, f"rft{it}", probe)
        torch.save(model.state_dict(), done_path)
        _save_iteration(model, cfg, base_dir, iteration_out, it, log)
    wall = time.time() - t_all
    log(f"trained: RFT took {wall:.0f}s this session")
    save_checkpoint(model, out, {"stage": "trained", "config": asdict(cfg), "base": str(base_dir)})
    log(f"trained: saved {out}")
