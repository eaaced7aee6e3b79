"""What reading one sample's answer costs at its worst: time and memory, each case in a fresh process.

    python -m benchmarks.bench_reader_costs [--limit 2] [--only boxes,latex,digits]

- boxes: a text of 10,000 unclosed `\\boxed{` (the box scan), read by the report's and the lenient reader
  (`scoring.verifiers.score_both`, math verifier) under a time limit of --limit s;
- latex: a box of a 1,000-term polynomial (math-verify's parser runs out of time): the whole sample's
  wall time against the limit, which both readers and their judgements share;
- digits: texts of 100,000 and 500,000 digits (scoring.verifiers.MAX_TEXT_CHARS, the longest text read)
  and one past it, which is not parsed: each process's peak memory (ru_maxrss) and wall time.

Printed: one line per case with its wall time, peak memory, whether it ran out of time and the reason
recorded, and the load average before and after (a shared machine only ever adds time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = r"""
import json, resource, sys, time
from contract.suite import SuiteItem
from scoring.verifiers import score_both
kind, n, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
item = SuiteItem.model_validate({"item_id": "m", "family": "f", "question": "q", "answer": "5",
                                 "verifier": {"type": "math"}})
text = {"boxes": "\\boxed{" * n, "digits": "1" * n,
        "latex": "\\boxed{" + "+".join(f"x^{{{i}}}" for i in range(1, n + 1)) + "}"}[kind]
t0 = time.monotonic()
strict, lenient = score_both(item, text, chat=True, timeout_s=limit)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": time.monotonic() - t0, "peak_mb": peak,
                  "timed_out": strict.timed_out or lenient.timed_out, "reason": strict.reason}))
"""
CASES = {
    "boxes": [("boxes", 10_000)],
    "latex": [("latex", 1_000)],
    "digits": [("digits", 100_000), ("digits", 500_000), ("digits", 500_001)],
}


def run_case(kind: str, n: int, limit: float) -> dict[str, object]:
    """One case in a fresh process (its peak memory is its own)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CASE, kind, str(n), str(limit)], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True, timeout=600)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the cases and print one line each."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_reader_costs", description=__doc__)
    ap.add_argument("--limit", type=float, default=2.0, help="the verifier's time limit per sample, s")
    ap.add_argument("--only", default=",".join(CASES), help=f"cases, comma-separated: {', '.join(CASES)}")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}; time limit {args.limit:g} s per sample")
    for name in args.only.split(","):
        for kind, n in CASES[name]:
            r = run_case(kind, n, args.limit)
            print(f"{kind} x {n:,}: {r['wall_s']:.2f} s, peak {r['peak_mb']:.0f} MB, "
                  f"{'out of time' if r['timed_out'] else 'in time'}; {str(r['reason'])[:90]}")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
