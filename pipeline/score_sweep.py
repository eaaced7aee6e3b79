"""Score every swept checkpoint's generations (params.yaml `sweep`) into one folder of EvalLogs.

    python -m pipeline.score_sweep [--params params.yaml] [--generations generations] [--out evallogs/sweep]

The swept arms are not in params.yaml `arms`, so DVC's per-arm score stage (foreach over `arms`) cannot name
them; this command is their score stage: the same scorer as `python -m pipeline.score` (score_file), one
`<out>/<arm>.json` per checkpoint, in step order. The folder holds exactly the sweep's logs: a checkpoint
whose folder was deleted after it was generated is still scored from its generations file (a report needs
no checkpoint on disk; the command says so), and a log of a checkpoint with neither folder nor generations
is removed (and named). The folder exists, empty, when params.yaml has no sweep, so the DVC stage has its
output either way. A generations file that is missing is refused in one line (exit 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from contract.atomic import atomic_write
from pipeline.config import ConfigError, Params, load_params
from pipeline.score import KNOWN_ERRORS, _summary, default_timeout, score_file


def _folder_gone(params: Params, generations: Path) -> list[str]:
    """The swept arms whose checkpoint folder the glob no longer matches but whose generations remain: still
    scored (a report needs no checkpoint on disk), each said in one line."""
    if params.sweep is None:
        return []
    step = re.compile(rf"{re.escape(params.sweep.name)}-step-\d+")
    swept = {c.arm for c in params._swept}
    names = [g.stem for g in sorted(generations.glob("*.json"))]
    gone = [name for name in names if step.fullmatch(name) and name not in swept]
    for arm in gone:
        print(
            f"score_sweep: {arm}: sweep.glob no longer matches its checkpoint folder; scored from its "
            f"generations, {generations / arm}.json (delete that file to drop the step)",
            file=sys.stderr,
        )
    return gone


def score_sweep(params_path: Path, generations: Path, out: Path, timeout_s: float) -> list[Path]:
    """Score each swept arm's generations into out/<arm>.json; returns the logs written."""
    params = load_params(params_path)
    out.mkdir(parents=True, exist_ok=True)
    arms = [c.arm for c in params._swept] + _folder_gone(params, generations)
    arms.sort(key=lambda arm: int(arm.rsplit("-", 1)[1]))
    for stale in sorted(out.glob("*.json")):
        if stale.stem not in arms:
            print(f"score_sweep: removed {stale}: no checkpoint, no generations of it", flush=True)
            stale.unlink()
    written = []
    for arm in arms:
        gens = generations / f"{arm}.json"
        if not gens.is_file():
            raise ConfigError(f"{gens}: no generations of swept arm {arm!r}; run python -m pipeline.run_arms")
        log = score_file(gens, Path(params.suite.path), out / f"{arm}.json", params=params_path,
                         timeout_s=timeout_s)  # fmt: skip
        print(_summary(log, out / f"{arm}.json"), flush=True)
        written.append(out / f"{arm}.json")
    # The folder is a DVC output: never empty (DVC warns on an empty output on every run without a sweep).
    # Not a .json file: readers take the folder's *.json as the logs.
    listing = "".join(f"{arm}\n" for arm in arms) or "no sweep in params.yaml: no swept checkpoint\n"
    atomic_write(out / "scored.txt", listing)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: score every swept checkpoint; exit 2 with one line on refused input."""
    ap = argparse.ArgumentParser(prog="python -m pipeline.score_sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="params file with `sweep`")
    ap.add_argument("--generations", type=Path, default=Path("generations"), help="folder of generations")
    ap.add_argument("--out", type=Path, default=Path("evallogs/sweep"), help="folder of the swept logs")
    ap.add_argument(
        "--verifier-timeout-s",
        type=float,
        default=default_timeout(),
        help="seconds a math or python verifier may take on one answer (conf/score.yaml's)",
    )
    args = ap.parse_args(argv)
    try:
        score_sweep(args.params, args.generations, args.out, args.verifier_timeout_s)
    except KNOWN_ERRORS as e:
        print(f"score_sweep: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
