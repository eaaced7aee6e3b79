"""`dvc repro` of the demo world in a fresh clone: its wall time, each stage's and each arm's.

    python -m benchmarks.bench_repro --rev HEAD [--runs 3] [--keep]     # the README's figures
    python -m benchmarks.bench_repro [--before REV] [--after REV]       # two revisions side by side

Clones this repository into a temporary folder (at --rev; or at --before, by default the revision just
before pipeline/run_arms.py was added, when every arm started its own engine, and at --after, by default
HEAD), links this checkout's .venv into each clone, and times `dvc repro` there from nothing (no
generations, no logs), one after the other (--runs clones of each). Prints per run the wall time, the stages
run, the engine starts and whether `git status` is clean afterwards, with the load average before and after
(on a shared machine other jobs only add time); then each stage's wall time (from DVC's "Running stage" line
to the next one, stamped as the lines arrive) and each arm's engine start and generation time (from its
generations/<arm>.provenance.json); with --runs > 1, the median of the runs beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def default_before() -> str:
    """The revision before the one that added pipeline/run_arms.py (one engine start per arm)."""
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "pipeline/run_arms.py").splitlines()
    if not added:
        raise SystemExit("bench_repro: pipeline/run_arms.py has no history here; pass --before REV")
    return f"{added[-1]}^"


def run_timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, dict[str, float]]:
    """Run cmd, its output merged and stamped as it arrives; exit code, output, wall time per DVC stage."""
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert proc.stdout is not None
    lines, stages = [], {}
    current, since = None, time.perf_counter()
    for line in proc.stdout:
        lines.append(line)
        started = re.search(r"Running stage '([^']+)'", line)
        if started:
            now = time.perf_counter()
            if current is not None:
                stages[current] = now - since
            current, since = started.group(1), now
    code = proc.wait()
    if current is not None:
        stages[current] = time.perf_counter() - since
    return code, "".join(lines), stages


def arm_times(generations: Path) -> dict[str, tuple[float | None, float]]:
    """Each arm's (engine start s or None when it reused the engine, generation s), from its provenance."""
    out = {}
    for path in sorted(generations.glob("*.provenance.json")):
        record = json.loads(path.read_text())
        out[record["arm"]] = (record.get("engine_start_s"), float(record["generate_s"]))
    return out


def time_repro(rev: str, work: Path, run: int = 0) -> dict[str, Any]:
    """Clone at rev into work, run `dvc repro` there; wall time, stages, arms, engine starts, load."""
    dest = work / f"{rev.replace('/', '_').replace('^', '-parent')}-{run}"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", _git("rev-parse", rev)], cwd=dest, check=True)
    os.symlink(ROOT / ".venv", dest / ".venv")
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    # The clone's own code, not this checkout's, must run in the stages.
    env.pop("PYTHONPATH", None)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    code, log, stages = run_timed([str(ROOT / ".venv" / "bin" / "dvc"), "repro"], dest, env)
    wall = time.perf_counter() - t0
    # Beside the clone, not in it: the clone's `git status` is part of what a reader checks.
    dest.with_name(f"{dest.name}.log").write_text(log)
    if code != 0:
        raise SystemExit(f"bench_repro: dvc repro at {rev} failed:\n{log[-4000:]}")
    starts = len(re.findall(r"engine start [0-9.]+ s", log))
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=dest, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    return {
        "rev": _git("rev-parse", "--short", rev),
        "wall_s": wall,
        "stages": len(stages),
        "restored": len(set(re.findall(r"Stage '([^']+)' is cached", log))),
        "engine_starts": starts,
        "load": (load0, os.getloadavg()[0]),
        "stage_s": stages,
        "arms": arm_times(dest / "generations"),
        "dirty": dirty,
    }


def _fig(values: list[float]) -> str:
    """One figure, or the median of several runs with each run's figure."""
    if len(values) == 1:
        return f"{values[0]:7.1f}"
    return f"{statistics.median(values):7.1f} ({', '.join(f'{v:.1f}' for v in values)})"


def print_details(rows: list[dict[str, Any]]) -> None:
    """Per stage and per arm, for the runs of one revision (median first when there are several)."""
    print(f"revision {rows[0]['rev']}: per stage, wall s")
    for stage in rows[0]["stage_s"]:
        print(f"  {stage:<28} {_fig([r['stage_s'].get(stage, float('nan')) for r in rows])}")
    print(f"revision {rows[0]['rev']}: per arm, engine start s / generation s")
    for arm in rows[0]["arms"]:
        starts = [r["arms"][arm][0] for r in rows if arm in r["arms"]]
        start = "reused" if all(x is None for x in starts) else _fig([x or 0.0 for x in starts])
        print(f"  {arm:<28} start {start:>7} / generation {_fig([r['arms'][arm][1] for r in rows])}")


def main() -> None:
    """Time the revisions and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=None, help="time this revision only (e.g. HEAD)")
    parser.add_argument("--before", default=None, help="revision with one engine per arm")
    parser.add_argument("--after", default="HEAD", help="revision with one engine per model")
    parser.add_argument("--runs", type=int, default=1, help="fresh clones timed per revision (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the clones (printed)")
    args = parser.parse_args()
    revs = [args.rev] if args.rev else [args.before or default_before(), args.after]
    work = Path(tempfile.mkdtemp(prefix="bench-repro-"))
    rows: dict[str, list[dict[str, Any]]] = {rev: [] for rev in revs}
    try:
        for run in range(args.runs):
            for rev in revs:
                rows[rev].append(time_repro(rev, work, run))
                print(f"  measured {rev}: {rows[rev][-1]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"clones kept in {work}", file=sys.stderr)
    print(f"dvc repro of the demo world in a fresh clone ({os.cpu_count()} CPUs)")
    head = f"{'revision':<12} {'wall':>8} {'ran':>4} {'restored':>9} {'engine starts':>14}"
    print(f"{head} {'load before/after':>18}  git status")
    for rev in revs:
        for r in rows[rev]:
            load = r["load"]
            print(
                f"{r['rev']!s:<12} {r['wall_s']:>7.0f}s {r['stages']!s:>4} {r['restored']!s:>9} "
                f"{r['engine_starts']!s:>14} "
                f"{load[0]:>8.2f}/{load[1]:<8.2f}  "
                + ("clean" if not r["dirty"] else f"{len(r['dirty'])} changed: {', '.join(r['dirty'][:3])}")
            )
    for rev in revs:
        print_details(rows[rev])
    if len(revs) == 2:
        walls = [statistics.median(r["wall_s"] for r in rows[rev]) for rev in revs]
        print(f"after / before: {walls[1] / walls[0]:.2f}")


if __name__ == "__main__":
    main()
