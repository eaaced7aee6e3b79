"""Freeze a suite from the formats people have into the project's suite JSONL (contract/suite.py).

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
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from contract.atomic import atomic_write
from contract.digest import text_sha256
from contract.files import PathCheckError, input_file, output_file
from contract.jsonl import JsonlError, jsonl_lines, parse_jsonl_line, read_jsonl_text
from contract.suite import SuiteError, SuiteItem, Verifier, is_finite_number, load_suite
from pipeline.field_map import parse_field_map
from scoring import verifiers
from scoring.numbers import number_value, written_numbers
from scoring.reading import boxed_contents
from scoring.timelimit import AnswerTimeout
from scoring.verifiers import reference_answer

TARGETS = ("item_id", "family", "question", "answer", "tool")
REQUIRED = ("question", "answer")
VERIFIERS = ("math", "numeric", "exact", "choice")
# What judges an item whose math reference math-verify cannot read whole, with --fallback-verifier.
FALLBACKS = ("exact",)
_VERIFIER: TypeAdapter[Any] = TypeAdapter(Verifier)
# Words (not LaTeX commands) or separators: what lets a reference hold more than one answer.
_SEPARATED = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}|[,;=]")


class FreezeError(ValueError):
    """A source that cannot be frozen; the message names the file, the line and the field."""


class UnreadableReference(FreezeError):
    """A math reference math-verify cannot read whole (or finds unequal to itself): the fallback's case."""


class FreezeRefusal(FreezeError):
    """Every record that cannot be frozen: `problems` holds one line for each (file:line, field, why)."""

    def __init__(self, problems: list[str], total: int, unreadable: int) -> None:
        self.problems = problems
        self.hint = (
            "judge those with --fallback-verifier exact or leave them out with --skip-unreadable"
            if unreadable
            else ""
        )
        of_them = (
            f"; {unreadable} of them a reference math-verify cannot read whole: {self.hint}"
            if unreadable
            else ""
        )
        super().__init__(f"{len(problems)} of {total} records cannot be frozen{of_them}; nothing written")

    def lines(self) -> list[str]:
        """The lines the command prints: one per record, then the count (one record: its line, hinted)."""
        if len(self.problems) == 1:
            return [self.problems[0] + (f"; {self.hint.replace(' those', ' it')}" if self.hint else "")]
        return [*self.problems, str(self)]


@dataclass
class Frozen:
    """What freeze wrote: the suite's sha256, how many items each verifier judges, and what was changed."""

    digest: str
    per_verifier: dict[str, int]
    fallback: str | None = None
    # "where" of each item given the fallback verifier, and the refusal line of each skipped record.
    fallen_back: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        """Items written."""
        return sum(self.per_verifier.values())


def parse_fields(pairs: Sequence[str]) -> dict[str, str]:
    """--field TARGET=SOURCE pairs as {target: source}; refuse an unknown target or a malformed pair."""
    try:
        return parse_field_map(pairs, TARGETS, "suite field", "question=problem")
    except ValueError as e:
        raise FreezeError(str(e)) from None


def verifier_spec(name: str | None, rel_tol: float, abs_tol: float) -> dict[str, Any] | None:
    """The suite's verifier object for --verifier (numeric takes the tolerances; python:module:function);
    None when --verifier was not given."""
    if name is None:
        return None
    if name.startswith("python:"):
        return {"type": "python", "function": name.removeprefix("python:")}
    if name not in VERIFIERS:
        raise FreezeError(f"--verifier {name!r}: one of {', '.join(VERIFIERS)} or python:module:function")
    if name == "numeric":
        return {"type": "numeric", "rel_tol": rel_tol, "abs_tol": abs_tol}
    return {"type": name}


