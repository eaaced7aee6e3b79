"""The contamination stage: probe each named checkpoint, check the suite against named training data.

    python -m pipeline.contamination [--params params.yaml] [--status]

reads params.yaml `contamination` (contract.contamination.ContaminationSettings) and writes into its `out`
folder `probe-<model>.json` for each model of `contamination.models` (pipeline.probes) and `overlap.json`
when `training_data` names any file (pipeline.overlap). Without the section it writes nothing and removes
the files of an earlier audit: the analyses then print no split. Like a generation, a probe file records
`inputs_sha256` (the checkpoint's pin, the suite's questions, the probe settings, the engine settings and
the probe code); a file whose inputs are unchanged is kept and no engine starts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.atomic import atomic_write
from contract.contamination import (
    OVERLAP_FILE,
    PROBE_PREFIX,
    ContaminationSettings,
    OverlapFile,
    ProbeFile,
)
from contract.digest import text_sha256
from contract.suite import questions_sha256
from pipeline.code_files import ROOT, file_hashes, scoring_code
from pipeline.config import ConfigError, Params, engine_config, load_params
from pipeline.pins import PinError, model_pin, suite_items

EXIT_REFUSED = 2
PROBE_CODE = [
    "contract/contamination.py",
    "pipeline/probes.py",
    "pipeline/contamination.py",
    "pipeline/prompts.py",
]


def probe_inputs(
    pin: dict[str, Any], params: Params, cfg: ContaminationSettings, engine: dict[str, Any], items: Any
) -> str:
    """sha256 of everything a probe file's texts depend on."""
    body = {
        "model": pin.get("sha256") or [pin.get("hf"), pin.get("revision")],
        "questions": questions_sha256(items),
        "probe": {"prefix": cfg.prefix, "extra_tokens": cfg.extra_tokens, "answer_tokens": cfg.answer_tokens},
        "engine": engine,
        "code": file_hashes(sorted({*PROBE_CODE, *scoring_code()}), ROOT),
    }
    return text_sha256(json.dumps(body, sort_keys=True))


def up_to_date(path: Path, inputs: str) -> bool:
    """Whether a probe file is there with these inputs."""
    if not path.is_file():
        return False
    try:
        return ProbeFile.model_validate_json(path.read_bytes()).inputs_sha256 == inputs
    except ValidationError:
        return False


def probe_model(name: str, params: Params, cfg: ContaminationSettings, out: Path, status: bool) -> str:
    """Probe one checkpoint into out/probe-<name>.json unless its file is up to date; what was done."""
    from pipeline.engines import fit_context, get_engine, settings_record
    from pipeline.hub import model_dir
    from pipeline.probes import probe_prompts, rouge_name, run_probes

    if name not in params.models:
        raise ConfigError(
            f"{params.file}: contamination.models: {name!r} is not in models; "
            f"name one of {sorted(params.models)}"
        )
    ref = params.models[name]
    pin = model_pin(name, ref, params.file)
    items = suite_items(params)
    engine_cfg = engine_config("vllm")
    inputs = probe_inputs(pin, params, cfg, settings_record(engine_cfg), items)
    path = out / f"{PROBE_PREFIX}{name}.json"
    if up_to_date(path, inputs):
        return f"{name}: up to date"
    if status:
        return f"{name}: would probe ({'inputs changed' if path.exists() else 'no file'})"
    from transformers import AutoTokenizer

    where = model_dir(ref, name, params.file)
    prompts = probe_prompts(items, cfg.prefix, AutoTokenizer.from_pretrained(where))
    longest = max(len(p) for p in prompts.answer + prompts.completion)
    engine = get_engine(fit_context(engine_cfg, where, longest + cfg.answer_tokens), where)
    rows, seconds = run_probes(engine, prompts, cfg.extra_tokens, cfg.answer_tokens)
    record = ProbeFile(
        model=name, model_sha256=pin.get("sha256"), model_revision=pin.get("revision"),
        suite=params.suite.name, questions_sha256=questions_sha256(items), prefix=cfg.prefix,
        rouge=rouge_name(), engine=engine.info, inputs_sha256=inputs, seconds=round(seconds, 3), items=rows,
    )  # fmt: skip
    atomic_write(path, record.model_dump_json(indent=1) + "\n")
    flagged = sum(r.exact for r in rows)
    return f"{name}: probed {len(rows)} items in {seconds:.1f} s, {flagged} recited word for word -> {path}"


def write_overlap(params: Params, cfg: ContaminationSettings, out: Path) -> str:
    """The overlap file of the suite against the named training data."""
    from pipeline.overlap import overlap

    record: OverlapFile = overlap(suite_items(params), cfg.training_data, cfg.overlap, params.suite.name)
    path = out / OVERLAP_FILE
    atomic_write(path, record.model_dump_json(indent=1) + "\n")
    hits = sum(r.longest_run > 0 or r.near_duplicate is not None for r in record.items)
    return f"overlap: {hits} of {len(record.items)} items share a run or a near-duplicate -> {path}"


def run(params_file: Path, status: bool = False) -> list[str]:
    """The stage: every probe and the overlap; what was done, a line each."""
    params = load_params(params_file)
    cfg = params.contamination
    if cfg is None:
        return ["contamination: no `contamination` section in params.yaml: nothing to audit"]
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {f"{PROBE_PREFIX}{m}.json" for m in cfg.models} | (
        {OVERLAP_FILE} if cfg.training_data else set()
    )
    if not status:
        for stale in out.glob("*.json"):
            if stale.name not in wanted:
                stale.unlink()
    done = [probe_model(m, params, cfg, out, status) for m in cfg.models]
    if cfg.training_data and not status:
        done.append(write_overlap(params, cfg, out))
    return done


def main(argv: list[str] | None = None) -> int:
    """Command line: the contamination stage."""
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.contamination", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--params", default="params.yaml", help="params.yaml with a `contamination` section")
    ap.add_argument("--status", action="store_true", help="say which checkpoints would be probed, probe none")
    args = ap.parse_args(argv)
    try:
        lines = run(Path(args.params), args.status)
    except (ConfigError, PinError, ValueError) as e:
        print(f"contamination: {e}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        from pipeline.engines import release_engine

        release_engine()
    for line in lines:
        print(f"contamination: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
