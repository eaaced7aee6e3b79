"""`dvc repro` of the demo world in a fresh clone, before and after engine sharing, side by side.

    python -m benchmarks.bench_repro [--before REV] [--after REV] [--keep]

Clones this repository twice into a temporary folder (at --before, by default the revision just before
pipeline/run_arms.py was added, when every arm started its own engine; and at --after, by default HEAD),
links this checkout's .venv into each, and times `dvc repro` there from nothing (no generations, no
logs), one after the other. Prints per revision the wall time, the stages run and the engine starts (read
from the log), with the load average before and after: on a shared machine other jobs only add time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def default_before() -> str:
    """The revision before the one that added pipeline/run_arms.py (one engine start per arm)."""
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "pipeline/run_arms.py").splitlines()
    if not added:
        raise SystemExit("bench_repro: pipeline/run_arms.py has no history here; pass --before REV")
    return f"{added[-1]}^"


def time_repro(rev: str, work: Path) -> dict[str, object]:
    """Clone at rev into work, run `dvc repro` there; wall time, stages, engine starts, load averages."""
    dest = work / rev.replace("/", "_").replace("^", "-parent")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", _git("rev-parse", rev)], cwd=dest, check=True)
    os.symlink(ROOT / ".venv", dest / ".venv")
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "dvc"), "repro"], cwd=dest, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    # Beside the clone, not in it: the clone's `git status` is part of what a reader checks.
    dest.with_name(f"{dest.name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(
            f"bench_repro: dvc repro at {rev} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    log = done.stdout + done.stderr
    starts = len(re.findall(r"engine start [0-9.]+ s", log))
    return {
        "rev": _git("rev-parse", "--short", rev),
        "wall_s": wall,
        "stages": len(set(re.findall(r"Running stage '([^']+)'", log))),
        "restored": len(set(re.findall(r"Stage '([^']+)' is cached", log))),
        "engine_starts": starts,
        "load": (load0, os.getloadavg()[0]),
    }


def main() -> None:
    """Time both revisions and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="revision with one engine per arm")
    parser.add_argument("--after", default="HEAD", help="revision with one engine per model")
    parser.add_argument("--keep", action="store_true", help="keep the clones (printed)")
    args = parser.parse_args()
    before = args.before or default_before()
    work = Path(tempfile.mkdtemp(prefix="bench-repro-"))
    rows = []
    try:
        for rev in (before, args.after):
            rows.append(time_repro(rev, work))
            print(f"  measured {rev}: {rows[-1]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"clones kept in {work}", file=sys.stderr)
    print(f"dvc repro of the demo world in a fresh clone ({os.cpu_count()} CPUs)")
    head = f"{'revision':<12} {'wall':>8} {'ran':>4} {'restored':>9} {'engine starts':>14}"
    print(f"{head} {'load before/after':>18}")
    for r in rows:
        load = r["load"]
        assert isinstance(load, tuple)
        print(
            f"{r['rev']!s:<12} {r['wall_s']:>7.0f}s {r['stages']!s:>4} {r['restored']!s:>9} "
            f"{r['engine_starts']!s:>14} "
            f"{load[0]:>8.2f}/{load[1]:<8.2f}"
        )
    ratio = float(rows[1]["wall_s"]) / float(rows[0]["wall_s"])  # type: ignore[arg-type]
    print(f"after / before: {ratio:.2f}")


if __name__ == "__main__":
    main()
