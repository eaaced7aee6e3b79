"""Compare any EvalLogs that share items and protocol, without the pipeline or a params file.

    python -m analysis.compare LOG_A LOG_B [LOG_C ...] --out DIR [--alpha A --n-boot N --n-perm N --seed S]

writes DIR/delta/ (the delta report of LOG_B against LOG_A, as python -m analysis.delta writes it) and
DIR/arms/ (the arm comparison of every log against LOG_A, as python -m analysis.arms writes it) and
DIR/items.html (the item browser of these logs, which every contrast row links to). LOG_A is the
base; each other log's arm is its `arm` field, else its file stem (an arm named trained is read as the
parametric contrast). Logs imported from other tools (python -m pipeline.imports) and pipeline logs alike;
the same refusals as those commands (another protocol, item set, suite, seeds; a pre/post of one model):
one line naming both files and the field, exit 2, nothing written. Settings default to the analysis
defaults (python -m analysis.delta's without a params.yaml), whatever folder it runs in.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from analysis import arms, delta, items
from analysis.align import EXIT_REFUSED, Refusal, Settings, load_log, write_outputs
from contract.evallog import EvalLog, collector_paused


def arm_names(paths: list[str], logs: list[EvalLog]) -> dict[str, tuple[Path, EvalLog]]:
    """The logs by arm name: the first is base, each other its `arm` field or its file stem."""
    found: dict[str, tuple[Path, EvalLog]] = {"base": (Path(paths[0]), logs[0])}
    for path, log in zip(paths[1:], logs[1:], strict=True):
        name = log.arm or Path(path).stem
        if name == "base":
            raise Refusal(
                f"{path}: arm: is 'base', but the first log ({paths[0]}) is the base here; give it another "
                "arm name (python -m pipeline.imports ... --arm NAME) or pass it first"
            )
        if name in found:
            raise Refusal(f"{found[name][0]} and {path}: both are arm {name!r}; keep one log per arm")
        found[name] = (Path(path), log)
    return found


def settings_from(args: argparse.Namespace) -> Settings:
    """The analysis defaults with the flags given; a flag out of range is a Refusal naming it."""
    s = replace(
        Settings(),
        **{k: v for k, v in vars(args).items() if k in Settings.__dataclass_fields__ and v is not None},
    )
    if s.n_boot < 1 or s.n_perm < 1:
        raise Refusal("--n-boot and --n-perm must be >= 1")
    for name in ("alpha", "fdr"):
        if not 0 < getattr(s, name) < 1:
            raise Refusal(f"--{name} = {getattr(s, name)} must lie strictly between 0 and 1")
    return s


# The logs live until the reports are written and the run makes little cyclic garbage: no collection.
@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: the delta report and the arm comparison of the logs given."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.compare",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument(
        "logs", nargs="+", metavar="LOG", help="EvalLogs: the base (pre) first, then the post log, ..."
    )
    ap.add_argument("--out", required=True, help="folder for delta/ and arms/")
    ap.add_argument(
        "--alpha", type=float, default=None, help=f"significance level (default {Settings.alpha})"
    )
    ap.add_argument(
        "--fdr", type=float, default=None, help=f"Benjamini-Hochberg rate (default {Settings.fdr})"
    )
    ap.add_argument(
        "--n-boot", type=int, default=None, help=f"bootstrap resamples (default {Settings.n_boot})"
    )
    ap.add_argument(
        "--n-perm", type=int, default=None, help=f"sign-flip permutations (default {Settings.n_perm})"
    )
    ap.add_argument(
        "--seed", type=int, default=None, help=f"seed of the resampling (default {Settings.seed})"
    )
    args = ap.parse_args(argv)
    if len(args.logs) < 2:
        ap.error("give at least two logs: the base first, then the log to compare with it")
    try:
        settings = settings_from(args)
        logs = [load_log(p) for p in args.logs]
        report = delta.build(args.logs[0], logs[0], args.logs[1], logs[1], settings)
        named = arm_names(args.logs, logs)
        comparison = arms.build_found(named, settings, "the command line", expected=False)
    except Refusal as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    out = Path(args.out)
    write_outputs(out / "delta", delta.outputs(report))
    write_outputs(out / "arms", arms.outputs(comparison))
    # The reports' contrast rows link to ../items.html: the item browser of exactly these logs.
    page = items.render_page(
        items.page_data({a: log for a, (_, log) in named.items()}, (next(iter(named)), list(named)[1]))
    )
    write_outputs(out, {"items.html": page.encode()})
    print(
        f"{report['claim']}: delta {report['delta_mean']:+.4f} CI {report['delta_ci95']} -> {out / 'delta'}"
    )
    for c in [*comparison["contrasts"], *comparison["marginal"]]:
        lo, hi = c["ci95"]
        print(f"{c['arm']} vs {c['reference']}: {c['naive_delta']:+.4f} [{lo:+.4f}, {hi:+.4f}] {c['claim']}")
    print(f"-> {out / 'arms'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
