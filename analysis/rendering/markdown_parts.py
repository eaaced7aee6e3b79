"""Markdown parts every report shares: tables, item-browser links, truncation, prompting, calibration.

Every contrast row links to the item browser (analysis.rendering.item_browser, written by the report stage one
folder up), opened on the items that flipped between the row's two arms.
"""

from __future__ import annotations

from analysis.rendering.markdown_text import (
    items_href,
    md,
)
from analysis.reports.number_text import interval, num, pvalue
from analysis.reports.report_parts import Calibration, Truncation


def items_link(ref: str, arm: str, family: str | None = None) -> str:
    """A markdown link to the item browser on the items that flipped from ref to arm."""
    return f"[flipped items]({items_href(ref, arm, family)})"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def truncation_lines(t: Truncation | None, curve: str) -> list[str]:
    """The section on samples that ended at the budget (analysis.reports.truncation), or nothing without
    one."""
    if not t or all(a.samples is None for a in t.arms):
        return []
    lines = ["## Samples that ended at the budget", ""]
    lines += table(
        ["arm", "samples", f"ended at the budget (finish reason {t.finish_reason})", "share"],
        [
            [md(a.arm), str(a.samples if a.samples is not None else "-"),
             str(a.at_budget if a.at_budget is not None else "not recorded"), num(a.share, ".1%")]
            for a in t.arms
        ],
    )  # fmt: skip
    gap = t.share_gap
    lines += [
        "",
        f"Every arm had the same budget of {t.max_tokens} generated tokens (max_tokens): a sample ending "
        "there was cut off, and it scores as wrong unless its answer came before the cut (one cut inside its "
        "thinking has no answer). A gap between arms in this share is a budget effect inside the accuracy "
        "delta: one arm writes or thinks longer, which is not the same as reasoning worse"
        + (f" (here the shares differ by up to {gap:.1%})" if gap else "")
        + f"; {curve} shows the delta at smaller budgets.",
        "",
    ]
    return lines


def prompting_lines(prompting: dict[str, str] | None) -> list[str]:
    """One line naming how each arm was prompted (format, template sha256, few-shot pin), then a blank."""
    if not prompting:
        return []
    # Arms prompted alike share one entry: seven arms of one prompt are one line, not seven.
    alike: dict[str, list[str]] = {}
    for arm, line in prompting.items():
        alike.setdefault(line, []).append(arm)
    if len(alike) == 1:
        return [f"Prompts, every arm: {md(next(iter(alike)))}.", ""]
    return [
        "Prompts: "
        + "; ".join(f"{', '.join(md(a) for a in arms)}: {md(line)}" for line, arms in alike.items())
        + ".",
        "",
    ]


def calibration_lines(c: Calibration | None, pct: str, figure: str) -> list[str]:
    """The calibration section (analysis.reports.calibration): ECE per arm, each arm's ECE delta, the
    diagram."""
    if c is None:
        return [
            "## Calibration (ECE)",
            "",
            "Not available: the logs record no sample's answer, so no item has a majority answer to be "
            "confident in.",
            "",
        ]
    lines = [
        "## Calibration (ECE)",
        "",
        f"Confidence of an item's answer: the {md(c.confidence)}; right when those samples scored right. "
        f"ECE over {c.n_bins} equal-width bins, its {pct} interval a percentile bootstrap of items (ECE "
        "is recomputed on each resample, not averaged); each delta a paired bootstrap (the same item "
        "indices for both arms), significant when its bootstrap p <= alpha and its interval excludes 0, "
        f"negligible below {c.min_effect}.",
        "",
        *table(
            ["arm", "ECE", f"{pct} CI", "mean confidence", "accuracy of the majority answer"],
            [
                [
                    md(a.arm),
                    num(a.ece),
                    interval(a.ci95, ".4f"),
                    num(a.mean_confidence),
                    num(a.accuracy),
                ]
                for a in c.arms
            ],
        ),  # fmt: skip
        "",
    ]
    if c.deltas:
        lines += table(
            ["contrast", "ECE delta", f"{pct} CI (paired)", "bootstrap p", "significant"],
            [
                [
                    f"{md(d.arm)} vs {md(d.reference)}",
                    num(d.delta, "+.4f"),
                    interval(d.ci95),
                    pvalue(d.p_value),
                    ("yes (negligible)" if d.negligible else "yes") if d.significant else "no",
                ]
                for d in c.deltas
            ],
        )
        lines.append("")
    if c.arms_without_answers:
        lines += [f"No answers recorded for {', '.join(md(a) for a in c.arms_without_answers)}.", ""]
    lines += [f"![reliability diagram]({figure})", ""]
    return lines
