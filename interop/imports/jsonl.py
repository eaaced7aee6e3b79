"""Any tool's generations, one JSON line per sample, into an EvalLog judged by this project's verifier.

    python -m interop.imports jsonl FILE... --suite S --temperature T --max-tokens N --out LOG
        [--field item_id=id --field text=response ...] [--reading chat|plain] [--answer-rule RULE]
        [--model NAME --generator TEXT --top-p P --seed S --arm A --suite-name N --suite-revision R]

Each line is one sample: its item's id and its generated text (outputs of verl, OpenRLHF, an API, a paper's
release). `--field TARGET=SOURCE` names the line's field for TARGET, as `pipeline.freeze --field` does; a
target not mapped is read under its own name: item_id and text (required), and where the lines have them
prompt, question, seed, finish_reason, prompt_tokens and gen_tokens (kept in the log as the pipeline keeps
them). Sample indexes: an item's samples are its lines in the order of the files given and, within a file,
in line order (k files of one line per item, or one file of k lines per item, or both); every item must
end with the same k, and an item with fewer or more samples than another is refused naming both. Lines
given twice are refused: a file named twice, and lines that repeat the earlier ones whole (`cat f f`) where
the texts are sampled or each line has its own seed (greedy texts without seeds may rightly repeat).

Each text is judged against its --suite item exactly as the pipeline's scorer judges a sample
(scoring.verifiers, the item's own verifier and answer): `--reading chat` (default: the chat rules) or
`plain` (the first `Answer:` line), and `--answer-rule` the prompt's rule (protocol.answer: first_answer,
last_boxed, answer_is) where the prompt set one. A line's prompt, when the lines have one, is read as the
scorer reads it (a prompt that ends in `Answer:` makes the text its continuation); without one, `plain`
reads the text as the continuation of a prompt that ends in `Answer:`, as the pipeline's plain prompts do.
The log records the scorer as the pipeline's (name, version, verifiers), so the analysis commands
(compare_logs, delta) compare it with the pipeline's own logs; what the lines or flags do not give
(model, seed, top_p) is recorded as not known, and only the temperature and the token budget, which
every comparison matches, must be given.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError

from contract.atomic import atomic_write
from contract.digest import file_sha256
from contract.evallog import EvalLog, ScorerInfo
from contract.files import PathCheckError, input_file, output_file
from contract.jsonl import JsonlError, read_jsonl
from contract.suite import SuiteItem
from contract.textformat import ANSWER_TAG
from interop.imports.log_builder import build_log
from interop.imports.tool_file import (
    EXIT_REFUSED,
    ImportRefusal,
    ItemDraft,
    SuiteFile,
    ToolFile,
    plain_text,
    read_suite,
)
from pipeline.field_map import parse_field_map
from scoring import verifiers
from scoring.reading import LENIENT_TEXT, RULE_TEXT
from scoring.scorer import SCORER_NAME, SCORER_VERSION, answer_setting, verifier_infos
from scoring.timelimit import DEFAULT_TIMEOUT_S

TOOL = "jsonl"
NOT_KNOWN = "(not recorded)"
TARGETS = ("item_id", "text", "prompt", "question", "seed", "finish_reason", "prompt_tokens", "gen_tokens")
REQUIRED = ("item_id", "text")
# The sample fields a line may carry, and the type each must have.
SAMPLE_FIELDS = {"seed": int, "finish_reason": str, "prompt_tokens": int, "gen_tokens": int}
READINGS = ("chat", "plain")


@dataclass(frozen=True)
class Reading:
    """How the texts are read: as chat or plain output, and the prompt's rule (protocol.answer) if any."""

    chat: bool = True
    rule: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def words(self) -> str:
        """Where the answer is read, in the pipeline scorer's own words."""
        # answer_setting reads only these two attributes of the generations it describes.
        return answer_setting(SimpleNamespace(chat=self.chat, protocol=SimpleNamespace(answer=self.rule)))  # type: ignore[arg-type]


