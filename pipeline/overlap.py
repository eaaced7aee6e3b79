"""The suite against training data the user names: the longest shared word run and MinHash near-duplicates.

The n-gram check is the decontamination check of GPT-3 and NeMo-Skills (a run of n words of a question
found in a training text), recorded with the run itself so a reader sees what matched; a question shorter
than n words counts when it appears whole. The near-duplicate check is datasketch's MinHash LSH over word
shingles, which finds a reworded copy that shares no long run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from contract.contamination import OverlapFile, OverlapItem, OverlapSettings, OverlapSource, TrainingData
from contract.digest import file_sha256
from contract.jsonl import JsonlError, iter_jsonl
from contract.suite import SuiteItem, questions_sha256

# Words, and every other non-space character as a token of its own: `3 + 4` and `3 - 4` differ.
WORD = re.compile(r"\w+|[^\w\s]")


class OverlapError(ValueError):
    """Training data that cannot be read: the message names the file, the line or field, and the fix."""


@dataclass(frozen=True)
class Doc:
    """One training document: where it is (`path:line`) and its lower-cased words."""

    where: str
    words: tuple[str, ...]


def words_with_spans(text: str) -> list[tuple[str, int, int]]:
    """The lower-cased words of text with their character spans."""
    return [(m.group().lower(), m.start(), m.end()) for m in WORD.finditer(text)]


def read_training(data: TrainingData) -> tuple[list[Doc], OverlapSource]:
    """The documents of one training set (a JSONL field, or plain-text lines) and its record."""
    path = Path(data.path)
    if not path.is_file():
        raise OverlapError(f"{path}: training data not found (params.yaml contamination.training_data path)")
    docs: list[Doc] = []
    if data.field is None:
        text = path.read_text(encoding="utf-8", errors="strict")
        for n, line in enumerate(text.split("\n"), 1):
            if line.strip():
                docs.append(Doc(f"{path}:{n}", tuple(w for w, _, _ in words_with_spans(line))))
    else:
        try:
            for n, record in iter_jsonl(path):
                value = record.get(data.field) if isinstance(record, dict) else None
                if not isinstance(value, str):
                    raise OverlapError(
                        f"{path}:{n}: no text under {data.field!r}; set contamination.training_data field to "
                        "the key that holds each record's text, or null for a plain-text file"
                    )
                docs.append(Doc(f"{path}:{n}", tuple(w for w, _, _ in words_with_spans(value))))
        except JsonlError as e:
            raise OverlapError(str(e)) from None
    source = OverlapSource(path=data.path, field=data.field, sha256=file_sha256(path), documents=len(docs))
    return docs, source


# Documents kept per n-gram: a templated corpus repeats its n-grams in thousands of documents, and the
# longest run is looked for in these only.
PER_NGRAM = 64


def ngram_index(docs: Sequence[Doc], n: int) -> dict[tuple[str, ...], list[int]]:
    """Each word n-gram of the documents -> the documents holding it (the first PER_NGRAM)."""
    index: dict[tuple[str, ...], list[int]] = {}
    for d, doc in enumerate(docs):
        for i in range(len(doc.words) - n + 1):
            held = index.setdefault(doc.words[i : i + n], [])
            if len(held) < PER_NGRAM and (not held or held[-1] != d):
                held.append(d)
    return index


def longest_run(
    question: str, docs: Sequence[Doc], index: dict[tuple[str, ...], list[int]], n: int
) -> tuple[int, str | None, str | None]:
    """The longest run of words (at least n) the question shares with one document: words, span, where
    (of equal runs, the one of a document that holds every number of the question)."""
    spans = words_with_spans(question)
    words = tuple(w for w, _, _ in spans)
    if 0 < len(words) < n:
        # Too short for an n-gram: it counts when the whole question is a run of one document.
        whole = " " + " ".join(words) + " "
        for doc in docs:
            if whole in " " + " ".join(doc.words) + " ":
                return len(words), question[spans[0][1] : spans[-1][2]], doc.where
        return 0, None, None
    best = (0, False, -1, -1, -1)  # words, same numbers, first word, last word, document
    for i in range(len(words) - n + 1):
        for d in index.get(words[i : i + n], []):
            j = i + n
            doc_text = " " + " ".join(docs[d].words) + " "
            # Extend the run word by word while the same document still holds it.
            while j < len(words) and " " + " ".join(words[i : j + 1]) + " " in doc_text:
                j += 1
            if j - i >= best[0] and (j - i, held := holds_numbers(question, docs[d])) > best[:2]:
                best = (j - i, held, i, j - 1, d)
    if best[0] == 0:
        return 0, None, None
    return best[0], question[spans[best[2]][1] : spans[best[3]][2]], docs[best[4]].where


def holds_numbers(question: str, doc: Doc) -> bool:
    """Whether the document holds every number of the question (as many times)."""
    from collections import Counter

    wanted = Counter(w for w, _, _ in words_with_spans(question) if w.isdigit())
    return not wanted - Counter(w for w in doc.words if w.isdigit())


def shingles(words: Sequence[str], size: int) -> list[bytes]:
    """The word shingles of a text (the whole text when it is shorter than one)."""
    if len(words) <= size:
        return [" ".join(words).encode()] if words else []
    return [" ".join(words[i : i + size]).encode() for i in range(len(words) - size + 1)]


def near_duplicates(
    questions: Sequence[str], docs: Sequence[Doc], settings: OverlapSettings
) -> list[tuple[str | None, float | None]]:
    """Each question's most similar training document among MinHash LSH candidates at the threshold."""
    from datasketch import MinHash, MinHashLSH

    def minhash(words: Sequence[str]) -> MinHash:
        m = MinHash(num_perm=settings.minhash_perm, seed=1)
        m.update_batch(shingles(words, settings.minhash_shingle))
        return m

    lsh = MinHashLSH(threshold=settings.minhash_threshold, num_perm=settings.minhash_perm)
    hashes = {}
    for d, doc in enumerate(docs):
        if doc.words:
            hashes[d] = minhash(doc.words)
            lsh.insert(d, hashes[d])
    out: list[tuple[str | None, float | None]] = []
    for q in questions:
        qh = minhash([w for w, _, _ in words_with_spans(q)])
        scored = [(qh.jaccard(hashes[d]), -d) for d in lsh.query(qh)]
        scored = [s for s in scored if s[0] >= settings.minhash_threshold]
        if scored:
            jac, neg = max(scored)
            out.append((docs[-neg].where, float(jac)))
        else:
            out.append((None, None))
    return out


def overlap(
    items: Sequence[SuiteItem], data: Sequence[TrainingData], settings: OverlapSettings, suite: str
) -> OverlapFile:
    """The overlap file of a suite against the named training sets."""
    docs: list[Doc] = []
    sources = []
    for entry in data:
        got, source = read_training(entry)
        docs += got
        sources.append(source)
    index = ngram_index(docs, settings.ngram)
    by_where = {d.where: d for d in docs}
    near = near_duplicates([it.question for it in items], docs, settings)
    rows = []
    for it, (dup, jac) in zip(items, near, strict=True):
        run, span, where = longest_run(it.question, docs, index, settings.ngram)
        matches = [by_where[w] for w in (where, dup) if w is not None]
        same = any(holds_numbers(it.question, m) for m in matches) if matches else None
        rows.append(OverlapItem(item_id=it.item_id, longest_run=run, span=span, source=where,
                                near_duplicate=dup, jaccard=jac, same_numbers=same))  # fmt: skip
    return OverlapFile(
        suite=suite,
        questions_sha256=questions_sha256(items),
        settings=settings,
        sources=sources,
        datasketch=f"datasketch {version('datasketch')}",
        items=rows,
    )
