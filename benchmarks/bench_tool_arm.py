"""Where a tool arm's time goes, and its time against the plain arm of the same model.

    python -m benchmarks.bench_tool_arm [--arm +tools] [--items 300] [--repeats 2] [--save DIR]

Builds the demo world in a temporary folder (this checkout's params.yaml, suite, corpus and models; its own
index and pins, so nothing here is written to), starts one vLLM engine on the arm's model, and runs the
plain arm of that model (base or trained) and the tool arm through `pipeline.generate.run`, interleaved
over --repeats rounds (the prefix cache is reset before each). Every round is instrumented, without
changing what runs: each `LLM.generate` call (its requests, prompt tokens, tokens served from the prefix
cache, generated tokens, engine steps and wall time), each tool call through the MCP client (round trips
and their wall time) and the rest of the run (Python: planning, the loop between rounds, shard writes).
Prints the table of the fastest tool round, the tool / plain ratio of the fastest rounds (other jobs on a
shared machine only ever add time) and the load average. --save DIR keeps the last round's generations
files in DIR (compare two revisions' texts with `cmp`, or `--compare OTHER_DIR`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass
class Call:
    """One `LLM.generate` call as the engine saw it."""

    requests: int
    prompt_tokens: int
    cached_tokens: int
    gen_tokens: int
    steps: int
    wall_s: float


@dataclass
class Clock:
    """What one run spent where."""

    calls: list[Call] = field(default_factory=list)
    tool_calls: int = 0
    tool_s: float = 0.0
    step_s: float = 0.0
    steps: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0


def demo_world(tmp: Path, items: int) -> tuple[Path, Path]:
    """params.yaml and pins of the demo world under tmp (own index, first `items` suite items)."""
    import yaml

    from augment.retrieval import build_index
    from contract.jsonl import jsonl_lines, read_jsonl_text
    from pipeline.config import load_params
    from pipeline.pins import write_pins

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    suite = [line for _, line in jsonl_lines(read_jsonl_text(ROOT / params["suite"]["path"]))]
    (tmp / "suite.jsonl").write_text("\n".join(suite[:items]) + "\n")
    params["suite"]["path"] = str(tmp / "suite.jsonl")
    for ref in params["models"].values():
        if "path" in ref:
            ref["path"] = str(ROOT / ref["path"])
    params["rag"]["corpus"] = str(ROOT / params["rag"]["corpus"])
    build_index(Path(params["rag"]["corpus"]), tmp / "index")
    params["rag"]["index"] = str(tmp / "index")
    (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    write_pins(load_params(tmp / "params.yaml"), tmp / "pins")
    return tmp / "params.yaml", tmp / "pins"


def instrument(engine: Any, clock_of: Callable[[], Clock]) -> None:
    """Time the engine's `LLM.generate` calls and steps and the MCP client's calls into clock_of()."""
    from augment.tools.client import ToolClient

    llm = engine.llm
    core = llm.llm_engine
    inner_step, inner_generate, inner_call = core.step, llm.generate, ToolClient.call

    def step() -> Any:
        t = time.perf_counter()
        try:
            return inner_step()
        finally:
            c = clock_of()
            c.step_s += time.perf_counter() - t
            c.steps += 1

    def generate(prompts: Any, params: Any, **kw: Any) -> Any:
        c = clock_of()
        steps0, t = c.steps, time.perf_counter()
        outs = inner_generate(prompts, params, **kw)
        c.calls.append(
            Call(
                requests=len(outs),
                prompt_tokens=sum(len(o.prompt_token_ids or ()) for o in outs),
                cached_tokens=sum(int(getattr(o, "num_cached_tokens", 0) or 0) for o in outs),
                gen_tokens=sum(len(o.outputs[0].token_ids) for o in outs),
                steps=c.steps - steps0,
                wall_s=time.perf_counter() - t,
            )
        )
        return outs

    def call(self: Any, name: Any, arguments: Any) -> dict[str, Any]:
        t = time.perf_counter()
        try:
            return inner_call(self, name, arguments)
        finally:
            c = clock_of()
            c.tool_calls += 1
            c.tool_s += time.perf_counter() - t

    core.step = step
    llm.generate = generate
    ToolClient.call = call  # type: ignore[method-assign]


def table(arm: str, c: Clock) -> str:
    """The profile of one run: engine calls, MCP round trips, the rest."""
    lines = [f"profile of {arm}: {c.wall_s:.2f} s wall, {c.cpu_s:.2f} s CPU"]
    lines.append(
        f"  {'engine call':<12} {'requests':>8} {'prompt tok':>10} {'cached':>8} {'prefilled':>9} "
        f"{'gen tok':>8} {'steps':>6} {'wall s':>7}"
    )
    for i, k in enumerate(c.calls):
        lines.append(
            f"  {i:<12} {k.requests:>8} {k.prompt_tokens:>10} {k.cached_tokens:>8} "
            f"{k.prompt_tokens - k.cached_tokens:>9} {k.gen_tokens:>8} {k.steps:>6} {k.wall_s:>7.2f}"
        )
    engine_s = sum(k.wall_s for k in c.calls)
    later = c.calls[1:]
    refill = sum(k.prompt_tokens - k.cached_tokens for k in later)
    lines += [
        f"  engine calls {len(c.calls)}: {engine_s:.2f} s ({c.steps} steps {c.step_s:.2f} s, "
        f"{engine_s - c.step_s:.2f} s in LLM.generate outside steps: tokenizing, queueing, outputs)",
        f"  prompt re-prefill after round 0: {refill} tokens prefilled of "
        f"{sum(k.prompt_tokens for k in later)} prompt tokens ({sum(k.cached_tokens for k in later)} cached)",
        f"  MCP round trips {c.tool_calls}: {c.tool_s:.2f} s"
        + (f" ({c.tool_s / c.tool_calls * 1000:.2f} ms each)" if c.tool_calls else ""),
        f"  Python outside engine and tools (plan, loop, shard, file): "
        f"{c.wall_s - engine_s - c.tool_s:.2f} s",
    ]
    return "\n".join(lines)


def texts(path: Path) -> list[tuple[str, int, str]]:
    """(item, sample, text) of a generations file, for comparing two revisions' outputs."""
    gens = json.loads(path.read_text())
    return [(it["item_id"], s["index"], s["text"]) for it in gens["items"] for s in it["samples"]]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_tool_arm", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--arm", default="+tools", help="the tool arm (default +tools)")
    ap.add_argument("--items", type=int, default=300, help="suite items (default 300: the demo)")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved rounds of plain and tool arm")
    ap.add_argument("--save", type=Path, help="keep the last round's generations files here")
    ap.add_argument("--compare", type=Path, help="a folder of generations files to compare the texts with")
    ap.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="an engine setting over conf/engine/vllm.yaml, e.g. --engine 'llm_kwargs={\"block_size\": 128}'",
    )
    return ap.parse_args(argv)


