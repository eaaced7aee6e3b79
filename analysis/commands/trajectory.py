"""The checkpoint trajectory: is the gain there at every checkpoint, and does a random-reward placebo get it?

    python -m analysis.commands.trajectory --logs evallogs --out reports/trajectory [--params params.yaml]

reads params.yaml `trajectory` (`checkpoints`: plain arms of the checkpoints in training order, the first
the reference, usually base; `placebo`: the plain arm of the same trainer run with a random reward, or
null) and the EvalLog of each arm, and writes trajectory_report.json, trajectory_report.md and
trajectory.png: every checkpoint's paired delta over the reference with its interval, the placebo's, and
the contrast of the last checkpoint against the placebo, the one that says whether the reward, rather than
training as such, moved the score. Without a `trajectory` section, or when a checkpoint's arm is not in
params.yaml `arms` or has no log yet, it writes a short report saying so and exits 0: a default run never
fails on it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.rendering.drawing import Drawing
from analysis.rendering.trajectory_report import outputs
from analysis.reports.refusal import EXIT_REFUSED, Refusal
from analysis.reports.settings import read_settings
from analysis.reports.trajectory import DONE, build
from analysis.reports.writing import out_folder, write_outputs
from contract.evallog import collector_paused


# The logs live until the report is written and the run makes little cyclic garbage: no collection.
@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: build, render and write the trajectory report."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.trajectory", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--logs", required=True, help="folder with one EvalLog JSON per arm (<arm>.json)")
    ap.add_argument("--out", required=True, help="folder for trajectory_report.{json,md} and trajectory.png")
    ap.add_argument(
        "--params",
        default=None,
        help="params.yaml with the `trajectory`, `arms` and `analysis` sections (default: ./params.yaml)",
    )
    args = ap.parse_args(argv)
    with Drawing() as drawing:
        try:
            out_folder(args.out)
            report = build(args.logs, read_settings(args.params), args.params)
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
        figure = drawing.submit("trajectory_figure", report)
        metrics_figure = drawing.submit("trajectory_metrics_figure", report)
        try:
            write_outputs(Path(args.out), outputs(report, figure, metrics_figure))
        except Refusal as e:
            print(f"refused: {e}", file=sys.stderr)
            return EXIT_REFUSED
    if report.status != DONE:
        print(f"trajectory: {report.status}: {report.detail} -> {args.out}")
        return 0
    for row in (report.trajectory or [])[1:]:
        lo, hi = row.ci95
        print(f"{row.arm} vs {row.reference}: {row.delta:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    print(f"reward: {report.reward_claim} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
