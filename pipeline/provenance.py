"""When, where and how fast each arm was generated, and whether on this machine's kind of hardware.

    python -m pipeline.provenance [--params params.yaml] [--generations DIR] [--md FILE]

Reads generations/<arm>.json (which DVC tracks, so it is there after `dvc pull` too) and, where this machine
made it, the provenance record beside it (contract.provenance: times, host, throughput; never tracked, so
reruns stay byte-identical). "this machine" compares the engine version, device and driver the generations
record with what this machine has; a record whose generations sha256 does not match the file is reported
as stale, never silently used.

`record` builds the provenance record of a generations file, for a whole-arm run and for a merge of parts
alike (pipeline.generate, pipeline.parts).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from contract.digest import file_sha256, text_sha256
from contract.engine import EngineInfo
from contract.generations import GenerationsError, load_generations
from contract.provenance import Provenance, load_provenance, provenance_path
from pipeline.config import ConfigError, arms_of, load_params
from pipeline.engines.hardware import distribution, platform_info


def record(
    arm: str,
    text: str,
    engine: EngineInfo,
    *,
    host: str,
    started_at: str,
    finished_at: str,
    generate_s: float,
    samples: int,
    gen_tokens: int,
    engine_start_s: float | None = None,
    samples_resumed: int = 0,
    latencies: Sequence[float] = (),
    parts: int = 1,
) -> Provenance:
    """The provenance record of the generations file whose text is `text`: when, where and how fast it was
    made, with the wall-clock latencies of its tool calls (kept out of the generations)."""
    return Provenance(
        arm=arm,
        generations_sha256=text_sha256(text),
        host=host,
        started_at=started_at,
        finished_at=finished_at,
        engine=engine,
        engine_start_s=engine_start_s,
        generate_s=generate_s,
        samples=samples,
        samples_resumed=samples_resumed,
        gen_tokens=gen_tokens,
        tokens_per_s=gen_tokens / max(generate_s, 1e-9),
        tool_calls=len(latencies),
        tool_latency_median_s=statistics.median(latencies) if latencies else None,
        tool_latency_p95_s=statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else None,
        parts=parts,
    )


def this_machine() -> tuple[str, str, str]:
    """(engine version, device, driver) the vllm engine would record here."""

    device, driver = platform_info()
    return distribution("vllm"), device, driver


def rows(generations_dir: Path, arms: list[str]) -> list[list[str]]:
    """One row per arm: arm, finished, host, engine, device, driver, tok/s, generated on this machine."""
    try:
        here = this_machine()
    except (ImportError, importlib.metadata.PackageNotFoundError):
        here = ("(no vllm here)", "", "")
    out = []
    for arm in arms:
        path = generations_dir / f"{arm}.json"
        if not path.is_file():
            out.append([arm, "(not generated)", "", "", "", "", "", ""])
            continue
        gens = load_generations(path)
        e = gens.engine
        record = load_provenance(provenance_path(path))
        sha = file_sha256(path)
        if record is None:
            when, host, rate = "(no record: generated elsewhere or pulled)", "", ""
        elif record.generations_sha256 != sha:
            when, host, rate = "(stale record: another run's)", record.host, ""
        else:
            when, host, rate = record.finished_at, record.host, f"{record.tokens_per_s:.0f}"
        same = (e.version, e.device, e.driver) == here
        # A server someone else ran: its host stands where the device would.
        out.append([arm, when, host, e.version or e.name, e.device or e.server or "", e.driver or "", rate,
                    "yes" if same else f"no (here: {', '.join(here)})"])  # fmt: skip
    return out


def markdown(table: list[list[str]]) -> str:
    """The rows as a markdown table."""
    head = ["arm", "finished", "host", "engine", "device", "driver", "tok/s", "this machine's hardware"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: print the provenance table (and write it as markdown with --md)."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.provenance", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--params", default="params.yaml", help="params file naming the arms (default params.yaml)"
    )
    ap.add_argument(
        "--generations", default="generations", help="folder of generations (default generations)"
    )
    ap.add_argument("--md", default=None, help="also write the table to this markdown file")
    args = ap.parse_args(argv)
    try:
        table = rows(Path(args.generations), arms_of(load_params(args.params)))
    except (ConfigError, GenerationsError, ValueError) as e:
        print(f"provenance: {e}", file=sys.stderr)
        return 2
    text = markdown(table)
    print(text, end="")
    if args.md:
        Path(args.md).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
