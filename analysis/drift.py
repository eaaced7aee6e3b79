"""Verifier drift: what a change of scorer did to each arm's score and to every verdict of the reports.

    python -m analysis.drift --before OLD_LOGS --after NEW_LOGS --out DIR [--params params.yaml]

reads one EvalLog per arm from each folder: the same generations (same items, samples, seeds and, where the
logs record them, texts) scored by two scorer versions. It writes DIR/drift_report.json and
DIR/drift_report.md: per arm the paired change of the score (after - before, the one rule of
analysis.contrasts: interval and sign-flip test, Benjamini-Hochberg over the arms), every item whose
majority verdict changed with both answers read, and every verdict of the delta report and of the arm
comparison that the new scorer changes (the claim, each contrast's significance and claim, the ECE deltas).

    python -m analysis.drift --record DIR/scorers.json --logs evallogs --out DIR [--params params.yaml]

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

from analysis import arm_comparison, contrasts
from analysis import delta as delta_report
from analysis.align import (
    EXIT_REFUSED,
    Refusal,
    Settings,
    arm_arrays,
    check_matched,
    dump_json,
    item_order,
    load_logs,
    read_arm_list,
    read_settings,
    write_outputs,
)
from analysis.html_page import markdown_page
from analysis.mdtext import md, p_text, significance_text
from analysis.numbers import interval, pvalue, signed
from contract.evallog import EvalLog, collector_paused
from contract.files import PathCheckError, input_dir, output_dir

CACHE = Path(".dvc/cache/files/md5")


def scorer_of(log: EvalLog) -> dict[str, Any] | None:
    """The scorer a log records (name, version, verifiers), or None for a log without one."""
    if log.scorer is None:
        return None
    verifiers = sorted(f"{v.type}:{v.name}={v.version}" for v in log.scorer.verifiers or [])
    return {"name": log.scorer.name, "version": log.scorer.version, "verifiers": verifiers}


def read_folder(folder: Path, arms: list[str] | None) -> dict[str, tuple[Path, EvalLog]]:
    """The logs of a folder by arm name (the log's arm, else its stem), limited to arms when given."""
    paths = sorted(folder.glob("*.json")) if arms is None else [folder / f"{a}.json" for a in arms]
    paths = [p for p in paths if p.is_file()]
    if not paths:
        raise Refusal(f"{folder}: no EvalLog (*.json) in this folder; give the folder that holds the logs")
    found: dict[str, tuple[Path, EvalLog]] = {}
    for path, log in zip(paths, load_logs(paths, samples=False), strict=True):
        found[log.arm or path.stem] = (path, log)
    return found


def same_generations(bp: Path, before: EvalLog, ap: Path, after: EvalLog) -> None:
    """Refuse two logs that are not the same generations (protocol, items, seeds, model)."""
    # The scorer (and the suite file its verifiers read) is what a drift report compares.
    check_matched(bp, before, ap, after, allow=frozenset({"scorer"}))
    a, b = before.pins or {}, after.pins or {}
    if "model" in a and "model" in b and a["model"] != b["model"]:
        raise Refusal(
            f"{bp} vs {ap}: pins.model differs; a drift report compares one model's generations scored "
            "twice: pass the logs of the same generations"
        )


def arm_changes(before: EvalLog, after: EvalLog, settings: Settings) -> dict[str, Any]:
    """The paired change of one arm's score, and the items whose majority verdict changed."""
    order = item_order(before)
    b, a = arm_arrays(before, order), arm_arrays(after, order)
    row = contrasts.mean_contrast(b.item_mean, a.item_mean, settings, key="/drift")
    by_before = {it.item_id: it for it in before.items}
    by_after = {it.item_id: it for it in after.items}
    changed = []
    for i, item_id in enumerate(order):
        was, now = b.item_mean[i] >= 0.5, a.item_mean[i] >= 0.5
        if was == now:
            continue
        changed.append(
            {
                "item_id": item_id,
                "reference_answer": by_after[item_id].reference_answer,
                "before": {"mean": float(b.item_mean[i]), "right": bool(was),
                           "answers": list(by_before[item_id].sample_answers() or [])},
                "after": {"mean": float(a.item_mean[i]), "right": bool(now),
                          "answers": list(by_after[item_id].sample_answers() or [])},
            }
        )  # fmt: skip
    samples = int((b.scores != a.scores).sum())
    return {**row, "samples_rescored": samples, "verdict_changes": changed}


def _verdicts_delta(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"delta report: claim": r["claim"]}
    if "verdict" in r:
        out["delta report: trained vs base significant"] = r["verdict"]["significant"]
    for f in r["families"]:
        out[f"delta report: family {f['family']} significant"] = f["significant"]
    for d in (r.get("calibration") or {}).get("deltas", []):
        out[f"delta report: ECE {d['arm']} vs {d['reference']} significant"] = d["significant"]
    return out


def _verdicts_arms(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in [*r["contrasts"], *r["marginal"]]:
        name = f"arm comparison: {c['arm']} vs {c['reference']}"
        out[f"{name} significant"] = c["significant"]
        out[f"{name} claim"] = c["claim"]
    for f in r["families"]:
        out[f"arm comparison: {f['arm']} vs {f['reference']}, family {f['family']} significant"] = f[
            "significant"
        ]
    for d in (r.get("calibration") or {}).get("deltas", []):
        out[f"arm comparison: ECE {d['arm']} vs {d['reference']} significant"] = d["significant"]
    return out


def report_verdicts(found: dict[str, tuple[Path, EvalLog]], settings: Settings) -> dict[str, Any]:
    """Every verdict the delta report and the arm comparison print for these logs, by name."""
    out: dict[str, Any] = {}
    if "base" in found and "trained" in found:
        (bp, b), (tp, t) = found["base"], found["trained"]
        out.update(_verdicts_delta(delta_report.build(str(bp), b, str(tp), t, settings)))
    if "base" in found and len(found) > 1:
        out.update(_verdicts_arms(arm_comparison.build_found(found, settings, "drift", expected=False)))
    return out


def verdicts_or_reason(
    found: dict[str, tuple[Path, EvalLog]], settings: Settings
) -> tuple[dict[str, Any] | None, str | None]:
    """report_verdicts, or None and the reason when the reports would refuse these logs: the arms of one
    folder scored by different scorers (some rescored, some not) are no measurement a report prints."""
    try:
        return report_verdicts(found, settings), None
    except Refusal as e:
        return None, str(e)


def build(
    before: dict[str, tuple[Path, EvalLog]], after: dict[str, tuple[Path, EvalLog]], settings: Settings
) -> dict[str, Any]:
    """The drift report as a JSON-ready dict: per-arm changes and the verdicts that change."""
    shared = [a for a in after if a in before]
    if not shared:
        raise Refusal("no arm has a log in both folders; pass the folders of the same arms' logs")
    rows = []
    for arm in shared:
        (bp, b), (ap, a) = before[arm], after[arm]
        same_generations(bp, b, ap, a)
        rows.append({"arm": arm, "scorer_before": scorer_of(b), "scorer_after": scorer_of(a),
                     **arm_changes(b, a, settings)})  # fmt: skip
    contrasts.decide_bh(rows, settings)
    old, why_old = verdicts_or_reason({k: before[k] for k in shared}, settings)
    new, why_new = verdicts_or_reason({k: after[k] for k in shared}, settings)
    changed = (
        [{"verdict": k, "before": old[k], "after": new.get(k)} for k in old if old[k] != new.get(k)]
        if old is not None and new is not None
        else None
    )
    return {
        "report": "drift",
        "arms": rows,
        "arms_only_before": sorted(set(before) - set(shared)),
        "arms_only_after": sorted(set(after) - set(shared)),
        "verdicts_checked": len(old) if old is not None and new is not None else 0,
        "verdicts_changed": changed,
        "verdicts_not_compared": None if changed is not None else why_old or why_new,
        "settings": {"alpha": settings.alpha, "fdr": settings.fdr, "n_boot": settings.n_boot,
                     "n_perm": settings.n_perm, "seed": settings.seed},
    }  # fmt: skip


def _scorer_text(s: dict[str, Any] | None) -> str:
    return "not recorded" if s is None else f"{s['name']} {s['version']} ({', '.join(s['verifiers']) or '-'})"


def markdown(r: dict[str, Any]) -> str:
    """The drift report as markdown."""
    fdr = r["settings"]["fdr"]
    lines = ["# Verifier drift: the same generations, scored twice", ""]
    lines += ["| arm | scorer before | scorer after | samples rescored | score change (after - before) | "
              "95% CI | p | q | significant | verdicts changed |", "|" + " --- |" * 10]  # fmt: skip
    for a in r["arms"]:
        lines.append(
            f"| {md(a['arm'])} | {md(_scorer_text(a['scorer_before']))} | "
            f"{md(_scorer_text(a['scorer_after']))} | {a['samples_rescored']} | {signed(a['delta'])} | "
            f"{interval(a['ci95'])} | "
            f"{p_text(a['p_value'], a['perm_n'], a['perm_exact'])} | {pvalue(a['q_value'], 3)} | "
            f"{significance_text(a, fdr)} | {len(a['verdict_changes'])} |"
        )
    lines += [
        "",
        "Score change: paired over items (per-item means of k samples), with the interval and sign-flip "
        "test every report uses (analysis.contrasts), Benjamini-Hochberg over the arms.",
        "",
    ]
    if r["verdicts_changed"] is None:
        lines += ["## Report verdicts that change", "",
                  f"Not compared: the reports refuse these logs ({md(r['verdicts_not_compared'])}). "
                  "Rescore every arm with the new scorer (dvc repro) to see them.", ""]  # fmt: skip
        return "\n".join(lines)
    lines += [f"## Report verdicts that change ({len(r['verdicts_changed'])} of {r['verdicts_checked']})", ""]
    if r["verdicts_changed"]:
        lines += ["| verdict | before | after |", "| --- | --- | --- |"]
        lines += [
            f"| {md(v['verdict'])} | {md(v['before'])} | {md(v['after'])} |" for v in r["verdicts_changed"]
        ]
    else:
        lines.append("None: every verdict of the delta report and the arm comparison stays as it was.")
    lines.append("")
    for a in r["arms"]:
        if not a["verdict_changes"]:
            continue
        lines += [f"## {md(a['arm'])}: items whose verdict changed", "",
                  "| item | reference | before: mean, answers read | after: mean, answers read |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for c in a["verdict_changes"]:
            b, n = c["before"], c["after"]
            lines.append(
                f"| {md(c['item_id'])} | {md(c['reference_answer'])} | {b['mean']:.3f}: "
                f"{md(', '.join(str(x) for x in b['answers']))} | {n['mean']:.3f}: "
                f"{md(', '.join(str(x) for x in n['answers']))} |"
            )
        lines.append("")
    return "\n".join(lines)


def md5_of(path: Path) -> str:
    """The md5 of a file, as DVC's cache names it."""
    return hashlib.md5(path.read_bytes()).hexdigest()


def record(found: dict[str, tuple[Path, EvalLog]]) -> dict[str, Any]:
    """What the drift stage records of the current logs: each arm's scorer and the md5 of its log."""
    return {arm: {"scorer": scorer_of(log), "md5": md5_of(path)} for arm, (path, log) in found.items()}


def check_recorded(
    recorded_path: Path, logs: Path, settings: Settings, arms: list[str] | None
) -> dict[str, bytes]:
    """The drift stage: a drift report where a log's scorer differs from the recorded one; the new record."""
    current = read_folder(logs, arms)
    recorded = json.loads(recorded_path.read_text()) if recorded_path.is_file() else {}
    moved = [a for a in current if a in recorded and recorded[a]["scorer"] != scorer_of(current[a][1])]
    files = {recorded_path.name: (json.dumps(record(current), indent=2, sort_keys=True) + "\n").encode()}
    status: dict[str, Any] = {"report": "drift", "changed_arms": moved, "missing_from_cache": []}
    if not moved:
        status["detail"] = "no log's scorer differs from the recorded one: no drift to report"
        files["drift_report.json"] = dump_json(status)
        files["drift_report.md"] = f"# Verifier drift\n\n{status['detail'].capitalize()}.\n".encode()
        return files
    before: dict[str, tuple[Path, EvalLog]] = {}
    for arm in moved:
        md5 = recorded[arm]["md5"]
        cached = CACHE / md5[:2] / md5[2:]
        if cached.is_file():
            before[arm] = (cached, load_logs([cached], samples=False)[0])
        else:
            status["missing_from_cache"].append(arm)
    if not before:
        status["detail"] = (
            f"the scorer of {', '.join(moved)} changed, but the recorded logs are not in the DVC cache "
            f"({CACHE}); check out the logs of the previous revision into a folder and run python -m "
            "analysis.drift --before THAT_FOLDER --after evallogs --out reports/drift"
        )
        files["drift_report.json"] = dump_json(status)
        files["drift_report.md"] = f"# Verifier drift\n\n{md(status['detail'])}.\n".encode()
        return files
    # The unchanged arms enter both sides, so that every verdict is computed over the same arms.
    full_before = {**{a: v for a, v in current.items() if a not in before}, **before}
    report = {**build(full_before, current, settings), **status}
    files["drift_report.json"] = dump_json(report)
    files["drift_report.md"] = markdown(report).encode()
    return files


@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line entry: the drift report of two folders of logs, or the drift stage's check."""
    ap = argparse.ArgumentParser(prog="python -m analysis.drift", description=__doc__.split("\n\n")[0])
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
            files = {"drift_report.json": dump_json(report), "drift_report.md": markdown(report).encode()}
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
