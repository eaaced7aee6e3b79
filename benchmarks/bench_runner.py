"""Runner overhead: `run_arm.run` against one bare `LLM.generate` over the same requests, one started engine.

    python -m benchmarks.bench_runner [--model DIR] [--items N] [--k K] [--max-tokens T] [--chunk-size C]

The runner's time is the whole `run()` (pin check, planning, chunked generation, scoring, shard writes and
fsyncs, the EvalLog written and renamed); the bare time is one `LLM.generate` call over the runner's own
requests (same prompts, seeds, budgets and stop strings). Engine start is excluded from both and printed
apart. The prefix cache is reset before every timed call, and the two are interleaved over --repeats rounds;
the minimum and the median of each are printed, of wall time and of this process's CPU time (the engine runs
in-process, so CPU time holds all of its work). Other jobs on a shared machine only ever add time, so the
overhead is computed from the minima; the load average is printed so a reader can judge. Target: overhead
at most 10%.
The model is demo/models/base when it exists, else the tests' tiny checkpoint (built once, ~1-3 min).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _model_and_items(model: str | None, n: int) -> tuple[Path, list[dict]]:
    """The checkpoint to measure and n suite items it was trained on."""
    import json

    from tests.conftest import DEMO_BASE, DEMO_SUITE, TINY_RECIPE, arithmetic_items, build_tiny_checkpoint

    if model is None and (DEMO_BASE / "model.safetensors").is_file():
        model = str(DEMO_BASE)
    if model is not None:
        rows = [json.loads(line) for line in DEMO_SUITE.read_text().splitlines() if line.strip()]
        return Path(model), rows[:n]
    cached = ROOT / ".pytest_cache" / "d" / f"tiny-checkpoint-{TINY_RECIPE}" / "ckpt"
    if not (cached / "config.json").is_file():
        print(f"building the tests' tiny checkpoint into {cached} ...", flush=True)
        build_tiny_checkpoint(cached)
    return cached, arithmetic_items(min(n, 300))


def main(argv: list[str] | None = None) -> int:
    """Measure and print the runner's overhead over a bare LLM.generate."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_runner", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--model", help="checkpoint directory (default: demo/models/base, else the tiny test model)"
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
        "--repeats", type=int, default=5, help="interleaved rounds of bare and runner (default 5)"
    )
    args = ap.parse_args(argv)

    from vllm import SamplingParams

    from pipeline.engines import make_engine
    from pipeline.evallog import load
    from pipeline.pins import load_params
    from pipeline.run_arm import engine_config, load_arm, plan_run, run
    from tests.conftest import make_world

    model, items = _model_and_items(args.model, args.items)
    cfg = engine_config("vllm")
    if args.chunk_size is not None:
        cfg["chunk_size"] = args.chunk_size
    tmp = Path(tempfile.mkdtemp(prefix="bench_runner-"))
    world = make_world(
        tmp / "w", {"base": model}, items, k=args.k, max_tokens=args.max_tokens, temperature=1.0
    )
    requests = plan_run(load_params(world.params), load_arm("base"), []).requests

    t0 = time.perf_counter()
    engine = make_engine(cfg, str(model))
    start_s = time.perf_counter() - t0
    llm = engine.llm
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
    prompts = [r.prompt for r in requests]
    llm.generate(prompts[:16], params[:16], use_tqdm=False)  # warm-up: first-call compilation and allocation

    load_before = os.getloadavg()[0]
    bare_s, runner_s, bare_cpu, runner_cpu = [], [], [], []
    bare_tokens, runner_tokens, same = 0, 0, True
    for rep in range(args.repeats):
        llm.reset_prefix_cache()
        t0, c0 = time.perf_counter(), time.process_time()
        outs = llm.generate(prompts, params, use_tqdm=False)
        bare_s.append(time.perf_counter() - t0)
        bare_cpu.append(time.process_time() - c0)
        bare_tokens = sum(len(o.outputs[0].token_ids) for o in outs)
        llm.reset_prefix_cache()
        settings = world.settings("base", engine=cfg, out_dir=tmp / f"logs-{rep}", progress=False)
        t0, c0 = time.perf_counter(), time.process_time()
        path = run(settings, engine=engine)
        runner_s.append(time.perf_counter() - t0)
        runner_cpu.append(time.process_time() - c0)
        log = load(path)
        runner_tokens = sum(sum(it.gen_tokens or []) for it in log.items)
        texts = {(it.item_id, s.index): s.text for it in log.items for s in it.samples}
        same = same and all(texts[r.key] == o.outputs[0].text for r, o in zip(requests, outs, strict=True))

    print(f"model                {model} ({engine.info.version}, {engine.info.device}, {engine.info.dtype})")
    shape = f"{len(items)} items x k={args.k}"
    print(f"requests             {len(requests)} ({shape}), max_tokens {args.max_tokens}")
    print(f"runner chunk_size    {cfg['chunk_size']}")
    print(f"engine start         {start_s:.1f} s (excluded)")
    for name, walls, cpus, tokens in (
        ("bare LLM.generate", bare_s, bare_cpu, bare_tokens),
        ("runner run()", runner_s, runner_cpu, runner_tokens),
    ):
        wall = min(walls)
        print(
            f"{name:<20} wall min {wall:6.2f} s (median {statistics.median(walls):6.2f})"
            f"  CPU min {min(cpus):6.2f} s  {tokens / wall:7.0f} tok/s  {len(requests) / wall:6.1f} samples/s"
        )
    for what, b_, r_ in (("wall", bare_s, runner_s), ("CPU", bare_cpu, runner_cpu)):
        print(f"overhead, {what:<4} min  {(min(r_) - min(b_)) / min(b_) * 100:+.1f}% (target <= 10%)")
    rounds = ", ".join(f"{b:.1f}/{r:.1f}" for b, r in zip(bare_s, runner_s, strict=True))
    load_after = os.getloadavg()[0]
    print(f"wall rounds (s)      bare/runner: {rounds}; load average {load_before:.1f} -> {load_after:.1f}")
    print(f"generated tokens     bare {bare_tokens}, runner {runner_tokens}; same texts: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
