"""The one plain sentence on top of the report page: the verdict and what the augmentations add, in points.

A rendering of the reports' own numbers and verdicts (no statistic is computed here): trained vs base with
its interval and its claim in words, then what retrieval and tools add over base where that is
significant, said as what it is (lookup, not reasoning).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

from analysis.reports.report_models import ArmContrast, DeltaReport

# The claim of trained vs base, in words a reader takes in at a glance (the report's detail says more).
CLAIM_WORDS = {
    "SHARPENING": "sharpening (pass@1 up, pass@{k} not), not expansion",
    "EXPANSION": "expansion: pass@{k} rose too, it solves items that were out of reach",
    "REGRESSION": "a regression",
    "UNDETERMINED": "with one sample per item, sharpening and expansion cannot be told apart",
    "TOO FEW ITEMS": "too few items for any claim",
    "FORMAT": "format, not reasoning: it writes its answer where the reader looks more often",
    "FORMAT (decline)": "format, not reasoning: it writes its answer where the reader looks less often",
}
# What each augmentation over base is, by its attribution.
AUGMENTATIONS = {"lookup": "retrieval", "tool_access": "tools"}


def points(x: float) -> str:
    """A score difference in percentage points, signed, one decimal ('+3.5').

    Rounded half up from the four decimals the tables print (+0.0525 is +5.3, as a reader rounds it), not
    from the binary float underneath (0.0525 is stored as 0.052499...).
    """
    shown = Decimal(f"{x:.4f}") * 100
    return f"{shown.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP):+}"


def _trained_clause(d: DeltaReport) -> str:
    lo, hi = d.delta_ci95
    ci = f"[{points(lo)}, {points(hi)}]" if lo is not None and hi is not None else "(no interval)"
    significant = d.verdict.significant if d.verdict is not None else False
    pre, post = d.pre_arm, d.post_arm
    if d.claim.startswith("ONE MODEL"):
        return f"{post} vs {pre}, one model compared with itself: {points(d.delta_mean)} points {ci}"
    if not significant:
        return f"{post} vs {pre}: no detectable difference ({points(d.delta_mean)} points {ci})"
    verb = "beats" if d.delta_mean > 0 else "falls behind"
    kmax = max(int(k) for k in d.pass_at_k_pre)
    words = CLAIM_WORDS.get(d.claim, "")
    said = f"{post} {verb} {pre} by {points(abs(d.delta_mean)).lstrip('+')} points {ci}"
    return f"{said}: {words.format(k=kmax)}" if words else said


def _augmentation_clause(contrasts: Sequence[ArmContrast], reference: str) -> str:
    gains = [
        (AUGMENTATIONS[c.attribution], c.naive_delta)
        for c in contrasts
        if c.reference == reference and c.attribution in AUGMENTATIONS and c.significant
    ]
    if not gains:
        return ""
    names = sorted({name for name, _ in gains}, key=list(AUGMENTATIONS.values()).index)
    low, high = min(g for _, g in gains), max(g for _, g in gains)
    shown = (lambda x: points(x).lstrip("+")) if low > 0 else points
    size = f"{shown(low)} points" if len(gains) == 1 else f"{shown(low)} to {shown(high)} points"
    who = " and ".join(names)
    verb = "adds" if len(names) == 1 else "add"
    if high < 0:
        return f"{who} {verb} {size}, lookup and not reasoning"
    return f"{who} {verb} {size}, which is lookup, not reasoning"


def plain_sentence(d: DeltaReport, contrasts: Sequence[ArmContrast]) -> str:
    """The page's verdict in one sentence: trained vs base in points with its interval, then augmentations."""
    first = _trained_clause(d)
    second = _augmentation_clause(contrasts, d.pre_arm)
    sentence = f"{first}; {second}." if second else f"{first}."
    return sentence[0].upper() + sentence[1:]
