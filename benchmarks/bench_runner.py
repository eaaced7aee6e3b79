"""Runner overhead: `pipeline.generate.run` against one bare `LLM.generate` over the same requests and engine.

    python -m benchmarks.bench_runner [--model DIR] [--items N] [--k K] [--max-tokens T] [--chunk-size C]

The runner's time is the whole `run()` (pin check, planning, chunked generation, shard writes and fsyncs,
the generations file written and renamed; scoring is a stage of its own); the bare time is one
`LLM.generate` call over the runner's own requests (same prompts, seeds, budgets and stop strings).
Engine start is excluded from both and printed apart. The prefix cache is reset before every timed call,
and the two are interleaved over --repeats rounds. vLLM's engine steps are timed in both: the same
requests in the same batch take the same steps, which are the engine's work; the runner's overhead is the
time it adds outside them (planning, pins, shard writes, the generations file), as a share of the bare
call's time. Total times are printed too (minimum and median: other jobs on a shared machine only ever
add time), with the load average. Target: <= 10%.
The model is demo/models/base when it exists, else the tests' tiny checkpoint (built once, ~1-3 min).
--save-every 256,1024,... runs the runner once per value of the engine's save_every (requests per
`LLM.generate` call) in every round: smaller calls take more engine steps, so for them the figure that
counts is the total-time (throughput) cost against the one bare call over all requests (target <= 10%).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _model_and_items(model: str | None, n: int) -> tuple[Path, list[dict]]:
    """The checkpoint to measure and n suite items it was trained on."""

    from contract.jsonl import read_jsonl
    from demo.tiny_models import TINY_RECIPE, arithmetic_items, build_tiny_checkpoint
    from demo.worlds import DEMO_BASE, DEMO_SUITE

    if model is None and (DEMO_BASE / "model.safetensors").is_file():
        model = str(DEMO_BASE)
    if model is not None:
        rows = [row for _, row in read_jsonl(DEMO_SUITE)]
        return Path(model), rows[:n]
    cached = ROOT / ".pytest_cache" / "d" / f"tiny-checkpoint-{TINY_RECIPE}" / "ckpt"
    if not (cached / "config.json").is_file():
        print(f"building the tests' tiny checkpoint into {cached} ...", flush=True)
        build_tiny_checkpoint(cached)
    return cached, arithmetic_items(min(n, 300))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_runner", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--model",
        help="checkpoint run on the demo suite (default: demo/models/base, else the tiny test model)",
    )
    ap.add_argument("--items", type=int, default=300, help="suite items (default 300)")
    ap.add_argument("--k", type=int, default=8, help="samples per item (default 8)")
    ap.add_argument(
        "--max-tokens", type=int, default=128, help="generated-token budget per sample (default 128)"
    )
    ap.add_argument(
        "--chunk-size", type=int, default=None, help="runner chunk size (default conf/engine/vllm.yaml)"
    )
    ap.add_argument(
        "--save-every",
        default=None,
        help="comma-separated engine save_every values, a runner variant each (default: conf/engine)",
    )
    ap.add_argument(
        "--repeats", type=int, default=5, help="interleaved rounds of bare and runner (default 5)"
    )
    return ap.parse_args(argv)


def _bare_inputs(requests: list[Any]) -> tuple[list[str], list[Any]]:
    """The runner's requests as one bare LLM.generate call takes them: prompts and sampling params."""
    from vllm import SamplingParams

    params = [
        SamplingParams(
            n=1,
            seed=r.seed,
            temperature=1.0,
            top_p=1.0,
            max_tokens=r.max_tokens,
            stop=list(r.stop),
            include_stop_str_in_output=True,
        )
        for r in requests
    ]
    return [r.prompt for r in requests], params


@contextmanager
def _step_clock(llm: Any) -> Iterator[dict[str, float]]:
    """Time spent inside vLLM's engine steps, and their count, while the block runs."""
    # With save_every >= the request count, time inside vLLM's engine steps is the same work in both (same
    # requests, same batch, same step count); the runner's cost is what it adds outside them. Smaller
    # save_every takes more, emptier steps: its cost shows in the total time. Both are recorded per round.
    core = llm.llm_engine
    clock = {"s": 0.0, "n": 0}
    inner_step = core.step

    def timed_step() -> Any:
        t = time.perf_counter()
        try:
            return inner_step()
        finally:
            clock["s"] += time.perf_counter() - t
            clock["n"] += 1

    core.step = timed_step
    try:
        yield clock
    finally:
        core.step = inner_step


