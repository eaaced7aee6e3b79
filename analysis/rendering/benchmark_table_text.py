"""The benchmark table as text: markdown, CSV and LaTeX (booktabs), from the built table."""

from __future__ import annotations

import csv
import io

from analysis.rendering.markdown_text import ci_percent, md
from analysis.reports.benchmark_table import METRICS, BayesDelta, BenchmarkTable, MetricDelta
from analysis.reports.number_text import num, signed
from analysis.reports.report_parts import PaperMetrics


def _cell(c: PaperMetrics, field: str, sd: str | None, latex: bool = False) -> str:
    """One cell: the value (3 decimals) and, where the metric has one, its spread."""
    value, spread = getattr(c, field), None if sd is None else getattr(c, sd)
    if value is None:
        return "--" if latex else "n/a"
    if spread is None:  # no spread, or one run's (undefined)
        return f"{value:.3f}"
    return f"{value:.3f} $\\pm$ {spread:.3f}" if latex else f"{value:.3f} ± {spread:.3f}"


def _ci(x: MetricDelta | BayesDelta) -> str:
    """A delta and its interval, signed, 3 decimals."""
    lo, hi = x.ci95 or (None, None)
    return f"{signed(x.delta, 3)} [{signed(lo, 3)}, {signed(hi, 3)}]"


def markdown(t: BenchmarkTable) -> str:
    """The tables as markdown: one per metric, then the paired deltas against the reference."""
    k, fams = t.k, t.families
    head = " | ".join(f"{md(f)} ({t.family_items[f]})" for f in fams)
    lines = [
        f"# Benchmark table: {md(t.suite)} ({md(t.suite_revision)})",
        "",
        f"{t.n_items} items, k = {k} samples per item, the same protocol for every arm; the families as "
        "the suite names them (items in brackets). Definitions, tie rule and answer equivalence: "
        'analysis/estimators/paper_metrics.py and docs/paper-tables.md ("The numbers papers print").',
        "",
    ]
    for _key, label, _tex, field, sd in METRICS:
        lines += [f"## {label.format(k=k)}", "", f"| arm | {head} |", "| --- |" + " ---: |" * len(fams)]
        for r in t.rows:
            name = md(r.arm) + (f" (step {r.step})" if r.step is not None else "")
            lines.append(f"| {name} | " + " | ".join(_cell(r.cells[f], field, sd) for f in fams) + " |")
        lines.append("")
    pct = ci_percent(t.settings.alpha)
    if t.deltas:
        lines += [
            f"## Against {md(t.reference)}: paired deltas over all items",
            "",
            f"| arm | avg@{k} delta [{pct} CI] (sd over runs) | maj@{k} delta [{pct} CI] | pass^{k} delta "
            f"[{pct} CI] | Bayes@{k} delta ± sd [{pct} credible] |",
            "| --- | --- | --- | --- | --- |",
        ]
        for d in t.deltas:
            avg, maj, ph, by = d.avg, d.maj, d.pass_hat, d.bayes
            lines.append(
                f"| {md(d.arm)} | {_ci(avg)} ({num(avg.run_sd, '.3f')}) | {_ci(maj) if maj else 'n/a'} | "
                f"{_ci(ph)} | {_ci(by)} (sd {num(by.sd, '.3f')}) |"
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


def csv_text(t: BenchmarkTable) -> str:
    """Tidy CSV: one line per arm, family and metric."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["arm", "step", "family", "metric", "k", "value", "sd", "n_items"])
    for r in t.rows:
        for fam, c in r.cells.items():
            for key, _label, _tex, field, sd in METRICS:
                value = getattr(c, field)
                w.writerow([r.arm, "" if r.step is None else r.step, fam, key, c.k,
                            "" if value is None else f"{value:.6f}",
                            "" if sd is None else f"{getattr(c, sd):.6f}", c.n_items])  # fmt: skip
    return buf.getvalue()


def _tex(text: str) -> str:
    """Text escaped for LaTeX (the backslash first, through a placeholder, so its braces stay)."""
    text = text.replace("\\", "\x00")
    for a, b in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"), ("{", r"\{"),
                 ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):  # fmt: skip
        text = text.replace(a, b)
    return text.replace("\x00", r"\textbackslash{}")


def latex(t: BenchmarkTable) -> str:
    """One booktabs tabular per metric (\\usepackage{booktabs})."""
    k, fams = t.k, t.families
    out = [f"% Benchmark table: {_tex(t.suite)} ({_tex(t.suite_revision)}), k = {k}; needs booktabs"]
    for _key, _label, tex, field, sd in METRICS:
        out += [
            "",
            f"% {tex.format(k=k)}",
            "\\begin{tabular}{l" + "r" * len(fams) + "}",
            "\\toprule",
            f"{tex.format(k=k)} & " + " & ".join(_tex(f) for f in fams) + " \\\\",
            "\\midrule",
        ]
        for r in t.rows:
            cells = " & ".join(_cell(r.cells[f], field, sd, latex=True) for f in fams)
            out.append(f"{_tex(r.arm)} & {cells} \\\\")
        out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"
