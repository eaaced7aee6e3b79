"""Figures of the report models with matplotlib (Agg, no pyplot), never a number of their own.

Figures are written without a date or software stamp so a rerun on the same inputs gives the same bytes,
and with mathtext off: a '$' in a model or arm name is a character, not a formula. Importing this module
loads matplotlib (about half a second): the reports import it only where they draw (analysis.rendering.drawing
draws beside the statistics in a forked process).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import TypeVar

import matplotlib

# Figure without pyplot: no global figure state to clean up and half the import time; savefig renders
# with the Agg canvas.
from matplotlib.figure import Figure

from analysis.rendering.markdown_text import ci_percent
from analysis.reports.report_models import ArmComparison, DeltaReport, PassAtKFigure, TrajectoryReport
from analysis.reports.report_parts import ReportSection

_PNG_METADATA = {"Software": None}
R = TypeVar("R", bound=ReportSection)


def warm_up() -> None:
    """Draw and discard a small figure with text: loads the fonts and caches that every first figure pays."""
    fig = Figure(figsize=(2, 1), layout="tight")
    ax = fig.subplots()
    ax.plot([1, 2], [0.0, 1.0], marker="o", label="warm")
    ax.set_xscale("log", base=2)
    ax.set_title("warm-up")
    ax.legend(fontsize=8)
    _png(fig)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata=_PNG_METADATA)
    return buf.getvalue()


def _bounds(ci: list[float | None] | None) -> tuple[float, float]:
    """An interval's two ends, refused where the report left it open (a row the figure cannot draw)."""
    if ci is None or ci[0] is None or ci[1] is None:
        raise ValueError(f"the figure needs both ends of this interval, not {ci}")
    return ci[0], ci[1]


def _literal_text(draw: Callable[[R], bytes]) -> Callable[[R], bytes]:
    """Draw a figure with mathtext off: a '$' in a model or arm name is a character, not a formula."""

    @functools.wraps(draw)
    def drawn(r: R) -> bytes:
        # Tick labels are laid out at savefig, so the whole drawing runs inside the setting.
        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(r)

    return drawn


@_literal_text
def passk_figure(r: DeltaReport | PassAtKFigure) -> bytes:
    """pass@k of both models with CI bands, and the delta with its CI band, against k (log2 axis)."""
    rows = r.pass_at_k
    ks = [row.k for row in rows]
    fig = Figure(figsize=(9, 3.6), layout="tight")
    ax, ax_d = fig.subplots(1, 2)
    for key, label, marker in (("pre", r.pre_model, "o"), ("post", r.post_model, "s")):
        y = [getattr(row, key) for row in rows]
        bands = [getattr(row, f"{key}_ci95") for row in rows]
        ax.plot(ks, y, marker=marker, label=f"{key}: {label}")
        ax.fill_between(ks, [b[0] for b in bands], [b[1] for b in bands], alpha=0.25)
    ax.set_ylabel("pass@k")
    ax.set_title("pass@k vs k (matched budget)")
    ax.legend(fontsize=8)
    ax_d.plot(ks, [row.delta for row in rows], marker="D", color="C2", label="post - pre")
    ax_d.fill_between(
        ks,
        [row.delta_ci95[0] for row in rows],
        [row.delta_ci95[1] for row in rows],
        color="C2",
        alpha=0.25,
        label=f"{ci_percent(r.settings.alpha)} CI",
    )
    ax_d.axhline(0.0, color="black", linewidth=0.8)
    ax_d.set_ylabel("pass@k delta")
    ax_d.set_title(f"claim: {r.claim}")
    ax_d.legend(fontsize=8)
    for a in (ax, ax_d):
        a.set_xscale("log", base=2)
        a.set_xticks(ks, [str(k) for k in ks])
        a.set_xlabel("k (samples)")
        a.grid(alpha=0.3)
    return _png(fig)


