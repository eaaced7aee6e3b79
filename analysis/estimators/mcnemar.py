"""An item's majority verdict and McNemar's test on the items whose verdict flipped between two arms.

The distributions come from scipy.special, the kernels scipy.stats itself evaluates (chi2.sf is chdtrc, a
binomial tail is betainc), not from scipy.stats, which takes about a second to import (half the time of a
whole delta report); tests/test_mcnemar.py checks them against scipy.stats' binomtest and chi2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betainc, chdtrc


@dataclass(frozen=True)
class McNemar:
    """McNemar's test on discordant pairs: b = wrong->right, c = right->wrong."""

    b: int
    c: int
    chi2: float
    chi2_p: float
    exact_p: float


def mcnemar(b: int, c: int) -> McNemar:
    """Exact two-sided binomial p (as scipy.stats.binomtest) and the continuity-corrected chi2 (as R)."""
    b, c = int(b), int(c)
    n = b + c
    if n == 0:
        return McNemar(b, c, 0.0, 1.0, 1.0)
    # R applies the continuity correction only when |b - c| >= 1, so b = c gives chi2 = 0 and p = 1.
    correction = 1 if abs(b - c) >= 1 else 0
    chi2 = max(abs(b - c) - correction, 0) ** 2 / n
    # Binomial(n, 1/2) is symmetric, so the outcomes at most as likely as b are the two tails beyond
    # min(b, c): p = 2 P(X >= max(b, c)), and P(X >= m) is the regularized beta I_1/2(m, n - m + 1).
    exact = 1.0 if b == c else min(1.0, 2.0 * float(betainc(max(b, c), min(b, c) + 1, 0.5)))
    return McNemar(b, c, chi2, float(chdtrc(1, chi2)), exact)


def majority_verdicts(item_mean: np.ndarray) -> np.ndarray:
    """An item's verdict (True = right) from its mean score over k samples: right when it is >= 0.5."""
    return np.asarray(item_mean, dtype=np.float64) >= 0.5


def mcnemar_from_verdicts(ref: np.ndarray, arm: np.ndarray) -> McNemar:
    """McNemar from paired boolean verdicts (True = correct)."""
    ref, arm = np.asarray(ref, bool), np.asarray(arm, bool)
    return mcnemar(int(np.sum(~ref & arm)), int(np.sum(ref & ~arm)))
