"""The one page a reader opens first: claim lines, headline numbers, links to both reports and their figures.

    python -m analysis.commands.index_page --delta reports/delta --arms reports/arms --logs evallogs \\
        --out reports [--table reports/table]

reads delta_report.json and arm_comparison_report.json and writes reports/index.md and reports/index.html
(from the templates in analysis/templates/), the DVC metrics file reports/metrics.json (headline numbers
only) and the DVC plot data reports/plots/passk.csv and reports/plots/arm_deltas.csv; beside each report's
markdown its HTML rendering (delta_report.html, arm_comparison_report.html, through markdown-it-py), which
the HTML page links to; and, from the EvalLogs of the arms the arm comparison found, the item browser
reports/items.html (analysis.rendering.item_browser). Where the judge report stage wrote OUT/judge/
judge_report.md, its HTML rendering too, and where a judge ran the page links it and says in one line
whether the judge was fit or flagged, and why (analysis.rendering.index_parts). A pure rendering of the
reports and the logs: no statistic is computed here (analysis.rendering.index_page).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.rendering.index_page import write
from analysis.reports import contamination_split
from analysis.reports.refusal import Refusal
from analysis.reports.writing import out_folder


def main(argv: list[str] | None = None) -> int:
    """Command line: render reports/index.md and index.html from the two report JSONs."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.index_page", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--delta", default="reports/delta", help="folder with delta_report.json")
    ap.add_argument("--arms", default="reports/arms", help="folder with arm_comparison_report.json")
    ap.add_argument(
        "--logs",
        default="evallogs",
        help="folder of the EvalLogs the arm comparison read, for the item browser (items.html)",
    )
    ap.add_argument(
        "--out", default="reports", help="folder for index.md, index.html, items.html, metrics.json, plots/"
    )
    ap.add_argument(
        "--table",
        default=None,
        help="folder with benchmark_table.json (default OUT/table; left out where absent)",
    )
    ap.add_argument(
        "--params", default=None, help="params.yaml: its `contamination` audit's evidence per item"
    )
    args = ap.parse_args(argv)
    try:
        out_folder(args.out)
        table = Path(args.table) if args.table is not None else Path(args.out) / "table"
        evidence = contamination_split.item_evidence(contamination_split.read_audit(args.params))
        written = write(Path(args.delta), Path(args.arms), Path(args.out), Path(args.logs), table,
                        evidence=evidence or None)  # fmt: skip
    except Refusal as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