def read_source(src: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) of every record of a JSONL file or a JSON list (where: 'SRC:line', 'SRC item n');
    a JSONL line that is not JSON comes as (where, FreezeError), so that every such line is named."""
    try:
        text = read_jsonl_text(src)
    except JsonlError as e:
        raise FreezeError(str(e)) from None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise FreezeError(f"{src}:{e.lineno}: not JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise FreezeError(f"{src}: JSON nested too deeply to read") from None
        for n, rec in enumerate(records, 1):
            yield f"{src} item {n} of the list", rec
        return
    for n, line in jsonl_lines(text):
        try:
            yield f"{src}:{n}", parse_jsonl_line(src, n, line)
        except JsonlError as e:
            yield f"{src}:{n}", FreezeError(str(e))


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
    verifier: dict[str, Any] | None,
    family: str,
    name: str,
) -> SuiteItem:
    """One source record as a validated suite item; FreezeError naming where and the field otherwise.

    verifier: --verifier's object, or None when it was not given (a record's own verifier, else math). The
    reference is not checked here: check_reference does that (the caller decides what an unreadable one gets).
    """
    if not isinstance(rec, dict):
        raise FreezeError(f"{where}: not a JSON object but {type(rec).__name__}")
    item: dict[str, Any] = {"verifier": record_verifier(where, rec, verifier)}
    for target in TARGETS:
        source = fields.get(target, target)
        if target == "answer" and answer_from is not None:
            item["answer"] = solution_answer(where, rec, answer_from)
        elif target in fields or target in REQUIRED or rec.get(source) is not None:
            item[target] = _source_field(where, rec, target, source)
    item.setdefault("item_id", f"{name}-{position:05d}")
    item.setdefault("family", family)
    for target in ("item_id", "family"):
        if isinstance(item[target], int) and not isinstance(item[target], bool):
            item[target] = str(item[target])  # ids and families written as numbers name the same thing
    if item["verifier"].get("type") == "numeric" and isinstance(item.get("answer"), str):
        item["answer"] = _numeric_answer(item["answer"])
    try:
        frozen = SuiteItem.model_validate(item)
    except ValidationError as e:
        err = e.errors()[0]
        target = str(err["loc"][0]) if err["loc"] else "item"
        mapped = f" (source field {fields.get(target, answer_from if target == 'answer' else target)!r})"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise FreezeError(f"{where}: {target}{mapped if target in TARGETS else ''}: {msg}") from None
    return frozen


def record_verifier(where: str, rec: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    """The verifier an item gets: the record's own (kept whole), else --verifier, else math."""
    own = rec.get("verifier")
    if own is None:
        return given if given is not None else {"type": "math"}
    if not isinstance(own, dict):
        raise FreezeError(f'{where}: verifier: is {own!r}, not a verifier object such as {{"type": "math"}}')
    if given is not None and _as_verifier(own) != _as_verifier(given):
        raise FreezeError(
            f"{where}: verifier: the record's own {json.dumps(own, sort_keys=True)} differs from "
            f"--verifier's {json.dumps(given, sort_keys=True)}; drop --verifier to keep each record's own, "
            "or remove the records' verifier fields to give them all --verifier"
        )
    return own


def _as_verifier(spec: dict[str, Any]) -> Any:
    """A verifier object with its defaults filled in (so {"type": "numeric"} equals its tolerances 0)."""
    try:
        return _VERIFIER.validate_python(spec)
    except ValidationError:
        return spec  # the suite item's own validation names what is wrong with it


def solution_answer(where: str, rec: dict[str, Any], answer_from: str) -> str:
    """The answer a worked solution marks; FreezeError when it marks none or its last box never closes."""
    solution = str(_source_field(where, rec, "answer", answer_from, "--answer-from FIELD"))
    boxes = boxed_contents(solution)
    opened = solution.count("\\boxed{")
    if opened != len(boxes):
        at = solution.rfind("\\boxed{")
        raise FreezeError(
            f"{where}: field {answer_from!r}: {opened - len(boxes)} \\boxed{{ never closed (the last at "
            f"character {at}: {solution[at : at + 30]!r}); balance its braces in the source"
        )
    answer = reference_answer(solution)
    if answer is None:
        raise FreezeError(
            f"{where}: field {answer_from!r}: no \\boxed{{}} and no '####' line to read the answer of"
        )
    return answer


