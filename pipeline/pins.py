"""Pinned inputs: params.yaml's suite, checkpoints and retrieval index, each fixed by a content hash.

    python -m pipeline.pins [--params params.yaml] [--out pins.json]

pins.json holds the sha256 of the suite file; for each local checkpoint directory a content hash
(sha256 over its sorted (relative path, file sha256) pairs) with the per-file hashes, so that drift names
the file that changed; for a hub model its repository and full 40-hex commit sha (a branch or tag is
refused: it moves); and the retrieval index revision once the index exists. The runner recomputes the pins
of what an arm uses before it generates and refuses on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.evallog import Protocol

_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_CHUNK = 1 << 20


class PinError(RuntimeError):
    """Inputs that are not pinned or drifted from their pins; the message names the file and the fix."""


class SuiteRef(BaseModel):
    """params.yaml suite: the frozen suite file and its name and revision."""

    model_config = ConfigDict(extra="forbid")
    path: str
    name: str
    revision: str


class ModelRef(BaseModel):
    """params.yaml models.<key>: a local checkpoint directory, or a hub repository at a full commit sha."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    hf: str | None = None
    revision: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ModelRef:
        if (self.path is None) == (self.hf is None):
            raise ValueError("give exactly one of path (a local checkpoint) or hf (a hub repository)")
        if self.path is not None and self.revision is not None:
            raise ValueError("revision applies to hub models only; a local path is pinned by its content")
        if self.hf is not None and (self.revision is None or not _SHA40.match(self.revision)):
            raise ValueError(
                f"revision {self.revision!r} is not a full 40-hex commit sha; a branch or tag moves, "
                "so pin the commit (e.g. revision: 0123...cdef)"
            )
        return self

    @property
    def location(self) -> str:
        """What an engine loads: the directory or the hub repository name."""
        return self.path if self.path is not None else str(self.hf)


class RagRef(BaseModel):
    """params.yaml rag: the corpus, the index built from it, passages per question and their order."""

    model_config = ConfigDict(extra="forbid")
    corpus: str
    index: str = "index/"
    top_k: int = Field(default=3, ge=1)
    # best_last lists the passages from the lowest-ranked to the best, so the best one stands right before the
    # question: the demo models read only the nearest passage (Liu et al. 2023, "Lost in the Middle", saw the
    # same pull of the nearest position in large models).
    order: Literal["best_last", "best_first"] = "best_last"


class Params(BaseModel):
    """The parts of params.yaml the runner reads (other sections belong to other stages)."""

    model_config = ConfigDict(extra="allow")
    suite: SuiteRef
    models: dict[str, ModelRef]
    rag: RagRef | None = None
    protocol: Protocol


