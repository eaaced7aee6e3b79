"""The benchmark table a paper prints: one row per arm (or checkpoint), one column per family of the suite,
each cell one of the numbers RLVR papers print (analysis.paper_metrics), as markdown, CSV and LaTeX.

    python -m analysis.benchmark_table --logs evallogs --out reports/table [--params params.yaml]

The rows are params.yaml `arms` then the swept checkpoints (params.yaml `sweep`, their logs in
<logs>/sweep), each arm whose log is there; the columns the suite's families as its items name them (a
suite merged from several benchmarks keeps one family per benchmark) and `all`. Written: benchmark_table.md
(one table per metric, and each arm's paired deltas against the reference arm with their intervals),
benchmark_table.csv (tidy: arm, family, metric, value, sd, n_items, k), benchmark_table.tex (one booktabs
tabular per metric) and benchmark_table.json (everything, for the index page and metrics.json).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path
from typing import Any

import numpy as np

from analysis import paper_metrics as pm
from analysis.align import (
    Refusal,
    Settings,
    arm_arrays,
    check_matched,
    clean,
    dump_json,
    item_order,
    load_logs,
    log_path,
    out_folder,
    read_arm_list,
    read_settings,
    read_swept,
    write_outputs,
)
from analysis.contrasts import BCA_MIN_ITEMS, NO_FAMILY, delta_interval, mean_contrast
from analysis.mdtext import ci_percent, md
from analysis.numbers import num, signed
from analysis.resampling import Interval, rng_for
from analysis.signflip import small_suite_interval
from contract.evallog import EvalLog, collector_paused

ALL = "all"
EXIT_REFUSED = 2
# (key, label in markdown, label in LaTeX, the ArmMetrics field, its spread field or None); k is the log's.
METRICS: list[tuple[str, str, str, str, str | None]] = [
    ("avg", "avg@{k} ± sd over {k} runs", r"avg@{k} $\pm$ sd", "avg", "avg_sd"),
    ("maj", "maj@{k}", "maj@{k}", "maj", None),
    ("pass_at_k", "pass@{k}", "pass@{k}", "pass_at_k", None),
    ("pass_hat", "pass^{k} (all {k} right)", r"pass\textasciicircum{{}}{k}", "pass_hat", None),
    ("bayes", "Bayes@{k} ± posterior sd", r"Bayes@{k} $\pm$ sd", "bayes", "bayes_sd"),
]


def answers_of(log: EvalLog, order: list[str]) -> list[tuple[str | None, ...]] | None:
    """Each item's sample answers in the given order, or None when the log does not record them all."""
    by_id = {it.item_id: it for it in log.items}
    answers = [by_id[i].sample_answers() for i in order]
    return None if any(a is None for a in answers) else answers  # type: ignore[return-value]


def family_index(families: list[str | None]) -> dict[str, np.ndarray]:
    """Item indices of each family (sorted by name) and of `all`."""
    labels = [NO_FAMILY if f is None else f for f in families]
    groups = {name: np.flatnonzero(np.array(labels, dtype=object) == name) for name in sorted(set(labels))}
    return {**(groups if len(groups) > 1 or NO_FAMILY not in groups else {}), ALL: np.arange(len(labels))}


def arm_cells(log: EvalLog, order: list[str]) -> dict[str, dict[str, Any]]:
    """One arm's metrics per family and overall."""
    data = arm_arrays(log, order)
    answers = answers_of(log, order)
    cells = {}
    for fam, idx in family_index(data.families).items():
        sub = None if answers is None else [answers[i] for i in idx]
        cells[fam] = pm.arm_metrics(data.scores[idx], sub).as_dict()
    return cells


def metric_interval(ref: np.ndarray, arm: np.ndarray, settings: Settings, key: str) -> Interval:
    """The paired interval of mean(arm - ref) the project gives a per-item metric: BCa from BCA_MIN_ITEMS
    items; below, Newcombe's paired score interval where both arms' values are 0/1 (maj@k, pass^k at
    k = n), else the sign-flip inversion (the pass@K rule of analysis.contrasts)."""
    if ref.size >= BCA_MIN_ITEMS:
        return delta_interval(arm - ref, settings, key)
    return small_suite_interval(
        ref, arm, settings.n_perm, rng_for(settings.seed, f"perm-ci{key}"), settings.alpha
    )


def metric_contrast(ref: np.ndarray, arm: np.ndarray, settings: Settings, key: str) -> dict[str, Any]:
    """mean_contrast's row (delta, sign-flip p) with metric_interval's interval."""
    row = mean_contrast(ref, arm, settings, key)
    ci = metric_interval(ref, arm, settings, key)
    return {**row, "ci95": ci.as_list(), "ci95_method": ci.method}


