"""Which passage the demo checkpoints read: look-up accuracy by passage order, greedy, in transformers.

    python -m demo.reading          # prints the table demo/README.md ("Reading passages") quotes

Two sets of look-ups: the 70 suite look-ups with the runner's BM25 top-3 (augment.retrieval.passages_for,
both `rag.order` settings), and 100 training look-ups rewritten about new fictional satellites that are in no
catalog (transcripts.fresh_satellite_problem, the new passage at the gold passage's BM25 rank), so the
effect is also shown on data that is not the suite.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from contract.jsonl import read_jsonl
from pipeline.prompts import build_prompt

DEMO = Path(__file__).resolve().parent
ORDERS = ("plain", "best_first", "best_last")


def greedy_correct(model: Any, prompts: list[str], problems: list[dict[str, Any]]) -> int:
    """How many prompts the model answers right, greedy, judged by the project's oracle."""
    from demo.oracle_sampling import judge, sample

    outs = sample(model, prompts, 1, 12, 0, temperature=0)
    return sum(judge(p, q, o[0]).score == 1.0 for o, p, q in zip(outs, problems, prompts, strict=True))


def suite_lookups(model: Any, index: Any) -> dict[str, int]:
    """Right answers on the 70 suite look-ups without passages and with the BM25 top-3 in each order."""
    from augment.retrieval import passages_for

    suite = [row for _, row in read_jsonl(DEMO / "suite" / "sda-mini-v1.jsonl")]
    lookups = [s for s in suite if s["family"] == "lookup"]
    correct = {}
    for order in ORDERS:
        prompts = [
            build_prompt(
                s["question"], [] if order == "plain" else passages_for(index, s["question"], 3, order)[0]
            )
            for s in lookups
        ]
        correct[order] = greedy_correct(model, prompts, lookups)
    return correct


def new_satellite_lookups(model: Any, n: int = 100, seed: int = 11) -> dict[str, int]:
    """Right answers on n training look-ups about new satellites, their passage first or last of three."""
    from demo import transcripts

    problems, docs = transcripts.load_world()
    rng = random.Random(seed)
    lookups = [p for p in problems if p["family"] == "lookup"]
    fresh = [transcripts.fresh_satellite_problem(p, docs, rng) for p in rng.sample(lookups, n)]
    correct = {}
    for order in ORDERS[1:]:
        prompts = []
        for p in fresh:
            texts = {**docs, **p["extra_docs"]}
            # BM25 ranks the named satellite's own passage first for 97% of the training look-ups.
            ranked = [texts["new"]] + [texts[d] for d in p["passages"] if d != "new"]
            prompts.append(build_prompt(p["question"], ranked[::-1] if order == "best_last" else ranked))
        correct[order] = greedy_correct(model, prompts, fresh)
    return correct


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: one row per checkpoint and set of look-ups."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["base", "trained"], help="checkpoints under demo/models")
    args = ap.parse_args(argv)
    # After the arguments: --help answers without the seconds torch and transformers take to import.
    import torch
    from transformers import LlamaForCausalLM

    from augment.retrieval import Index, build_index

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        build_index(DEMO / "corpus" / "space-text.jsonl", Path(tmp) / "index")
        index = Index.load(Path(tmp) / "index")
        print("| checkpoint | look-ups | no passages | best passage first | best passage last |")
        print("| --- | --- | --- | --- | --- |")
        for name in args.models:
            model = LlamaForCausalLM.from_pretrained(DEMO / "models" / name, dtype=torch.float32).eval()
            suite = suite_lookups(model, index)
            new = new_satellite_lookups(model)
            row = " | ".join(f"{suite[o]}/70" for o in ORDERS)
            print(f"| {name} | suite | {row} |")
            print(f"| {name} | new satellites | | {new['best_first']}/100 | {new['best_last']}/100 |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
