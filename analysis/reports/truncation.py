"""Samples that ended at the budget: per arm, how many stopped at max_tokens (finish reason `length`).

Every arm of a comparison runs at the same max_tokens, so a sample that ends there was cut off rather than
finished, and it scores as wrong unless its answer came before the cut (a reasoning model cut inside its
thinking has no answer at all). A gap between arms in this share is a budget effect inside the accuracy
delta: one arm writes or thinks longer, which is not the same as reasoning worse. The reports print this
section beside the delta so a reader sees it; the delta report's token budget curve shows the delta at
smaller budgets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract.evallog import EvalLog

AT_BUDGET = "length"


def budget_hits(log: EvalLog) -> dict[str, Any] | None:
    """Samples and those that ended at the budget in one log; None when it does not record finish reasons."""
    reasons = [it.sample_finish_reasons() for it in log.items]
    if any(r is None or None in r for r in reasons):
        return None
    samples = sum(len(r) for r in reasons if r is not None)
    hits = sum(r.count(AT_BUDGET) for r in reasons if r is not None)
    return {"samples": samples, "at_budget": hits, "share": hits / samples if samples else None}


def section(logs: Mapping[str, EvalLog], max_tokens: int) -> dict[str, Any]:
    """The report section: each arm's count and share, and the widest gap in share between two arms."""
    rows = []
    for arm, log in logs.items():
        hits = budget_hits(log)
        rows.append({"arm": arm, **(hits or {"samples": None, "at_budget": None, "share": None})})
    shares = [r["share"] for r in rows if r["share"] is not None]
    return {
        "max_tokens": max_tokens,
        "finish_reason": AT_BUDGET,
        "arms": rows,
        "share_gap": max(shares) - min(shares) if len(shares) >= 2 else None,
    }
