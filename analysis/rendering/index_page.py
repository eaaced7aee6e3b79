"""The index page rendered: claim lines, headline numbers, links to the reports, metrics and plot data.

What python -m analysis.commands.index_page writes: reports/index.md and index.html (from the templates in
analysis/templates/), reports/metrics.json, reports/plots/*.csv, each report's HTML rendering and the item
browser. Beside the headline: each arm's undecided share and each contrast's change in it and delta on
decided samples, and the judge's line where a judge ran (analysis.rendering.index_parts).
A pure rendering of the reports and the logs: no statistic is computed here.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, TypeVar

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from analysis.rendering import contamination_text
from analysis.rendering.headline import plain_sentence
from analysis.rendering.html_page import markdown_page
from analysis.rendering.index_parts import (
    JUDGE_MD,
    judge_summary,
    undecided_metrics,
    undecided_note,
    undecided_section,
)
from analysis.rendering.item_browser import items_page
from analysis.rendering.markdown_text import (
    ITEMS_PAGE,
    SIGNIFICANT,
    ci_percent,
    items_href,
    md,
    p_text,
    significance_text,
)
from analysis.reports import report_files
from analysis.reports.benchmark_table import BenchmarkTable
from analysis.reports.number_text import num, pvalue, signed
from analysis.reports.refusal import Refusal
from analysis.reports.report_models import ArmComparison, DeltaReport
from analysis.reports.report_parts import ReportModel
from analysis.reports.writing import write_set
from contract.atomic import finish_interrupted_sets
from contract.protocol import MATCHED_LOG_FIELDS

TEMPLATES = Path(__file__).parents[1] / "templates"
# The two reports' markdown, rendered to HTML beside it.
RENDERED = {"delta": "delta_report", "arms": "arm_comparison_report"}
R = TypeVar("R", bound=ReportModel)


def read_report(path: Path, model: type[R]) -> R:
    """Load one report JSON as its typed model (analysis.reports.report_files); a Refusal naming the file."""
    # A report set whose writer was killed while renaming it is finished first (contract.atomic): its
    # JSON is then the one its pages were written with.
    finish_interrupted_sets(path.parent)
    return report_files.read_report(path, model)


# The reports the page links besides the two it renders, where their stages wrote them (a world without a
# trajectory stage, or analysis.commands.compare_logs, has none); dvc.yaml orders the report stage after them.
PIPELINE_REPORTS = (
    (
        "Checkpoint trajectory",
        "trajectory/trajectory_report.html",
        "every checkpoint over base; the reward vs a placebo",
    ),
    ("Verifier drift", "drift/drift_report.html", "what a scorer change did to each arm and verdict"),
)


# The benchmark table's overall numbers on the index page and in metrics.json
# (analysis.reports.benchmark_table).
TABLE_FILE = "benchmark_table.json"
TABLE_METRICS = ("avg", "avg_sd", "maj", "pass_at_k", "pass_hat", "bayes", "bayes_sd")


def read_table(table_dir: Path | None) -> BenchmarkTable | None:
    """The benchmark table, or None when there is no table folder or file (a run without the stage)."""
    if table_dir is None or not (table_dir / TABLE_FILE).is_file():
        return None
    return read_report(table_dir / TABLE_FILE, BenchmarkTable)


def table_rows(table: BenchmarkTable | None) -> list[dict[str, Any]]:
    """Each arm's overall paper metrics (the table's `all` column), for the page and metrics.json."""
    if table is None:
        return []
    return [{"arm": r.arm, "step": r.step, **{m: getattr(r.cells["all"], m) for m in TABLE_METRICS}}
            for r in table.rows]  # fmt: skip


def context(
    delta: DeltaReport, arms: ArmComparison, table: BenchmarkTable | None = None, out: Path | None = None
) -> dict[str, Any]:
    """Everything the templates need, taken from the two reports (and the benchmark table, when made).

    out: the page's folder; the trajectory and drift reports there are linked too.
    """
    others = [r for r in PIPELINE_REPORTS if out is not None and (out / r[1]).is_file()]
    proto = delta.matched_protocol
    proto_line = ", ".join(f"{k}={proto[k]}" for k in MATCHED_LOG_FIELDS if proto.get(k) is not None)
    kmax = max(int(k) for k in delta.pass_at_k_pre)
    alpha = delta.settings.alpha
    return {
        "suite": delta.suite,
        "suite_revision": delta.suite_revision,
        "n_items": delta.n_items,
        "n_samples": delta.n_samples,
        "protocol_line": proto_line or "see the delta report",
        "ci_pct": ci_percent(alpha).rstrip("%"),
        "significant_means": SIGNIFICANT.format(pct=ci_percent(alpha)),
        "fdr": arms.settings.fdr,
        "ptext": p_text,
        "sigtext": significance_text,
        "kmax": kmax,
        "delta": delta,
        # Trained vs base under the lenient reader, and each arm's answered share (None: not recorded).
        "lenient": delta.format.contrast if delta.format is not None else None,
        "answering": delta.format.arms if delta.format is not None else [],
        "contrasts": arms.contrasts,
        "marginal": arms.marginal,
        "unusable": arms.arms_unusable,
        "num": num,
        "signed": signed,
        "pvalue": pvalue,
        "items_href": items_href,
        "items_page": ITEMS_PAGE,
        "sentence": plain_sentence(delta, arms.contrasts),
        "contamination": contamination_text.index_line(delta.contamination),
        "reports": [
            (
                "Delta report",
                "delta/delta_report.html",
                f"{delta.post_arm} vs {delta.pre_arm}: every statistic",
            ),
            (
                "Arm comparison",
                "arms/arm_comparison_report.html",
                f"every arm vs {arms.base.arm}, families, paths",
            ),
            *others,
            ("Item browser", ITEMS_PAGE, "the items that flipped between any two arms, with transcripts"),
        ],
        "table": table_rows(table),
        # Each arm's undecided share and each contrast's change and decided delta (None: not recorded, the
        # reports' note then shown instead), and the judge's link and line (None: no judge ran).
        "undecided": undecided_section(delta, arms),
        "undecided_note": undecided_note(delta, arms),
        "judge": judge_summary(out),
        "table_k": table.k if table else None,
        "table_families": [f for f in table.families if f != "all"] if table else [],
    }


def metrics(delta: DeltaReport, arms: ArmComparison, table: BenchmarkTable | None = None) -> dict[str, Any]:
    """The headline numbers DVC tracks as metrics: what a person compares across experiments.

    trained minus base (mean, interval, p, verdict), the claim, every arm's naive delta over base and its
    verdict (the same rule and, for trained, the same verdict as the delta report), each delta report arm's
    answered share and trained minus base under the lenient reader, where recorded; each arm's undecided
    share and each contrast's change in it and delta on decided samples, where recorded; everything else
    (pass@k, adjusted deltas, q-values, per-family rows) is in the reports. Short keys keep `dvc exp show`
    narrow.
    """
    out: dict[str, Any] = {
        "delta": {
            "mean": delta.delta_mean,
            "lo": delta.delta_ci95[0],
            "hi": delta.delta_ci95[1],
            "p": delta.perm_p,
            # The one verdict of trained vs base (analysis.reports.contrasts), as both reports print it.
            **({"significant": delta.verdict.significant} if delta.verdict is not None else {}),
        },
        "arms": {c.arm: c.naive_delta for c in arms.contrasts},
        "significant": {c.arm: c.significant for c in arms.contrasts},
        "claim": delta.claim,
    }
    fmt = delta.format
    shares = {a.arm: a.answered_share for a in fmt.arms if a.answered_share is not None} if fmt else {}
    if shares:
        out["answered"] = shares
    if fmt is not None and fmt.contrast is not None:
        # Trained minus base under the lenient reader: beside `delta`, it says how much of it is format.
        lenient = fmt.contrast.lenient
        out["lenient"] = {"mean": lenient.delta, "lo": lenient.ci95[0], "hi": lenient.ci95[1],
                          "p": lenient.p_value, "significant": lenient.significant}  # fmt: skip
    part = undecided_section(delta, arms)
    if part is not None:
        # Beside each delta, how much of each arm the reader could not settle and the delta without them.
        out["undecided"] = undecided_metrics(part)
    rows = table_rows(table)
    if rows:
        # The paper metrics over all items, metric by metric and arm by arm (the benchmark table's `all`).
        out["paper"] = {m: {r["arm"]: r[m] for r in rows} for m in TABLE_METRICS}
    return out


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def plot_tables(delta: DeltaReport, arms: ArmComparison) -> dict[str, str]:
    """DVC plot data: pass@k of base and trained by k, and every arm's delta against base with its CI."""
    passk = [
        [k, delta.pass_at_k_pre[k], delta.pass_at_k_post[k]] for k in sorted(delta.pass_at_k_pre, key=int)
    ]
    deltas = [[c.arm, c.naive_delta, c.adjusted_delta, c.ci95[0], c.ci95[1]] for c in arms.contrasts]
    return {
        "passk.csv": _csv(["k", "base", "trained"], passk),
        "arm_deltas.csv": _csv(["arm", "naive_delta", "adjusted_delta", "ci_lo", "ci_hi"], deltas),
    }


