"""Freeze a suite from the formats people have into the project's suite JSONL (contract/suite.py).

    python -m pipeline.suite freeze SRC --out FILE [--field question=problem ...] [--answer-from solution]
                                  [--verifier math] [--family F] [--name N] [--revision R]

SRC is JSONL (one object a line) or JSON (a list of objects). `--field TARGET=SOURCE` maps a suite field
(item_id, family, question, answer, tool) to the source's field; a field not mapped is read under its own
name when the source has it. Without an item_id the items are numbered `<name>-00001` in source order;
without a family they all get `--family`. `--answer-from FIELD` reads the answer from a worked solution: its
last \\boxed{} (MATH, MATH-500, AIME solutions), else its last `####` line (GSM8K), read by the oracle's own
reader (scoring.verifiers.reference_answer). Every item gets `--verifier`.

Writes FILE (one item a line, keys sorted, atomically) and FILE with the suffix .sha256 (`sha256sum`
format, as demo/suite/*.sha256), and prints the params.yaml `suite` lines to use it. Any item that cannot
be frozen is refused in one line naming the file, the line (or the list position) and the field; nothing
is written then.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.atomic import atomic_write
from contract.digest import text_sha256
from contract.suite import SuiteError, SuiteItem, load_suite
from scoring.verifiers import reference_answer

TARGETS = ("item_id", "family", "question", "answer", "tool")
REQUIRED = ("question", "answer")
VERIFIERS = ("math", "numeric", "exact", "choice")


class FreezeError(ValueError):
    """A source that cannot be frozen; the message names the file, the line and the field."""


def parse_fields(pairs: Sequence[str]) -> dict[str, str]:
    """--field TARGET=SOURCE pairs as {target: source}; refuse an unknown target or a malformed pair."""
    out: dict[str, str] = {}
    for pair in pairs:
        target, sep, source = pair.partition("=")
        if not sep or not source:
            raise FreezeError(f"--field {pair!r}: write it as TARGET=SOURCE, e.g. --field question=problem")
        if target not in TARGETS:
            raise FreezeError(
                f"--field {pair!r}: {target!r} is not a suite field; one of {', '.join(TARGETS)}"
            )
        out[target] = source
    return out


def verifier_spec(name: str, rel_tol: float, abs_tol: float) -> dict[str, Any]:
    """The suite's verifier object for --verifier (numeric takes the tolerances; python:module:function)."""
    if name.startswith("python:"):
        return {"type": "python", "function": name.removeprefix("python:")}
    if name not in VERIFIERS:
        raise FreezeError(f"--verifier {name!r}: one of {', '.join(VERIFIERS)} or python:module:function")
    if name == "numeric":
        return {"type": "numeric", "rel_tol": rel_tol, "abs_tol": abs_tol}
    return {"type": name}


