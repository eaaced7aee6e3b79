"""Speed and memory of the analyses at the size the project promises; prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_stats.py [--items 10000] [--k 16] [--n-boot 10000] [--n-perm 10000]

1. the delta report (python -m analysis.reports.delta) on items x k with n_boot resamples and n_perm
permutations,
   0/1 scores (the usual case) and fractional scores (no two items alike, so no grouping shortcut);
2. the arm comparison (python -m analysis.reports.arm_comparison) over 7 arms of that size;
3. the item-level bootstrap of the mean delta against a per-resample Python loop over random.Random, the
   textbook form (a few hundred loop resamples timed, then extrapolated to n_boot).

Each report runs in a fresh interpreter: "process" is its whole wall time (interpreter start, imports,
loading, statistics, figures, writing); "in-process" is main() alone; "cpu" is the child's user + system
time (on a shared machine the wall times grow with the load average printed first); peak memory is the
child's ru_maxrss. Targets: delta <= 3 s and <= 1 GiB, arms <= 15 s, on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.estimators.bootstrap_ci import bootstrap_mean_ci  # noqa: E402  (needs the repository root on sys.path)
from analysis.estimators.resampling import rng_for  # noqa: E402  (needs the repository root on sys.path)

ARMS = {  # arm -> (logit lift, mean generated tokens, attribution)
    "base": (0.0, 40, "reference"),
    "trained": (0.3, 44, "parametric"),
    "+rag": (0.2, 50, "lookup"),
    "+tools": (0.6, 60, "tool_access"),
    "trained+rag": (0.45, 52, "mixed"),
    "trained+tools": (0.8, 62, "mixed"),
    "trained+rag+tools": (0.9, 70, "ceiling"),
}
FAMILIES = ["lookup", "compute", "raise", "compound"]

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from analysis.commands import {module} as m
t1 = time.perf_counter()
code = m.main({argv!r})
t2 = time.perf_counter()
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"code": code, "import_s": t1 - t0, "main_s": t2 - t1, "cpu_s": use.ru_utime + use.ru_stime,
                  "maxrss_mib": use.ru_maxrss / 1024}}))
"""


def write_world(folder: Path, n_items: int, k: int, fractional: bool, arms: list[str]) -> None:
    """Synthetic EvalLogs with shared item difficulty, budgets and families (JSON as the runner writes it)."""
    rng = np.random.default_rng(0)
    logit = rng.normal(0.0, 1.5, n_items)
    for name in arms:
        lift, tokens, attribution = ARMS[name]
        p = 1 / (1 + np.exp(-(logit + lift)))
        if fractional:
            scores = np.clip(p[:, None] + rng.normal(0, 0.2, (n_items, k)), 0, 1).round(6)
        else:
            scores = (rng.random((n_items, k)) < p[:, None]).astype(float)
        gen = rng.integers(tokens - 10, tokens + 11, (n_items, k))
        items = [
            {"item_id": f"q{i:06d}", "family": FAMILIES[i % 4], "scores": scores[i].tolist(),
             "gen_tokens": gen[i].tolist()}
            for i in range(n_items)
        ]  # fmt: skip
        log = {
            "model_name": "bench-trained" if name.startswith("trained") else "bench-base",
            "suite": "bench", "suite_revision": "v1", "n_samples": k, "temperature": 1.0, "max_tokens": 64,
            "driver": "bench", "measured_at": "2026-01-01T00:00:00Z", "arm": name, "attribution": attribution,
            "top_p": 1.0, "seed": 1234,
            "protocol": {"k": k, "max_tokens": 64, "temperature": 1.0, "top_p": 1.0, "seed": 1234},
            "items": items,
        }  # fmt: skip
        (folder / f"{name}.json").write_text(json.dumps(log))


def run_child(module: str, argv: list[str]) -> dict:
    """Run module.main(argv) in a fresh interpreter; its timings, peak RSS and the process wall time."""
    code = CHILD.format(root=str(ROOT), module=module, argv=argv)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{module} failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"{module} returned {result['code']}:\n{proc.stderr}")
    return {**result, "process_s": wall}


