"""Loading logs with samples, and the whole delta report at the scale of published RLVR studies.

    .venv/bin/python benchmarks/bench_logs.py [--repeats 3] [--n-boot 10000] [--n-perm 10000] [--only NAME]

Synthetic EvalLogs with every sample (seed, text, answer, finish reason, tokens) are built through the
contract's types (EvalLog, ItemResult, SampleRecord) and written as the scorer writes them
(model_dump_json(indent=1, exclude_none=True), atomically), for two arms of each size:

  10,000 items x k = 16     (a large suite at the k of most papers)        target: process <= 2 s
     500 items x k = 1,024  (pass@k curves up to k = 1,024)                target: process <= 10 s

each with 0/1 scores and with fractional scores (no two items alike, so no grouping shortcut). For each it
prints the log size; the CPU time to validate one log in this process with the analyses' reader
(contract.logreader.read_log, samples checked then dropped) and with contract.evallog.load (every sample a
pydantic object); and the whole `python -m analysis.commands.delta` process (interpreter start, imports, both
logs
read and validated, every statistic, markdown and figure written): its wall time, minimum and median of
--repeats runs (other jobs on a shared machine only ever add time), and its CPU time (user + system), with
the load average before and after.

A second table splits the process's CPU time into its parts, each the least of --repeats runs in a fresh
interpreter as the process runs it (collector paused): the imports, reading both logs, handing one log back
from the reader's process (pickle there and here), every statistic (`analysis.reports.delta.build`, its
threads included), and the figure (matplotlib's import and one drawing). The imports come before anything
else; the rest can at best be shared evenly by the CPUs, so imports + rest / CPUs is a floor no arrangement
of this work beats on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract.atomic import atomic_write  # noqa: E402  (needs the repository root on sys.path)
from contract.evallog import FORMAT_VERSION, EvalLog, ItemResult, SampleRecord, ScorerInfo, load  # noqa: E402
from contract.logreader import read_log  # noqa: E402
from contract.protocol import Protocol  # noqa: E402

SIZES = {  # name -> (items, k, process target in seconds)
    "10000x16": (10_000, 16, 2.0),
    "500x1024": (500, 1024, 10.0),
}
PART_NAMES = ("imports", "read", "handover", "statistics", "figure")
FAMILIES = ["lookup", "compute", "raise", "compound"]
WORDS = ["the", "orbit", "period", "radius", "altitude", "velocity", "so", "we", "get", "then", "which",
         "gives", "answer", "km", "s"]  # fmt: skip


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    """n short reasoning texts ending in an answer line (about 150 characters, as a small model writes)."""
    words = np.array(WORDS)[rng.integers(0, len(WORDS), (n, 24))]
    values = rng.integers(100, 99_999, n)
    return [f" {' '.join(w)}.\nAnswer: {v}\n" for w, v in zip(words, values, strict=True)]


def arm_log(name: str, n_items: int, k: int, fractional: bool, logit: np.ndarray, seed: int) -> EvalLog:
    """One arm's EvalLog with every sample, built through the contract's validated types."""
    rng = np.random.default_rng(seed)
    lift = 0.3 if name == "trained" else 0.0
    p = 1 / (1 + np.exp(-(logit + lift)))
    if fractional:
        scores = np.clip(p[:, None] + rng.normal(0, 0.2, (n_items, k)), 0, 1).round(6)
    else:
        scores = (rng.random((n_items, k)) < p[:, None]).astype(float)
    tokens = rng.integers(30, 60, (n_items, k))
    # Every arm gives sample j of an item the same seed (as the runner does); the analyses check it.
    seeds = np.random.default_rng(1234).integers(0, 2**31, (n_items, k))
    proto = Protocol(k=k, max_tokens=64, temperature=1.0, top_p=1.0, seed=1234, max_tool_calls=4)
    items = []
    for i in range(n_items):
        texts = _texts(rng, k)
        samples = [
            SampleRecord(
                index=j,
                seed=int(seeds[i, j]),
                score=float(scores[i, j]),
                text=texts[j],
                answer=texts[j].rsplit("Answer: ", 1)[1].strip(),
                finish_reason="stop",
                prompt_tokens=90,
                gen_tokens=int(tokens[i, j]),
                rounds=1,
            )
            for j in range(k)
        ]
        items.append(
            ItemResult(
                item_id=f"q{i:06d}",
                family=FAMILIES[i % 4],
                scores=scores[i].tolist(),
                gen_tokens=tokens[i].tolist(),
                prompt=f"Question: what is the period of orbit {i} in minutes?\nAnswer:",
                samples=samples,
            )
        )
    return EvalLog(
        format_version=FORMAT_VERSION,
        model_name=f"bench/{name}",
        suite="bench",
        suite_revision="v1",
        n_samples=k,
        temperature=1.0,
        max_tokens=64,
        driver="bench",
        measured_at="2026-01-01T00:00:00Z",
        items=items,
        arm=name,
        attribution="reference" if name == "base" else "parametric",
        top_p=1.0,
        seed=1234,
        protocol=proto,
        scorer=ScorerInfo(name="bench", version="1"),
    )


def write_pair(folder: Path, n_items: int, k: int, fractional: bool) -> tuple[Path, Path]:
    """base.json and trained.json with shared item difficulty, written as pipeline.score writes a log."""
    logit = np.random.default_rng(0).normal(0.0, 1.5, n_items)
    paths = []
    for seed, name in enumerate(("base", "trained"), start=1):
        log = arm_log(name, n_items, k, fractional, logit, seed)
        path = folder / f"{name}.json"
        atomic_write(path, log.model_dump_json(indent=1, exclude_none=True) + "\n")
        paths.append(path)
    return paths[0], paths[1]


def cpu_seconds(read: object, path: Path) -> float:
    """CPU time of read(path) in this process (user + system)."""
    t0 = time.process_time()
    read(path)  # type: ignore[operator]
    return time.process_time() - t0


# Run in a fresh interpreter by delta_parts: each part's CPU time as `python -m analysis.commands.delta`
# spends it.
PARTS = """
import gc, json, pickle, sys, time
c0 = time.process_time()
from analysis.reports import delta
from analysis.reports.settings import read_settings
from contract.logreader import read_log
c1 = time.process_time()
gc.disable()
pre_path, post_path, params = sys.argv[1:4]
pre, post = read_log(pre_path), read_log(post_path)
c2 = time.process_time()
pickle.loads(pickle.dumps(post))
c3 = time.process_time()
report = delta.build(pre_path, pre, post_path, post, read_settings(params))
c4 = time.process_time()
from analysis.rendering import figures
figures.passk_figure(report)
c5 = time.process_time()
print(json.dumps({"imports": c1 - c0, "read": c2 - c1, "handover": c3 - c2, "statistics": c4 - c3,
                  "figure": c5 - c4}))
