"""The pre/post delta report: did training move the score, by how much, and what does it claim?

    python -m analysis.commands.delta --pre evallogs/base.json --post evallogs/trained.json \\
        --out reports/delta [--params params.yaml]

writes delta_report.json (the numbers), delta_report.md, passk_curve.png and reliability.png (renderings of
it). The two logs must share the matched protocol and item set, or the command prints one line and exits 2
without writing. The report is built by analysis.reports.delta, rendered by analysis.rendering.delta_report.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.rendering.delta_report import outputs
from analysis.rendering.drawing import Drawing
from analysis.rendering.markdown_text import p_text
from analysis.reports.align import load_logs
from analysis.reports.contamination_split import read_audit
from analysis.reports.delta import build
from analysis.reports.number_text import interval
from analysis.reports.refusal import EXIT_REFUSED, Refusal
from analysis.reports.report_models import PassAtKFigure
from analysis.reports.settings import read_settings
from analysis.reports.writing import out_folder, write_outputs
from contract.evallog import collector_paused


# The logs live until the report is written and the run makes little cyclic garbage: no collection.
@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: build, render and write the delta report."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.delta", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--pre", required=True, help="EvalLog of the baseline (M0)")
    ap.add_argument("--post", required=True, help="EvalLog of the trained model (M1)")
    ap.add_argument("--out", required=True, help="folder for delta_report.{json,md} and passk_curve.png")
    ap.add_argument(
        "--params", default=None, help="params.yaml with an `analysis` section (default: ./params.yaml)"
    )
    args = ap.parse_args(argv)
    # The figure's process loads matplotlib while the logs are read, and draws while the rest is computed.
    with Drawing() as drawing:
        figure: list[Callable[[], bytes]] = []

        def draw(part: dict[str, Any]) -> None:
            figure.append(drawing.submit("passk_figure", PassAtKFigure.model_validate(part)))

        try:
            out_folder(args.out)
            settings = read_settings(args.params)
            # The report reads scores, budgets and families: the samples are validated, then dropped.
            pre, post = load_logs([args.pre, args.post], samples=False)
            audit = read_audit(args.params)
            report = build(args.pre, pre, args.post, post, settings, on_pass_at_k=draw, audit=audit)
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
        diagram = drawing.submit("reliability_figure", report)
        try:
            write_outputs(Path(args.out), outputs(report, figure[0], diagram))
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
    print(
        f"{report.claim}: delta {report.delta_mean:+.4f} CI {interval(report.delta_ci95)} "
        f"perm p {p_text(report.perm_p, report.perm_n, report.perm_exact)} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
