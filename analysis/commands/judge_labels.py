"""People in the loop: draw a labelling sheet, and read the labels back into accuracies and PPI estimates.

    python -m analysis.commands.judge_labels draw --logs evallogs --judged judged --arms base trained \\
        --items 50 --out labelling          # labelling/sheet.csv and labelling/sheet.html
    python -m analysis.commands.judge_labels read --labels labels.csv --logs evallogs --judged judged \\
        --arms base trained --out reports/judge/labels     # labels_report.md and labels_report.json

`draw` picks --items items at random (--seed) and one sample of each (the same sample index in every arm,
so the labels pair across arms), shuffles the rows of all arms together, and writes them with the question,
reference and response: sheet.csv with an empty `label` column, sheet.html where the rules' and the judge's
verdicts show only after a row is labelled. `read` takes a CSV of arm, item_id, sample, label (1 right, 0
wrong; the sheet's own columns, or the page's saved file) and reports, per arm, the rules' and the judge's
accuracy against the people, and the prediction-powered estimate (analysis.estimators.ppi) of the arm's
accuracy and of each arm's paired delta with the reference (the first arm), with the judged logs' final
verdicts as the predictions.
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

from analysis.estimators.ppi import ppi_mean
from analysis.estimators.proportions import wilson_interval
from analysis.reports.judge import LabelsReport, read_labels
from analysis.reports.report_files import report_json
from contract.atomic import atomic_write_set
from contract.evallog import EvalLog, EvalLogError, load
from contract.judge import rule_verdict

COLUMNS = ["arm", "item_id", "sample", "question", "reference", "response", "rule", "judge", "final", "label"]


def _logs(args: argparse.Namespace) -> dict[str, tuple[EvalLog, EvalLog]]:
    return {a: (load(args.logs / f"{a}.json"), load(args.judged / f"{a}.json")) for a in args.arms}


def sheet_rows(logs: dict[str, tuple[EvalLog, EvalLog]], items: int, seed: int) -> list[dict[str, Any]]:
    """The sheet's rows: the drawn items' drawn sample in every arm, shuffled across arms."""
    first = next(iter(logs.values()))[0]
    rng = random.Random(seed)
    picked = rng.sample(range(len(first.items)), min(items, len(first.items)))
    rows = []
    for i in picked:
        j = rng.randrange(first.n_samples)
        for arm, (rule_log, judged_log) in logs.items():
            it, s = judged_log.items[i], (judged_log.items[i].samples or [])[j]
            rec = s.judge
            rows.append(
                {"arm": arm, "item_id": it.item_id, "sample": j, "question": it.question or "",
                 "reference": it.reference_answer or "", "response": s.text or "",
                 "rule": rule_verdict((rule_log.items[i].samples or [])[j]),
                 "judge": rec.verdict if rec is not None else "not asked",
                 "final": "right" if s.score >= 1 else "wrong", "label": ""}
            )  # fmt: skip
    rng.shuffle(rows)
    for n, r in enumerate(rows):
        r["code"] = f"R{n + 1:04d}"
    return rows


def draw(args: argparse.Namespace) -> str:
    """Write sheet.csv and sheet.html; return a summary line."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    rows = sheet_rows(_logs(args), args.items, args.seed)
    buf = io.StringIO()
    # The CSV keeps the verdicts in columns after the response, for a labeller who hides them; the page hides
    # them itself.
    writer = csv.DictWriter(buf, COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    templates = Path(__file__).parents[1] / "templates"
    env = Environment(loader=FileSystemLoader(templates), undefined=StrictUndefined, autoescape=True)
    page = env.get_template("labelling.html.j2").render(rows=rows)
    atomic_write_set({args.out / "sheet.csv": buf.getvalue(), args.out / "sheet.html": page})
    return f"judge_labels: wrote {args.out / 'sheet.csv'} and sheet.html ({len(rows)} rows)"


def _arm_vectors(log: EvalLog, judged: EvalLog, arm: str, labels: dict) -> dict[str, np.ndarray]:
    """Per sample of the arm: the final verdict, the rules' score, the label (-1 unlabelled), the judge's."""
    final, rule, label, judge = [], [], [], []
    for it, jt in zip(log.items, judged.items, strict=True):
        for s, js in zip(it.samples or [], jt.samples or [], strict=True):
            final.append(js.score)
            rule.append(s.score)
            label.append(labels.get((arm, it.item_id, s.index), -1))
            rec = js.judge
            judge.append(
                -1 if rec is None or rec.verdict == "no_verdict" else int(rec.verdict == "equivalent")
            )
    return {k: np.array(v) for k, v in (("final", final), ("rule", rule), ("label", label), ("judge", judge))}


def _accuracy(pred: np.ndarray, label: np.ndarray) -> dict[str, Any]:
    n = len(label)
    k = int((pred == label).sum())
    return {"agree": k, "n": n, "share": k / n if n else None, "ci": wilson_interval(k, n) if n else None}


def arm_part(v: dict[str, np.ndarray], alpha: float) -> dict[str, Any]:
    """An arm against its labels: the rules', the judge's and the final verdicts' accuracy, and PPI."""
    has = v["label"] >= 0
    asked = has & (v["judge"] >= 0)
    part = {
        "labelled": int(has.sum()),
        "rules": _accuracy(v["rule"][has], v["label"][has]),
        "judge": _accuracy(v["judge"][asked], v["label"][asked]),
        "final": _accuracy(v["final"][has], v["label"][has]),
    }
    if has.sum() >= 2:
        part["ppi"] = ppi_mean(v["label"][has], v["final"][has], v["final"][~has], alpha).__dict__
    return part


def read(args: argparse.Namespace) -> str:
    """Write labels_report.md and .json; return a summary line."""
    labels = read_labels(args.labels)
    vecs = {arm: _arm_vectors(log, j, arm, labels) for arm, (log, j) in _logs(args).items()}
    report: dict[str, Any] = {"arms": {a: arm_part(v, args.alpha) for a, v in vecs.items()}, "deltas": {}}
    ref = args.arms[0]
    for arm in args.arms[1:]:
        a, b = vecs[ref], vecs[arm]
        both = (a["label"] >= 0) & (b["label"] >= 0)
        if both.sum() >= 2:
            res = ppi_mean(
                b["label"][both] - a["label"][both],
                b["final"][both] - a["final"][both],
                b["final"][~both] - a["final"][~both],
                args.alpha,
            )
            report["deltas"][f"{arm} - {ref}"] = res.__dict__
    typed = LabelsReport.model_validate(report)
    atomic_write_set(
        {args.out / "labels_report.json": report_json(typed),
         args.out / "labels_report.md": labels_markdown(typed)}
    )  # fmt: skip
    return f"judge_labels: {len(labels)} labels read; wrote {args.out / 'labels_report.md'}"


def _ci(ci: Any) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def labels_markdown(report: LabelsReport) -> str:
    """The labels' report: each arm's verdicts against people, and the PPI estimates."""
    lines = ["# Machine verdicts against people", ""]
    lines += ["| arm | labelled | rules agree | judge agrees (where it gave a verdict) | final agrees | "
              "PPI accuracy | labels alone |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for arm, p in report.arms.items():
        cells = [f"{a.agree}/{a.n} {_ci(a.ci)}" for a in (p.rules, p.judge, p.final)]
        ppi = p.ppi
        est = "-" if ppi is None else f"{ppi.estimate:.3f} {_ci(ppi.ci)}"
        cls = "-" if ppi is None else f"{ppi.classical:.3f} {_ci(ppi.classical_ci)}"
        lines.append(f"| {arm} | {p.labelled} | " + " | ".join(cells) + f" | {est} | {cls} |")
    lines += ["", "| paired delta | PPI estimate | labels alone |", "|---|---|---|"]
    for name, d in report.deltas.items():
        est, cls = f"{d.estimate:+.3f} {_ci(d.ci)}", f"{d.classical:+.3f} {_ci(d.classical_ci)}"
        lines.append(f"| {name} | {est} | {cls} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: draw or read."""
    ap = argparse.ArgumentParser(prog="python -m analysis.commands.judge_labels", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("draw", "read"):
        p = sub.add_parser(name)
        p.add_argument("--logs", type=Path, default=Path("evallogs"))
        p.add_argument("--judged", type=Path, default=Path("judged"))
        p.add_argument("--arms", nargs="+", required=True, help="arms, the reference first")
        p.add_argument("--out", type=Path, required=True)
    sub.choices["draw"].add_argument("--items", type=int, default=50)
    sub.choices["draw"].add_argument("--seed", type=int, default=0)
    sub.choices["read"].add_argument("--labels", type=Path, required=True)
    sub.choices["read"].add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args(argv)
    try:
        print(draw(args) if args.cmd == "draw" else read(args))
    except (EvalLogError, ValueError, KeyError, OSError) as e:
        print(f"judge_labels: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