@dataclass
class _Bench:
    """What the rounds run on: the world, the engine, its settings, the requests and their bare form."""

    world: Any
    tmp: Path
    engine: Any
    cfg: dict[str, Any]
    variants: list[int]
    requests: list[Any]
    prompts: list[str]
    params: list[Any]
    rounds: dict[str, list[tuple[float, float, float, int]]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return ["bare"] + [f"runner save_every={v}" for v in self.variants]


def _one(b: _Bench, which: str, rep: int, clock: dict[str, float]) -> None:
    """One timed call (bare, or the runner at one save_every), recorded in b."""
    from contract.generations import load_generations
    from pipeline.generate import run

    llm = b.engine.llm
    llm.reset_prefix_cache()
    clock.update(s=0.0, n=0)
    t0, c0 = time.perf_counter(), time.process_time()
    if which == "bare":
        outs = llm.generate(b.prompts, b.params, use_tqdm=False)
    else:
        every = b.variants[b.names.index(which) - 1]
        b.engine.save_every = every
        settings = b.world.settings(
            "base",
            engine={**b.cfg, "save_every": every},
            out_dir=b.tmp / f"logs-{rep}-{every}",
            progress=False,
        )
        path = run(settings, b.engine)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    b.rounds.setdefault(which, []).append((wall, cpu, clock["s"], int(clock["n"])))
    if which == "bare":
        b.tokens[which] = sum(len(o.outputs[0].token_ids) for o in outs)
        b.texts[which] = [o.outputs[0].text for o in outs]
        return
    gens = load_generations(path)
    b.tokens[which] = sum(s.gen_tokens for it in gens.items for s in it.samples)
    by_key = {(it.item_id, s.index): s.text for it in gens.items for s in it.samples}
    b.texts[which] = [by_key[r.key] for r in b.requests]


def _report(b: _Bench, args: argparse.Namespace, model: Path, n_items: int, start_s: float) -> None:
    """Print the rounds: per variant its times and throughput, then each runner's overhead over bare."""
    info = b.engine.info
    print(f"model                {model} ({info.version}, {info.device}, {info.dtype})")
    shape = f"{n_items} items x k={args.k}"
    n = len(b.requests)
    print(f"requests             {n} ({shape}), max_tokens {args.max_tokens}, {args.repeats} rounds")
    print(f"runner chunk_size    {b.cfg['chunk_size']}, engine save_every {', '.join(map(str, b.variants))}")
    print(f"engine start         {start_s:.1f} s (excluded)")
    summary = {}
    for which in b.names:
        rs = b.rounds[which]
        wall = min(r[0] for r in rs)
        outside = min(r[0] - r[2] for r in rs)
        summary[which] = (wall, outside)
        print(
            f"{which:<27} wall min {wall:6.2f} s (median {statistics.median(r[0] for r in rs):6.2f})"
            f"  CPU min {min(r[1] for r in rs):6.2f} s  engine steps {rs[0][3]}"
            f"  outside steps min {outside:5.2f} s  {b.tokens[which] / wall:6.0f} tok/s"
            f"  {len(b.requests) / wall:6.1f} samples/s"
        )
    bare_wall = summary["bare"][0]
    for which in b.names[1:]:
        added = summary[which][1] - summary["bare"][1]
        total = (summary[which][0] - bare_wall) / bare_wall * 100
        differ = sum(a != c for a, c in zip(b.texts["bare"], b.texts[which], strict=True))
        print(
            f"{which:<27} outside steps {added:+.2f} s = {added / bare_wall * 100:+.1f}% of bare;"
            f" total time {total:+.1f}% (min vs min, target <= 10%);"
            f" tokens {b.tokens[which]} (bare {b.tokens['bare']}); texts unlike bare {differ}/{n}"
        )


def main(argv: list[str] | None = None) -> int:
    """Measure and print the runner's overhead over a bare LLM.generate."""
    args = _parse(argv)
    from demo.worlds import make_world
    from pipeline.config import engine_config, load_arm, load_params
    from pipeline.engines import make_engine
    from pipeline.plan import plan_arm

    model, items = _model_and_items(args.model, args.items)
    cfg = engine_config("vllm")
    if args.chunk_size is not None:
        cfg["chunk_size"] = args.chunk_size
    tmp = Path(tempfile.mkdtemp(prefix="bench_runner-"))
    world = make_world(
        tmp / "w", {"base": model}, items, k=args.k, max_tokens=args.max_tokens, temperature=1.0
    )
    variants = [int(v) for v in args.save_every.split(",")] if args.save_every else [cfg["save_every"]]
    requests = plan_arm(load_params(world.params), load_arm("base"), []).requests

    t0 = time.perf_counter()
    engine = make_engine(cfg, str(model))
    start_s = time.perf_counter() - t0
    prompts, params = _bare_inputs(requests)
    engine.llm.generate(prompts[:16], params[:16], use_tqdm=False)  # warm-up: first-call compilation
    b = _Bench(world, tmp, engine, cfg, variants, requests, prompts, params)
    load_before = os.getloadavg()[0]
    with _step_clock(engine.llm) as clock:
        for rep in range(args.repeats):
            for which in b.names:
                _one(b, which, rep, clock)
    _report(b, args, model, len(items), start_s)
    load_after = os.getloadavg()[0]
    walls = "; ".join(f"{n} " + ", ".join(f"{r[0]:.1f}" for r in b.rounds[n]) for n in b.names)
    print(f"wall rounds (s)             {walls}; load average {load_before:.1f} -> {load_after:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
