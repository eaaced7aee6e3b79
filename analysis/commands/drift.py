"""Verifier drift: what a change of scorer did to each arm's score and to every verdict of the reports.

    python -m analysis.commands.drift --before OLD_LOGS --after NEW_LOGS --out DIR [--params params.yaml]

reads one EvalLog per arm from each folder: the same generations (same items, samples, seeds and, where the
logs record them, texts) scored by two scorer versions. It writes DIR/drift_report.json and
DIR/drift_report.md: per arm the paired change of the score (after - before, the one rule of
analysis.reports.contrasts: interval and sign-flip test, Benjamini-Hochberg over the arms), every item whose
majority verdict changed with both answers read, and every verdict of the delta report and of the arm
comparison that the new scorer changes (the claim, each contrast's significance and claim, the ECE deltas).

    python -m analysis.commands.drift --record DIR/scorers.json --logs evallogs --out DIR \\
        [--params params.yaml]

is what the pipeline's drift stage runs: it compares each log's scorer with the one recorded in the record
(the scorer name, version and verifiers, and the md5 of the log, as DVC's cache names it). Where they
differ and the recorded log is in the DVC cache (.dvc/cache/files/md5/), it writes the drift report of the
recorded logs against the current ones; where the recorded log is not cached, it says so. It then records
the current logs. Refusals: one line on stderr, exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from analysis.rendering.drift_report import markdown
from analysis.rendering.html_page import markdown_page
from analysis.rendering.markdown_text import md
from analysis.reports.align import load_logs
from analysis.reports.drift import DriftReport, build, read_folder, scorer_of
from analysis.reports.refusal import EXIT_REFUSED, Refusal
from analysis.reports.report_files import report_json
from analysis.reports.settings import AnalysisSettings, read_arm_list, read_settings
from analysis.reports.writing import write_outputs
from contract.evallog import EvalLog, collector_paused
from contract.files import PathCheckError, input_dir, output_dir


def dvc_cache() -> Path:
    """Where DVC keeps file contents by md5 in this project: its configured cache (a shared `cache.dir`
    included), read through DVC's own config rather than assumed to be `.dvc/cache`."""
    from dvc.repo import Repo

    # uninitialized: a DVC project outside git (or no project at all) still has a cache to look in.
    with Repo(".", uninitialized=True) as repo:
        local = repo.cache.local
    return Path(local.path) if local is not None else Path(".dvc/cache/files/md5")


def md5_of(path: Path) -> str:
    """The md5 of a file, as DVC's cache names it."""
    return hashlib.md5(path.read_bytes()).hexdigest()


def record(found: dict[str, tuple[Path, EvalLog]]) -> dict[str, Any]:
    """What the drift stage records of the current logs: each arm's scorer and the md5 of its log."""
    return {arm: {"scorer": scorer_of(log), "md5": md5_of(path)} for arm, (path, log) in found.items()}


def check_recorded(
    recorded_path: Path, logs: Path, settings: AnalysisSettings, arms: list[str] | None
) -> dict[str, bytes]:
    """The drift stage: a drift report where a log's scorer differs from the recorded one; the new record."""
    current = read_folder(logs, arms)
    recorded = json.loads(recorded_path.read_text()) if recorded_path.is_file() else {}
    moved = [a for a in current if a in recorded and recorded[a]["scorer"] != scorer_of(current[a][1])]
    files = {recorded_path.name: (json.dumps(record(current), indent=2, sort_keys=True) + "\n").encode()}
    status: dict[str, Any] = {"report": "drift", "changed_arms": moved, "missing_from_cache": []}
    if not moved:
        status["detail"] = "no log's scorer differs from the recorded one: no drift to report"
        files["drift_report.json"] = report_json(DriftReport.model_validate(status))
        files["drift_report.md"] = f"# Verifier drift\n\n{status['detail'].capitalize()}.\n".encode()
        return files
    before: dict[str, tuple[Path, EvalLog]] = {}
    cache = dvc_cache()
    for arm in moved:
        md5 = recorded[arm]["md5"]
        cached = cache / md5[:2] / md5[2:]
        if cached.is_file():
            before[arm] = (cached, load_logs([cached], samples=False)[0])
        else:
            status["missing_from_cache"].append(arm)
    if not before:
        status["detail"] = (
            f"the scorer of {', '.join(moved)} changed, but the recorded logs are not in the DVC cache "
            f"({cache}); check out the logs of the previous revision into a folder and run python -m "
            "analysis.commands.drift --before THAT_FOLDER --after evallogs --out reports/drift"
        )
        files["drift_report.json"] = report_json(DriftReport.model_validate(status))
        files["drift_report.md"] = f"# Verifier drift\n\n{md(status['detail'])}.\n".encode()
        return files
    # The unchanged arms enter both sides, so that every verdict is computed over the same arms.
    full_before = {**{a: v for a, v in current.items() if a not in before}, **before}
    report = build(full_before, current, settings).with_fields(**status)
    files["drift_report.json"] = report_json(report)
    files["drift_report.md"] = markdown(report).encode()
    return files


@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: the drift report of two folders of logs, or the drift stage's check."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.commands.drift", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--before", help="folder of the logs scored by the old scorer")
    ap.add_argument("--after", help="folder of the same generations' logs scored by the new scorer")
    ap.add_argument("--record", help="the drift stage: the recorded scorers (JSON); compared with --logs")
    ap.add_argument("--logs", help="with --record: the current logs")
    ap.add_argument("--out", required=True, help="folder for drift_report.{json,md}")
    ap.add_argument("--params", default=None, help="params.yaml with an `analysis` section")
    args = ap.parse_args(argv)
    try:
        out = output_dir(args.out, "--out")
        settings = read_settings(args.params)
        arms = read_arm_list(args.params) if args.params else None
        if args.record:
            if not args.logs:
                raise PathCheckError("--record needs --logs FOLDER: the current logs to compare with it")
            files = check_recorded(Path(args.record), input_dir(args.logs, "--logs"), settings, arms)
        else:
            if not (args.before and args.after):
                raise PathCheckError("give --before OLD_LOGS and --after NEW_LOGS (or --record and --logs)")
            before = read_folder(input_dir(args.before, "--before"), arms)
            after = read_folder(input_dir(args.after, "--after"), arms)
            report = build(before, after, settings)
            files = {"drift_report.json": report_json(report), "drift_report.md": markdown(report).encode()}
    except (Refusal, PathCheckError) as e:
        print(f"drift: {e}", file=sys.stderr)
        return EXIT_REFUSED
    # The HTML rendering the report page links to, beside the markdown.
    files["drift_report.html"] = markdown_page(files["drift_report.md"].decode(), "Verifier drift").encode()
    try:
        if args.record:
            record = Path(args.record)
            write_outputs(record.parent, {record.name: files.pop(record.name)})
        write_outputs(out, files)
    except Refusal as e:
        print(f"drift: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"drift: -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