def parse_fields(pairs: Sequence[str]) -> dict[str, str]:
    """--field TARGET=SOURCE pairs as {target: source}; refuse an unknown target or a malformed pair."""
    try:
        return parse_field_map(pairs, TARGETS, "line field", "text=response")
    except ValueError as e:
        raise ImportRefusal(str(e)) from None


def _field(path: Path, n: int, row: dict[str, Any], target: str, fields: dict[str, str]) -> Any:
    """The line's value for target (None when an optional field is absent); refuse a missing required one."""
    name = fields.get(target, target)
    if name not in row or row[name] is None:
        if target in REQUIRED or target in fields:
            if name in row:
                empty = " (an empty string for an empty answer)" if target == "text" else ""
                raise ImportRefusal(
                    f"{path}:{n}: field {name!r} (for {target}) is null; every line needs a {target}{empty}"
                )
            raise ImportRefusal(
                f"{path}:{n}: field {name!r} (for {target}) is missing; its fields: "
                f"{', '.join(sorted(row))}; name another with --field {target}=FIELD"
            )
        return None
    value = row[name]
    kind = SAMPLE_FIELDS.get(target, str)
    if target == "item_id" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # an id written as a number names the same item
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ImportRefusal(
            f"{path}:{n}: field {name!r} (for {target}): {value!r:.60} is not "
            + ("an integer" if kind is int else "a string")
        )
    return plain_text(path, f"line {n}: field {name!r}", value) if kind is str else value


def _scored_text(text: str, prompt: str | None, reading: Reading) -> str:
    """The text the verifier reads: the scorer's (the prompt decides the `Answer:` continuation), or without a
    prompt the plain reading's continuation of `Answer:`."""
    if prompt is not None:
        return verifiers.scored_text(prompt, text)
    return verifiers.scored_text(ANSWER_TAG if not reading.chat else "", text)


@dataclass
class Judged:
    """What judging one file's texts gave beside each sample's verdict, as the scorer records it: the lenient
    reader's score of each sample (per item, in sample order), the answers that ran out of time, and which
    reading rule read each answer."""

    lenient: dict[str, list[float]] = field(default_factory=dict)
    timeouts: int = 0
    read_by: Counter[str] = field(default_factory=Counter)
    # Each line as read (line number, object), and the item and seed (None: none) it names.
    rows: list[tuple[int, Any]] = field(default_factory=list)
    seeds: list[tuple[str, int | None]] = field(default_factory=list)


