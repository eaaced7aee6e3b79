"""Pins: content hashes of suite, checkpoints and index; drift is refused naming the file that changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.pins import PinError, check_pins, compute_pins, dir_files, dir_hash, load_params, write_pins
from tests.conftest import ROOT, arithmetic_items, make_world

CORPUS = [
    {"doc_id": "d1", "title": "Kepler", "text": "The period of a circular orbit grows with its radius."},
    {"doc_id": "d2", "title": "Raise", "text": "Raising an orbit by d km adds d km to the altitude."},
]


def _world(tmp_path: Path, untrained_checkpoint: Path, corpus: bool = False):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for f in untrained_checkpoint.iterdir():
        (ckpt / f.name).write_bytes(f.read_bytes())
    return make_world(tmp_path / "w", {"base": ckpt}, arithmetic_items(4), corpus=CORPUS if corpus else None)


def test_pins_hold_suite_sha_checkpoint_content_hash_and_index_revision(
    tmp_path, untrained_checkpoint
) -> None:
    w = _world(tmp_path, untrained_checkpoint, corpus=True)
    pins = json.loads(w.pins.read_text())
    import hashlib

    assert pins["suite"]["sha256"] == hashlib.sha256(w.suite.read_bytes()).hexdigest()
    files = pins["models"]["base"]["files"]
    assert "model.safetensors" in files and "config.json" in files
    assert pins["models"]["base"]["sha256"] == dir_hash(dir_files(tmp_path / "ckpt"))
    from arms.retrieval import Index

    assert pins["index"]["revision"] == Index.load(w.root / "index").revision
    flat = check_pins(load_params(w.params), w.pins, "base", retrieval=True)
    assert flat == {
        "suite": f"sha256:{pins['suite']['sha256']}",
        "model": f"sha256:{pins['models']['base']['sha256']}",
        "index": pins["index"]["revision"],
    }


def test_a_changed_checkpoint_file_is_named(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    params = load_params(w.params)
    cfg = tmp_path / "ckpt" / "config.json"
    cfg.write_text(cfg.read_text().replace('"rms_norm_eps"', '"rms_norm_eps" ', 1))
    with pytest.raises(PinError, match=r"checkpoint 'base': .*ckpt/config.json changed since pinning"):
        check_pins(params, w.pins, "base", retrieval=False)
    (tmp_path / "ckpt" / "extra.bin").write_bytes(b"x")
    w.repin()
    (tmp_path / "ckpt" / "extra.bin").unlink()
    with pytest.raises(PinError, match=r"ckpt/extra.bin was removed since pinning"):
        check_pins(params, w.pins, "base", retrieval=False)
    w.repin()
    (tmp_path / "ckpt" / "new.txt").write_text("hi")
    with pytest.raises(PinError, match=r"ckpt/new.txt was added since pinning"):
        check_pins(params, w.pins, "base", retrieval=False)


def test_a_changed_suite_or_index_is_refused(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint, corpus=True)
    params = load_params(w.params)
    corpus = Path(params.rag.corpus)
    corpus.write_text(corpus.read_text().replace("grows", "grows steadily"))
    from arms.retrieval import build_index

    build_index(corpus, params.rag.index)
    with pytest.raises(PinError, match=r"index .* changed since pinning"):
        check_pins(params, w.pins, "base", retrieval=True)
    assert check_pins(params, w.pins, "base", retrieval=False)["model"].startswith("sha256:")
    w.suite.write_text(w.suite.read_text() + "\n")
    with pytest.raises(PinError, match=r"suite.jsonl changed since pinning"):
        check_pins(params, w.pins, "base", retrieval=False)


def test_hub_models_are_pinned_by_full_commit_and_branches_are_refused(tmp_path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(arithmetic_items(1)[0]) + "\n")
    params = {
        "suite": {"path": str(suite), "name": "s", "revision": "1"},
        "models": {"base": {"hf": "org/model", "revision": "main"}},
        "protocol": {"k": 1, "max_tokens": 8, "temperature": 0, "top_p": 1, "seed": 1},
    }
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(params))
    with pytest.raises(PinError, match=r"params.yaml: models.base: .*'main' is not a full 40-hex commit sha"):
        load_params(p)
    sha = "0123456789abcdef0123456789abcdef01234567"
    params["models"]["base"]["revision"] = sha
    p.write_text(yaml.safe_dump(params))
    pins = compute_pins(load_params(p))
    assert pins["models"]["base"] == {"hf": "org/model", "revision": sha}
    write_pins(load_params(p), tmp_path / "pins.json")
    assert check_pins(load_params(p), tmp_path / "pins.json", "base", False)["model"] == f"hf:org/model@{sha}"


def test_cli_writes_pins_and_reports_bad_params_in_one_line(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    out = tmp_path / "fresh-pins.json"
    run = [sys.executable, "-m", "pipeline.pins", "--params", str(w.params), "--out", str(out)]
    res = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text()) == json.loads(w.pins.read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(w.params.read_text().replace("max_tokens: 16", "max_tokens: 0"))
    before = out.read_bytes()
    res = subprocess.run(
        [*run[:4], str(bad), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "bad.yaml: protocol.max_tokens" in res.stderr
    assert out.read_bytes() == before