def load_params(path: str | Path) -> Params:
    """Read and validate params.yaml; raise PinError naming the file and the field."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise PinError(
            f"{p}: params file not found; run from the repository root or pass params=PATH"
        ) from None
    except yaml.YAMLError as e:
        raise PinError(f"{p}: not valid YAML: {e}") from None
    try:
        return Params.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise PinError(f"{p}: {field}: {err['msg'].removeprefix('Value error, ')}") from None


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def dir_files(root: str | Path) -> dict[str, str]:
    """Relative path (posix) -> sha256 of every file under root, following symlinks (hub caches use them)."""
    base = Path(root)
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        dirnames.sort()
        for name in filenames:
            full = Path(dirpath) / name
            out[full.relative_to(base).as_posix()] = file_sha256(full)
    return dict(sorted(out.items()))


def dir_hash(files: dict[str, str]) -> str:
    """Content hash of a directory: sha256 over its sorted 'relative path NUL file sha256 LF' lines."""
    h = hashlib.sha256()
    for rel, sha in sorted(files.items()):
        h.update(f"{rel}\0{sha}\n".encode())
    return h.hexdigest()


def model_pin(key: str, ref: ModelRef) -> dict[str, Any]:
    """The pin of one model: content hash and per-file hashes of a directory, or repository and commit."""
    if ref.hf is not None:
        return {"hf": ref.hf, "revision": ref.revision}
    root = Path(str(ref.path))
    if not root.is_dir():
        raise PinError(f"{root}: checkpoint directory not found (params.yaml models.{key}.path)")
    files = dir_files(root)
    if not files:
        raise PinError(f"{root}: checkpoint directory is empty (params.yaml models.{key}.path)")
    return {"path": ref.path, "sha256": dir_hash(files), "files": files}


def index_revision(index_dir: str | Path) -> str | None:
    """Revision of the retrieval index in index_dir (arms.retrieval), or None when no index is built there."""
    if not Path(index_dir).is_dir():
        return None
    from arms.retrieval import Index, IndexLoadError

    try:
        return Index.load(index_dir).revision
    except IndexLoadError as e:
        raise PinError(str(e)) from None


def compute_pins(params: Params) -> dict[str, Any]:
    """Pins of every input params.yaml names (the index only once it is built)."""
    suite = Path(params.suite.path)
    if not suite.is_file():
        raise PinError(f"{suite}: suite file not found (params.yaml suite.path)")
    pins: dict[str, Any] = {
        "suite": {"path": params.suite.path, "sha256": file_sha256(suite)},
        "models": {key: model_pin(key, ref) for key, ref in sorted(params.models.items())},
    }
    if params.rag is not None:
        rev = index_revision(params.rag.index)
        if rev is not None:
            pins["index"] = {"path": params.rag.index, "revision": rev}
    return pins


def write_pins(params: Params, out: str | Path) -> dict[str, Any]:
    """Compute the pins and write them to out (a temporary file renamed over it)."""
    pins = compute_pins(params)
    dest = Path(out)
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, dest)
    return pins


def _read_pins(pins_path: Path) -> dict[str, Any]:
    try:
        return json.loads(pins_path.read_text())
    except FileNotFoundError:
        raise PinError(
            f"{pins_path}: not found; pin the inputs first with `python -m pipeline.pins`"
        ) from None
    except json.JSONDecodeError as e:
        raise PinError(
            f"{pins_path}: not JSON ({e.msg}); rewrite it with `python -m pipeline.pins`"
        ) from None


_REPIN = "if the change is intended, rerun `python -m pipeline.pins`"


def _model_drift(key: str, pinned: dict[str, Any], ref: ModelRef, pins_path: Path) -> None:
    """Raise PinError naming the first file of checkpoint `key` that differs from its pin."""
    where = f"{pins_path}: checkpoint {key!r}"
    if ref.hf is not None:
        if pinned.get("hf") != ref.hf or pinned.get("revision") != ref.revision:
            raise PinError(
                f"{where}: params.yaml names {ref.hf}@{ref.revision}, pinned "
                f"{pinned.get('hf')}@{pinned.get('revision')}; {_REPIN}"
            )
        return
    if pinned.get("path") != ref.path:
        raise PinError(f"{where}: params.yaml names {ref.path}, pinned {pinned.get('path')}; {_REPIN}")
    now = model_pin(key, ref)
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


def check_pins(params: Params, pins_path: str | Path, model_key: str, retrieval: bool) -> dict[str, str]:
    """Verify the pins of what one arm uses (suite, its model, the index if retrieval); return them flat."""
    path = Path(pins_path)
    pinned = _read_pins(path)
    suite = Path(params.suite.path)
    ps = pinned.get("suite", {})
    if ps.get("path") != params.suite.path:
        raise PinError(f"{path}: suite: params.yaml names {suite}, pinned {ps.get('path')}; {_REPIN}")
    if not suite.is_file():
        raise PinError(f"{suite}: suite file not found (params.yaml suite.path)")
    sha = file_sha256(suite)
    if sha != ps.get("sha256"):
        raise PinError(
            f"{path}: {suite} changed since pinning (sha256 {ps.get('sha256')} -> {sha}); {_REPIN}"
        )
    if model_key not in params.models:
        raise PinError(f"params.yaml: models.{model_key}: missing; known models: {', '.join(params.models)}")
    ref = params.models[model_key]
    pm = pinned.get("models", {}).get(model_key)
    if pm is None:
        raise PinError(f"{path}: models.{model_key}: not pinned; run `python -m pipeline.pins`")
    _model_drift(model_key, pm, ref, path)
    flat = {"suite": f"sha256:{sha}"}
    flat["model"] = f"hf:{ref.hf}@{ref.revision}" if ref.hf else f"sha256:{pm['sha256']}"
    if retrieval:
        if params.rag is None:
            raise PinError(
                "params.yaml: rag: missing; a retrieval arm needs rag.corpus, rag.index, rag.top_k"
            )
        rev = index_revision(params.rag.index)
        if rev is None:
            raise PinError(
                f"{params.rag.index}: no retrieval index; build it with `python -m arms.retrieval build "
                f"--corpus {params.rag.corpus} --out {params.rag.index}`, then `python -m pipeline.pins`"
            )
        pi = pinned.get("index")
        if pi is None:
            raise PinError(f"{path}: index: not pinned (built after pinning?); run `python -m pipeline.pins`")
        if pi.get("revision") != rev:
            raise PinError(
                f"{path}: index {params.rag.index} changed since pinning (revision {pi.get('revision')} -> "
                f"{rev}); {_REPIN}"
            )
        flat["index"] = rev
    return flat


def main(argv: list[str] | None = None) -> int:
    """Command line: write pins.json for the inputs params.yaml names."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.pins", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    ap.add_argument("--out", default="pins.json", help="pins file to write (default pins.json)")
    args = ap.parse_args(argv)
    try:
        pins = write_pins(load_params(args.params), args.out)
    except PinError as e:
        print(f"pins: {e}", file=sys.stderr)
        return 2
    models = ", ".join(f"{k}={v.get('sha256', v.get('revision'))[:12]}" for k, v in pins["models"].items())
    index = pins.get("index", {}).get("revision", "not built")
    print(f"{args.out}: suite={pins['suite']['sha256'][:12]} {models} index={str(index)[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