def textbook_loop(d: list[float], n_resamples: int, seed: int = 0) -> list[float]:
    """The textbook bootstrap: per resample, draw n differences with random.Random and take their mean."""
    rng = random.Random(seed)
    n = len(d)
    return [statistics.fmean(rng.choices(d, k=n)) for _ in range(n_resamples)]


def main() -> None:
    """Generate the logs, time both reports and the loop baseline, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--n-perm", type=int, default=10_000)
    ap.add_argument(
        "--loop-resamples", type=int, default=300, help="loop resamples timed before extrapolating"
    )
    args = ap.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"machine: {os.cpu_count()} CPUs (load average {load}), python {sys.version.split()[0]}, "
        f"numpy {np.__version__}"
    )
    print(f"size: {args.items} items x k={args.k}, n_boot={args.n_boot}, n_perm={args.n_perm}\n")

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        params = tmp_path / "params.yaml"
        params.write_text(
            f"analysis: {{n_boot: {args.n_boot}, n_perm: {args.n_perm}, alpha: 0.05, fdr: 0.05, "
            "min_effect: 0.01, seed: 1234}\n"
        )
        for kind, fractional in (("0/1 scores", False), ("fractional scores", True)):
            logs = tmp_path / ("frac" if fractional else "binary")
            logs.mkdir()
            write_world(logs, args.items, args.k, fractional, list(ARMS))
            argv = ["--pre", str(logs / "base.json"), "--post", str(logs / "trained.json"),
                    "--out", str(tmp_path / f"delta-{logs.name}"), "--params", str(params)]  # fmt: skip
            r = run_child("delta", argv)
            print(
                f"delta report ({kind}): in-process {r['main_s']:.2f} s, process {r['process_s']:.2f} s "
                f"(imports {r['import_s']:.2f} s, cpu {r['cpu_s']:.2f} s), peak RSS {r['maxrss_mib']:.0f} MiB"
                "   [target 3 s, 1 GiB]"
            )
            if not fractional:
                argv = ["--logs", str(logs), "--out", str(tmp_path / "arms"), "--params", str(params)]
                r = run_child("arm_comparison", argv)
                print(
                    f"arm comparison, 7 arms ({kind}): in-process {r['main_s']:.2f} s, process "
                    f"{r['process_s']:.2f} s (cpu {r['cpu_s']:.2f} s), peak RSS {r['maxrss_mib']:.0f} MiB"
                    "   [target 15 s]"
                )

    rng = np.random.default_rng(0)
    p = rng.random(args.items)
    pre = (rng.random((args.items, args.k)) < p[:, None]).mean(axis=1)
    post = (rng.random((args.items, args.k)) < np.clip(p + 0.05, 0, 1)[:, None]).mean(axis=1)
    d = post - pre
    t0 = time.perf_counter()
    textbook_loop(d.tolist(), args.loop_resamples)
    loop_each = (time.perf_counter() - t0) / args.loop_resamples
    loop_total = loop_each * args.n_boot
    timings = {}
    for label, compress in (("grouped", True), ("item by item", False)):
        t0 = time.perf_counter()
        bootstrap_mean_ci(d, args.n_boot, rng_for(1234, "item"), compress=compress)
        timings[label] = time.perf_counter() - t0
    print(
        f"\nbootstrap of the mean delta, {args.n_boot} resamples of {args.items} items:\n"
        f"  per-resample loop (random.Random.choices + fmean): {loop_each * 1e3:.2f} ms a resample over "
        f"{args.loop_resamples} timed, extrapolated {loop_total:.1f} s\n"
        + "".join(
            f"  bootstrap_mean_ci, {label}: {t:.3f} s (BCa included), {loop_total / t:.0f}x faster\n"
            for label, t in timings.items()
        )
    )


if __name__ == "__main__":
    main()
