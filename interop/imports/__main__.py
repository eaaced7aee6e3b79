"""Import another tool's per-sample logs into one EvalLog, so that the analyses can compare them.

    python -m interop.imports lm-eval   samples_<task>_<date>.jsonl... --out evallogs/base.json
    python -m interop.imports inspect   logs/<run>.eval...             --out evallogs/base.json
    python -m interop.imports lighteval details_<task>_<date>.parquet... --out evallogs/base.json
    python -m interop.imports jsonl     texts.jsonl... --suite S --temperature T --max-tokens N --out L
                                         (any tool's texts, one sample a line; its own --help)

Several SRC files make one log of one model on one suite: the same documents in each, aligned by their own
id or content hash (never by position), their samples appended in the order given (k runs of one sample
each, or Inspect logs of some epochs each). With --suite every document is matched to its suite item (by
id, its question checked, or by question). The log records the tool and its version (`driver`),
who scored it (`scorer`: the tool's metric, or this project's verifier with --verifier), per sample how it
was scored (`scored_by`, the tool's own score kept as `source_score`), and every text, answer, token count,
prompt and transcript the import file holds. Refused in one line (exit 2, nothing written): a file it cannot
read, a file given twice, files of another model, task, k, scoring or decoding, unequal samples per item,
different documents, a setting the import file does not record and no flag gives.
"""

from __future__ import annotations

import argparse
import sys

from contract.atomic import atomic_write
from contract.files import PathCheckError, input_file, output_file
from interop.imports import inspect_logs, jsonl, lighteval_details, lmeval
from interop.imports.judging import VERIFIER_TYPES
from interop.imports.log_builder import build_log
from interop.imports.tool_file import EXIT_REFUSED, ImportRefusal, ToolFile, read_suite


def read_files(args: argparse.Namespace) -> list[ToolFile]:
    """Each SRC file read by the importer of its tool."""
    paths = [input_file(p, "SRC") for p in args.src]
    if args.id_field is not None and args.tool != "lm-eval":
        raise ImportRefusal(f"--id-field: only for lm-eval files ({args.tool} names its documents itself)")
    if args.tool == "inspect":
        return [inspect_logs.read(p, scorer=args.scorer) for p in paths]
    if args.tool == "lm-eval":
        return [
            lmeval.read(
                p, metric=args.metric, verifier=args.verifier, filter_name=args.filter, id_field=args.id_field
            )
            for p in paths
        ]
    results = input_file(args.results, "--results") if args.results else None
    return [
        lighteval_details.read(p, metric=args.metric, verifier=args.verifier, results=results) for p in paths
    ]


def parser() -> argparse.ArgumentParser:
    """The options of lm-eval, inspect and lighteval imports (jsonl has its own: interop.imports.jsonl)."""
    ap = argparse.ArgumentParser(
        prog="python -m interop.imports",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument(
        "tool", choices=["lm-eval", "inspect", "lighteval", "jsonl"], help="the tool that wrote SRC"
    )
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
        help="judge each response with this project's verifier against the tool's reference (suite: each "
        "item's own verifier and answer from --suite), the tool's score kept beside it; needed when the "
        "tool scored a document once over k > 1 responses (lm-eval repeats, lighteval num_samples)",
    )  # fmt: skip
    ap.add_argument(
        "--suite", default=None,
        help="the suite the documents are of: each is matched to its item (by id, its question checked, or "
        "by question), and the log takes the suite's item ids, families, questions and answers",
    )  # fmt: skip
    ap.add_argument(
        "--suite-name", default=None,
        help="the suite's name as the logs it is compared with record it (default: the tool's task name)",
    )  # fmt: skip
    ap.add_argument(
        "--suite-revision", default=None,
        help="the suite's revision as those logs record it (default: the task's version)",
    )  # fmt: skip
    ap.add_argument(
        "--id-field", default=None, metavar="doc.FIELD",
        help="lm-eval: the document field that is its id (default: doc.item_id, else doc.id, else doc_id, "
        "aligned by doc_hash)",
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
    ap.add_argument(
        "--seed", type=int, default=None, help="the run's seed, when the source does not record it"
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    """Command line: read the SRC files, write the EvalLog."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["jsonl"]:
        return jsonl.main(argv[1:])  # its own options (field mapping, reading): see its --help
    ap = parser()
    args = ap.parse_args(argv)
    if args.tool == "jsonl":
        ap.error(
            "jsonl takes its own options: write it first, python -m interop.imports jsonl FILE... (--help)"
        )
    try:
        out = output_file(args.out, "--out")
        suite = read_suite(args.suite)
        files = read_files(args)
        overrides = {"temperature": args.temperature, "top_p": args.top_p, "max_tokens": args.max_tokens}
        names = {"suite": args.suite_name, "suite_revision": args.suite_revision}
        log = build_log(files, overrides, arm=args.arm, verifier=args.verifier, suite_file=suite, names=names)
        if args.seed is not None:
            if log.seed is not None and log.seed != args.seed:
                raise ImportRefusal(
                    f"{files[0].path}: seed: the file records {log.seed!r}, --seed says {args.seed!r}; "
                    "drop the flag"
                )
            log = log.model_copy(update={"seed": args.seed})
        atomic_write(out, log.model_dump_json(exclude_none=True, indent=1).encode())
    except (ImportRefusal, PathCheckError) as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as e:
        print(f"refused: --out {args.out}: cannot be written ({e.strerror or e})", file=sys.stderr)
        return EXIT_REFUSED
    print(
        f"{args.out}: {len(log.items)} items x {log.n_samples} samples of {log.model_name} on {log.suite} "
        f"(from {log.driver})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