def read(
    path: Path, fields: dict[str, str], suite: SuiteFile, reading: Reading, model: str, generator: str
) -> tuple[ToolFile, Judged]:
    """One JSONL file as a ToolFile whose samples the verifier has judged, and what else the judging gave;
    refuse a line it cannot read, naming the file, the line and the field."""
    try:
        rows = read_jsonl(path)
    except JsonlError as e:
        raise ImportRefusal(str(e)) from None
    if not rows:
        raise ImportRefusal(f"{path}: no lines; nothing to import")
    by_id = {it.item_id: it for it in suite.items}
    read_file = ToolFile(
        path=path,
        tool=TOOL,
        version=f"({generator})",
        model_name=model,
        suite=suite.path.stem,
        suite_revision=NOT_KNOWN,
        measured_at=NOT_KNOWN,
        metric=f"{SCORER_NAME} verifier",
        metric_settings={},
        decoding={},
        named_by="item id",
        model_from="--model",
        k_is_setting=False,
    )
    judged = Judged()
    for n, row in rows:
        if not isinstance(row, dict):
            raise ImportRefusal(f"{path}:{n}: not a JSON object but {type(row).__name__}")
        item_id = _field(path, n, row, "item_id", fields)
        item = by_id.get(item_id)
        if item is None:
            raise ImportRefusal(
                f"{path}:{n}: item {item_id!r} is not an item of {suite.path}; import generations of this "
                "suite, or name the id field (--field item_id=FIELD)"
            )
        text = _field(path, n, row, "text", fields)
        prompt = _field(path, n, row, "prompt", fields)
        question = _field(path, n, row, "question", fields)
        judged.rows.append((n, row))
        judged.seeds.append((item_id, _field(path, n, row, "seed", fields)))
        verdict, lenient = _judge(path, n, item, _scored_text(text, prompt, reading), reading)
        judged.timeouts += verdict.timed_out
        judged.read_by[verdict.read_by or "none"] += 1
        judged.lenient.setdefault(item_id, []).append(lenient.score)
        draft = read_file.items.setdefault(
            item_id,
            ItemDraft(
                prompt=prompt,
                family=item.family,
                texts=_question_texts(question, prompt, item),
                where=f"line {n} (item {item_id!r})",
            ),
        )
        if draft.prompt != prompt:
            raise ImportRefusal(
                f"{path}:{n}: item {item_id!r}: field {fields.get('prompt', 'prompt')!r}: another prompt "
                f"than on {draft.where.partition(' (')[0]}; one item has one prompt"
            )
        draft.samples.append({
            "text": text,
            "tool_score": verdict.score,
            "verdict": verifiers.verdict_word(verdict),
            "answer": verdict.answer,
            "lenient_answer": lenient.answer if lenient.answer != verdict.answer else None,
            "no_answer_reason": verdict.reason,
            **{name: _field(path, n, row, name, fields) for name in SAMPLE_FIELDS},
        })  # fmt: skip
    return read_file, judged


def check_repeats(paths: Sequence[Path], judged: Sequence[Judged], temperature: float) -> None:
    """Refuse samples given twice: a file named twice, or lines that repeat the earlier lines whole, as
    `cat f f` or `cat f g f g` make (which would double k), where the texts are sampled or each line has
    its own seed (greedy texts without seeds are rightly the same on every line)."""
    named = Counter(p.resolve() for p in paths)
    twice = [p for p in paths if named[p.resolve()] > 1]
    if twice:
        raise ImportRefusal(f"{twice[0]}: given twice; give each file once")
    lines = [(path, n, row) for path, j in zip(paths, judged, strict=True) for n, row in j.rows]
    period = _repeat_period([row for _, _, row in lines])
    if period is None:
        return
    block = [j.seeds[i] for j in judged for i in range(len(j.rows))][:period]
    own_seeds = all(seed is not None for _, seed in block) and len(set(block)) == period
    if temperature > 0 or own_seeds:
        path, n, _ = lines[period]
        first, n0, _ = lines[0]
        raise ImportRefusal(
            f"{path}:{n}: from this line on, the lines repeat the {period} lines from {first}:{n0} whole "
            f"({len(lines) // period} copies: a file concatenated with itself?); drop the repeated lines, "
            "or, if the samples really are the same, give each line its own seed"
        )


