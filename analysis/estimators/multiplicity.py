"""Adjusted p-values of a family of tests: Benjamini-Hochberg q-values and Holm's step-down."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bh_qvalues(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), as scipy.stats.false_discovery_control does."""
    p = np.asarray(p_values, dtype=np.float64)
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p[~((p >= 0) & (p <= 1))][0]!r}")
    if p.size <= 1:
        return p.copy()
    m = p.size
    order = np.argsort(p)
    # Step-up: q of the i-th smallest p is the least p_(j) m / j over j >= i.
    q = p[order] * (m / np.arange(1, m + 1, dtype=np.float64))
    np.minimum.accumulate(q[::-1], out=q[::-1])
    out = np.empty_like(q)
    out[order] = q
    return np.clip(out, 0.0, 1.0)


def holm_adjusted(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): reject where adjusted p <= alpha, FWER at alpha."""
    p = np.asarray(p_values, dtype=np.float64)
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p[~((p >= 0) & (p <= 1))][0]!r}")
    m = p.size
    order = np.argsort(p, kind="stable")
    # The i-th smallest p is multiplied by (m - i), then made non-decreasing along the order.
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return np.clip(out, 0.0, 1.0)
