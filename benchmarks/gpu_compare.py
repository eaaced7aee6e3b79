"""Compare a run's generations with a reference run's: identical samples, throughput, engine and device.

Per arm, the share of identical samples, and the run's throughput, engine, device and driver (what
scripts/gpu_check.sh reports after a GPU run).

    python -m benchmarks.gpu_compare --run GPU_GENERATIONS_DIR [--reference CPU_GENERATIONS_DIR]
                                     [--world demo] [--pipeline-s S] [--device-line LINE]
                                     [--out gpu_check.json]

--run is the generations folder of the run to describe (generations/<arm>.json with the provenance
record beside each, as the generate stage writes them); --reference the folder of the run to compare with
(the committed CPU run: `dvc pull` or `dvc checkout` brings its generations). A sample is identical when
its text is; arms are compared only where both runs answered the same requests (same items, prompts and
seeds), else the arm is reported as not comparable, never as 0% identical. Prints one table and adds the
world to the JSON file --out ({"worlds": {world: ...}}: every number of the table, the first differing
sample of each arm, the pipeline's wall time and the machine's device line), keeping the other worlds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from analysis.reports.number_text import num
from contract.atomic import atomic_write
from contract.generations import Generations, GenerationsError, load_generations
from contract.provenance import load_provenance, provenance_path


def arm_files(folder: Path) -> dict[str, Path]:
    """arm -> generations file of a generations folder (provenance records and hidden files left out)."""
    return {
        p.stem: p
        for p in sorted(folder.glob("*.json"))
        if not p.name.endswith(".provenance.json") and not p.name.startswith(".")
    }


def not_comparable(run: Generations, ref: Generations) -> str | None:
    """Why two generations of an arm did not answer the same requests, or None when they did."""
    if [it.item_id for it in run.items] != [it.item_id for it in ref.items]:
        return "different items"
    for a, b in zip(run.items, ref.items, strict=True):
        if a.prompt_sha256 != b.prompt_sha256:
            return f"item {a.item_id!r}: different prompts"
        if [s.seed for s in a.samples] != [s.seed for s in b.samples]:
            return f"item {a.item_id!r}: different seeds"
    return None


def compare_arm(run: Generations, ref: Generations) -> dict[str, Any]:
    """Identical samples of one arm in two runs: counts, share and the first sample that differs."""
    why = not_comparable(run, ref)
    if why is not None:
        return {"comparable": False, "reason": why}
    total = identical = 0
    first: dict[str, Any] | None = None
    for a, b in zip(run.items, ref.items, strict=True):
        for s, r in zip(a.samples, b.samples, strict=True):
            total += 1
            if s.text == r.text:
                identical += 1
            elif first is None:
                first = {"item_id": a.item_id, "index": s.index, "run": s.text, "reference": r.text}
    return {
        "comparable": True,
        "samples": total,
        "identical": identical,
        "share_identical": identical / total if total else None,
        "first_difference": first,
    }


def describe_run(path: Path) -> dict[str, Any]:
    """Engine, device, driver and throughput of one arm's run (throughput from its provenance record)."""
    gens = load_generations(path)
    record = load_provenance(provenance_path(path))
    return {
        "engine": gens.engine.version or gens.engine.name,
        "device": gens.engine.device,
        "driver": gens.engine.driver,
        "dtype": gens.engine.dtype,
        "samples": sum(len(it.samples) for it in gens.items),
        "tokens_per_s": record.tokens_per_s if record is not None else None,
        "engine_start_s": record.engine_start_s if record is not None else None,
        "generate_s": record.generate_s if record is not None else None,
    }


def compare(run_dir: Path, ref_dir: Path | None, world: str = "demo") -> dict[str, Any]:
    """Every arm of run_dir: its run and, where ref_dir has the arm, its comparison with it."""
    runs = arm_files(run_dir)
    if not runs:
        raise GenerationsError(f"{run_dir}: no generations files (generations/<arm>.json)")
    refs = arm_files(ref_dir) if ref_dir is not None else {}
    arms: dict[str, Any] = {}
    for arm, path in runs.items():
        row = describe_run(path)
        if arm in refs:
            row["vs_reference"] = compare_arm(load_generations(path), load_generations(refs[arm]))
        else:
            row["vs_reference"] = {"comparable": False, "reason": "no reference generations of this arm"}
        arms[arm] = row
    return {
        "world": world,
        "run": str(run_dir),
        "reference": str(ref_dir) if ref_dir is not None else None,
        "arms": arms,
    }


def table(result: dict[str, Any]) -> Any:
    """The comparison as a rich table: arm, device, dtype, tok/s, identical samples."""
    from rich.table import Table

    t = Table(title=f"{result['world']}: {result['run']} vs {result['reference'] or 'no reference'}")
    for col in ("arm", "engine", "device", "driver", "dtype", "tok/s", "identical to reference"):
        t.add_column(col, justify="right" if col == "tok/s" else "left")
    for arm, row in result["arms"].items():
        cmp = row["vs_reference"]
        same = (
            f"{cmp['identical']}/{cmp['samples']} ({cmp['share_identical']:.1%})"
            if cmp["comparable"]
            else f"not comparable: {cmp['reason']}"
        )
        named = [str(row[k] or "-") for k in ("engine", "device", "driver", "dtype")]
        t.add_row(arm, *named, num(row["tokens_per_s"], ".0f", missing="-"), same)
    return t


def main(argv: list[str] | None = None) -> int:
    """Command line: compare, print the table, write the JSON; exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu_compare",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--run", type=Path, required=True, help="generations folder of the run to describe")
    ap.add_argument("--reference", type=Path, help="generations folder to compare with (the CPU run)")
    ap.add_argument("--world", default="demo", help="a name for the table and the JSON (default demo)")
    ap.add_argument("--pipeline-s", type=float, help="wall time of the world's whole pipeline, to record")
    ap.add_argument("--device-line", help="the machine's GPU, driver and memory (nvidia-smi), to record")
    ap.add_argument("--out", type=Path, help="JSON file to add the world to (default: only print)")
    args = ap.parse_args(argv)
    from rich.console import Console

    try:
        result = compare(args.run, args.reference, args.world)
        record = json.loads(args.out.read_text()) if args.out is not None and args.out.is_file() else {}
    except (GenerationsError, ValueError) as e:
        print(f"gpu_compare: {e}", file=sys.stderr)
        return 2
    result["pipeline_s"] = args.pipeline_s
    Console(width=160).print(table(result))
    if args.out is not None:
        record.setdefault("worlds", {})[args.world] = result
        if args.device_line:
            record["device_line"] = args.device_line
        atomic_write(args.out, json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"gpu_compare: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
