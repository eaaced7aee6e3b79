"""Compare any EvalLogs that share items and protocol, without the pipeline or a params file.

    python -m analysis.commands.compare_logs LOG_A LOG_B [LOG_C ...] --out DIR \\
        [--alpha A --n-boot N --n-perm N --seed S]

writes DIR/delta/ (the delta report of LOG_B against LOG_A, as python -m analysis.commands.delta writes it)
and DIR/arms/ (the arm comparison of every log against LOG_A, as python -m analysis.commands.arm_comparison
writes it), DIR/items.html (the item browser of these logs, which every contrast row links to), and
DIR/index.html with both reports' HTML (the page to open first, as python -m analysis.commands.index_page
writes it). Every log keeps its own arm (its `arm` field, else its file stem): LOG_A is the reference
whatever its arm is, and LOG_B against LOG_A is decided once, by the delta report's claim family, in both
reports whatever the two are named; against base an arm named trained is read as the parametric contrast,
against another arm a contrast is the marginal one where it is (trained+rag vs +rag), else it is reported
without a causal reading.

Two logs of one model (the same pinned weights, else the same model name) are compared when they differ
in arm, prompt, seed or driver: an A/A of two seeds or arms, a prompt ablation, a cross-tool parity check
(the model through another tool and through this pipeline). The reports say so, and the claim is that
label with the delta, never a training effect or a parametric reasoning gain. Logs imported from other
tools (python -m interop.imports) and pipeline logs alike; the same refusals as those commands (another
protocol, item set, suite, seeds, scorer or verifier version; one model under the same settings twice):
one line naming both files and the field, exit 2, nothing written. Settings default to the analysis
defaults (python -m analysis.commands.delta's without a params.yaml), whatever folder it runs in.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.rendering import arms_report, delta_report, index_page, item_browser
from analysis.reports import arm_comparison, delta
from analysis.reports.align import load_log, logs_by_arm, one_model_differences, same_model
from analysis.reports.number_text import interval
from analysis.reports.refusal import EXIT_REFUSED, Refusal
from analysis.reports.report_models import DeltaReport
from analysis.reports.settings import AnalysisSettings
from analysis.reports.writing import write_set
from contract.digest import file_sha256
from contract.evallog import EvalLog, collector_paused
from contract.files import PathCheckError, input_file, output_dir
from contract.params import TAIL_RESAMPLES, min_resamples

# What a comparison of one model is, by what its two logs differ in (the first that applies).
ONE_MODEL_LABELS = (
    ("driver", "a cross-tool parity check"),
    ("prompt", "a prompt ablation"),
    ("seed", "an A/A comparison of two seeds"),
    ("arm", "an A/A comparison of two runs"),
)
# The attribution a log of the reference's model is read with in the arm comparison: no causal reading.
ONE_MODEL_ATTRIBUTION = "same model"


def one_model(named: dict[str, tuple[Path, EvalLog]]) -> dict[str, Any] | None:
    """What the comparison of the reference with the second log is when both are of one model, else None.

    Two logs of one model under the same settings are refused: their delta is 0 by construction.
    """
    (ref_arm, (ref_path, ref)), (arm, (path, log)) = list(named.items())[:2]
    if not same_model(ref, log):
        return None
    differs = one_model_differences(ref_arm, ref, arm, log)
    if not differs:
        raise Refusal(
            f"{ref_path} vs {path}: one model ({ref.model_name!r}) under the same arm, prompt, seed and "
            "driver; the delta of a run with itself is 0 by construction: compare two models, or two "
            "seeds, prompts "
            "or tools of one"
        )
    label = next(text for key, text in ONE_MODEL_LABELS if key in differs)
    return {"kind": "one model", "model_name": ref.model_name, "differs_in": differs, "label": label}


def label_one_model(report: DeltaReport, comparison: dict[str, Any]) -> DeltaReport:
    """A delta report of one model: its claim is the comparison's label and the delta, no training effect."""
    d, (lo, hi) = report.delta_mean, report.delta_ci95
    shift = "includes 0" if lo <= 0 <= hi else "excludes 0"
    return report.with_fields(
        claim=f"ONE MODEL: {comparison['label']}",
        claim_detail=(
            f"both logs are of one model ({comparison['model_name']}) and differ in "
            f"{', '.join(comparison['differs_in'])}: {comparison['label']}, not a pre/post comparison; the "
            f"delta ({d:+.4f}, CI [{lo:+.4f}, {hi:+.4f}], which {shift}) measures that difference, not "
            "training, and is no reasoning gain."
        ),
        comparison=comparison,
    )


