"""The files of one log agree and name the same documents, or the import is refused.

Each file is given once, of one model, task, k, scoring and decoding; later files' documents are keyed as the
first's (by own id, or by content where named by position).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contract.digest import file_sha256
from interop.imports.tool_file import DECODING, ImportRefusal, ItemDraft, ToolFile


def check_files(files: Sequence[ToolFile]) -> None:
    """Refuse a file given twice, and files of another model, task, naming, k, scoring or decoding."""
    seen: dict[str, Path] = {}
    for file in files:
        digest = file_sha256(file.path)
        if digest in seen:
            raise ImportRefusal(
                f"{seen[digest]} and {file.path}: the same file given twice (sha256 {digest[:12]}...); each "
                "file is one run of its samples: give each once"
            )
        seen[digest] = file.path
    first = files[0]
    for file in files[1:]:
        for name in ("tool", "model_name", "suite", "suite_revision", "named_by"):
            a, b = getattr(first, name), getattr(file, name)
            if a != b:
                origin = f" (from {first.model_from} and {file.model_from})" if name == "model_name" else ""
                raise ImportRefusal(
                    f"{first.path} vs {file.path}: {name} differs ({a!r} vs {b!r}){origin}; one log holds "
                    "one model on one suite: import each into its own log"
                )
        ka, kb = _k(first), _k(file)
        if None not in (ka, kb) and ka != kb and first.k_is_setting:
            raise ImportRefusal(
                f"{first.path} vs {file.path}: samples per item differ ({ka} vs {kb}); the files of one log "
                "are runs of one protocol: import each k into its own log"
            )
        if (first.metric, first.metric_settings) != (file.metric, file.metric_settings):
            raise ImportRefusal(
                f"{first.path} vs {file.path}: scoring differs ({_scoring(first)} vs {_scoring(file)}); "
                "one log is scored one way: import them apart, or judge both with --verifier"
            )
        for name in DECODING:
            a, b = first.decoding.get(name), file.decoding.get(name)
            if a != b:
                raise ImportRefusal(
                    f"{first.path} vs {file.path}: {name} differs ({a!r} vs {b!r}); mixed decoding settings "
                    "are not one protocol: import each setting into its own log"
                )


def _k(file: ToolFile) -> int | None:
    """Samples per document of one file; None when they differ (refused item by item later)."""
    counts = {len(d.samples) for d in file.items.values()}
    return counts.pop() if len(counts) == 1 else None


def _scoring(file: ToolFile) -> str:
    """How a file scored its samples, in words (for a refusal)."""
    if file.metric is None:
        return "one score per document of several samples"
    return f"metric {file.metric!r}" + "".join(
        f", {k} {v!r}" for k, v in sorted(file.metric_settings.items())
    )


def align(files: Sequence[ToolFile]) -> None:
    """Key each later file's documents as the first's: by own id, or by content where named by position."""
    first = files[0]
    if first.positional:
        by_content: dict[str, str] = {}
        for key, draft in first.items.items():
            if draft.content is None:
                if len(files) > 1:
                    raise ImportRefusal(
                        f"{first.path}: {draft.where}: the document has no id and no content hash "
                        "(doc_hash); files that name documents by position cannot be aligned: give the "
                        "documents an id (--id-field doc.FIELD) or import one file"
                    )
                continue
            if draft.content in by_content:
                raise ImportRefusal(
                    f"{first.path}: {draft.where}: the same document as {by_content[draft.content]!r} (equal "
                    "content hash) and no id to tell them apart; give the documents an id (--id-field)"
                )
            by_content[draft.content] = key
    for file in files[1:]:
        if first.positional:
            rekeyed: dict[str, ItemDraft] = {}
            for draft in file.items.values():
                key = by_content.get(draft.content or "")
                if key is None:
                    raise ImportRefusal(
                        f"{file.path}: {draft.where}: no document of {first.path} has this content "
                        f"(hash {str(draft.content)[:12]}...); every file of one log holds the same documents"
                    )
                if key in rekeyed:
                    raise ImportRefusal(
                        f"{file.path}: {draft.where}: the same document twice (equal content hash)"
                    )
                rekeyed[key] = draft
            file.items = rekeyed
            continue
        for key in sorted(set(first.items) & set(file.items)):
            a, b = first.items[key].content, file.items[key].content
            if a is not None and b is not None and a != b:
                raise ImportRefusal(
                    f"{first.path} vs {file.path}: item {key!r}: another document under the same id (content "
                    f"hash {a[:12]}... vs {b[:12]}...); the files are of two datasets: import each apart"
                )
        if set(file.items) != set(first.items):
            only_a = sorted(set(first.items) - set(file.items))
            only_b = sorted(set(file.items) - set(first.items))
            example = f"{only_a[0]!r} only in the first" if only_a else f"{only_b[0]!r} only in the second"
            raise ImportRefusal(
                f"{first.path} vs {file.path}: items differ ({len(only_a)} only in the first, {len(only_b)} "
                f"only in the second, e.g. {example}); every file of one log must hold the same items"
            )
