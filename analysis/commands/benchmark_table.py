"""The benchmark table a paper prints (the table stage): arms by families, in markdown, CSV and LaTeX.

One row per arm (or checkpoint), one column per family of the suite, each cell one of the numbers RLVR papers
print (analysis.estimators.paper_metrics), as markdown, CSV and LaTeX.

    python -m analysis.commands.benchmark_table --logs evallogs --out reports/table [--params params.yaml]

The rows are params.yaml `arms` then the swept checkpoints (params.yaml `sweep`, their logs in
<logs>/sweep), each arm whose log is there; the columns the suite's families as its items name them (a
suite merged from several benchmarks keeps one family per benchmark) and `all`. Written: benchmark_table.md
(one table per metric, and each arm's paired deltas against the reference arm with their intervals),
benchmark_table.csv (tidy: arm, family, metric, value, sd, n_items, k), benchmark_table.tex (one booktabs
tabular per metric) and benchmark_table.json (everything, for the index page and metrics.json).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.rendering.benchmark_table_text import csv_text, latex, markdown
from analysis.reports.benchmark_table import EXIT_REFUSED, build
from analysis.reports.refusal import Refusal
from analysis.reports.report_files import report_json
from analysis.reports.settings import read_settings
from analysis.reports.writing import out_folder, write_outputs
from contract.evallog import collector_paused


@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line: write the benchmark table in four formats; exit 2 with one line on refused input."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.benchmark_table", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--logs", required=True, help="folder with one EvalLog per arm (<arm>.json, sweep/)")
    ap.add_argument("--out", required=True, help="folder for benchmark_table.{md,csv,tex,json}")
    ap.add_argument("--params", default=None, help="params.yaml (arms, sweep, analysis)")
    args = ap.parse_args(argv)
    try:
        out_folder(args.out)
        table = build(args.logs, read_settings(args.params), args.params)
    except Refusal as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    write_outputs(
        Path(args.out),
        {
            "benchmark_table.json": report_json(table),
            "benchmark_table.md": markdown(table).encode(),
            "benchmark_table.csv": csv_text(table).encode(),
            "benchmark_table.tex": latex(table).encode(),
        },
    )
    print(f"benchmark_table: {len(table.rows)} arms x {len(table.families)} columns -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
