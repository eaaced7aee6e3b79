"""Pinned inputs: suite, checkpoints, retrieval index and each arm's code, fixed by content hashes.

    python -m pipeline.pins [--params params.yaml] [--out pins]

writes
    pins/inputs.json        the whole record: the suite file's sha256 and its questions' sha256, each
                            model's pin, the index revision
    pins/arms/<arm>.json    what one arm's generation depends on, and nothing else: its spec, the questions'
                            sha256 (not the answers'), its model's pin, the index revision and rag settings
                            for a retrieval arm, and the sha256 of every source file its generation runs

A local checkpoint is pinned by a content hash (sha256 over its sorted (relative path, file sha256) pairs)
with the per-file hashes, so that drift names the file that changed; a hub model by its repository and a
full 40-hex commit sha (a branch or tag is refused: it moves). Each generate stage depends on its arm's
file only, so DVC regenerates an arm exactly when something its generation reads changed: an answer fix
or another arm's model leaves it alone. The runner checks an arm's pins again before it generates and
refuses on any difference.

A hub model must be in the local Hugging Face cache at its commit (pipeline.hub); the pins refuse one
that is not, naming the command that fetches it. Checkpoint files are hashed through a stat-keyed cache
(`--hash-cache`, default .pins-cache.json, not tracked): a file whose size, mtime, ctime and inode are
those it had when it was hashed is not read again, so the pin stage stays cheap enough to run on every
`dvc repro` with checkpoints of many gigabytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.arm import ArmSpec
from contract.atomic import atomic_write
from contract.digest import file_sha256
from contract.files import PathCheckError, input_dir, input_file, output_dir
from contract.suite import SuiteError, SuiteItem, load_suite, questions_sha256
from pipeline.checkpoint_hash import DEFAULT_HASH_CACHE, HashCache, PinError, dir_files, dir_hash
from pipeline.config import (
    CONF_DIR,
    ConfigError,
    ModelRef,
    Params,
    arms_of,
    load_arm,
    load_params,
    template_file,
)
from pipeline.fewshot import fewshot_pin
from pipeline.hub import snapshot_dir
from pipeline.sources import file_hashes, generation_sources


def model_pin(
    key: str, ref: ModelRef, params_file: Path = Path("params.yaml"), cache: HashCache | None = None
) -> dict[str, Any]:
    """The pin of one model: content hash and per-file hashes of a directory, or repository and commit.

    params_file is the params file that names the model, for the messages. A hub model must be in the local
    cache at its commit (the commit names its content, so it is not hashed again).
    """
    if ref.hf is not None:
        try:
            snapshot_dir(ref, key, params_file)
        except ConfigError as e:
            raise PinError(str(e)) from None
        return {"hf": ref.hf, "revision": ref.revision}
    root = Path(str(ref.path))
    if not root.is_dir():
        raise PinError(f"{root}: checkpoint directory not found ({params_file} models.{key}.path)")
    try:
        input_dir(root, f"{params_file} models.{key}.path")
    except PathCheckError as e:
        raise PinError(str(e)) from None
    files = dir_files(root, cache)
    if not files:
        raise PinError(f"{root}: checkpoint directory is empty ({params_file} models.{key}.path)")
    return {"path": ref.path, "sha256": dir_hash(files), "files": files}


def index_revision(index_dir: str | Path) -> str | None:
    """Revision of the retrieval index in index_dir (augment.retrieval), or None when none is built there."""
    if not Path(index_dir).is_dir():
        return None
    from augment.retrieval import Index, IndexLoadError

    try:
        return Index.load(index_dir).revision
    except IndexLoadError as e:
        raise PinError(str(e)) from None


_REPIN = "if the change is intended, rerun `python -m pipeline.pins`"


def _model_drift(key: str, pinned: dict[str, Any], ref: ModelRef, pins_path: Path, params_file: Path) -> None:
    """Raise PinError naming the first file of checkpoint `key` that differs from its pin."""
    where = f"{pins_path}: checkpoint {key!r}"
    if ref.hf is not None:
        if pinned.get("hf") != ref.hf or pinned.get("revision") != ref.revision:
            raise PinError(
                f"{where}: {params_file} names {ref.hf}@{ref.revision}, pinned "
                f"{pinned.get('hf')}@{pinned.get('revision')}; {_REPIN}"
            )
        model_pin(key, ref, params_file)  # still in the local cache
        return
    if not Path(str(ref.path)).is_dir():
        # A mistyped or deleted folder: re-pinning would not help, the path must be fixed.
        pinned_as = f"; pinned: {pinned.get('path')}" if pinned.get("path") != ref.path else ""
        raise PinError(
            f"{ref.path}: checkpoint directory not found ({params_file} models.{key}.path{pinned_as}); fix "
            "the path"
        )
    if pinned.get("path") != ref.path:
        raise PinError(f"{where}: {params_file} names {ref.path}, pinned {pinned.get('path')}; {_REPIN}")
    cache = HashCache(DEFAULT_HASH_CACHE)
    now = model_pin(key, ref, params_file, cache)
    cache.save()
    if now["sha256"] == pinned.get("sha256"):
        return
    old: dict[str, str] = pinned.get("files", {})
    root = Path(str(ref.path))
    for rel in sorted(set(old) | set(now["files"])):
        if rel not in now["files"]:
            raise PinError(f"{where}: {root / rel} was removed since pinning; {_REPIN}")
        if rel not in old:
            raise PinError(f"{where}: {root / rel} was added since pinning; {_REPIN}")
        if old[rel] != now["files"][rel]:
            raise PinError(
                f"{where}: {root / rel} changed since pinning "
                f"(sha256 {old[rel][:12]}... -> {now['files'][rel][:12]}...); {_REPIN}"
            )
    raise PinError(f"{where}: content hash of {root} differs from its pin; {_REPIN}")


def suite_items(params: Params) -> list[SuiteItem]:
    """The suite's items, read once for a run or a pin; a missing or broken suite is a PinError."""
    suite = Path(params.suite.path)
    if not suite.is_file():
        raise PinError(f"{suite}: suite file not found ({params.file} suite.path)")
    try:
        return load_suite(suite)
    except SuiteError as e:
        raise PinError(str(e)) from None


