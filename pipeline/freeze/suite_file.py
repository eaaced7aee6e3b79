"""Freezing a dataset into the suite file: every record checked, every refusal collected, all or nothing.

The suite and its .sha256 are written at once, or nothing is."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.digest import text_sha256
from contract.suite import SuiteError, SuiteItem, load_suite
from pipeline.freeze.outcome import FreezeError, FreezeRefusal, Frozen, UnreadableReference
from pipeline.freeze.records import freeze_item, read_source
from pipeline.freeze.references import check_reference, with_forms


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
            item = with_forms(freeze_item(where, n, rec, fields, answer_from, verifier, family, name))
            check_reference(where, item)
        except UnreadableReference as e:
            if fallback is not None:
                item = SuiteItem.model_validate(
                    {**item.model_dump(), "verifier": {"type": fallback, "fallback": True}}
                )
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


def sha256_path(out: Path) -> Path:
    """Where the suite's sha256 goes: beside it, with the suffix .sha256 (demo/suite/*.sha256)."""
    return out.with_suffix(".sha256")