def _numeric_answer(answer: str) -> str:
    """A string answer that is one number as the numeric verifier reads it ('1,234') written plainly
    ('1234'), as a suite stores it; any other string as it is (the suite reader judges it)."""
    written = written_numbers(answer)
    if is_finite_number(answer) or written != [answer.strip()]:
        return answer
    value = number_value(written[0])
    if value is None:
        return answer
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def check_reference(where: str, item: SuiteItem) -> None:
    """Refuse a reference answer its verifier cannot read: math-verify must parse it, find it equal to
    itself and read it whole (UnreadableReference); a numeric answer must read as a finite number (so it
    fails at freeze, not at scoring)."""
    if item.verifier.type not in ("math", "numeric"):
        return
    if item.verifier.type == "numeric" and not is_finite_number(item.answer):
        return  # load_suite names it (a numeric verifier needs a finite number)
    error = UnreadableReference if item.verifier.type == "math" else FreezeError
    try:
        same = verifiers.check(item, str(item.answer))
    except verifiers.VerifierError as e:
        raise error(f"{where}: {str(e).removeprefix(f'item {item.item_id!r}: ')}") from None
    except AnswerTimeout as e:
        raise error(
            f"{where}: answer: math-verify {e} reading {str(item.answer)[:60]!r}; simplify the reference"
        ) from None
    if not same:
        raise error(
            f"{where}: answer: the {item.verifier.type} verifier does not find {item.answer!r} equal to "
            "itself; write it as LaTeX (e.g. \\frac{1}{2}) or use the exact verifier"
        )
    part = read_in_part(item) if item.verifier.type == "math" else None
    if part is not None:
        raise UnreadableReference(
            f"{where}: answer: math-verify reads only part of the reference {str(item.answer)[:60]!r}: the "
            f"answer {part!r} alone is judged right; write it as one LaTeX answer or use the exact verifier"
        )


def read_in_part(item: SuiteItem) -> str | None:
    """A number written in a math reference that the verifier alone judges equal to the whole reference
    while another number written in it decides nothing ('376 and 625' read as 625: '377 and 625' is 625 too;
    'sum_(k=1)^n 1/k' read as 1): half an answer would score. None when there is none, when every number
    counts ('\\frac{81}{9}' is 9, but '\\frac{82}{9}' is not), or when the reference ends by restating itself
    as that number ('C(10, 5), or equivalently 252')."""
    reference = str(item.answer)
    written = written_numbers(reference)
    # Only a reference with words or separators can hold more than one answer (math-verify keeps one).
    if len(written) < 2 or not _SEPARATED.search(reference):
        return None
    spans, at = [], 0
    for number in written:
        start = reference.index(number, at)
        spans.append((start, start + len(number), number))
        at = start + len(number)
    for number in dict.fromkeys(written):
        if re.search(rf"\bequivalently\s+{re.escape(number)}\s*\.?\s*$", reference):
            continue
        if not _judged_right(item, reference, number):
            continue
        for start, end, other in spans:
            changed = reference[:start] + _another(other) + reference[end:]
            if _judged_right(item, changed, number):
                return number
    return None


def _judged_right(item: SuiteItem, reference: str, answer: str) -> bool:
    """Whether the item's verifier judges answer right against this reference (out of time: no)."""
    try:
        return verifiers.check(item.model_copy(update={"answer": reference}), answer)
    except (AnswerTimeout, verifiers.VerifierError):
        return False


def _another(written: str) -> str:
    """Another number than the written one (its value plus one), to see whether the reference reads it."""
    value = number_value(written)
    if value is None:
        return written + "1"
    return str(int(value) + 1) if value.is_integer() and abs(value) < 2**53 else repr(value + 1)


