"""Cohen's d_z of paired differences with its exact interval, by inverting the noncentral t.

The noncentral t comes from scipy.special (nct.cdf is nctdtr), not from scipy.stats or scipy.optimize,
which take about a second to import; tests/test_effect_size.py checks it against scipy.stats.nct.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import nctdtr, nctdtrinc


@dataclass(frozen=True)
class EffectSize:
    """Cohen's d_z with its noncentral-t confidence interval."""

    dz: float
    lo: float
    hi: float


def cohens_dz(d: np.ndarray, alpha: float = 0.05) -> EffectSize | None:
    """Paired standardized effect mean(d)/sd(d) with an exact CI by inverting the noncentral t.

    None when it is undefined (fewer than two items, or every difference equal up to rounding).
    """
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    if n < 2:
        return None
    sd = float(d.std(ddof=1))
    # Differences equal in exact arithmetic (0.3 - 0.1 and 0.2 - 0.0) differ in their last bits; an exact
    # sd > 0 test would divide by that rounding noise and report an effect of 1e15.
    if not sd > 1e-9 * float(np.abs(d).max()):
        return None
    dz = float(d.mean()) / sd
    t, df, root = dz * math.sqrt(n), n - 1, math.sqrt(n)

    def ncp_for(target: float) -> float:
        def f(ncp: float) -> float:
            cdf = float(nctdtr(df, ncp, t))
            if math.isnan(cdf):  # far tails: P(T <= t) is 1 for ncp far below t and 0 far above
                cdf = 1.0 if ncp < t else 0.0
            return cdf - target

        # scipy.special.nctdtrinc inverts to about 1e-6 (cdflib's tolerance); bisection on nctdtr
        # from there reaches 1e-12, as scipy.optimize.brentq did, without importing scipy.optimize (0.6 s
        # of every report's start). f falls as ncp rises.
        guess = float(nctdtrinc(df, target, t))
        width = 1e-4 * (1.0 + abs(guess)) if math.isfinite(guess) else 1.0 + abs(t)
        lo, hi = (guess, guess) if math.isfinite(guess) else (t, t)
        while f(lo - width) < 0:
            width *= 4
        lo -= width
        while f(hi + width) > 0:
            width *= 4
        hi += width
        while hi - lo > 1e-12 * max(1.0, abs(lo)):
            mid = 0.5 * (lo + hi)
            if f(mid) > 0:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    return EffectSize(dz, ncp_for(1 - alpha / 2) / root, ncp_for(alpha / 2) / root)