def _suite(params: Params, items: Sequence[SuiteItem]) -> dict[str, Any]:
    """The suite's pin: file sha256, and the sha256 of its ids and questions (what generation reads)."""
    return {
        "path": params.suite.path,
        "sha256": file_sha256(params.suite.path),
        "questions_sha256": questions_sha256(items),
        "n_items": len(items),
    }


def _index(params: Params) -> dict[str, Any] | None:
    if params.rag is None:
        return None
    rev = index_revision(params.rag.index)
    return None if rev is None else {"path": params.rag.index, "revision": rev}


def arm_pin(
    params: Params,
    arm_name: str,
    suite: dict[str, Any],
    models: dict[str, Any],
    index: dict[str, Any] | None,
    conf_dir: Path = CONF_DIR,
) -> dict[str, Any]:
    """Everything arm_name's generation depends on besides the protocol and conf/ (module docstring)."""
    try:
        arm = load_arm(arm_name, conf_dir, params=params.file)
    except ConfigError as e:
        raise PinError(f"{params.file}: arms: {e}") from None
    if arm.model not in models:
        raise PinError(
            f"{conf_dir / 'arm' / (arm_name + '.yaml')}: model: {arm.model!r} is not in {params.file} "
            f"models ({', '.join(models)})"
        )
    pin: dict[str, Any] = {
        "arm": arm.model_dump(exclude_none=True),
        "questions": f"sha256:{suite['questions_sha256']}",
        "model": models[arm.model],
    }
    if arm.retrieval:
        if params.rag is None:
            raise PinError(f"{params.file}: rag: missing; arm {arm_name!r} retrieves passages")
        if index is None:
            raise PinError(
                f"{params.rag.index}: no retrieval index for arm {arm_name!r}; build it with `python -m "
                f"augment.retrieval build --corpus {params.rag.corpus} --out {params.rag.index}`"
            )
        pin["index"] = index
        pin["rag"] = params.rag.model_dump()
    template = _chat_template(params)
    if template is not None:
        pin["chat_template"] = template
    pin.update(_prompt_pins(params))
    pin["code"] = file_hashes(generation_sources(arm.retrieval, arm.tools))
    return pin


def _chat_template(params: Params) -> dict[str, str] | None:
    """The pin of protocol.chat_template (path and sha256): the prompts follow its content, not its name."""
    path = params.protocol.chat_template
    if path is None:
        return None
    if not Path(path).is_file():
        raise PinError(f"{path}: chat template not found ({params.file} protocol.chat_template)")
    return {"path": path, "sha256": file_sha256(path)}


