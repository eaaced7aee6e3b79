"""Score generations into an EvalLog, on the CPU, without an engine.

    python -m pipeline.score arm=<arm>                 generations/<arm>.json -> evallogs/<arm>.json, with the
                                                       suite of params.yaml (Hydra, as run_arm; -m sweeps)
    python -m pipeline.score --generations G --suite S --out L [--name N --revision R]
                                                       any generations file, e.g. one made elsewhere

Both forms run the same scorer (scoring.scorer): the suite's verifiers judge each sample's answer, tool
arms get path verdicts, and the log records the scorer's name and version. The suite's name and revision
come from params.yaml when it names the same suite file, else from --name/--revision (default: the file's
stem and the first 12 hex digits of its sha256).

`math` and `python` verifiers judge each answer under a time limit: conf/score.yaml `verifier_timeout_s`
(30 s; `--verifier-timeout-s` in the explicit form), or a suite item's verifier `timeout_s`. An answer past
it scores 0 with the reason in its sample, the log counts them (`scorer.timeouts`) and a line says how many.
A path the command cannot use (a folder, a missing file, a symbolic link loop, an output under /proc) is
refused in one line, exit 2, before anything is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from contract.atomic import atomic_write
from contract.digest import file_sha256
from contract.evallog import EvalLog
from contract.files import PathCheckError, input_file, output_file
from contract.generations import GenerationsError, load_generations
from contract.suite import SuiteError, load_suite
from pipeline.config import CONF_DIR, ConfigError, load_params
from scoring.scorer import ScoringError, score_generations
from scoring.timelimit import DEFAULT_TIMEOUT_S

KNOWN_ERRORS = (GenerationsError, SuiteError, ScoringError, ConfigError, PathCheckError)


def suite_labels(suite: Path, params: Path | None) -> tuple[str, str] | None:
    """The suite's name and revision from a params file that names this suite file, else None."""
    if params is None or not params.is_file():
        return None
    p = load_params(params)
    if Path(p.suite.path).resolve() != suite.resolve():
        return None
    return p.suite.name, p.suite.revision


def score_file(
    generations: Path,
    suite: Path,
    out: Path,
    name: str | None = None,
    revision: str | None = None,
    params: Path | None = Path("params.yaml"),
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> EvalLog:
    """Score a generations file against a suite file and write the EvalLog to out (atomically)."""
    input_file(generations, "--generations")
    input_file(suite, "--suite")
    output_file(out, "--out")
    if not timeout_s > 0:
        raise ConfigError(f"verifier_timeout_s: is {timeout_s}; give a number of seconds above 0")
    gens = load_generations(generations)
    items = load_suite(suite)
    digest = file_sha256(suite)
    labels = suite_labels(suite, params)
    suite_name = name or (labels[0] if labels else suite.stem)
    suite_revision = revision or (labels[1] if labels else f"sha256:{digest[:12]}")
    log = score_generations(
        gens, items, suite_name, suite_revision, digest, where=str(generations), timeout_s=timeout_s
    )
    try:
        atomic_write(out, log.model_dump_json(indent=1, exclude_none=True) + "\n")
    except OSError as e:  # a full disk, a read-only folder: one line, and the previous log stays whole
        raise ConfigError(
            f"{out}: cannot write ({e.strerror or e}); free space or fix the folder, then rerun (the "
            "previous log is left as it was)"
        ) from None
    if log.scorer is not None and log.scorer.timeouts:
        print(
            f"score: {generations}: {log.scorer.timeouts} answers ran out of the verifier time limit and "
            "scored 0 (their no_answer_reason says so; conf/score.yaml verifier_timeout_s or the suite "
            "verifier's timeout_s sets it)",
            file=sys.stderr,
        )
    return log


def default_timeout(conf_dir: Path = CONF_DIR) -> float:
    """conf/score.yaml verifier_timeout_s, the time limit of one answer (30 s when it is not set)."""
    import yaml

    node = yaml.safe_load((conf_dir / "score.yaml").read_text(encoding="utf-8")) or {}
    return float(node.get("verifier_timeout_s", DEFAULT_TIMEOUT_S))


def _summary(log: EvalLog, out: Path) -> str:
    scores = [s for it in log.items for s in it.scores]
    mean = sum(scores) / len(scores) if scores else float("nan")
    return f"score: wrote {out} ({len(log.items)} items x {log.n_samples} samples, mean score {mean:.4f})"


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(node, dict)
    arm, params = str(HydraConfig.get().runtime.choices["arm"]), Path(node["params"])
    out = Path(node["out_dir"]) / f"{arm}.json"
    try:
        suite = Path(load_params(params).suite.path)
        timeout_s = float(node.get("verifier_timeout_s", DEFAULT_TIMEOUT_S))
        gens = Path(node["generations_dir"]) / f"{arm}.json"
        log = score_file(gens, suite, out, params=params, timeout_s=timeout_s)
    except KNOWN_ERRORS as e:
        print(f"score: {e}", file=sys.stderr)
        sys.exit(2)
    print(_summary(log, out))


def _explicit(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.score",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--generations", required=True, type=Path, help="generations file (generations/<arm>.json)"
    )
    ap.add_argument("--suite", required=True, type=Path, help="suite file (JSONL) the generations answer")
    ap.add_argument("--out", required=True, type=Path, help="EvalLog to write")
    ap.add_argument("--name", help="suite name in the log (default: params.yaml's, or the file's stem)")
    ap.add_argument("--revision", help="suite revision in the log (default: params.yaml's, or sha256:...)")
    ap.add_argument(
        "--params", type=Path, default=Path("params.yaml"), help="params file (default params.yaml)"
    )
    ap.add_argument(
        "--verifier-timeout-s",
        type=float,
        default=default_timeout(),
        help="seconds a math or python verifier may take on one answer (default: conf/score.yaml's)",
    )
    args = ap.parse_args(argv)
    try:
        log = score_file(
            args.generations,
            args.suite,
            args.out,
            args.name,
            args.revision,
            args.params,
            args.verifier_timeout_s,
        )
    except KNOWN_ERRORS as e:
        print(f"score: {e}", file=sys.stderr)
        return 2
    print(_summary(log, args.out))
    return 0


def main() -> None:
    """Entry point: the explicit form when --generations is given (or --help), else Hydra's arm= form."""
    argv = sys.argv[1:]
    if any(a.startswith("--generations") for a in argv) or argv in (["-h"], ["--help"]):
        sys.exit(_explicit(argv))
    from pipeline.hydra_cli import hydra_main

    hydra_main("score", "score", _task)


if __name__ == "__main__":
    main()