def _engine_settings(overrides: list[str]) -> dict[str, Any]:
    """conf/engine/vllm.yaml with the --engine KEY=JSON settings over it."""
    from pipeline.config import engine_config

    cfg = engine_config("vllm")
    for setting in overrides:
        key, _, value = setting.partition("=")
        if key not in cfg:
            raise SystemExit(
                f"bench_tool_arm: --engine {setting}: {key} is not a key of conf/engine/vllm.yaml"
            )
        cfg[key] = json.loads(value)
    return cfg


def _rounds(
    engine: Any, arms: tuple[str, str], cfg: dict[str, Any], world: tuple[Path, Path], tmp: Path, repeats: int
) -> tuple[dict[str, Clock], dict[str, list[float]]]:
    """Interleaved runs of the plain and the tool arm: the fastest round's clock of each, and every wall."""
    from pipeline.generate import run
    from pipeline.settings import RunSettings

    params, pins = world
    current = [Clock()]
    instrument(engine, lambda: current[0])
    best: dict[str, Clock] = {}
    walls: dict[str, list[float]] = {a: [] for a in arms}
    for rep in range(repeats):
        for arm in arms:
            engine.llm.reset_prefix_cache()
            current[0] = clock = Clock()
            out = tmp / f"gen-{rep}"
            settings = RunSettings(arm=arm, params=params, pins=pins, engine=cfg, out_dir=out, progress=False)
            t, cpu = time.perf_counter(), time.process_time()
            run(settings, engine)
            clock.wall_s = time.perf_counter() - t
            clock.cpu_s = time.process_time() - cpu
            walls[arm].append(clock.wall_s)
            if arm not in best or clock.wall_s < best[arm].wall_s:
                best[arm] = clock
    return best, walls


def _keep_and_compare(args: argparse.Namespace, arms: tuple[str, str], last: Path) -> None:
    """Copy the last round's generations to --save, and count texts unlike those of --compare."""
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        for arm in arms:
            shutil.copy(last / f"{arm}.json", args.save / f"{arm}.json")
    if args.compare is not None:
        for arm in arms:
            mine, theirs = texts(last / f"{arm}.json"), texts(args.compare / f"{arm}.json")
            differ = sum(a != b for a, b in zip(mine, theirs, strict=True))
            print(f"texts of {arm} unlike {args.compare}: {differ}/{len(mine)}")


def main(argv: list[str] | None = None) -> int:
    """Profile the tool arm and its plain arm on one engine; print the table and the ratio."""
    args = _parse(argv)
    from pipeline.config import load_arm, load_params
    from pipeline.engines import make_engine

    spec = load_arm(args.arm)
    if not spec.tools:
        raise SystemExit(f"bench_tool_arm: --arm {args.arm}: not a tool arm (conf/arm/{args.arm}.yaml)")
    plain = "base" if spec.model == "base" else "trained"
    tmp = Path(tempfile.mkdtemp(prefix="bench_tool_arm-"))
    try:
        params, pins = demo_world(tmp, args.items)
        cfg = _engine_settings(args.engine)
        t0 = time.perf_counter()
        model = load_params(params).models[spec.model].path
        engine = make_engine(cfg, str(model))
        start_s = time.perf_counter() - t0
        load0 = os.getloadavg()[0]
        best, walls = _rounds(engine, (plain, args.arm), cfg, (params, pins), tmp, args.repeats)
        load1 = os.getloadavg()[0]
        print(
            f"engine start {start_s:.1f} s ({engine.info.version}, {engine.info.device}), {args.items} items"
        )
        print(f"engine settings {json.dumps({k: cfg[k] for k in sorted(cfg)})}")
        print(table(plain, best[plain]))
        print(table(args.arm, best[args.arm]))
        ratio = best[args.arm].wall_s / best[plain].wall_s
        cpu_ratio = best[args.arm].cpu_s / best[plain].cpu_s
        rounds = "; ".join(f"{a} " + ", ".join(f"{w:.1f}" for w in ws) for a, ws in walls.items())
        print(
            f"{args.arm} / {plain}: {ratio:.2f} wall, {cpu_ratio:.2f} CPU (fastest rounds; wall s: {rounds})"
        )
        print(f"load average {load0:.2f} -> {load1:.2f} ({os.cpu_count()} CPUs)")
        _keep_and_compare(args, (plain, args.arm), tmp / f"gen-{args.repeats - 1}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
