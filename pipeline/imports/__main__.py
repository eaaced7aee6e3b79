"""Import another tool's per-sample logs into one EvalLog, so that the analyses can compare them.

    python -m pipeline.imports lm-eval   samples_<task>_<date>.jsonl... --out evallogs/base.json
    python -m pipeline.imports inspect   logs/<run>.eval...             --out evallogs/base.json
    python -m pipeline.imports lighteval details_<task>_<date>.parquet... --out evallogs/base.json

Several SRC files make one log of one model on one suite: the same items in each, their samples appended
in the order given (k runs of one sample each, or Inspect logs of some epochs each). The log records the
source tool and its version (`driver`, `scorer`), how each sample was scored, and every text, answer, token
count, prompt and transcript the source holds. Refused in one line (exit 2, nothing written): a file it
cannot read, unequal samples per item, different item sets, mixed decoding settings, a setting the source
does not record and no flag gives.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from contract.atomic import atomic_write
from pipeline.imports import inspect_logs, lighteval_details, lmeval
from pipeline.imports.common import VERIFIER_TYPES, ImportRefusal, Source, assemble

EXIT_REFUSED = 2


def read_sources(args: argparse.Namespace) -> list[Source]:
    """Each SRC file read by the importer of its tool."""
    paths = [Path(p) for p in args.src]
    if args.tool == "inspect":
        return [inspect_logs.read(p, scorer=args.scorer) for p in paths]
    if args.tool == "lm-eval":
        return [
            lmeval.read(p, metric=args.metric, verifier=args.verifier, filter_name=args.filter) for p in paths
        ]
    results = Path(args.results) if args.results else None
    return [
        lighteval_details.read(p, metric=args.metric, verifier=args.verifier, results=results) for p in paths
    ]


def main(argv: list[str] | None = None) -> int:
    """Command line: read the SRC files, write the EvalLog."""
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.imports",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument("tool", choices=["lm-eval", "inspect", "lighteval"], help="the tool that wrote SRC")
    ap.add_argument("src", nargs="+", help="its per-sample files, of one model on one suite")
    ap.add_argument("--out", required=True, help="the EvalLog JSON to write")
    ap.add_argument(
        "--arm",
        default=None,
        help="the arm name recorded in the log (default: none: the analyses use the file stem)",
    )
    ap.add_argument(
        "--scorer", default=None, help="inspect: the scorer whose scores to import (default: the only one)"
    )
    ap.add_argument(
        "--metric", default=None,
        help="lm-eval, lighteval: the per-document metric that scores a one-sample document "
        "(default: exact_match, else the only metric)",
    )  # fmt: skip
    ap.add_argument(
        "--verifier", choices=VERIFIER_TYPES, default=None,
        help="lm-eval, lighteval: judge each of a document's k responses with this project's verifier "
        "against the reference (the tools keep one score per document, not per response); needed when k > 1",
    )  # fmt: skip
    ap.add_argument(
        "--filter", default=None, help="lm-eval: the filter's lines to import (default: the only one)"
    )
    ap.add_argument(
        "--results", default=None, help="lighteval: the run's results_<date>.json (default: found beside)"
    )
    ap.add_argument(
        "--temperature", type=float, default=None, help="the temperature, when the source does not record it"
    )
    ap.add_argument("--top-p", type=float, default=None, help="the top_p, when the source does not record it")
    ap.add_argument(
        "--max-tokens", type=int, default=None, help="the token budget, when the source does not record it"
    )
    args = ap.parse_args(argv)
    try:
        sources = read_sources(args)
        overrides = {"temperature": args.temperature, "top_p": args.top_p, "max_tokens": args.max_tokens}
        log = assemble(sources, overrides, arm=args.arm)
    except ImportRefusal as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    atomic_write(Path(args.out), log.model_dump_json(exclude_none=True, indent=1).encode())
    print(
        f"{args.out}: {len(log.items)} items x {log.n_samples} samples of {log.model_name} on {log.suite} "
        f"(from {log.driver})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
