"""The judge's report, its audit per arm and every contrast three ways.

    python -m analysis.commands.judge_report --logs evallogs --judged judged --out reports/judge

Reads each arm's rule log (--logs/<arm>.json) and judged log (--judged/<arm>.json, written by
`python -m pipeline.judge`) and writes judge_report.md and judge_report.json: the judge's audit per arm and
each arm's contrast with the reference arm (the first) three ways. Without a judge (--judged/judge.json
says none) it writes a one-line report saying so. Arms: --arms, else params.yaml `arms`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.rendering.judge_report import judge_markdown
from analysis.reports.judge import JudgeReport, judge_report, read_labels
from analysis.reports.refusal import Refusal
from analysis.reports.report_files import report_json
from analysis.reports.settings import read_arm_list, read_settings
from contract.atomic import atomic_write_set
from contract.evallog import EvalLogError, load


def main(argv: list[str] | None = None) -> int:
    """Command line: write the judge's report."""
    ap = argparse.ArgumentParser(prog="python -m analysis.commands.judge_report", description=__doc__)
    ap.add_argument("--logs", type=Path, default=Path("evallogs"))
    ap.add_argument("--judged", type=Path, default=Path("judged"))
    ap.add_argument("--out", type=Path, default=Path("reports/judge"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--arms", nargs="+", help="arms, the reference first (default: params.yaml `arms`)")
    ap.add_argument(
        "--labels", type=Path, help="people's labels (judge_labels' CSV): the judge is audited against them"
    )
    args = ap.parse_args(argv)
    md, js = args.out / "judge_report.md", args.out / "judge_report.json"
    summary = args.judged / "judge.json"
    try:
        configured = json.loads(summary.read_text()).get("judge") is not None
    except (OSError, json.JSONDecodeError) as e:
        print(
            f"judge_report: {summary}: cannot read ({e}); run python -m pipeline.judge first", file=sys.stderr
        )
        return 2
    if not configured:
        none = report_json(JudgeReport())
        atomic_write_set({md: "# Model judge\n\nNo judge configured (params.yaml `judge`).\n", js: none})
        print(f"judge_report: no judge configured; wrote {md}")
        return 0
    try:
        settings = read_settings(args.params if args.params.is_file() else None)
        arms = list(args.arms or read_arm_list(args.params) or [])
        logs = {arm: (load(args.logs / f"{arm}.json"), load(args.judged / f"{arm}.json")) for arm in arms}
        floor = json.loads(summary.read_text())["judge"]["agreement_floor"]
        report = judge_report(
            logs,
            arms[0],
            floor,
            n_boot=settings.n_boot,
            seed=settings.seed,
            alpha=settings.alpha,
            labels=read_labels(args.labels) if args.labels else None,
        )
    except (EvalLogError, ValueError, Refusal, OSError, KeyError) as e:
        print(f"judge_report: {e}", file=sys.stderr)
        return 2
    atomic_write_set({md: judge_markdown(report), js: report_json(report)})
    heads = ", ".join(f"{c.post}-{c.pre}: {c.headline}" for c in report.contrasts or [])
    print(f"judge_report: wrote {md} ({heads})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