def _repeat_period(rows: list[Any]) -> int | None:
    """The length of the block that rows repeat whole (2 copies or more), if any; a block of one distinct
    line does not count (an item's samples may all be one short text)."""
    n = len(rows)
    for p in range(1, n // 2 + 1):
        repeats = n % p == 0 and all(rows[i] == rows[i - p] for i in range(p, n))
        if repeats and any(row != rows[0] for row in rows[:p]):
            return p
    return None


def _question_texts(question: str | None, prompt: str | None, item: SuiteItem) -> tuple[str, ...]:
    """What build_log looks for the suite's question in (besides the prompt): the line's question; for lines
    that carry neither a question nor a prompt, the suite's own (the item is then matched by its id alone)."""
    if question is not None:
        return (question,)
    return (item.question,) if prompt is None else ()


def _judge(
    path: Path, n: int, item: SuiteItem, text: str, reading: Reading
) -> tuple[verifiers.Verdict, verifiers.Verdict]:
    """The verdicts of the report's reader and the lenient reader on one text, as the pipeline's scorer
    gives them."""
    try:
        return verifiers.score_both(
            item, text, chat=reading.chat, timeout_s=reading.timeout_s, rule=reading.rule
        )
    except verifiers.VerifierError as e:
        raise ImportRefusal(f"{path}:{n}: suite {e}") from None


def check_k(files: Sequence[ToolFile]) -> int:
    """The samples per item over all files; refuse unequal counts, naming two items and where they differ."""
    counts: Counter[str] = Counter()
    per_file = {file.path: {key: len(d.samples) for key, d in file.items.items()} for file in files}
    for of_file in per_file.values():
        counts.update(of_file)
    ks = sorted(set(counts.values()))
    if len(ks) > 1:
        few = min(counts, key=lambda k: (counts[k], k))
        many = max(counts, key=lambda k: (counts[k], k))
        spread = "; ".join(
            f"{p}: {c.get(few, 0)} and {c.get(many, 0)}"
            for p, c in per_file.items()
            if c.get(few) != c.get(many)
        )
        raise ImportRefusal(
            f"samples: item {few!r} has {counts[few]} samples, item {many!r} has {counts[many]} (lines per "
            f"file: {spread}); every item needs the same k: add the missing samples or drop the item from "
            "every file"
        )
    return ks[0]


def imported_log(
    paths: Sequence[Path],
    fields: dict[str, str],
    suite: SuiteFile,
    reading: Reading,
    overrides: dict[str, Any],
    model: str = NOT_KNOWN,
    generator: str = "generator not recorded",
    seed: int | None = None,
    arm: str | None = None,
    names: dict[str, str | None] | None = None,
) -> EvalLog:
    """The EvalLog of the files' samples, each judged by its suite item as the pipeline's scorer judges."""
    reads = [read(p, fields, suite, reading, model, generator) for p in paths]
    check_repeats(paths, [j for _, j in reads], float(overrides["temperature"]))
    files = [file for file, _ in reads]
    for file in files:
        file.seed = seed
    check_k(files)
    names = dict(names or {})
    names.setdefault("suite_revision", None)
    names["suite_revision"] = names["suite_revision"] or f"sha256:{file_sha256(suite.path)[:12]}"
    log = build_log(files, overrides, arm=arm, suite_file=suite, names=names)
    # build_log kept each verdict as the tool's score; the scorer that gave it is the pipeline's own, so
    # the log names it as the pipeline's logs do (analysis.reports.align compares name, version and
    # verifiers).
    by = f"{SCORER_NAME} verifier"
    scorer = ScorerInfo(
        name=SCORER_NAME,
        version=SCORER_VERSION,
        settings={
            **(log.scorer.settings if log.scorer is not None else {}),
            "by": by,
            "metric": None,
            "answer": reading.words(),
            "lenient_answer": LENIENT_TEXT,
            "chat": reading.chat,
            "verifier_timeout_s": reading.timeout_s,
            "reference": "each item's suite answer",
            "source": f"{TOOL} ({generator})",
        },
        verifiers=verifier_infos(suite.items),
        timeouts=sum(j.timeouts for _, j in reads),
        read_by=dict(sorted(sum((j.read_by for _, j in reads), Counter()).items())),
    )
    # build_log appends each item's samples file by file, in the order given: so do its lenient scores.
    items = [
        it.model_copy(
            update={
                "samples": [s.model_copy(update={"scored_by": by}) for s in it.samples or []],
                "lenient_scores": [x for _, j in reads for x in j.lenient[it.item_id]],
            }
        )
        for it in log.items
    ]
    try:
        return EvalLog.model_validate(log.model_copy(update={"scorer": scorer, "items": items}).model_dump())
    except ValidationError as e:
        raise ImportRefusal(f"{paths[0]}: {e.errors()[0]['msg']}") from None


def parser() -> argparse.ArgumentParser:
    """The jsonl command's options."""
    ap = argparse.ArgumentParser(
        prog="python -m interop.imports jsonl",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument("src", nargs="+", help="JSONL files, one sample a line, of one model on one suite")
    ap.add_argument(
        "--suite", required=True, help="the suite the items are of: each text is judged by its item"
    )
    ap.add_argument("--out", required=True, help="the EvalLog JSON to write")
    ap.add_argument(
        "--field", action="append", default=[], metavar="TARGET=SOURCE",
        help=f"read TARGET ({', '.join(TARGETS)}) from the line's field SOURCE; repeatable",
    )  # fmt: skip
    ap.add_argument(
        "--reading", choices=READINGS, default="chat",
        help="read answers as the pipeline reads chat output (default) or plain output (the first 'Answer:')",
    )  # fmt: skip
    ap.add_argument(
        "--answer-rule", choices=sorted(RULE_TEXT), default=None,
        help="the prompt's answer rule (protocol.answer), where the prompt set one",
    )  # fmt: skip
    ap.add_argument(
        "--temperature", type=float, required=True, help="the temperature the texts were sampled at"
    )
    ap.add_argument("--max-tokens", type=int, required=True, help="the token budget of each text")
    ap.add_argument("--top-p", type=float, default=None, help="the top_p, where the run set one")
    ap.add_argument("--seed", type=int, default=None, help="the run's seed, where it had one")
    ap.add_argument("--model", default=None, help="the model that generated the texts (the log's model_name)")
    ap.add_argument(
        "--generator", default=None, help="what generated them, for the log's driver ('verl 0.4')"
    )
    ap.add_argument("--arm", default=None, help="the arm name in the log (default: none: the file stem)")
    ap.add_argument(
        "--suite-name", default=None,
        help="the suite's name as the logs it is compared with record it (default: the suite file's stem)",
    )  # fmt: skip
    ap.add_argument(
        "--suite-revision", default=None,
        help="the suite's revision as those logs record it (default: sha256: and 12 hex digits of the file)",
    )  # fmt: skip
    ap.add_argument(
        "--verifier-timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
        help=f"the verifier's time limit per answer, as the scorer's (default {DEFAULT_TIMEOUT_S:g} s)",
    )  # fmt: skip
    return ap


def main(argv: list[str] | None = None) -> int:
    """Command line (python -m interop.imports jsonl): read the files, judge every text, write the log."""
    args = parser().parse_args(argv)
    try:
        out = output_file(args.out, "--out")
        suite = read_suite(args.suite)
        assert suite is not None  # --suite is required
        paths = [input_file(p, "SRC") for p in args.src]
        reading = Reading(
            chat=args.reading == "chat", rule=args.answer_rule, timeout_s=args.verifier_timeout_s
        )
        log = imported_log(
            paths,
            parse_fields(args.field),
            suite,
            reading,
            {"temperature": args.temperature, "top_p": args.top_p, "max_tokens": args.max_tokens},
            model=args.model or NOT_KNOWN,
            generator=args.generator or "generator not recorded",
            seed=args.seed,
            arm=args.arm,
            names={"suite": args.suite_name, "suite_revision": args.suite_revision},
        )
        atomic_write(out, log.model_dump_json(exclude_none=True, indent=1).encode())
    except (ImportRefusal, PathCheckError) as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as e:
        print(f"refused: --out {args.out}: cannot be written ({e.strerror or e})", file=sys.stderr)
        return EXIT_REFUSED
    mean = sum(sum(it.scores) for it in log.items) / (len(log.items) * log.n_samples)
    print(
        f"{args.out}: {len(log.items)} items x {log.n_samples} samples of {log.model_name} on {log.suite}, "
        f"judged by {SCORER_NAME} {SCORER_VERSION} ({args.reading} reading"
        f"{f', {args.answer_rule}' if args.answer_rule else ''}): mean score {mean:.4f}"
    )
    return 0