def settings_from(args: argparse.Namespace) -> AnalysisSettings:
    """The analysis defaults with the flags given; a flag out of range is a Refusal naming it."""
    s = replace(
        AnalysisSettings(),
        **{
            k: v
            for k, v in vars(args).items()
            if k in AnalysisSettings.__dataclass_fields__ and v is not None
        },
    )
    for name in ("alpha", "fdr"):
        if not 0 < getattr(s, name) < 1:
            raise Refusal(f"--{name} = {getattr(s, name)} must lie strictly between 0 and 1")
    if min(s.n_boot, s.n_perm) < min_resamples(s.alpha):
        raise Refusal(
            f"--n-boot {s.n_boot} and --n-perm {s.n_perm}: each must be at least {min_resamples(s.alpha)} at "
            f"alpha {s.alpha} (at least {TAIL_RESAMPLES} resamples beyond each cut of the interval)"
        )
    return s


# The logs live until the reports are written and the run makes little cyclic garbage: no collection.
@collector_paused()
def parser() -> argparse.ArgumentParser:
    """The command's options: the logs, --out and the analysis settings."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.compare_logs",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument(
        "logs", nargs="+", metavar="LOG", help="EvalLogs: the base (pre) first, then the post log, ..."
    )
    ap.add_argument("--out", required=True, help="folder for delta/ and arms/")
    ap.add_argument(
        "--alpha", type=float, default=None, help=f"significance level (default {AnalysisSettings.alpha})"
    )
    ap.add_argument(
        "--fdr", type=float, default=None, help=f"Benjamini-Hochberg rate (default {AnalysisSettings.fdr})"
    )
    ap.add_argument(
        "--n-boot", type=int, default=None, help=f"bootstrap resamples (default {AnalysisSettings.n_boot})"
    )
    ap.add_argument(
        "--n-perm", type=int, default=None, help=f"sign-flip permutations (default {AnalysisSettings.n_perm})"
    )
    ap.add_argument(
        "--seed", type=int, default=None, help=f"seed of the resampling (default {AnalysisSettings.seed})"
    )
    return ap


def distinct_files(paths: list[Path]) -> None:
    """Refuse one log given twice (equal bytes): its delta with itself says nothing."""
    given: dict[str, Path] = {}
    for path in paths:
        digest = file_sha256(path)
        if digest in given:
            raise Refusal(
                f"{given[digest]} and {path}: the same log given twice (equal bytes); compare two runs"
            )
        given[digest] = path


def main(argv: list[str] | None = None) -> int:
    """Command line entry: the delta report and the arm comparison of the logs given."""
    ap = parser()
    args = ap.parse_args(argv)
    if len(args.logs) < 2:
        ap.error("give at least two logs: the base first, then the log to compare with it")
    try:
        settings = settings_from(args)
        out = output_dir(args.out, "--out")
        paths = [input_file(p, "LOG") for p in args.logs]
        distinct_files(paths)
        logs = [load_log(p) for p in paths]
        named = logs_by_arm(args.logs, logs)
        same = one_model(named)
        allow = frozenset(same["differs_in"]) & {"seed", "prompt"} if same else frozenset()
        report = delta.build(
            args.logs[0], logs[0], args.logs[1], logs[1], settings, distinct_models=same is None, allow=allow
        )
        if same is not None:
            report = label_one_model(report, same)
            # No causal reading of a log of the reference's model: the arm comparison makes no claim of it.
            ref_model = logs[0]
            named = {
                arm: (path, log.model_copy(update={"attribution": ONE_MODEL_ATTRIBUTION}))
                if i and same_model(ref_model, log)
                else (path, log)
                for i, (arm, (path, log)) in enumerate(named.items())
            }
        reference = next(iter(named))
        # The delta report's contrast (the second log against the first) is decided by the claim's family
        # whatever the two arms are named; its arm row carries that one verdict.
        comparison = arm_comparison.build_found(
            named, settings, "the command line", expected=False, reference=reference, allow=allow,
            primary=(reference, list(named)[1]),
        )  # fmt: skip
    except (Refusal, PathCheckError) as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    # The reports' contrast rows link to ../items.html: the item browser of exactly these logs.
    page = item_browser.render_page(
        item_browser.page_data({a: log for a, (_, log) in named.items()}, (next(iter(named)), list(named)[1]))
    )
    files = {out / "delta" / name: data for name, data in delta_report.outputs(report).items()}
    files |= {out / "arms" / name: data for name, data in arms_report.outputs(comparison).items()}
    try:
        write_set({**files, out / "items.html": page.encode()})
        # The page to open first, and both reports' HTML: what `dvc repro` writes, without its other stages.
        index_page.write(out / "delta", out / "arms", out, pipeline=False)
    except Refusal as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(
        f"{report.claim}: delta {report.delta_mean:+.4f} CI {interval(report.delta_ci95)} -> {out / 'delta'}"
    )
    for c in [*comparison.contrasts, *comparison.marginal]:
        lo, hi = c.ci95
        print(f"{c.arm} vs {c.reference}: {c.naive_delta:+.4f} [{lo:+.4f}, {hi:+.4f}] {c.claim}")
    print(f"-> {out / 'arms'}; open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
