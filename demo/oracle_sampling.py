"""Sampling completions from a demo model and judging them by the project's oracle.

The reward of the trained stage, and the probe that logs progress."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from contract.suite import SuiteItem
from pipeline.prompts import build_prompt
from scoring import verifiers
from scoring.verifiers import Verdict


def judge(problem: dict[str, Any], prompt: str, completion: str) -> Verdict:
    """The project's oracle (scoring.verifiers) on a completion: the reward of RFT.

    The problem's own verifier when it has one (suite items, new-satellite look-ups), else its family's.
    """
    item = SuiteItem(
        item_id=str(problem.get("problem_id", "train")),
        family=problem["family"],
        question=problem["question"],
        answer=problem["answer"],
        verifier=problem["verifier"] if "verifier" in problem else train_verifier(problem),
    )
    return verifiers.score(item, verifiers.scored_text(prompt, completion))


def train_verifier(problem: dict[str, Any]) -> dict[str, Any]:
    """Verifier of a training problem, the same rule make_world gives the suite family."""
    from demo.make_world import EXACT_NUMBER, PHYSICS_NUMBER

    return EXACT_NUMBER if problem["family"] == "raise" else PHYSICS_NUMBER


def sample(
    model: Any, prompts: Sequence[str], k: int, max_new: int, seed: int, temperature: float = 1.0
) -> list[list[str]]:
    """k completions per prompt (temperature sampling, or greedy at 0), batched with left padding."""
    import torch

    from demo.charmodel import hf_tokenizer

    tok = hf_tokenizer()
    tok.padding_side = "left"
    outs: list[list[str]] = [[] for _ in prompts]
    flat = [(i, p) for i, p in enumerate(prompts) for _ in range(k)]
    torch.manual_seed(seed)
    bs = 256
    with torch.no_grad():
        for b in range(0, len(flat), bs):
            chunk = flat[b : b + bs]
            enc = tok([p for _, p in chunk], return_tensors="pt", padding=True)
            kw: dict[str, Any] = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0}
            if temperature == 0:
                kw = {"do_sample": False}
            gen = model.generate(**enc, max_new_tokens=max_new, pad_token_id=tok.pad_token_id, **kw)
            texts = tok.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            for (i, _), t in zip(chunk, texts, strict=True):
                outs[i].append(t)
    return outs


def make_probe(problems: list[dict[str, Any]], rng: random.Random) -> Any:
    """Greedy accuracy on 64 plain raise and 64 plain compute training problems (a progress signal only)."""
    raise_p = rng.sample([p for p in problems if p["family"] == "raise"], 64)
    comp_p = rng.sample([p for p in problems if p["family"] == "compute"], 64)

    def probe(model: Any) -> str:
        res = []
        for name, ps in (("raise", raise_p), ("compute", comp_p)):
            prompts = [build_prompt(p["question"]) for p in ps]
            outs = sample(model, prompts, 1, 12, 0, temperature=0)
            ok = sum(judge(p, q, o[0]).score == 1.0 for o, p, q in zip(outs, ps, prompts, strict=True))
            res.append(f"{name} {ok}/{len(ps)}")
        return ", ".join(res)

    return probe
