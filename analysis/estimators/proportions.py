"""Intervals for paired 0/1 outcomes: Newcombe's hybrid score interval for a difference of paired proportions.

Why it is here: below 100 items the reports invert the sign-flip test for a delta's interval, which covers
well when the per-item differences are spread out but not when they are 0/1 outcomes that are mostly tied
(pass@K at K = k with middling rates, where nearly every item is solved by both arms; a budget point with
one sample per item): every difference 0 inverts to the point [0, 0]. `benchmarks/bench_calibration.py`
measured 0.69 and 0.90 coverage there. Newcombe's interval (method 10 of Newcombe 1998, "Improved
confidence intervals for the difference between binomial proportions based on paired data", Statistics in
Medicine 17: 2635-2650) is built for this case: each arm's Wilson score interval, combined by square and
add with the pairs' correlation. It is what Fagerland, Lydersen and Laake (2014, "Recommended tests and
confidence intervals for paired binomial proportions", Statistics in Medicine 33: 2850-2875) recommend for
small samples. Hand-written: neither scipy nor statsmodels has the paired version (scipy's Wilson interval,
`binomtest(...).proportion_ci(method="wilson")`, is what the tests check the single-proportion part
against; it is not called here because importing scipy.stats costs the reports a second).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri


def is_binary(*arrays: np.ndarray) -> bool:
    """True when every value of every array is 0 or 1."""
    return all(np.isin(np.asarray(a), (0.0, 1.0)).all() for a in arrays)


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson's score interval for one binomial proportion (Wilson 1927), without continuity correction."""
    if n <= 0:
        raise ValueError("a Wilson interval needs at least one trial")
    z = float(ndtri(1 - alpha / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_paired_interval(ref: np.ndarray, arm: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for mean(arm) - mean(ref) of paired 0/1 outcomes.

    ref and arm hold one 0/1 outcome per item, in the same item order. The correlation of the two
    proportions enters with Newcombe's continuity-corrected phi (0 when the table's cross-product
    difference is within n/2 above zero), as in his paper and in Fagerland et al.'s implementation.
    """
    ref, arm = np.asarray(ref, np.float64).ravel(), np.asarray(arm, np.float64).ravel()
    if ref.shape != arm.shape or ref.size == 0:
        raise ValueError("paired outcomes need two arrays of the same, non-zero length")
    if not is_binary(ref, arm):
        raise ValueError("Newcombe's paired interval is for 0/1 outcomes")
    n = ref.size
    # The paired 2x2 table with arm as the first margin: both right, arm only, ref only, both wrong.
    both = int(((arm == 1) & (ref == 1)).sum())
    arm_only = int(((arm == 1) & (ref == 0)).sum())
    ref_only = int(((arm == 0) & (ref == 1)).sum())
    neither = n - both - arm_only - ref_only
    x_arm, x_ref = both + arm_only, both + ref_only
    p1, p2 = x_arm / n, x_ref / n
    l1, u1 = wilson_interval(x_arm, n, alpha)
    l2, u2 = wilson_interval(x_ref, n, alpha)
    margins = (x_arm, n - x_arm, x_ref, n - x_ref)
    phi = 0.0
    if min(margins) > 0:
        cross = both * neither - arm_only * ref_only
        corrected = cross - n / 2 if cross > n / 2 else (0.0 if cross >= 0 else cross)
        phi = corrected / math.sqrt(math.prod(margins))
    delta = p1 - p2
    lo = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)))
    hi = delta + math.sqrt(max(0.0, (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)))
    return max(-1.0, lo), min(1.0, hi)