def freeze(
    src: Path,
    out: Path,
    fields: dict[str, str],
    answer_from: str | None,
    verifier: dict[str, Any] | None,
    family: str,
    name: str,
    fallback: str | None = None,
    skip_unreadable: bool = False,
) -> Frozen:
    """Write the suite and its .sha256 file; what was written. Every record that cannot be frozen is named
    in one FreezeRefusal, and nothing is written then.

    fallback: the verifier type of items whose math reference math-verify cannot read (--fallback-verifier);
    skip_unreadable: leave those items out instead.
    """
    problems: dict[int, str] = {}
    unreadable: set[int] = set()
    kept: list[tuple[int, str, SuiteItem]] = []
    fallen_back: list[str] = []
    skipped: list[str] = []
    n = 0
    for n, (where, rec) in enumerate(read_source(src), 1):
        try:
            if isinstance(rec, FreezeError):
                raise rec
            item = freeze_item(where, n, rec, fields, answer_from, verifier, family, name)
            check_reference(where, item)
        except UnreadableReference as e:
            if fallback is not None:
                item = SuiteItem.model_validate({**item.model_dump(), "verifier": {"type": fallback}})
                fallen_back.append(where)
            elif skip_unreadable:
                skipped.append(str(e))
                continue
            else:
                problems[n] = str(e)
                unreadable.add(n)
                continue
        except FreezeError as e:
            problems[n] = str(e)
            continue
        kept.append((n, where, item))
    if n == 0:
        raise FreezeError(f"{src}: no records")
    problems.update(_duplicate_ids(src, kept))
    kept = [k for k in kept if k[0] not in problems]
    problems.update(_suite_problems(out, kept))
    if problems:
        raise FreezeRefusal([problems[k] for k in sorted(problems)], n, len(unreadable))
    if not kept:
        raise FreezeError(f"{src}: all {len(skipped)} records skipped (--skip-unreadable); nothing to write")
    text = _suite_text([item for _, _, item in kept])
    digest = text_sha256(text)
    atomic_write(out, text)
    atomic_write(sha256_path(out), f"{digest}  {out.name}\n")
    counts = Counter(item.verifier.type for _, _, item in kept)
    per_verifier = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return Frozen(digest, per_verifier, fallback, fallen_back, skipped)


def _suite_text(items: Sequence[SuiteItem]) -> str:
    """The suite file's text: one item a line, keys sorted."""
    return "".join(
        json.dumps(it.model_dump(mode="json", exclude_none=True), sort_keys=True, ensure_ascii=False) + "\n"
        for it in items
    )


def _position(src: Path, where: str) -> str:
    """'line 3' for 'SRC:3', 'item 3 of the list' for 'SRC item 3 of the list'."""
    rest = where.removeprefix(str(src))
    return f"line {rest[1:]}" if rest.startswith(":") else rest.strip()


def _duplicate_ids(src: Path, kept: Sequence[tuple[int, str, SuiteItem]]) -> dict[int, str]:
    """A refusal line for every record whose item id an earlier record already has."""
    first: dict[str, str] = {}
    found = {}
    for n, where, item in kept:
        if item.item_id in first:
            found[n] = f"{where}: item_id: {item.item_id!r} already used on {first[item.item_id]}"
        else:
            first[item.item_id] = _position(src, where)
    return found


def _suite_problems(out: Path, kept: Sequence[tuple[int, str, SuiteItem]]) -> dict[int, str]:
    """What the project's own suite reader refuses in these items (an answer a verifier cannot use), every
    one: the reader stops at the first, so each refused item is taken out and the rest read again."""
    found: dict[int, str] = {}
    rest = list(kept)
    check = out.with_name(f".{out.name}.check")
    try:
        while rest:
            atomic_write(check, _suite_text([item for _, _, item in rest]))
            try:
                load_suite(check)
                break
            except SuiteError as e:
                head, _, why = str(e).removeprefix(f"{check}:").partition(":")
                if not head.isdigit():
                    raise FreezeError(f"{out}: {str(e).removeprefix(f'{check}: ')}") from None
                n, where, _ = rest.pop(int(head) - 1)
                found[n] = f"{where}:{why}"
    finally:
        check.unlink(missing_ok=True)
    return found


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


def sha256_path(out: Path) -> Path:
    """Where the suite's sha256 goes: beside it, with the suffix .sha256 (demo/suite/*.sha256)."""
    return out.with_suffix(".sha256")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: freeze SRC into the suite FILE; exit 2 with a line for each record it refuses."""
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
    args = fr.parse_args(argv)
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
