"""Quick per-family accuracy of a demo checkpoint in each prompt format, for tuning the demo world.

    python -m demo.quick_eval demo/models/base [--k 4] [--formats plain,rag,tools,rag_tools]

A development tool, not the measurement: the runner (python -m pipeline.run_arm) is. It uses the same
pieces the runner does (vLLM with one seeded request per sample, pipeline.prompts, bm25s top-3 over the
corpus, arms.tools.orbital, pipeline.oracle), with a small tool loop of its own so it runs without the
runner.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from arms.tools.orbital import TOOLS, call_tool
from pipeline.prompts import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, build_prompt, format_tool_response
from pipeline.seeds import round_seed, sample_seed

DEMO = Path(__file__).resolve().parent
FORMATS = ("plain", "rag", "tools", "rag_tools")


def tool_result(call_text: str) -> dict[str, Any]:
    """The tool response payload for a model's '<tool_call>{...}</tool_call>' text (errors as payload)."""
    body = call_text.split(TOOL_CALL_OPEN, 1)[-1].split(TOOL_CALL_CLOSE, 1)[0]
    try:
        call = json.loads(body)
    except json.JSONDecodeError as e:
        return {"error": f"malformed tool call: {e}"}
    if not isinstance(call, dict):
        return {"error": "tool call must be a JSON object"}
    return call_tool(str(call.get("name")), call.get("arguments"))


def run_format(
    llm: Any, items: list[Any], fmt: str, passages: dict[str, list[str]], k: int, max_tokens: int, seed: int
) -> dict[str, list[float]]:
    """Scores per family of every (item, sample) in one prompt format."""
    from vllm import SamplingParams

    from pipeline.oracle import score, scored_text

    tools = sorted(TOOLS) if "tools" in fmt else ()
    states = []
    for it in items:
        ps = passages[it.item_id] if "rag" in fmt else []
        prompt = build_prompt(it.question, ps, tools)
        for j in range(k):
            states.append(
                {"item": it, "prompt": prompt, "text": "", "seed": sample_seed(seed, it.item_id, j)}
            )
    active = list(states)
    for rnd in range(5):
        if not active:
            break
        params = [
            SamplingParams(
                n=1,
                temperature=1.0,
                top_p=1.0,
                seed=round_seed(s["seed"], rnd),
                max_tokens=max(1, max_tokens - s.get("gen", 0)),
                stop=[TOOL_CALL_CLOSE],
                include_stop_str_in_output=True,
            )
            for s in active
        ]
        outs = llm.generate([s["prompt"] + s["text"] for s in active], params, use_tqdm=False)
        nxt = []
        for s, o in zip(active, outs, strict=True):
            c = o.outputs[0]
            s["text"] += c.text
            s["gen"] = s.get("gen", 0) + len(c.token_ids)
            if c.text.endswith(TOOL_CALL_CLOSE) and s["gen"] < max_tokens and "tools" in fmt:
                s["text"] += format_tool_response(tool_result(c.text))
                nxt.append(s)
        active = nxt
    by_family: dict[str, list[float]] = defaultdict(list)
    for s in states:
        v = score(s["item"], scored_text(s["prompt"], s["text"]))
        by_family[s["item"].family].append(v.score)
    return by_family


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: prints a table of accuracies per family and format."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="checkpoint directory")
    ap.add_argument("--k", type=int, default=4, help="samples per item")
    ap.add_argument(
        "--formats", default=",".join(FORMATS), help="comma-separated subset of " + ",".join(FORMATS)
    )
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--suite", default=str(DEMO / "suite" / "sda-mini-v1.jsonl"))
    ap.add_argument("--corpus", default=str(DEMO / "corpus" / "space-text.jsonl"))
    args = ap.parse_args(argv)
    fmts = args.formats.split(",")
    bad = [f for f in fmts if f not in FORMATS]
    if bad:
        print(f"quick_eval: unknown format(s) {bad} in --formats; choose from {FORMATS}", file=sys.stderr)
        return 2
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from vllm import LLM

    from demo.make_world import retrieve_ids
    from pipeline.suite import load_suite

    items = load_suite(args.suite)
    docs = [json.loads(line) for line in Path(args.corpus).read_text().splitlines()]
    text = {d["doc_id"]: d["text"] for d in docs}
    top = retrieve_ids(docs, [it.question for it in items], 3)
    passages = {it.item_id: [text[i] for i in ids] for it, ids in zip(items, top, strict=True)}
    llm = LLM(model=args.model, dtype="float32", seed=0, max_model_len=1024, enable_prefix_caching=True)
    print(f"model {args.model}, k={args.k}, max_tokens={args.max_tokens}")
    families = ("raise", "compute", "lookup", "compound")
    print(f"{'format':<10}" + "".join(f"{f:>10}" for f in families) + f"{'overall':>10}")
    for fmt in fmts:
        res = run_format(llm, items, fmt, passages, args.k, args.max_tokens, args.seed)
        allv = [x for v in res.values() for x in v]
        row = "".join(f"{sum(res[f]) / len(res[f]):>10.3f}" for f in families)
        print(f"{fmt:<10}{row}{sum(allv) / len(allv):>10.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