def deltas(ref: EvalLog, arm: EvalLog, order: list[str], settings: Settings, key: str) -> dict[str, Any]:
    """Each metric's paired delta of arm minus ref over all items, with its interval (paper_metrics)."""
    a, b = arm_arrays(ref, order).scores, arm_arrays(arm, order).scores
    k = a.shape[1]
    out: dict[str, Any] = {}
    avg = metric_contrast(a.mean(axis=1), b.mean(axis=1), settings, key=f"/table/avg{key}")
    runs = pm.per_run_accuracy(b) - pm.per_run_accuracy(a)
    out["avg"] = {**avg, "run_sd": float(runs.std(ddof=1)) if runs.size > 1 else 0.0}
    ans_a, ans_b = answers_of(ref, order), answers_of(arm, order)
    if ans_a is not None and ans_b is not None:
        out["maj"] = metric_contrast(pm.maj_at_k_items(ans_a, a), pm.maj_at_k_items(ans_b, b), settings,
                                   key=f"/table/maj{key}")  # fmt: skip
    out["pass_hat"] = metric_contrast(pm.pass_hat_k_items(a, k), pm.pass_hat_k_items(b, k), settings,
                                    key=f"/table/passhat{key}")  # fmt: skip
    out["bayes"] = pm.bayes_delta(a, b, settings.alpha)
    return out


def arms_to_table(params: str | Path | None, logs_dir: str | Path) -> tuple[list[str], dict[str, int]]:
    """The table's arms (params `arms`, then the swept checkpoints) whose logs exist, and the swept steps."""
    listed = read_arm_list(params) or sorted(p.stem for p in Path(logs_dir).glob("*.json"))
    swept = read_swept(params, logs_dir)
    steps = {a: s for a, s in swept[1]} if swept else {}
    if swept:
        steps[swept[0]] = 0
    arms = [a for a in dict.fromkeys([*listed, *steps]) if log_path(logs_dir, a).is_file()]
    return arms, steps


def build(logs_dir: str | Path, settings: Settings, params: str | Path | None) -> dict[str, Any]:
    """The table as a JSON-ready dict; a Refusal when no arm has a log or two logs are not matched."""
    arms, steps = arms_to_table(params, logs_dir)
    if not arms:
        raise Refusal(f"{logs_dir}: no EvalLog of any arm of the params file; run dvc repro")
    paths = [log_path(logs_dir, a) for a in arms]
    logs = dict(zip(arms, load_logs(paths, samples=False), strict=True))
    ref = "base" if "base" in logs else arms[0]
    for arm, path in zip(arms, paths, strict=True):
        if arm != ref:
            check_matched(log_path(logs_dir, ref), logs[ref], path, logs[arm])
    order = item_order(logs[ref])
    rows = [
        {"arm": a, "model_name": logs[a].model_name, "step": steps.get(a), "cells": arm_cells(logs[a], order)}
        for a in arms
    ]
    compared = [
        # One key per metric, not per arm: every arm's contrast draws the same item resamples, so two
        # arms with the same logs (a swept checkpoint and its named twin) print the same intervals.
        {"arm": a, "reference": ref, **deltas(logs[ref], logs[a], order, settings, "")}
        for a in arms
        if a != ref
    ]
    families = list(rows[0]["cells"])
    return {
        "report": "benchmark_table",
        "suite": logs[ref].suite,
        "suite_revision": logs[ref].suite_revision,
        "n_items": len(order),
        "k": logs[ref].n_samples,
        "reference": ref,
        "families": families,
        "family_items": {f: rows[0]["cells"][f]["n_items"] for f in families},
        "rows": rows,
        "deltas": compared,
        "settings": {"alpha": settings.alpha, "n_boot": settings.n_boot, "n_perm": settings.n_perm},
        "definitions": pm.__doc__,
    }


def _cell(c: dict[str, Any], field: str, sd: str | None, latex: bool = False) -> str:
    """One cell: the value (3 decimals) and, where the metric has one, its spread."""
    if c[field] is None:
        return "--" if latex else "n/a"
    if sd is None:
        return f"{c[field]:.3f}"
    return f"{c[field]:.3f} $\\pm$ {c[sd]:.3f}" if latex else f"{c[field]:.3f} ± {c[sd]:.3f}"


