"""The README's test command in a fresh clone: its wall time, its CPU time, and where the CPU goes.

    python -m benchmarks.bench_tests [--rev HEAD] [--top 15] [--keep]

Clones this repository at --rev into a temporary folder, links this checkout's .venv and the files
scripts/setup.sh writes (vendor/) into it, and runs the test command there
(`python -m pytest -m "slow or not slow" -n 2 --dist loadgroup`, CI=true so that nothing is skipped) with
benchmarks/pytest_cpu_clock.py loaded. Prints the wall time with the load average before and after (other
jobs on a shared machine only add time), the CPU time of the whole run, each pytest-xdist group's CPU time
and when each worker finished (how evenly the two workers were loaded), and the --top tests by CPU time.
Exits with pytest's code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND = ["-m", "pytest", "-m", "slow or not slow", "-n", "2", "--dist", "loadgroup", "-q"]


def clone(rev: str, dest: Path) -> Path:
    """A clone of this repository at rev, with this checkout's .venv and vendor/ linked in."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=dest, check=True)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    vendor = ROOT / "vendor"
    if vendor.is_dir():
        shutil.copytree(vendor, dest / "vendor", dirs_exist_ok=True)
    return dest


def report(records: list[dict], wall: float, cpu: float, top: int) -> None:
    """Print the run's totals, each group's CPU time, each worker's end and the costliest tests."""
    print(
        f"wall {wall:.0f} s ({wall / 60:.1f} min); "
        f"CPU {cpu:.0f} s of user and system time ({cpu / wall:.2f} cores)"
    )
    groups: dict[str, float] = defaultdict(float)
    for r in records:
        groups[r["group"]] += r["own_cpu"] + r["children_cpu"]
    counted = sum(groups.values())
    print(
        f"CPU by pytest-xdist group ({counted:.0f} s counted by the plugin; "
        "detached daemons such as Ray's are not):"
    )
    for name, seconds in sorted(groups.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {seconds:7.1f} s  {name}")
    if records:
        t0 = min(r["start"] for r in records)
        ends: dict[str, float] = defaultdict(float)
        for r in records:
            worker = r.get("worker", "main")
            ends[worker] = max(ends[worker], r["start"] + r["wall"] - t0)
        print(
            "each worker's last test ended at: "
            + ", ".join(f"{w} {e:.0f} s" for w, e in sorted(ends.items()))
        )
    print(f"the {top} tests with the most CPU time (own + subprocesses):")
    for r in sorted(records, key=lambda r: -(r["own_cpu"] + r["children_cpu"]))[:top]:
        print(f"  {r['own_cpu'] + r['children_cpu']:6.1f} s  {r['id']}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the test command in a fresh clone and print where its time went."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_tests", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--rev", default="HEAD", help="the revision to clone (default HEAD)")
    ap.add_argument(
        "--top", type=int, default=15, help="how many of the costliest tests to list (default 15)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the clone and the per-test records")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-tests-"))
    try:
        repo = clone(args.rev, tmp / "repo")
        out = tmp / "clock"
        out.mkdir()
        env = {**os.environ, "CI": "true", "BENCH_TESTS_OUT": str(out)}
        load0 = os.getloadavg()[0]
        before = os.times()
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, *TEST_COMMAND, "-p", "benchmarks.pytest_cpu_clock"], cwd=repo, env=env
        )
        wall = time.perf_counter() - t0
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        records = []
        for f in sorted(out.glob("*.jsonl")):
            for line in f.read_text().splitlines():
                records.append({**json.loads(line), "worker": f.stem})
        print(
            f"\nbench_tests: {args.rev} in {repo}: pytest exited {done.returncode}; "
            f"load average {load0:.2f} -> {os.getloadavg()[0]:.2f}"
        )
        report(records, wall, cpu, args.top)
        return done.returncode
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
