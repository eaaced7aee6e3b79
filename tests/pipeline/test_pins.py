"""Pins: content hashes of suite, checkpoints and index, one file per arm; drift refused, naming the file."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.suite import load_suite, questions_sha256
from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world
from pipeline.config import ConfigError, load_arm, load_params
from pipeline.pins import (
    PinError,
    check_pins,
    compute_pins,
    dir_files,
    dir_hash,
    pinned_index,
    suite_items,
    write_pins,
)

CORPUS = [
    {"doc_id": "d1", "title": "Kepler", "text": "The period of a circular orbit grows with its radius."},
    {"doc_id": "d2", "title": "Raise", "text": "Raising an orbit by d km adds d km to the altitude."},
]


def _copy(src: Path, dest: Path) -> Path:
    dest.mkdir()
    for f in src.iterdir():
        (dest / f.name).write_bytes(f.read_bytes())
    return dest


def _world(tmp_path: Path, untrained_checkpoint: Path, corpus: bool = False, trained: bool = False):
    models = {"base": _copy(untrained_checkpoint, tmp_path / "ckpt")}
    if trained:
        models["trained"] = _copy(untrained_checkpoint, tmp_path / "ckpt-trained")
    return make_world(tmp_path / "w", models, arithmetic_items(4), corpus=CORPUS if corpus else None)


def _arm_pins(w) -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in sorted((w.pins / "arms").glob("*.json"))}


def test_pins_hold_suite_questions_checkpoint_and_index(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint, corpus=True)
    inputs = json.loads((w.pins / "inputs.json").read_text())
    assert inputs["suite"]["sha256"] == hashlib.sha256(w.suite.read_bytes()).hexdigest()
    assert inputs["suite"]["questions_sha256"] == questions_sha256(load_suite(w.suite))
    files = inputs["models"]["base"]["files"]
    assert "model.safetensors" in files and "config.json" in files
    assert inputs["models"]["base"]["sha256"] == dir_hash(dir_files(tmp_path / "ckpt"))
    from augment.retrieval import Index

    assert inputs["index"]["revision"] == Index.load(w.root / "index").revision
    # Only base's arms can be pinned in a world with one model: no trained arm files.
    assert set(_arm_pins(w)) == {"base", "+rag", "+tools"}
    rag = json.loads((w.pins / "arms" / "+rag.json").read_text())
    assert rag["index"] == inputs["index"] and rag["rag"]["top_k"] == 2
    assert "index" not in json.loads((w.pins / "arms" / "base.json").read_text())
    flat = check_pins(
        load_params(w.params),
        w.pins,
        load_arm("+rag"),
        pinned_index(load_params(w.params)),
        suite_items(load_params(w.params)),
    ).flat
    assert flat == {
        "questions": f"sha256:{inputs['suite']['questions_sha256']}",
        "model": f"sha256:{inputs['models']['base']['sha256']}",
        "index": inputs["index"]["revision"],
    }


def test_an_arm_pin_changes_only_with_what_that_arm_generates_from(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint, corpus=True, trained=True)
    before = _arm_pins(w)
    assert set(before) == {
        "base",
        "trained",
        "+rag",
        "+tools",
        "trained+rag",
        "trained+tools",
        "trained+rag+tools",
    }

    # An answer fix: the suite file changes, its questions do not, so no arm regenerates.
    items = arithmetic_items(4)
    items[0]["answer"] = items[0]["answer"] + 1
    w.suite.write_text("".join(json.dumps(i) + "\n" for i in items))
    w.repin()
    assert _arm_pins(w) == before
    assert (
        json.loads((w.pins / "inputs.json").read_text())["suite"]["sha256"]
        == hashlib.sha256(w.suite.read_bytes()).hexdigest()
    )

    # rag.order: only the three retrieval arms.
    raw = yaml.safe_load(w.params.read_text())
    raw["rag"]["order"] = "best_first"
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    w.repin()
    after = _arm_pins(w)
    assert {a for a in before if after[a] != before[a]} == {"+rag", "trained+rag", "trained+rag+tools"}

    # The trained checkpoint: only the three trained arms.
    before = after
    cfg = tmp_path / "ckpt-trained" / "config.json"
    cfg.write_text(cfg.read_text() + " ")
    w.repin()
    after = _arm_pins(w)
    trained_arms = {"trained", "trained+rag", "trained+tools", "trained+rag+tools"}
    assert {a for a in before if after[a] != before[a]} == trained_arms

    # A question: every arm.
    items[1]["question"] = "What is 1 + 1 ?"
    w.suite.write_text("".join(json.dumps(i) + "\n" for i in items))
    w.repin()
    assert all(_arm_pins(w)[a] != after[a] for a in after)


def test_a_changed_checkpoint_file_is_named(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    params = load_params(w.params)
    cfg = tmp_path / "ckpt" / "config.json"
    cfg.write_text(cfg.read_text().replace('"rms_norm_eps"', '"rms_norm_eps" ', 1))
    with pytest.raises(PinError, match=r"checkpoint 'base': .*ckpt/config.json changed since pinning"):
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))
    (tmp_path / "ckpt" / "extra.bin").write_bytes(b"x")
    w.repin()
    (tmp_path / "ckpt" / "extra.bin").unlink()
    with pytest.raises(PinError, match=r"ckpt/extra.bin was removed since pinning"):
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))
    w.repin()
    (tmp_path / "ckpt" / "new.txt").write_text("hi")
    with pytest.raises(PinError, match=r"ckpt/new.txt was added since pinning"):
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))


def test_changed_questions_or_index_are_refused(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint, corpus=True)
    params = load_params(w.params)
    corpus = Path(params.rag.corpus)
    corpus.write_text(corpus.read_text().replace("grows", "grows steadily"))
    from augment.retrieval import build_index

    build_index(corpus, params.rag.index)
    with pytest.raises(PinError, match=r"index .* changed since pinning"):
        check_pins(params, w.pins, load_arm("+rag"), pinned_index(params), suite_items(params))
    assert (
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))
        .flat["model"]
        .startswith("sha256:")
    )
    w.suite.write_text(w.suite.read_text().replace("What is", "Compute", 1))
    with pytest.raises(PinError, match=r"pins/arms/base.json: questions: the questions of .* changed"):
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))


def test_an_arm_file_changed_after_pinning_is_refused(tmp_path, untrained_checkpoint) -> None:
    import shutil

    w = _world(tmp_path, untrained_checkpoint)
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    write_pins(load_params(w.params), w.pins, conf)
    arm = conf / "arm" / "base.yaml"
    arm.write_text(arm.read_text().replace("attribution: reference", "attribution: lookup"))
    with pytest.raises(PinError, match=r"base.json: arm: pinned as .*reference.* now says"):
        check_pins(
            load_params(w.params),
            w.pins,
            load_arm("base", conf),
            pinned_index(load_params(w.params)),
            suite_items(load_params(w.params)),
            conf,
        )


def test_hub_models_are_pinned_by_full_commit_and_branches_are_refused(tmp_path, monkeypatch) -> None:
    from huggingface_hub import constants

    from tests.helpers.hub import fake_hub_cache

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    fake_hub_cache(tmp_path / "hf-cache", "org/model", "0123456789abcdef0123456789abcdef01234567")
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(arithmetic_items(1)[0]) + "\n")
    params = {
        "suite": {"path": str(suite), "name": "s", "revision": "1"},
        "models": {"base": {"hf": "org/model", "revision": "main"}},
        "protocol": {"k": 1, "max_tokens": 8, "temperature": 0, "top_p": 1, "seed": 1},
    }
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(params))
    with pytest.raises(
        ConfigError, match=r"params.yaml: models.base: .*'main' is not a full 40-hex commit sha"
    ):
        load_params(p)
    sha = "0123456789abcdef0123456789abcdef01234567"
    params["models"]["base"]["revision"] = sha
    p.write_text(yaml.safe_dump(params))
    pins = compute_pins(load_params(p))
    assert pins["inputs"]["models"]["base"] == {"hf": "org/model", "revision": sha}
    write_pins(load_params(p), tmp_path / "pins")
    assert (
        check_pins(
            load_params(p),
            tmp_path / "pins",
            load_arm("base"),
            pinned_index(load_params(p)),
            suite_items(load_params(p)),
        ).flat["model"]
        == f"hf:org/model@{sha}"
    )


def test_an_arm_list_naming_an_arm_that_cannot_be_pinned_is_refused(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    raw = yaml.safe_load(w.params.read_text())
    raw["arms"] = ["base", "+rag"]
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(PinError, match=r"rag: missing; arm '\+rag' retrieves passages"):
        write_pins(load_params(w.params), w.pins)
    raw["arms"] = ["base", "nope"]
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(PinError, match=r"params.yaml: arms: unknown arm 'nope'"):
        write_pins(load_params(w.params), w.pins)


def test_cli_writes_pins_and_reports_bad_params_in_one_line(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    out = tmp_path / "fresh-pins"
    run = [sys.executable, "-m", "pipeline.pins", "--params", str(w.params), "--out", str(out)]
    res = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    for rel in ("inputs.json", "arms/base.json"):
        assert json.loads((out / rel).read_text()) == json.loads((w.pins / rel).read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(w.params.read_text().replace("max_tokens: 16", "max_tokens: 0"))
    before = (out / "inputs.json").read_bytes()
    res = subprocess.run(
        [*run[:4], str(bad), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "bad.yaml: protocol.max_tokens" in res.stderr
    assert (out / "inputs.json").read_bytes() == before


def _params_file(tmp_path: Path, name: str = "params.yaml", **changes) -> Path:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(arithmetic_items(1)[0]) + "\n")
    params = {
        "suite": {"path": str(suite), "name": "s", "revision": "1"},
        "models": {"base": {"hf": "org/model", "revision": "0123456789abcdef0123456789abcdef01234567"}},
        "protocol": {"k": 2, "max_tokens": 8, "temperature": 1.0, "top_p": 1.0, "seed": 1},
        **changes,
    }
    p = tmp_path / name
    p.write_text(yaml.safe_dump(params, sort_keys=False))
    return p


@pytest.mark.parametrize(
    ("protocol", "message"),
    [
        ({"k": True}, r"protocol.k: Input should be a valid integer, got True"),
        ({"k": 2.5}, r"protocol.k: Input should be a valid integer, got 2.5"),
        ({"seed": "7"}, r"protocol.seed: Input should be a valid integer, got '7'"),
        ({"temperature": "0.7"}, r"protocol.temperature: Input should be a valid number, got '0.7'"),
    ],
)
def test_protocol_values_of_another_type_are_refused(tmp_path, protocol, message) -> None:
    """YAML reads `k: true` as a bool, which a lax int would run as k = 1."""
    proto = {"k": 2, "max_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": 1, **protocol}
    with pytest.raises(ConfigError, match=r"params.yaml: " + message):
        load_params(_params_file(tmp_path, protocol=proto))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"analysys": {"n_boot": 10}},
            r"analysys: unknown key .*known keys here: suite, models, rag, protocol, analysis, arms",
        ),
        ({"rag": {"corpus": "c.jsonl", "topk": 2}}, r"rag.topk: unknown key .*here: corpus, index"),
        ({"models": {"base": {"path": "m", "revison": "x"}}}, r"models.base.revison: unknown key .*path, hf"),
    ],
)
def test_unknown_params_keys_are_refused_naming_the_known_ones(tmp_path, changes, message) -> None:
    with pytest.raises(ConfigError, match=r"params.yaml: " + message):
        load_params(_params_file(tmp_path, **changes))


def test_a_misspelt_key_is_named_with_its_fix_not_blamed_on_the_key_it_leaves_missing(tmp_path) -> None:
    p = _params_file(tmp_path)
    text = p.read_text()
    p.write_text(text.replace("protocol:", "protocal:"))
    with pytest.raises(ConfigError) as e:
        load_params(p)
    assert str(e.value) == (
        f"{p}: protocal: unknown key (a typo?); did you mean 'protocol'? rename it; known keys here: suite, "
        "models, rag, protocol, analysis, arms, trajectory, sweep, contamination, judge"
    )
    p.write_text(text.replace("temperature:", "temprature:"))
    with pytest.raises(
        ConfigError,
        match=r"protocol.temprature: unknown key \(a typo\?\); did you mean 'temperature'\? rename",
    ):
        load_params(p)
    p.write_text(text + "zzz: 1\n")
    with pytest.raises(
        ConfigError, match=r"zzz: unknown key \(a typo\?\); remove or rename it; known keys here"
    ):
        load_params(p)


def test_params_has_exactly_the_documented_sections() -> None:
    """analysis.reports.align refuses the keys of contract.protocol.PARAMS_SECTIONS' complement; so does
    Params."""
    from contract.protocol import PARAMS_SECTIONS
    from pipeline.config import Params

    assert tuple(Params.model_fields) == PARAMS_SECTIONS


def test_an_uppercase_commit_sha_is_the_same_commit_and_a_short_one_says_why(tmp_path, monkeypatch) -> None:
    from huggingface_hub import constants

    from tests.helpers.hub import fake_hub_cache

    upper = "0123456789ABCDEF0123456789ABCDEF01234567"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    fake_hub_cache(tmp_path / "hf-cache", "org/model", upper.lower())
    p = _params_file(tmp_path, models={"base": {"hf": "org/model", "revision": upper}})
    assert load_params(p).models["base"].revision == upper.lower()
    assert compute_pins(load_params(p))["inputs"]["models"]["base"]["revision"] == upper.lower()
    for revision, why in ((upper[:39], "it has 39 hex digits"), (upper[:39] + "g", "'g' is not a hex digit")):
        p = _params_file(tmp_path, models={"base": {"hf": "org/model", "revision": revision}})
        with pytest.raises(ConfigError, match=rf"models.base: revision '{revision}' is not .*\({why}\)"):
            load_params(p)


def test_messages_name_the_params_file_that_was_given(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    raw = yaml.safe_load(w.params.read_text())
    raw["arms"] = ["base", "+rag"]
    other = tmp_path / "experiment.yaml"
    other.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(PinError, match=r"^\S*experiment.yaml: rag: missing; arm '\+rag' retrieves passages"):
        write_pins(load_params(other), w.pins)
    raw["models"]["base"]["path"] = str(tmp_path / "gone")
    other.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(PinError, match=r"gone: checkpoint directory not found \(\S*experiment.yaml models"):
        write_pins(load_params(other), w.pins)


def test_the_hash_cache_skips_unchanged_files_and_rereads_edited_ones(tmp_path, untrained_checkpoint) -> None:
    from pipeline.pins import HashCache

    ckpt = _copy(untrained_checkpoint, tmp_path / "ckpt")
    cache_file = tmp_path / "hashes.json"
    # racy_s=0: the files were written just now, which the default keeps out of the cache (below).
    first = HashCache(cache_file, racy_s=0)
    truth = dir_files(ckpt, first)
    first.save()
    assert truth == dir_files(ckpt) and first.hits == 0
    # An entry whose stat still matches is believed without reading the file: plant a wrong hash in one.
    entries = json.loads(cache_file.read_text())
    key = str((ckpt / "config.json").resolve())
    entries[key][-1] = "f" * 64
    cache_file.write_text(json.dumps(entries))
    second = HashCache(cache_file, racy_s=0)
    assert dir_files(ckpt, second)["config.json"] == "f" * 64
    assert second.hits == len(truth)
    # Writing the file changes its stat (ctime at least): it is read again.
    (ckpt / "config.json").write_bytes((ckpt / "config.json").read_bytes())
    third = HashCache(cache_file)
    assert dir_files(ckpt, third)["config.json"] == truth["config.json"]
    assert third.hits == len(truth) - 1
    # A file written within the last seconds is hashed but not cached (an edit in the same clock tick
    # could keep its stat): the planted entry stays, and the next pin reads the file again.
    third.save()
    assert json.loads(cache_file.read_text())[key][-1] == "f" * 64
    # A damaged cache file is an empty cache.
    cache_file.write_text("{not json")
    assert dir_files(ckpt, HashCache(cache_file)) == truth


@pytest.mark.parametrize("case", ["file loop", "folder loop", "dangling link", "hub id"])
def test_a_checkpoint_link_that_loops_or_dangles_and_a_hub_path_id_are_one_line(
    tmp_path: Path, untrained_checkpoint: Path, case: str
) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    ckpt = tmp_path / "ckpt"
    raw = yaml.safe_load(w.params.read_text())
    if case == "file loop":
        (ckpt / "self.bin").symlink_to(ckpt / "self.bin")
        expected = r"checkpoint file .*self.bin: a symbolic link loop; .*\(in the checkpoint "
    elif case == "folder loop":
        (ckpt / "sub").mkdir()
        (ckpt / "sub" / "up").symlink_to(ckpt, target_is_directory=True)
        expected = r"sub/up: a symbolic link loop in the checkpoint .*remove the link"
    elif case == "dangling link":
        (ckpt / "weights.bin").symlink_to(tmp_path / "gone.bin")
        expected = r"checkpoint file .*weights.bin: a dangling symbolic link"
    else:
        raw["models"]["base"] = {"hf": "../../etc", "revision": "0123456789abcdef0123456789abcdef01234567"}
        expected = r"models.base.hf: '../../etc' is not a hub repository id .*write it as org/name"
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    run = [sys.executable, "-m", "pipeline.pins", "--params", str(w.params), "--out", str(tmp_path / "p")]
    res = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("pins: ") and re.search(expected, res.stderr), res.stderr


def test_a_model_path_that_does_not_exist_is_named_as_such_not_as_a_change_to_repin(
    tmp_path, untrained_checkpoint
) -> None:
    w = _world(tmp_path, untrained_checkpoint)
    raw = yaml.safe_load(w.params.read_text())
    pinned = raw["models"]["base"]["path"]
    raw["models"]["base"]["path"] = pinned + "-typo"
    w.params.write_text(yaml.safe_dump(raw))
    params = load_params(w.params)
    with pytest.raises(PinError) as e:
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))
    message = str(e.value)
    assert message.startswith(f"{pinned}-typo: checkpoint directory not found ({w.params} models.base.path")
    assert f"pinned: {pinned}" in message and "rerun `python -m pipeline.pins`" not in message
    shutil.rmtree(pinned)  # the pinned folder itself deleted: the same, without the pinned path
    raw["models"]["base"]["path"] = pinned
    w.params.write_text(yaml.safe_dump(raw))
    gone = r"checkpoint directory not found \(.*models.base.path\); fix the path"
    with pytest.raises(PinError, match=gone):
        check_pins(load_params(w.params), w.pins, load_arm("base"), pinned_index(params), suite_items(params))