def markdown(t: dict[str, Any]) -> str:
    """The tables as markdown: one per metric, then the paired deltas against the reference."""
    k, fams = t["k"], t["families"]
    head = " | ".join(f"{md(f)} ({t['family_items'][f]})" for f in fams)
    lines = [
        f"# Benchmark table: {md(t['suite'])} ({md(t['suite_revision'])})",
        "",
        f"{t['n_items']} items, k = {k} samples per item, the same protocol for every arm; the families as "
        "the suite names them (items in brackets). Definitions, tie rule and answer equivalence: "
        'analysis/paper_metrics.py and the README ("The numbers papers print").',
        "",
    ]
    for _key, label, _tex, field, sd in METRICS:
        lines += [f"## {label.format(k=k)}", "", f"| arm | {head} |", "| --- |" + " ---: |" * len(fams)]
        for r in t["rows"]:
            name = md(r["arm"]) + (f" (step {r['step']})" if r["step"] is not None else "")
            lines.append(f"| {name} | " + " | ".join(_cell(r["cells"][f], field, sd) for f in fams) + " |")
        lines.append("")
    pct = ci_percent(t["settings"]["alpha"])
    if t["deltas"]:
        lines += [
            f"## Against {md(t['reference'])}: paired deltas over all items",
            "",
            f"| arm | avg@{k} delta [{pct} CI] (sd over runs) | maj@{k} delta [{pct} CI] | pass^{k} delta "
            f"[{pct} CI] | Bayes@{k} delta ± sd [{pct} credible] |",
            "| --- | --- | --- | --- | --- |",
        ]
        for d in t["deltas"]:
            avg, maj, ph, by = d["avg"], d.get("maj"), d["pass_hat"], d["bayes"]

            def ci(x: dict[str, Any]) -> str:
                return f"{signed(x['delta'], 3)} [{signed(x['ci95'][0], 3)}, {signed(x['ci95'][1], 3)}]"

            lines.append(
                f"| {md(d['arm'])} | {ci(avg)} ({num(avg['run_sd'], '.3f')}) | {ci(maj) if maj else 'n/a'} | "
                f"{ci(ph)} | {ci(by)} (sd {num(by['sd'], '.3f')}) |"
            )
        lines += [
            "",
            "avg@k's delta is pass@1's (the item-level paired interval every report uses: BCa from 100 "
            "items, below that the sign-flip inversion); maj@k's and pass^k's are the same interval of their "
            "per-item values, Newcombe's paired score interval below 100 items (both 0/1 per item); sd "
            "over runs: of the k per-run deltas (run j: sample j of every item). "
            "Bayes@N's is the posterior of the difference of the two arms' independent posteriors "
            "(normal credible interval).",
            "",
        ]
    return "\n".join(lines)


def csv_text(t: dict[str, Any]) -> str:
    """Tidy CSV: one line per arm, family and metric."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["arm", "step", "family", "metric", "k", "value", "sd", "n_items"])
    for r in t["rows"]:
        for fam, c in r["cells"].items():
            for key, _label, _tex, field, sd in METRICS:
                value = c[field]
                w.writerow([r["arm"], "" if r["step"] is None else r["step"], fam, key, c["k"],
                            "" if value is None else f"{value:.6f}", "" if sd is None else f"{c[sd]:.6f}",
                            c["n_items"]])  # fmt: skip
    return buf.getvalue()


def _tex(text: str) -> str:
    """Text escaped for LaTeX (the backslash first, through a placeholder, so its braces stay)."""
    text = text.replace("\\", "\x00")
    for a, b in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"), ("{", r"\{"),
                 ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):  # fmt: skip
        text = text.replace(a, b)
    return text.replace("\x00", r"\textbackslash{}")


def latex(t: dict[str, Any]) -> str:
    """One booktabs tabular per metric (\\usepackage{booktabs})."""
    k, fams = t["k"], t["families"]
    out = [f"% Benchmark table: {_tex(t['suite'])} ({_tex(t['suite_revision'])}), k = {k}; needs booktabs"]
    for _key, _label, tex, field, sd in METRICS:
        out += [
            "",
            f"% {tex.format(k=k)}",
            "\\begin{tabular}{l" + "r" * len(fams) + "}",
            "\\toprule",
            f"{tex.format(k=k)} & " + " & ".join(_tex(f) for f in fams) + " \\\\",
            "\\midrule",
        ]
        for r in t["rows"]:
            cells = " & ".join(_cell(r["cells"][f], field, sd, latex=True) for f in fams)
            out.append(f"{_tex(r['arm'])} & {cells} \\\\")
        out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"


def headline(t: dict[str, Any]) -> dict[str, Any]:
    """metrics.json's part: each arm's overall value of each metric (short keys for `dvc exp show`)."""
    return {
        r["arm"]: {key: r["cells"][ALL][field] for key, _l, _t, field, _s in METRICS}
        | {"avg_sd": r["cells"][ALL]["avg_sd"], "bayes_sd": r["cells"][ALL]["bayes_sd"]}
        for r in t["rows"]
    }


@collector_paused()
def main(argv: list[str] | None = None) -> int:
    """Command line: write the benchmark table in four formats; exit 2 with one line on refused input."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.benchmark_table", description=__doc__.split("\n\n")[0]
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
            "benchmark_table.json": dump_json(clean(table)),
            "benchmark_table.md": markdown(table).encode(),
            "benchmark_table.csv": csv_text(table).encode(),
            "benchmark_table.tex": latex(table).encode(),
        },
    )
    print(f"benchmark_table: {len(table['rows'])} arms x {len(table['families'])} columns -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
