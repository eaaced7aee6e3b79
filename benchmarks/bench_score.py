"""Scoring time at the demo's size: 7 arms x 300 items x k = 8, through `pipeline.score.score_file`.

    .venv/bin/python benchmarks/bench_score.py [--repeats 5] [--verifier suite|math]

Generations in the format the runner writes (contract.generations, written with dump_generations) are
built for the demo suite's 300 items and its seven arms: plain arms answer on the `Answer:` line the
prompt ends with, tool arms call a tool and answer after its response, every item's samples a mix of right
and wrong answers. Each repeat scores every arm with `score_file` (the generations read and checked, the
suite read, every sample judged, the EvalLog written), in this process. `--verifier math` gives every item
the math verifier (math-verify on each answer, under the scorer's time limit) instead of the suite's own
numeric and exact ones. Printed: the minimum and median over --repeats of the wall time for all seven arms
and the minimum of their CPU time (other jobs on a shared machine only ever add time; the CPU time is the
steadier figure there) and the load average before and after.

Run it against another checkout of the project with PYTHONPATH pointing there: the figures compare the code
that is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARMS = ["base", "trained", "+rag", "trained+rag", "+tools", "trained+tools", "trained+rag+tools"]


def write_world(root: Path, verifier: str) -> tuple[Path, list[Path]]:
    """The suite (its own verifiers, or math for every item) and one generations file per arm."""
    from contract.arm import ArmSpec
    from contract.engine import EngineInfo
    from contract.generations import Generations, GenItem, GenSample, dump_generations, prompt_sha256
    from contract.jsonl import read_jsonl
    from contract.protocol import Protocol
    from contract.suite import load_suite, questions_sha256

    rows = [row for _, row in read_jsonl(ROOT / "demo" / "suite" / "sda-mini-v1.jsonl")]
    if verifier == "math":
        rows = [{**r, "verifier": {"type": "math"}} for r in rows if r["verifier"]["type"] == "numeric"]
    suite = root / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = load_suite(suite)
    proto = Protocol(k=8, max_tokens=128, temperature=1.0, top_p=1.0, seed=1234, max_tool_calls=4)
    paths = []
    for a, arm in enumerate(ARMS):
        tools = "tools" in arm
        spec = ArmSpec(name=arm, model="trained" if arm.startswith("trained") else "base",
                       retrieval="rag" in arm, tools=tools, attribution="x")  # fmt: skip
        gen_items = []
        for i, it in enumerate(items):
            prompt = f"Question: {it.question}\nAnswer:"
            samples = []
            for j in range(8):
                right = (i + j + a) % 3 != 0
                answer = str(it.answer) if right else f"{it.answer}9"
                if tools:
                    text = (f' <tool_call>{{"name": "orbital_period", "arguments": {{"altitude_km": {i}}}}}'
                            f'</tool_call>\n<tool_response>{{"period_min": {answer}}}</tool_response>\n'
                            f"Answer: {answer}\n")  # fmt: skip
                    calls = [{"name": "orbital_period", "arguments": {"altitude_km": i},
                              "result": {"period_min": answer}, "round": 1}]  # fmt: skip
                else:
                    text, calls = f" {answer}\n", None
                samples.append(GenSample(index=j, seed=1000 * i + j, text=text, finish_reason="stop",
                                         prompt_tokens=40, gen_tokens=8, tool_calls=calls))  # fmt: skip
            gen_items.append(GenItem(item_id=it.item_id, prompt=prompt, prompt_sha256=prompt_sha256(prompt),
                                     samples=samples))  # fmt: skip
        pins = {"questions": f"sha256:{questions_sha256(items)}"}
        gens = Generations(arm=spec, model=spec.model, chat=False, tools=["orbital_period"] if tools else [],
                           protocol=proto, pins=pins, engine=EngineInfo(name="bench"), inputs_sha256="0" * 64,
                           items=gen_items)  # fmt: skip
        path = root / f"{arm}.json"
        path.write_text(dump_generations(gens))
        paths.append(path)
    return suite, paths


def main() -> None:
    """Build the world once, then time scoring all seven arms --repeats times."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--verifier", choices=["suite", "math"], default="suite")
    args = ap.parse_args()
    from pipeline.score import score_file

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite, paths = write_world(root, args.verifier)
        load_before = os.getloadavg()[0]
        times, cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            for p in paths:
                score_file(p, suite, root / f"log-{p.name}", params=None)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        samples = sum(1 for _ in paths) * len(suite.read_text().splitlines()) * 8
        print(
            f"score {len(paths)} arms, {samples} samples ({args.verifier} verifiers), code from "
            f"{sys.modules['pipeline.score'].__file__}: min {min(times):.2f} s, median "
            f"{statistics.median(times):.2f} s over {args.repeats} (CPU time min {min(cpu):.2f} s); load "
            f"{load_before:.1f} -> "
            f"{os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