@_literal_text
def forest_figure(r: ArmComparison) -> bytes:
    """Forest plot: naive delta with its CI per contrast, budget-adjusted delta as an open marker."""
    rows = [*r.contrasts, *r.marginal]
    # The legend stands under the axes (never over a row): the figure is taller by its two lines.
    fig = Figure(figsize=(8, 0.55 * len(rows) + 2.3), layout="constrained")
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    for y, c in zip(ys, rows, strict=True):
        color = "grey" if c.ceiling else ("C0" if c.reference == "base" else "C1")
        lo, hi = c.ci95
        ax.errorbar(
            c.naive_delta,
            y,
            xerr=[[c.naive_delta - lo], [hi - c.naive_delta]],
            fmt="o",
            color=color,
            capsize=3,
        )
        if c.adjusted_delta is not None:
            # Drawn just below the naive estimate so equal values stay distinguishable.
            ax.plot(
                c.adjusted_delta,
                y - 0.22,
                marker="D",
                markerfacecolor="none",
                color=color,
                linestyle="none",
            )
            if c.adjusted_ci95 is not None:
                ax.plot(c.adjusted_ci95, [y - 0.22] * 2, color=color, linewidth=0.8, linestyle=":")
    labels = []
    for c in rows:
        label = f"{c.arm} vs {c.reference}"
        if c.ceiling:
            label += "\n(CEILING, not attributable)"
        labels.append(label)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.axvline(0.0, color="black", linewidth=0.8)
    m = r.settings.min_effect
    ax.axvspan(-m, m, color="grey", alpha=0.15, label=f"|delta| < min_effect ({m})")
    pct = ci_percent(r.settings.alpha)
    ax.plot([], [], marker="o", color="black", linestyle="none", label=f"naive delta, {pct} CI")
    adjusted = {"marker": "D", "markerfacecolor": "none", "color": "black", "linestyle": "none"}
    ax.plot([], [], label="budget-adjusted", **adjusted)
    # Every colour of the rows is in the legend: an arm against base, a marginal contrast, the ceiling.
    kinds = {
        "C0": "an arm against base",
        "C1": "marginal: training on top of an augmentation",
        "grey": "ceiling (three at once, not attributable)",
    }
    shown = {"grey" if c.ceiling else ("C0" if c.reference == "base" else "C1") for c in rows}
    for color, what in kinds.items():
        if color in shown:
            ax.plot([], [], marker="s", color=color, linestyle="none", label=what)
    ax.set_xlabel("delta in mean score (arm - reference)")
    ax.set_title(f"Every contrast: delta with its {pct} interval")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncol=3, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


@_literal_text
def trajectory_metrics_figure(r: TrajectoryReport) -> bytes:
    """Every paper metric of every checkpoint over its training step (the reference at 0); the spreads of
    avg@k (sd over runs) and Bayes@N (posterior sd) as bars. Positions in training order where a step is
    not known."""
    rows = r.metrics or []
    if r.status != "done" or not rows:
        fig = Figure(figsize=(6, 1.6), layout="tight")
        ax = fig.subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, f"trajectory: {r.status}", ha="center", va="center")
        return _png(fig)
    by_step = all(row.step is not None for row in rows)
    xs = [row.step if by_step else i for i, row in enumerate(rows)]
    k = rows[0].k
    fig = Figure(figsize=(7, 4), layout="tight")
    ax = fig.subplots()
    series = [("avg", "avg_sd", f"avg@{k} ± sd over runs"), ("maj", None, f"maj@{k}"),
              ("pass_at_k", None, f"pass@{k}"), ("pass_hat", None, f"pass^{k}"),
              ("bayes", "bayes_sd", f"Bayes@{k} ± posterior sd")]  # fmt: skip
    for i, (key, sd, label) in enumerate(series):
        if any(getattr(row, key) is None for row in rows):
            continue
        ys = [getattr(row, key) for row in rows]
        spreads = [getattr(row, sd) for row in rows] if sd else None
        err = spreads if spreads and all(x is not None for x in spreads) else None
        ax.errorbar(xs, ys, yerr=err, fmt="o-", color=f"C{i}", capsize=3, label=label)
    if by_step:
        ax.set_xlabel(f"training step ({rows[0].arm} at 0)")
    else:
        ax.set_xticks(xs, [row.arm for row in rows], fontsize=8)
        ax.set_xlabel("checkpoint (training order)")
    ax.set_ylabel("score")
    ax.set_title("Paper metrics over the checkpoints")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)


