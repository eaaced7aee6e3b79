"""The paired sign-flip permutation test, the interval that inverts it, and a small suite's interval.

Why the test is hand-written instead of calling scipy.stats.permutation_test: at the size this project
promises (10,000 items x 10,000 permutations, several arms) scipy materialises each permutation as an
array of item values and recomputes the statistic from scratch; here a batch of permutations is one
matrix product (or lookups of random bytes in tables of 8 items' flips), and items with identical rows
flip together as one binomial count. tests/test_signflip.py checks it against scipy on small data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.estimators import proportions
from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import BATCH_ELEMENTS, as_rows, distinct_rows


@dataclass(frozen=True)
class SignFlip:
    """Two-sided sign-flip permutation test of mean(d) = 0, per column."""

    p: np.ndarray
    exact: bool
    n_perm: int


def _sign_flip_null(d: np.ndarray, n_perm: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    n, m = d.shape
    if n < 63 and 2**n <= n_perm:
        codes = np.arange(2**n, dtype=np.int64)
        flips = ((codes[:, None] >> np.arange(n)) & 1).astype(np.float64)
        return d.sum(axis=0) - 2.0 * (flips @ d), True
    distinct, counts = distinct_rows(d)
    if 8 * len(distinct) <= n:
        # Items with identical rows are exchangeable: how many of a group keep their sign is Binomial(m, 1/2).
        kept = rng.binomial(counts, 0.5, size=(n_perm, counts.size)).astype(np.float64)
        return (2.0 * kept - counts) @ distinct, False
    total = d.sum(axis=0)
    n_bytes = (n + 7) // 8
    tables = _byte_tables(d) if m <= _TABLE_COLUMNS else None
    # The batch of the unpacked draws (the same random bytes whichever way they are summed).
    step = max(1, min(n_perm, BATCH_ELEMENTS // n))
    parts = []
    for s in range(0, n_perm, step):
        b = min(step, n_perm - s)
        random_bytes = rng.integers(0, 256, (b, n_bytes), dtype=np.uint8)
        if tables is not None:
            # Byte j of a draw names which of items 8j..8j+7 flip: one lookup instead of 8 multiply-adds.
            flipped = tables[np.arange(n_bytes), random_bytes].sum(axis=1)
        else:
            flipped = np.unpackbits(random_bytes, axis=1, count=n).astype(np.float64) @ d
        parts.append(total - 2.0 * flipped)
    return np.concatenate(parts, axis=0), False


_TABLE_COLUMNS = 8  # columns up to which sign flips are summed from byte tables (n/8 x 256 x m floats)
# (256, 8): bit t of each byte value, least significant first; the subsets of 8 things a byte names.
BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)


def _byte_tables(d: np.ndarray) -> np.ndarray:
    """(n/8, 256, m): for byte j and each value v of it, the sum of d over items 8j..8j+7 whose bit is set.

    Bits are read most significant first, as np.unpackbits reads them, so a table lookup of a random byte
    gives the sum that unpacking it and multiplying by d gives (to rounding).
    """
    n, m = d.shape
    padded = np.zeros((-(-n // 8) * 8, m))
    padded[:n] = d
    return np.einsum("vt,jtm->jvm", BYTE_BITS[:, ::-1], padded.reshape(-1, 8, m))


def sign_flip_test(d: np.ndarray, n_perm: int, rng: np.random.Generator) -> SignFlip:
    """Paired permutation test: under H0 each difference's sign is a fair coin; two-sided, as scipy.

    Exact enumeration of all 2^n sign vectors when 2^n <= n_perm, Monte Carlo otherwise, where the
    observed statistic counts as one of the n_perm + 1 (p never 0). Columns share the sign draws.
    """
    d = as_rows(d)
    null, exact = _sign_flip_null(d, n_perm, rng)
    observed = d.sum(axis=0)
    # Tolerance for sums that are equal in exact arithmetic but were added in another order.
    gamma = np.maximum(100 * np.finfo(np.float64).eps * np.abs(observed), 1e-10 * np.abs(d).sum(axis=0))
    adjust = 0 if exact else 1
    size = null.shape[0]
    less = ((null <= observed + gamma).sum(axis=0) + adjust) / (size + adjust)
    greater = ((null >= observed - gamma).sum(axis=0) + adjust) / (size + adjust)
    return SignFlip(np.clip(2 * np.minimum(less, greater), 0.0, 1.0), exact, int(size))


def sign_flip_min_p(n_items: int, n_perm: int) -> float:
    """The smallest p sign_flip_test can return for n items: 2 / 2^n exact, 2 / (n_perm + 1) Monte Carlo."""
    if n_items < 63 and 2**n_items <= n_perm:
        return min(1.0, 2.0 ** (1 - n_items))
    return min(1.0, 2.0 / (n_perm + 1))


def sign_flip_interval(
    d: np.ndarray, n_perm: int, rng: np.random.Generator, alpha: float = 0.05, tol: float = 1e-6
) -> Interval:
    """The interval of mu whose sign-flip test of d - mu does not reject at alpha (test inversion).

    Every mu inside keeps p(mu) > alpha, so the interval excludes 0 exactly when the test of d rejects
    (with these sign vectors): interval and test cannot disagree. Exact when the differences are
    symmetric about their mean, as they are under the null of exchangeable arms. Sign vectors are
    enumerated when 2^n <= n_perm, else n_perm are drawn (the observed one counts among them).
    """
    d = np.asarray(d, dtype=np.float64).ravel()
    n = d.size
    if n == 0:
        raise ValueError("sign-flip interval of an empty sample")
    if np.ptp(d) == 0:
        return Interval(float(d[0]), float(d[0]), "point (constant)")
    if n < 63 and 2**n <= n_perm:
        codes = np.arange(2**n, dtype=np.int64)
        signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
        adjust = 0
    else:
        signs = 1.0 - 2.0 * rng.integers(0, 2, (n_perm, n)).astype(np.float64)
        adjust = 1
    sd, s1 = signs @ d, signs.sum(axis=1)
    size = signs.shape[0]

    def p_at(mu: float) -> float:
        null = sd - mu * s1
        observed = d.sum() - n * mu
        gamma = 1e-10 * max(1.0, abs(d).sum())
        less = ((null <= observed + gamma).sum() + adjust) / (size + adjust)
        greater = ((null >= observed - gamma).sum() + adjust) / (size + adjust)
        return min(1.0, 2 * min(less, greater))

    est = float(d.mean())
    if p_at(est) <= alpha:
        return Interval(est, est, "sign-flip inversion (no mu kept)")

    def edge(outside: float) -> float:
        inside = est
        while abs(outside - inside) > tol:
            mid = 0.5 * (inside + outside)
            inside, outside = (mid, outside) if p_at(mid) > alpha else (inside, mid)
        return inside

    lo_out, hi_out = float(d.min()), float(d.max())
    lo = lo_out if p_at(lo_out) > alpha else edge(lo_out)
    hi = hi_out if p_at(hi_out) > alpha else edge(hi_out)
    # p(mu) jumps where mu meets tied differences (zeros above all: flipping a zero changes nothing, a
    # zero minus mu does), so the kept set is not always one piece: the interval is its hull, with 0 and
    # each tied value kept where its own p exceeds alpha.
    for mu in np.unique(np.append(d, 0.0)):
        if (mu < lo or mu > hi) and p_at(float(mu)) > alpha:
            lo, hi = min(lo, float(mu)), max(hi, float(mu))
    return Interval(lo, hi, "sign-flip inversion")


def small_suite_interval(
    ref: np.ndarray, arm: np.ndarray, n_perm: int, rng: np.random.Generator, alpha: float = 0.05
) -> Interval:
    """A small suite's interval of mean(arm - ref) over paired items: Newcombe's paired score interval
    when both arms' per-item values are 0/1, else the inversion of the sign-flip test.

    The sign-flip inversion turns mostly tied 0/1 differences into a point or a sliver (every difference 0
    gives [0, 0]), which covers far less than 95% (analysis/estimators/proportions.py says where it was
    measured).
    """
    if proportions.is_binary(ref, arm):
        return Interval(*proportions.newcombe_paired_interval(ref, arm, alpha), "Newcombe paired score")
    return sign_flip_interval(np.asarray(arm, np.float64) - np.asarray(ref, np.float64), n_perm, rng, alpha)
