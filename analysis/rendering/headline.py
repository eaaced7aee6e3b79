"""The one plain sentence on top of the report page: the verdict and what the augmentations add.

A rendering of the reports' own numbers and verdicts (no statistic is computed here): trained vs base with
its interval and its claim in words, then what retrieval and tools add over base where that is
significant, said as what it is (lookup, not reasoning). Its numbers are the tables' own, as the tables
print them (score fractions to four decimals), and a verdict that is not significant is worded as every
report words it: "no detectable difference".
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.reports.number_text import interval, signed
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


def _trained_clause(d: DeltaReport) -> str:
    lo, hi = d.delta_ci95
    ci = interval([lo, hi]) if lo is not None and hi is not None else "(no interval)"
    significant = d.verdict.significant if d.verdict is not None else False
    pre, post = d.pre_arm, d.post_arm
    if d.claim.startswith("ONE MODEL"):
        return f"{post} vs {pre}, one model compared with itself: {signed(d.delta_mean)} {ci}"
    if not significant:
        return f"{post} vs {pre}: no detectable difference ({signed(d.delta_mean)} {ci})"
    verb = "beats" if d.delta_mean > 0 else "falls behind"
    kmax = max(int(k) for k in d.pass_at_k_pre)
    words = CLAIM_WORDS.get(d.claim, "")
    said = f"{post} {verb} {pre} by {signed(d.delta_mean)} {ci}"
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
    size = signed(low) if len(gains) == 1 else f"{signed(low)} to {signed(high)}"
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