def trajectory_figure(r: TrajectoryReport) -> bytes:
    """Delta over the reference per checkpoint in training order with CIs; the placebo; trained vs placebo."""
    if r.status != "done" or not r.trajectory:
        fig = Figure(figsize=(6, 1.6), layout="tight")
        ax = fig.subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, f"trajectory: {r.status}", ha="center", va="center")
        return _png(fig)
    rows, pct = r.trajectory, ci_percent(r.settings.alpha)
    with_placebo = r.placebo_delta is not None
    fig = Figure(figsize=(9 if with_placebo else 6, 3.8), layout="tight")
    axes = fig.subplots(1, 2, width_ratios=[3, 1]) if with_placebo else [fig.subplots()]
    ax = axes[0]
    xs = list(range(len(rows)))
    ys = [row.delta for row in rows]
    lo = [row.delta - (row.ci95 or [row.delta] * 2)[0] for row in rows]
    hi = [(row.ci95 or [row.delta] * 2)[1] - row.delta for row in rows]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", color="C0", capsize=4, label=f"checkpoint, {pct} CI")
    if r.placebo_delta is not None:
        p, (p_lo, p_hi) = r.placebo_delta, _bounds(r.placebo_delta.ci95)
        ax.errorbar(
            [xs[-1] + 0.15],
            [p.delta],
            yerr=[[p.delta - p_lo], [p_hi - p.delta]],
            fmt="s",
            color="C3",
            capsize=4,
            label=f"placebo ({p.arm}), {pct} CI",
        )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(xs, [row.arm for row in rows], fontsize=8)
    ax.set_xlabel("checkpoint (training order)")
    ax.set_ylabel(f"delta in mean score over {rows[0].arm}")
    ax.set_title("Checkpoint trajectory")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    if r.reward_contrast is not None and with_placebo:
        rc, ax_r = r.reward_contrast, axes[1]
        r_lo, r_hi = _bounds(rc.ci95)
        ax_r.errorbar([0], [rc.delta], yerr=[[rc.delta - r_lo], [r_hi - rc.delta]], fmt="D", color="C2",
                      capsize=4)  # fmt: skip
        ax_r.axhline(0.0, color="black", linewidth=0.8)
        ax_r.set_xticks([0], [f"{rc.arm}\nvs {rc.reference}"], fontsize=8)
        ax_r.set_xlim(-0.8, 0.8)
        ax_r.set_title("the reward's effect", fontsize=9)
        ax_r.grid(alpha=0.3)
    return _png(fig)


@_literal_text
def reliability_figure(r: DeltaReport | ArmComparison) -> bytes:
    """Reliability diagram: accuracy of the majority answer against its confidence, per arm, with ECE."""
    calib = r.calibration
    fig = Figure(figsize=(5.2, 4.4), layout="tight")
    ax = fig.subplots()
    if not calib:
        ax.axis("off")
        ax.text(0.5, 0.5, "no calibration: the logs record no sample's answer", ha="center", va="center")
        return _png(fig)
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle="--", label="perfect calibration")
    for i, arm in enumerate(calib.arms):
        points = arm.reliability
        xs = [p.confidence for p in points]
        ys = [p.accuracy for p in points]
        sizes = [12 + 120 * p.items / max(1, sum(q.items for q in points)) for p in points]
        lo, hi = arm.ci95
        ax.plot(xs, ys, color=f"C{i}", linewidth=1.0)
        ax.scatter(xs, ys, s=sizes, color=f"C{i}", label=f"{arm.arm}: ECE {arm.ece:.3f} [{lo:.3f}, {hi:.3f}]")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("confidence (share of k samples giving the majority answer)")
    ax.set_ylabel("accuracy of the majority answer")
    ax.set_title(f"Reliability ({calib.n_bins} equal-width bins; marker size: items)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    return _png(fig)
