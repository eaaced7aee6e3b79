"""`--field TARGET=SOURCE` options (pipeline.freeze, interop.imports jsonl): the input field of each target.

A source is the file such a command is given to convert (SRC: a dataset to freeze, another tool's texts to
import); SOURCE names one of its records' fields, read for the project's field TARGET.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def parse_field_map(
    pairs: Sequence[str], targets: Collection[str], kind: str, example: str
) -> dict[str, str]:
    """TARGET=SOURCE pairs as {target: source}; ValueError naming the pair for a malformed one or a target
    not in targets (kind: what a target is, 'suite field'; example: a well-formed pair)."""
    out: dict[str, str] = {}
    for pair in pairs:
        target, sep, name = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--field {pair!r}: write it as TARGET=SOURCE, e.g. --field {example}")
        if target not in targets:
            raise ValueError(f"--field {pair!r}: {target!r} is not a {kind}; one of {', '.join(targets)}")
        out[target] = name
    return out