def _prompt_pins(params: Params) -> dict[str, Any]:
    """The pins of the prompt template (path and sha256) and of the few-shot file (path, n, sha256), each
    only when the protocol sets it, so that the pins of a protocol without them stay as they were."""
    pins: dict[str, Any] = {}
    path = template_file(params.protocol)
    if path is not None:
        # A preset is named by its path in the repository, the same on every machine.
        shown = f"conf/prompt/{params.protocol.prompt}.jinja" if params.protocol.prompt else str(path)
        if not path.is_file():
            raise PinError(f"{path}: prompt template not found ({params.file} protocol.prompt_template)")
        pins["prompt_template"] = {"path": shown, "sha256": file_sha256(path)}
    try:
        shots = fewshot_pin(params.protocol.fewshot, params.file)
    except ConfigError as e:
        raise PinError(str(e)) from None
    if shots is not None:
        pins["fewshot"] = shots
    return pins


def compute_pins(params: Params, conf_dir: Path = CONF_DIR, cache: HashCache | None = None) -> dict[str, Any]:
    """The whole record (inputs) and one pin per arm that can be pinned (arms)."""
    suite = _suite(params, suite_items(params))
    models = {key: model_pin(key, ref, params.file, cache) for key, ref in sorted(params.models.items())}
    if cache is not None:
        cache.save()
    index = _index(params)
    inputs: dict[str, Any] = {"suite": suite, "models": models}
    if index is not None:
        inputs["index"] = index
    arms: dict[str, Any] = {}
    for name in arms_of(params, conf_dir):
        try:
            arms[name] = arm_pin(params, name, suite, models, index, conf_dir)
        except PinError:
            if params.arms is not None:
                raise
            # No arm list in params.yaml: pin every arm of conf/arm/ whose inputs exist (a world without a
            # corpus has no retrieval arms).
            continue
    return {"inputs": inputs, "arms": arms}


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def write_pins(
    params: Params, out: str | Path, conf_dir: Path = CONF_DIR, cache: HashCache | None = None
) -> dict[str, Any]:
    """Compute the pins and write out/inputs.json and out/arms/<arm>.json (each atomically)."""
    pins = compute_pins(params, conf_dir, cache)
    dest = Path(out)
    atomic_write(dest / "inputs.json", _dump(pins["inputs"]))
    arms_dir = dest / "arms"
    for name, pin in pins["arms"].items():
        path = arms_dir / f"{name}.json"
        text = _dump(pin)
        # Rewriting an unchanged file would be harmless for DVC (it hashes content), but leaving it keeps
        # its modification time, which is what a person looks at.
        if not path.is_file() or path.read_text() != text:
            atomic_write(path, text)
    if arms_dir.is_dir():
        for old in arms_dir.glob("*.json"):
            if old.stem not in pins["arms"]:
                old.unlink()
    return pins


def _read_json(path: Path, what: str) -> tuple[dict[str, Any], str]:
    """A pin file's content and the sha256 of its bytes (read once: the run's inputs hash them too)."""
    try:
        data = path.read_bytes()
        return json.loads(data), hashlib.sha256(data).hexdigest()
    except FileNotFoundError:
        raise PinError(f"{path}: not found; pin {what} first with `python -m pipeline.pins`") from None
    except json.JSONDecodeError as e:
        raise PinError(f"{path}: not JSON ({e.msg}); rewrite it with `python -m pipeline.pins`") from None


@dataclass(frozen=True)
class CheckedPins:
    """An arm's pins as checked against what it reads: the flat pins a log records, and the sha256 of the
    arm's pin file (part of the run's inputs, pipeline.staleness)."""

    flat: dict[str, str]
    file_sha256: str


def pinned_index(params: Params) -> Any:
    """The retrieval index params.yaml rag.index names (augment.retrieval.Index), loaded once for the pin
    check and the plan; None when rag is unset or no index is built there."""
    if params.rag is None or not Path(params.rag.index).is_dir():
        return None
    from augment.retrieval import Index, IndexLoadError

    try:
        return Index.load(params.rag.index)
    except IndexLoadError as e:
        raise PinError(str(e)) from None


