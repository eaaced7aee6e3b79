"""How well each probe finds the items the memorizing run trained on, and how often it flags one it never saw.

    python probe_figures.py [--contamination contamination] [--memorized models/memorized.json]

Reads the contamination stage's files and the memorized ids train.py wrote, and prints per checkpoint and
evidence the share of memorized items flagged (found) and the share of the other items flagged (false flags;
for `base`, which saw no suite item, every flag is false).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contract.contamination import OverlapFile, ProbeFile


def share(flags: list[bool]) -> str:
    """k/n (percent)."""
    return f"{sum(flags)}/{len(flags)} ({100 * sum(flags) / max(1, len(flags)):.1f}%)"


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contamination", default="contamination")
    ap.add_argument("--memorized", default="models/memorized.json")
    args = ap.parse_args(argv)
    folder = Path(args.contamination)
    memorized = set(json.loads(Path(args.memorized).read_text()))
    print("| checkpoint | evidence | memorized items flagged | other items flagged (false flags) |")
    print("| --- | --- | --- | --- |")
    for path in sorted(folder.glob("probe-*.json")):
        probe = ProbeFile.model_validate_json(path.read_bytes())
        tests = {
            "completion, exact": lambda r: r.exact,
            "completion, ROUGE-L >= 0.9": lambda r: r.rouge_l >= 0.9,
            "truncated question answered right": lambda r: r.answer_right,
        }
        for name, test in tests.items():
            hit = [test(r) for r in probe.items if r.item_id in memorized]
            other = [test(r) for r in probe.items if r.item_id not in memorized]
            print(f"| {probe.model} | {name} | {share(hit)} | {share(other)} |")
    overlap_path = folder / "overlap.json"
    if overlap_path.is_file():
        rows = OverlapFile.model_validate_json(overlap_path.read_bytes()).items
        for name, test in {
            "n-gram run": lambda r: r.longest_run > 0,
            "MinHash near-duplicate": lambda r: r.near_duplicate is not None,
        }.items():
            hit = [test(r) for r in rows if r.item_id in memorized]
            other = [test(r) for r in rows if r.item_id not in memorized]
            print(f"| training questions | {name} | {share(hit)} | {share(other)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