def read_source(src: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) of every record of a JSONL file or a JSON list (where: 'SRC:line', 'SRC item n')."""
    try:
        text = src.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FreezeError(f"{src}: not found") from None
    except UnicodeDecodeError as e:
        raise FreezeError(f"{src}: not UTF-8 text (byte {e.start})") from None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise FreezeError(f"{src}:{e.lineno}: not JSON ({e.msg} at column {e.colno})") from None
        for n, rec in enumerate(records, 1):
            yield f"{src} item {n} of the list", rec
        return
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{src}:{n}", json.loads(line)
        except json.JSONDecodeError as e:
            raise FreezeError(f"{src}:{n}: not JSON ({e.msg} at column {e.colno})") from None


def _source_field(where: str, rec: dict[str, Any], target: str, source: str, option: str = "") -> Any:
    if source not in rec:
        option = option or f"--field {target}=FIELD"
        raise FreezeError(
            f"{where}: field {source!r} (for {target}) is missing; its fields: {', '.join(sorted(rec))}; "
            f"name another with {option}"
        )
    return rec[source]


def freeze_item(
    where: str,
    position: int,
    rec: Any,
    fields: dict[str, str],
    answer_from: str | None,
    verifier: dict[str, Any],
    family: str,
    name: str,
) -> SuiteItem:
    """One source record as a validated suite item; FreezeError naming where and the field otherwise."""
    if not isinstance(rec, dict):
        raise FreezeError(f"{where}: not a JSON object but {type(rec).__name__}")
    item: dict[str, Any] = {"verifier": verifier}
    for target in TARGETS:
        source = fields.get(target, target)
        if target == "answer" and answer_from is not None:
            solution = _source_field(where, rec, "answer", answer_from, "--answer-from FIELD")
            answer = reference_answer(str(solution))
            if answer is None:
                raise FreezeError(
                    f"{where}: field {answer_from!r}: no \\boxed{{}} and no '####' line to read the answer of"
                )
            item["answer"] = answer
        elif target in fields or target in REQUIRED or rec.get(source) is not None:
            item[target] = _source_field(where, rec, target, source)
    item.setdefault("item_id", f"{name}-{position:05d}")
    item.setdefault("family", family)
    for target in ("item_id", "family"):
        if isinstance(item[target], int) and not isinstance(item[target], bool):
            item[target] = str(item[target])  # ids and families written as numbers name the same thing
    try:
        return SuiteItem.model_validate(item)
    except ValidationError as e:
        err = e.errors()[0]
        target = str(err["loc"][0]) if err["loc"] else "item"
        mapped = f" (source field {fields.get(target, answer_from if target == 'answer' else target)!r})"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise FreezeError(f"{where}: {target}{mapped if target in TARGETS else ''}: {msg}") from None


def freeze(
    src: Path,
    out: Path,
    fields: dict[str, str],
    answer_from: str | None,
    verifier: dict[str, Any],
    family: str,
    name: str,
) -> tuple[str, int]:
    """Write the suite and its .sha256 file; (sha256, number of items). Nothing is written on a refusal."""
    records = list(read_source(src))
    items = [
        freeze_item(where, n, rec, fields, answer_from, verifier, family, name)
        for n, (where, rec) in enumerate(records, 1)
    ]
    if not items:
        raise FreezeError(f"{src}: no records")
    text = "".join(
        json.dumps(it.model_dump(mode="json", exclude_none=True), sort_keys=True, ensure_ascii=False) + "\n"
        for it in items
    )
    digest = text_sha256(text)
    # The project's own reader judges the result (duplicate ids, answers a verifier cannot use); its line n
    # is source record n.
    check = out.with_name(f".{out.name}.check")
    atomic_write(check, text)
    try:
        load_suite(check)
    except SuiteError as e:
        head, _, rest = str(e).removeprefix(f"{check}:").partition(":")
        where = records[int(head) - 1][0] if head.isdigit() else str(src)
        raise FreezeError(f"{where}:{rest}") from None
    finally:
        check.unlink(missing_ok=True)
    atomic_write(out, text)
    atomic_write(sha256_path(out), f"{digest}  {out.name}\n")
    return digest, len(items)


def sha256_path(out: Path) -> Path:
    """Where the suite's sha256 goes: beside it, with the suffix .sha256 (demo/suite/*.sha256)."""
    return out.with_suffix(".sha256")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: freeze SRC into the suite FILE; exit 2 with one line on a refusal."""
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.suite",
        description="Freeze a JSONL or JSON suite into the project's suite format with its sha256.",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    fr = sub.add_parser(
        "freeze",
        help="write SRC as a frozen suite FILE and FILE's .sha256",
        description=__doc__.split("\n\n", 2)[2],
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
        default="math",
        help="every item's verifier: math (default), numeric, exact, choice or python:module:function",
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
    args = ap.parse_args(argv)
    name = args.name or args.out.stem
    try:
        digest, n = freeze(
            args.src,
            args.out,
            parse_fields(args.field),
            args.answer_from,
            verifier_spec(args.verifier, args.rel_tol, args.abs_tol),
            args.family,
            name,
        )
    except FreezeError as e:
        print(f"suite freeze: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"suite freeze: {args.out}: cannot write ({e.strerror})", file=sys.stderr)
        return 2
    revision = args.revision or f"sha256:{digest[:12]}"
    print(f"suite freeze: {n} items; wrote {args.out} and {sha256_path(args.out)}")
    print(f"sha256: {digest}")
    print(f"revision: {revision}")
    print(f"params.yaml:\n  suite:\n    path: {args.out}\n    name: {name}\n    revision: {revision}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