def write(
    delta_dir: Path,
    arms_dir: Path,
    out: Path,
    logs: Path | None = None,
    table_dir: Path | None = None,
    pipeline: bool = True,
    evidence: dict[str, list[str]] | None = None,
) -> list[Path]:
    """Render the index page, the reports' HTML, the metrics, the plot data and (with logs) the item browser.

    Returns the files written; a log the item browser cannot pair with the others is a Refusal. pipeline:
    the DVC metrics and plot data are written too (what `dvc metrics show` and `dvc plots show` read).
    """
    delta = read_report(delta_dir / "delta_report.json", DeltaReport)
    arms = read_report(arms_dir / "arm_comparison_report.json", ArmComparison)
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    # The markdown page's counterpart of the HTML page's autoescape: every text from a log goes through it.
    env.filters["md"] = md
    table = read_table(table_dir)
    ctx = context(delta, arms, table, out)
    html_env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, autoescape=True)
    files = {
        out / "index.md": env.get_template("index.md.j2").render(ctx),
        out / "index.html": html_env.get_template("index.html.j2").render(ctx),
    }
    if pipeline:
        # DVC's metrics and plot data: what `dvc metrics show` and `dvc plots show` read.
        files[out / "metrics.json"] = json.dumps(metrics(delta, arms, table), indent=2, sort_keys=True) + "\n"
        for name, text in plot_tables(delta, arms).items():
            files[out / "plots" / name] = text
    for folder, (key, stem) in zip((delta_dir, arms_dir), RENDERED.items(), strict=True):
        source = folder / f"{stem}.md"
        try:
            text = source.read_text()
        except (FileNotFoundError, NotADirectoryError):
            raise Refusal(f"{source}: not found; run the {key} stage first (dvc repro)") from None
        title = f"{'Delta report' if key == 'delta' else 'Arm comparison'}: {delta.suite}"
        files[folder / f"{stem}.html"] = markdown_page(text, title)
    if table is not None and table_dir is not None and (table_dir / "benchmark_table.md").is_file():
        # The benchmark table's HTML rendering, which the page links (a browser shows markdown as text).
        text = (table_dir / "benchmark_table.md").read_text()
        files[table_dir / "benchmark_table.html"] = markdown_page(text, f"Benchmark table: {delta.suite}")
    if (out / JUDGE_MD).is_file():
        # The judge's report rendered beside its markdown, which the page links where a judge ran.
        files[(out / JUDGE_MD).with_suffix(".html")] = markdown_page(
            (out / JUDGE_MD).read_text(), f"Model judge: {delta.suite}"
        )
    if logs is not None:
        pair = (delta.pre_arm, delta.post_arm)
        files[out / ITEMS_PAGE] = items_page(logs, list(arms.arms_found), pair, evidence)
    # One set: a failed or killed report leaves the previous pages, never some old and some new.
    write_set(files)
    return list(files)
