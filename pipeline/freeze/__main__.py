"""Freeze a suite from the JSON or JSONL files people have into the project's suite JSONL (contract/suite.py).

    python -m pipeline.freeze SRC --out FILE [--field question=problem ...] [--answer-from solution]
                            [--verifier math] [--fallback-verifier exact | --skip-unreadable]
                            [--family F] [--name N] [--revision R]

SRC is JSONL (one object a line) or JSON (a list of objects). `--field TARGET=SOURCE` maps a suite field
(item_id, family, question, answer, tool) to the source's field; a field not mapped is read under its own
name when the source has it. Without an item_id the items are numbered `<name>-00001` in source order;
without a family they all get `--family`. `--answer-from FIELD` reads the answer from a worked solution: its
last \\boxed{} (MATH, MATH-500, AIME solutions), else its last `####` line (GSM8K), read by the oracle's own
reader (scoring.verifiers.reference_answer); a solution whose last `\\boxed{` never closes is refused, never
read from an earlier box. A record's own `verifier` object (an already frozen suite) is kept as it is,
tolerances included; `--verifier` sets the verifier of records without one (default math) and is refused
where a record's own differs. Each reference answer must be one its verifier reads: math-verify must parse
a math answer and find it equal to itself, a numeric answer must be a number (`#### 1,234` reads 1234).
Real datasets have answers math-verify cannot read whole: text ("No such values"), or several answers
of which it reads one ("376 and 625" read as 625, so that "625" alone would score: a reference of which
one written number alone is judged right is refused as read in part). With `--fallback-verifier exact`
those items are judged by the exact verifier instead (whitespace collapsed, case folded), with
`--skip-unreadable` they are left out; either is counted in the summary.

Writes FILE (one item a line, keys sorted, atomically) and FILE with the suffix .sha256 (`sha256sum`
format, as demo/suite/*.sha256), prints how many items each verifier judges and the params.yaml `suite`
lines to use it. Every record that cannot be frozen is refused at once, one line each naming the file, the
line (or the list position) and the field, then a line counting them; nothing is written then.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from contract.files import PathCheckError, input_file, output_file
from pipeline.freeze.outcome import FreezeError, FreezeRefusal, Frozen
from pipeline.freeze.records import TARGETS, parse_fields, verifier_spec
from pipeline.freeze.suite_file import freeze, sha256_path

# What judges an item whose math reference math-verify cannot read whole, with --fallback-verifier.
FALLBACKS = ("exact",)


def summary(frozen: Frozen) -> str:
    """How many items each verifier judges, and how many took the fallback or were skipped, in words."""
    judged = ", ".join(f"{n} by {kind}" for kind, n in frozen.per_verifier.items())
    text = f"{frozen.n_items} items judged {judged}"
    unread = "a reference math-verify cannot read whole"
    if frozen.fallen_back:
        text += f" ({len(frozen.fallen_back)} by {frozen.fallback} as the fallback: {unread})"
    if frozen.skipped:
        text += f"; {len(frozen.skipped)} records skipped ({unread})"
    return text


def parser() -> argparse.ArgumentParser:
    """The command's options."""
    fr = argparse.ArgumentParser(
        prog="python -m pipeline.freeze",
        description="Freeze a JSONL or JSON suite into the project's suite format (suite freeze): write SRC\n"
        "as a frozen suite FILE and FILE's .sha256.\n\n" + __doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fr.add_argument("src", type=Path, help="JSONL (one object a line) or JSON (a list of objects)")
    fr.add_argument("--out", type=Path, required=True, help="the suite JSONL to write (and its .sha256)")
    fr.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="TARGET=SOURCE",
        help=f"read suite field TARGET ({', '.join(TARGETS)}) from source field SOURCE; repeatable",
    )
    fr.add_argument(
        "--answer-from",
        metavar="FIELD",
        help="read the answer from a worked solution in FIELD: its last \\boxed{}, else its last #### line",
    )
    fr.add_argument(
        "--verifier",
        help="the verifier of records without their own: math (default), numeric, exact, choice or "
        "python:module:function; refused where a record's own verifier differs",
    )
    unreadable = fr.add_mutually_exclusive_group()
    unreadable.add_argument(
        "--fallback-verifier",
        choices=FALLBACKS,
        help="judge the items whose math reference math-verify cannot read whole by this verifier instead "
        "(exact: whitespace collapsed, case folded); counted in the summary",
    )
    unreadable.add_argument(
        "--skip-unreadable",
        action="store_true",
        help="leave out the items whose math reference math-verify cannot read whole; counted in the summary",
    )
    fr.add_argument("--rel-tol", type=float, default=0.0, help="numeric verifier: relative tolerance (0)")
    fr.add_argument("--abs-tol", type=float, default=0.0, help="numeric verifier: absolute tolerance (0)")
    fr.add_argument("--family", default="all", help="the family of items without one (default: all)")
    fr.add_argument(
        "--name", help="suite name for params.yaml suite.name and item ids (default: FILE's stem)"
    )
    fr.add_argument(
        "--revision",
        help="suite revision for params.yaml suite.revision (default: sha256: and 12 hex digits)",
    )
    return fr


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: freeze SRC into the suite FILE; exit 2 with a line for each record it refuses."""
    args = parser().parse_args(argv)
    name = args.name or args.out.stem
    try:
        input_file(args.src, "SRC")
        output_file(args.out, "--out")
        output_file(sha256_path(args.out), "--out's .sha256")
        frozen = freeze(
            args.src,
            args.out,
            parse_fields(args.field),
            args.answer_from,
            verifier_spec(args.verifier, args.rel_tol, args.abs_tol),
            args.family,
            name,
            fallback=args.fallback_verifier,
            skip_unreadable=args.skip_unreadable,
        )
    except FreezeRefusal as e:
        for line in e.lines():
            print(f"suite freeze: {line}", file=sys.stderr)
        return 2
    except (FreezeError, PathCheckError) as e:
        print(f"suite freeze: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"suite freeze: {args.out}: cannot write ({e.strerror})", file=sys.stderr)
        return 2
    revision = args.revision or f"sha256:{frozen.digest[:12]}"
    for line in frozen.skipped:
        print(f"suite freeze: skipped {line}", file=sys.stderr)
    print(f"suite freeze: {summary(frozen)}; wrote {args.out} and {sha256_path(args.out)}")
    print(f"sha256: {frozen.digest}")
    print(f"revision: {revision}")
    print(f"params.yaml:\n  suite:\n    path: {args.out}\n    name: {name}\n    revision: {revision}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