"""


def delta_parts(pre: Path, post: Path, params: Path) -> dict[str, float]:
    """CPU seconds of each part of the delta process (PARTS), in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", PARTS, str(pre), str(post), str(params)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the parts of the delta process could not be timed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def children_cpu() -> float:
    """User + system time of the finished child processes so far."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def time_process(argv: list[str], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU times of repeats runs of `python -m analysis.commands.delta argv` in fresh
    interpreters."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0 = children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "analysis.commands.delta", *argv],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=False,
        )
        walls.append(time.perf_counter() - t0)
        cpus.append(children_cpu() - c0)
        if proc.returncode != 0:
            raise SystemExit(
                f"analysis.commands.delta {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}"
            )
    return walls, cpus


def main(argv: list[str] | None = None) -> int:
    """Write the logs of each size, time loading one and the whole delta process, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="delta processes timed per case (default 3)")
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--n-perm", type=int, default=10_000)
    ap.add_argument("--only", choices=sorted(SIZES), help="one size only")
    ap.add_argument(
        "--keep", type=Path, help="write the logs into this folder and keep them (reused when there)"
    )
    args = ap.parse_args(argv)
    print(
        f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"python {sys.version.split()[0]}, numpy {np.__version__}; n_boot={args.n_boot}, n_perm={args.n_perm}"
    )
    header = (
        f"{'size':<10} {'scores':<10} {'log MB':>6} {'read_log':>8} {'load':>6} {'process':>7} "
        f"{'median':>6} {'cpu':>5} {'target':>6}  met"
    )
    units = (
        f"{'':<10} {'':<10} {'':>6} {'cpu s':>8} {'cpu s':>6} {'wall s':>7} {'wall s':>6} {'s':>5} "
        f"{'wall s':>6}"
    )
    rows, part_rows = [], []
    n_cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        params = root / "params.yaml"
        params.parent.mkdir(parents=True, exist_ok=True)
        params.write_text(
            f"analysis: {{n_boot: {args.n_boot}, n_perm: {args.n_perm}, alpha: 0.05, fdr: 0.05, "
            "min_effect: 0.01, seed: 1234}\n"
        )
        for size, (n_items, k, target) in SIZES.items():
            if args.only and size != args.only:
                continue
            for kind, fractional in (("0/1", False), ("fractional", True)):
                folder = root / f"{size}-{'frac' if fractional else 'binary'}"
                folder.mkdir(parents=True, exist_ok=True)
                pre, post = folder / "base.json", folder / "trained.json"
                if not (args.keep and pre.is_file() and post.is_file()):
                    pre, post = write_pair(folder, n_items, k, fractional)
                mb = pre.stat().st_size / 1e6
                reader_s, load_s = cpu_seconds(read_log, pre), cpu_seconds(load, pre)
                cli = ["--pre", str(pre), "--post", str(post), "--out", str(folder / "delta")]
                walls, cpus = time_process([*cli, "--params", str(params)], args.repeats)
                best, median = min(walls), statistics.median(walls)
                rows.append(
                    f"{size:<10} {kind:<10} {mb:6.1f} {reader_s:8.2f} {load_s:6.2f} {best:7.2f} "
                    f"{median:6.2f} {min(cpus):5.2f} {target:6.1f}  {'yes' if best <= target else 'NO'}"
                )
                runs = [delta_parts(pre, post, params) for _ in range(args.repeats)]
                parts = {name: min(run[name] for run in runs) for name in PART_NAMES}
                rest = sum(v for name, v in parts.items() if name != "imports")
                floor = parts["imports"] + rest / n_cpus
                part_rows.append(
                    f"{size:<10} {kind:<10} "
                    + " ".join(f"{parts[name]:>10.2f}" for name in PART_NAMES)
                    + f" {parts['imports'] + rest:>6.2f} {floor:>7.2f} {target:>6.1f}"
                )
                print(f"  {size} {kind}: done", file=sys.stderr, flush=True)
    print(header)
    print(units)
    print("\n".join(rows))
    print(
        f"\nCPU seconds by part (least of {args.repeats} fresh interpreters); "
        f"floor = imports + the rest / {n_cpus} CPUs:"
    )
    print(
        f"{'size':<10} {'scores':<10} " + " ".join(f"{n:>10}" for n in PART_NAMES) + "    sum   floor target"
    )
    print("\n".join(part_rows))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