def check_pins(
    params: Params,
    pins_dir: str | Path,
    arm: ArmSpec,
    index: Any,
    items: Sequence[SuiteItem],
    conf_dir: Path = CONF_DIR,
) -> CheckedPins:
    """Verify that what an arm's generation reads still matches its pin; return the pins a log records.

    index: the retrieval index a retrieval arm reads (pinned_index), None for the others; items: the
    suite's items (suite_items), read once by the run.
    """
    arm_name = arm.name
    if arm.model not in params.models:
        raise ConfigError(
            f"{conf_dir / 'arm' / (arm_name + '.yaml')}: model: {arm.model!r} is not in "
            f"{params.file} models ({', '.join(params.models)})"
        )
    path = Path(pins_dir) / "arms" / f"{arm_name}.json"
    pinned, sha = _read_json(path, f"arm {arm_name!r}")
    if pinned.get("arm") != arm.model_dump(exclude_none=True):
        raise PinError(
            f"{path}: arm: pinned as {pinned.get('arm')}, conf/arm/{arm_name}.yaml now says "
            f"{arm.model_dump(exclude_none=True)}; {_REPIN}"
        )
    questions = f"sha256:{questions_sha256(items)}"
    if pinned.get("questions") != questions:
        raise PinError(
            f"{path}: questions: the questions of {params.suite.path} changed since pinning; {_REPIN}"
        )
    ref = params.models[arm.model]
    _model_drift(arm.model, pinned.get("model", {}), ref, path, params.file)
    flat = {"questions": questions}
    template = _chat_template(params)
    if pinned.get("chat_template") != template:
        raise PinError(
            f"{path}: chat_template: {params.file} protocol.chat_template or its file changed since "
            f"pinning; {_REPIN}"
        )
    if template is not None:
        flat["chat_template"] = f"sha256:{template['sha256']}"
    for key, pin in _prompt_pins(params).items():
        if pinned.get(key) != pin:
            raise PinError(
                f"{path}: {key}: {params.file} protocol.{key} or its file changed since pinning; {_REPIN}"
            )
        flat[key] = f"sha256:{pin['sha256']}"
    for key in ("prompt_template", "fewshot"):
        if key in pinned and key not in flat:
            raise PinError(f"{path}: {key}: pinned, but {params.file} protocol no longer sets it; {_REPIN}")
    flat["model"] = f"hf:{ref.hf}@{ref.revision}" if ref.hf else f"sha256:{pinned['model']['sha256']}"
    if arm.retrieval:
        if params.rag is None or index is None:
            raise PinError(
                f"{path}: arm {arm_name!r} retrieves passages, but {params.file} rag has no built index"
            )
        if pinned.get("index", {}).get("revision") != index.revision:
            raise PinError(
                f"{path}: index {params.rag.index} changed since pinning (revision "
                f"{pinned.get('index', {}).get('revision')} -> {index.revision}); {_REPIN}"
            )
        if pinned.get("rag") != params.rag.model_dump():
            raise PinError(f"{path}: rag: {params.file} rag changed since pinning; {_REPIN}")
        flat["index"] = index.revision
    return CheckedPins(flat, sha)


def main(argv: list[str] | None = None) -> int:
    """Command line: write the pins of the inputs params.yaml names."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.pins", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    ap.add_argument("--out", default="pins", help="pins folder to write (default pins)")
    ap.add_argument(
        "--hash-cache",
        default=str(DEFAULT_HASH_CACHE),
        help="file of checkpoint file hashes keyed by their stat, so unchanged files are not read again "
        "(default .pins-cache.json; 'none' reads every file)",
    )
    args = ap.parse_args(argv)
    cache = HashCache(None if args.hash_cache == "none" else Path(args.hash_cache))
    before = _pin_texts(Path(args.out))
    try:
        input_file(args.params, "--params")
        output_dir(args.out, "--out")
        pins = write_pins(load_params(args.params), args.out, cache=cache)
    except (PinError, ConfigError, PathCheckError) as e:
        # One line: the refusal, then what it leaves (DVC keeps pins/, a persistent output) and what to do.
        print(
            f"pins: {e} ({args.out}/ is left as it was: fix this and run `dvc repro` again)", file=sys.stderr
        )
        return 2
    after = _pin_texts(Path(args.out))
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    inputs = pins["inputs"]
    models = ", ".join(f"{k}={v.get('sha256', v.get('revision'))[:12]}" for k, v in inputs["models"].items())
    index = inputs.get("index", {}).get("revision", "not built")
    print(
        f"{args.out}: suite={inputs['suite']['sha256'][:12]} "
        f"questions={inputs['suite']['questions_sha256'][:12]} "
        f"{models} index={str(index)[:12]} arms={','.join(pins['arms'])} "
        f"(checkpoint files read from the hash cache: {cache.hits})"
    )
    # `dvc status` lists this stage as "always changed" on every run; say here why, and what it means.
    print(
        f"{args.out}: "
        + (f"changed: {', '.join(changed)}" if changed else "unchanged, so nothing downstream reruns")
        + " (this stage runs on every `dvc repro`, DVC's `always changed`: a model may be a local folder "
        "or a hub commit, which dvc.yaml cannot list as one dependency)"
    )
    return 0


def _pin_texts(out: Path) -> dict[str, str]:
    """The pin files under out (inputs.json, arms/<arm>.json) by relative path, to say which changed."""
    if not out.is_dir():
        return {}
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.json"))}


if __name__ == "__main__":
    sys.exit(main())
