"""The arm comparison: how much of a headline gain is training, retrieval or tool access?

    python -m analysis.commands.arm_comparison --logs evallogs --out reports/arms [--params params.yaml]

reads one EvalLog per arm from the folder (arm name from the log's `arm` field or the file stem; base is
required, any other arm may be missing), pairs every arm with base and the combination arms with their
augmentation (trained+rag vs +rag, trained+tools vs +tools), and writes arm_comparison_report.json,
arm_comparison_report.md and the forest plot arm_deltas.png. Each arm's claim follows from its attribution
(conf/arm/<arm>.yaml), never from the size of its delta; the ceiling arm is labelled and never decomposed.
When the arms hold a 2 x 2 block of the training x retrieval x tools design, the report adds the factorial
read-out: main effects and interactions, each a paired contrast with a cluster-bootstrap interval.

A tool arm is left out of the comparison, and listed as not usable with the reason, when more of its tool
calls failed (the tool server did not answer them) than params.yaml analysis.max_failed_tool_calls allows,
or when its log records tool calls without counting the failed ones (a log older than format 3): its delta
would measure a broken tool server, and a report must not call that the tool-access effect.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.rendering.arms_report import outputs
from analysis.rendering.drawing import Drawing
from analysis.reports.arm_comparison import build
from analysis.reports.contamination_split import read_audit
from analysis.reports.refusal import EXIT_REFUSED, Refusal
from analysis.reports.settings import read_arm_list, read_settings
from analysis.reports.writing import out_folder, write_outputs
from contract.evallog import collector_paused


# The logs live until the report is written and the run makes little cyclic garbage: no collection.
@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: build, render and write the arm comparison."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.arm_comparison", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--logs", required=True, help="folder with one EvalLog JSON per arm (base.json required)")
    ap.add_argument(
        "--out", required=True, help="folder for arm_comparison_report.{json,md} and arm_deltas.png"
    )
    ap.add_argument(
        "--params", default=None, help="params.yaml with an `analysis` section (default: ./params.yaml)"
    )
    ap.add_argument(
        "--arms",
        default=None,
        help="comma-separated arms to compare (default: the arms of --params, else every *.json in --logs)",
    )
    args = ap.parse_args(argv)
    with Drawing() as drawing:
        try:
            # The arm list of a params file named on the command line (the DVC stage names params.yaml);
            # without one, every log of the folder.
            out_folder(args.out)
            listed = read_arm_list(args.params) if args.params else None
            arms = args.arms.split(",") if args.arms else listed
            report = build(args.logs, read_settings(args.params), arms, read_audit(args.params))
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
        forest = drawing.submit("forest_figure", report)
        diagram = drawing.submit("reliability_figure", report)
        try:
            write_outputs(Path(args.out), outputs(report, forest, diagram))
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
    for c in [*report.contrasts, *report.marginal]:
        lo, hi = c.ci95
        print(f"{c.arm} vs {c.reference}: {c.naive_delta:+.4f} [{lo:+.4f}, {hi:+.4f}] {c.claim}")
    for u in report.arms_unusable:
        print(f"arms: warning: {u.arm} left out, not usable: {u.reason}", file=sys.stderr)
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
