"""Every estimator the analyses use, once: seeded (numpy Generator), vectorized, exact where cheap.

The resampling engine is `bootstrap_distribution`: a statistic is a function of per-item weights, so one
draw of resampling weights serves every column computed from it (all pass@k values and their deltas, all
budget contrasts), and means, pass@k, ECE and the budget adjustment share one code path. Reports pass
each purpose its own Generator from `rng_for(seed, purpose)`, so adding or dropping an analysis never
shifts the draws of another.

Why the bootstrap and the sign-flip test are hand-written instead of calling scipy.stats.bootstrap and
scipy.stats.permutation_test: at the size this project promises (10,000 items x 10,000 resamples, every
k of pass@k, several arms) scipy materialises each resample as an array of item values (10^8 floats a
statistic, or a Python-level loop over small batches) and recomputes every statistic from scratch; the
weights formulation turns each statistic into one matrix product per batch, and logs of 0/1 scores
(where items fall into a few hundred distinct rows) collapse to a multinomial draw over those rows.
tests/test_evalstats.py checks both against scipy on small data (same Generator, same draws).

The tests' distributions come from scipy.special, the kernels scipy.stats itself evaluates (chi2.sf is
chdtrc, nct.cdf is nctdtr, a binomial tail is betainc), not from scipy.stats: importing scipy.stats takes
about a second, half the time of a whole delta report. tests/test_evalstats.py checks each against its
scipy.stats counterpart (binomtest, chi2, nct, false_discovery_control).
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.special import betainc, chdtrc, nctdtr, nctdtrinc, ndtr, ndtri

from analysis import proportions

# A statistic of a weighted sample: (weights (b, r), rows (r, p)) -> (b, m).
Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]

_BATCH_ELEMENTS = 1 << 22  # per batch of resamples: 4 Mi weights (32 MiB as float64)
_DRAW_THREADS = 2  # threads drawing batches of resamples side by side
_MIN_BATCHES = 8  # a grouped draw is cut into at least this many batches, for the threads to share


def rng_for(seed: int, purpose: str) -> np.random.Generator:
    """A Generator for one named purpose of one report, derived from the analysis seed."""
    return np.random.default_rng(
        np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(purpose.encode())])
    )


@dataclass(frozen=True)
class Interval:
    """A confidence interval and the method that made it."""

    lo: float
    hi: float
    method: str

    def as_list(self) -> list[float]:
        """[lo, hi] for a JSON report."""
        return [self.lo, self.hi]

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of zero."""
        return self.lo > 0 or self.hi < 0


# ---------------------------------------------------------------------------------------------------------
# The resampling engine


def weighted_means(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Column means of a weighted sample: the statistic behind every bootstrap of a mean."""
    return (w @ rows) / w.sum(axis=1, keepdims=True)


def _as_rows(x: np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows in order of first occurrence, and how many items have each."""
    # One column: a 1-d unique (np.unique with axis=0 sorts rows as records, ten times slower).
    keys = rows[:, 0] if rows.shape[1] == 1 else rows
    _, first, counts = np.unique(
        keys, axis=None if keys.ndim == 1 else 0, return_index=True, return_counts=True
    )
    # First-occurrence order ties the draw to how items group, not to their values, so negating the
    # data (swapping pre and post) reuses exactly the same draws.
    order = np.argsort(first, kind="stable")
    return rows[first[order]], counts[order]


def _groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct rows and how many items have each, when few enough (at most n/8) to be drawn grouped."""
    if rows.shape[1] > 1:
        # Rows that differ mostly differ in a random projection: more than n/8 distinct projections
        # prove more than n/8 distinct rows, without sorting the rows (a tenth of a second at 10,000 x 200).
        projection = rows @ np.random.default_rng(0).standard_normal(rows.shape[1])
        if 8 * np.unique(projection).size > rows.shape[0]:
            return None
    distinct, counts = _distinct_rows(rows)
    return (distinct, counts) if 8 * len(distinct) <= rows.shape[0] else None


def bootstrap_distribution(
    rows: np.ndarray,
    statistic: Statistic,
    n_boot: int,
    rng: np.random.Generator,
    *,
    batch: int | None = None,
    compress: bool = True,
) -> np.ndarray:
    """Bootstrap distribution (n_boot, m) of a weighted-sample statistic, resampling the rows (items).

    Each resample draws n items with replacement; item i enters with weight = times drawn. With
    compress=False the draws are those of scipy.stats.bootstrap (same Generator, same batch). With
    compress=True and at most n/8 distinct rows, the weights of identical rows are drawn together as one
    multinomial, which is the same distribution at a fraction of the cost; with more distinct rows the
    indices are drawn as 32-bit integers. Both are drawn in batches by threads, each batch from its own
    child Generator of rng (the same distribution, other draws than scipy's; the result does not depend
    on the number of threads).
    """
    rows = _as_rows(rows)
    n = rows.shape[0]
    if n == 0:
        raise ValueError("bootstrap of an empty sample")
    if compress and (grouped := _groups(rows)) is not None:
        return _grouped_draws(*grouped, statistic, n_boot, rng, batch)
    step = batch or max(1, min(n_boot, _BATCH_ELEMENTS // n))
    if compress:
        return _item_draws(rows, statistic, n_boot, step, rng)
    parts = []
    for s in range(0, n_boot, step):
        b = min(step, n_boot - s)
        idx = rng.integers(0, n, (b, n))
        if statistic is weighted_means and rows.shape[1] <= 4:
            # Same draws, same means; gathering a few columns is faster than counts times rows.
            parts.append(np.take(rows, idx, axis=0).mean(axis=1))
            continue
        parts.append(statistic(_counts(idx, n), rows))
    return np.concatenate(parts, axis=0)


def _grouped_draws(
    distinct: np.ndarray,
    counts: np.ndarray,
    statistic: Statistic,
    n_boot: int,
    rng: np.random.Generator,
    batch: int | None = None,
) -> np.ndarray:
    """The bootstrap distribution with the weights of identical rows drawn together as one multinomial."""
    n = int(counts.sum())
    p = counts / n
    # At least _MIN_BATCHES batches, so that threads share the draw (a multinomial costs about 150 ns a
    # distinct row and resample: 0.4 s for 300 rows at 10,000 resamples).
    step = batch or max(1, min(_BATCH_ELEMENTS // len(distinct), -(-n_boot // _MIN_BATCHES)))

    def draw(child: np.random.Generator, size: int) -> np.ndarray:
        return statistic(child.multinomial(n, p, size=size).astype(np.float64), distinct)

    return _in_threads(n_boot, step, rng, draw)


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(b, n) resampling weights: how often each of n items was drawn in each row of indices."""
    w = np.empty((idx.shape[0], n))
    # Counting one resample at a time keeps its n counters in cache (twice as fast at 10,000 items).
    for j in range(idx.shape[0]):
        w[j] = np.bincount(idx[j], minlength=n)
    return w


def _item_draws(
    rows: np.ndarray, statistic: Statistic, n_boot: int, step: int, rng: np.random.Generator
) -> np.ndarray:
    """The bootstrap distribution from item-by-item draws of 32-bit indices, batches drawn by threads.

    The means of a few columns are gathered in the threads too (np.take and sums release the GIL); a
    statistic of more columns counts each batch in this thread (bincount holds the GIL) while the threads
    draw the next.
    """
    n = rows.shape[0]
    gather = statistic is weighted_means and rows.shape[1] <= 4

    def draw(child: np.random.Generator, size: int) -> np.ndarray:
        # 32-bit indices: half the random bits of 64-bit ones, the same uniform draw.
        idx = child.integers(0, n, (size, n), dtype=np.uint32)
        return np.take(rows, idx, axis=0).mean(axis=1) if gather else idx

    if gather:
        return _in_threads(n_boot, step, rng, draw)
    return _in_threads(n_boot, step, rng, draw, lambda idx: statistic(_counts(idx, n), rows))


def _in_threads(
    n_boot: int,
    step: int,
    rng: np.random.Generator,
    draw: Callable[[np.random.Generator, int], np.ndarray],
    finish: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """draw(child, size) for each batch of resamples by threads, finish(result) here, joined in order.

    numpy releases the GIL while it draws, gathers and multiplies, so _DRAW_THREADS threads draw batches
    side by side. Each batch's Generator is spawned from rng in batch order, so the result does not depend
    on the number of threads, nor on timing. At most _DRAW_THREADS batches wait at a time.
    """
    starts = list(range(0, n_boot, step))
    children = rng.spawn(len(starts))

    def submit(pool: ThreadPoolExecutor, i: int) -> Future[np.ndarray]:
        return pool.submit(draw, children[i], min(step, n_boot - starts[i]))

    parts = []
    with ThreadPoolExecutor(_DRAW_THREADS) as pool:
        ahead = deque(submit(pool, i) for i in range(min(_DRAW_THREADS, len(starts))))
        for i in range(len(starts)):
            done = ahead.popleft().result()
            if i + _DRAW_THREADS < len(starts):
                ahead.append(submit(pool, i + _DRAW_THREADS))
            parts.append(done if finish is None else finish(done))
    return np.concatenate(parts, axis=0)


def percentile_interval(theta_b: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of a bootstrap distribution (linear interpolation, as scipy)."""
    lo, hi = np.quantile(theta_b, [alpha / 2, 1 - alpha / 2], axis=0)
    return np.atleast_1d(lo), np.atleast_1d(hi)


def _mean_acceleration(x: np.ndarray) -> np.ndarray:
    """Jackknife acceleration of a column mean, in closed form (leave-one-out means are linear)."""
    u = x - x.mean(axis=0)
    u2 = u * u  # u**3 calls pow() per element: ten times slower than two products
    num = (u2 * u).sum(axis=0)
    den = u2.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = num / (6.0 * den**1.5)
    return np.where(den > 0, a, 0.0)


def bca_interval_means(
    x: np.ndarray, theta_b: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """BCa interval per column for column means (Efron & Tibshirani 14.3); degenerate cases fall back.

    Constant data gives the point interval; where the bias correction is infinite (the estimate lies
    outside every resample) the percentile interval is returned and labelled so, never NaN.
    """
    x = _as_rows(x)
    theta_hat = x.mean(axis=0)
    big_b = theta_b.shape[0]
    share = ((theta_b < theta_hat).sum(axis=0) + (theta_b <= theta_hat).sum(axis=0)) / (2 * big_b)
    z0 = ndtri(share)
    a = _mean_acceleration(x)
    z_lo, z_hi = ndtri(alpha / 2), ndtri(1 - alpha / 2)
    p_lo, p_hi = percentile_interval(theta_b, alpha)
    lo, hi, methods = np.empty_like(theta_hat), np.empty_like(theta_hat), []
    for j in range(theta_hat.size):
        if np.all(theta_b[:, j] == theta_hat[j]):
            lo[j] = hi[j] = theta_hat[j]
            methods.append("point (constant)")
            continue
        q = [ndtr(z0[j] + (z0[j] + z) / (1 - a[j] * (z0[j] + z))) for z in (z_lo, z_hi)]
        if not np.all(np.isfinite(q)):
            lo[j], hi[j] = p_lo[j], p_hi[j]
            methods.append("percentile (BCa undefined)")
            continue
        lo[j], hi[j] = np.quantile(theta_b[:, j], q)
        methods.append("bca")
    return lo, hi, methods


def studentized_interval_means(
    x: np.ndarray, theta_b: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Bootstrap-t interval per column mean (Efron & Tibshirani 12.5), from draws of [means, mean squares].

    theta_b is (B, 2m): each resample's column means, then its means of squares, so each resample's
    standard error comes from the same draw. A resample with no spread has t = 0 when its mean is the
    estimate, else an infinite t; the interval is clipped to the range of the data, where the mean lies.
    Constant data gives the point interval.
    """
    x = _as_rows(x)
    n, m = x.shape
    est = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(m)
    mean_b, sq_b = theta_b[:, :m], theta_b[:, m:]
    var_b = np.maximum(sq_b - mean_b**2, 0.0) * (n / max(n - 1, 1))
    se_b = np.sqrt(var_b / n)
    diff = mean_b - est
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se_b > 0, diff / np.where(se_b > 0, se_b, 1.0), np.sign(diff) * np.inf)
    t = np.nan_to_num(t, nan=0.0, posinf=1e12, neginf=-1e12)
    t_lo, t_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2], axis=0)
    lo = np.clip(est - t_hi * se, x.min(axis=0), x.max(axis=0))
    hi = np.clip(est - t_lo * se, x.min(axis=0), x.max(axis=0))
    methods = []
    for j in range(m):
        if se[j] == 0:
            lo[j] = hi[j] = est[j]
            methods.append("point (constant)")
        else:
            methods.append("studentized")
    return np.atleast_1d(lo), np.atleast_1d(hi), methods


def bootstrap_mean_ci(
    x: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
    batch: int | None = None,
    compress: bool = True,
) -> list[Interval]:
    """Bootstrap CI of the mean of each column of x (n,) or (n, m); 'bca', 'studentized' or 'percentile'."""
    rows = _as_rows(x)
    theta_b = None
    compress_columns = compress and method != "studentized"
    # Each interval reads its own column only, so a few columns that group on their own (0/1 scores at
    # a few token budgets) may be drawn one by one, grouped, when their rows together do not group: a
    # multinomial draw per distinct value costs about what 9 item-by-item draws do.
    if compress_columns and 1 < rows.shape[1] <= 32 and _groups(rows) is None:
        columns = [_distinct_rows(rows[:, [j]]) for j in range(rows.shape[1])]
        if 9 * sum(len(c[1]) for c in columns) < len(rows):
            theta_b = np.hstack([_grouped_draws(*c, weighted_means, n_boot, rng, batch) for c in columns])
    if theta_b is None and method != "studentized":
        theta_b = bootstrap_distribution(rows, weighted_means, n_boot, rng, batch=batch, compress=compress)
    if method == "studentized":
        # Means and mean squares from one draw: the t of each resample needs its own standard error.
        theta_b = bootstrap_distribution(
            np.hstack([rows, rows * rows]), weighted_means, n_boot, rng, batch=batch, compress=compress
        )
        lo, hi, methods = studentized_interval_means(rows, theta_b, alpha)
    elif method == "bca":
        lo, hi, methods = bca_interval_means(rows, theta_b, alpha)
    elif method == "percentile":
        lo, hi = percentile_interval(theta_b, alpha)
        methods = ["percentile"] * rows.shape[1]
    else:
        raise ValueError(f"method must be 'bca', 'studentized' or 'percentile', not {method!r}")
    return [Interval(float(a), float(b), m) for a, b, m in zip(lo, hi, methods, strict=True)]


def paired_bootstrap_ci(
    pre: np.ndarray,
    post: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
    compress: bool = True,
) -> Interval:
    """CI of mean(post - pre) over shared items, resampling pairs (never the two arms independently)."""
    d = np.asarray(post, dtype=np.float64) - np.asarray(pre, dtype=np.float64)
    return bootstrap_mean_ci(d, n_boot, rng, alpha=alpha, method=method, compress=compress)[0]


def cluster_bootstrap(
    clusters: np.ndarray,
    per_cluster: Callable[[np.ndarray], np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
    *,
    batch: int | None = None,
    compress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster bootstrap of a mean over items of a per-item summary: (estimate (m,), distribution (B, m)).

    clusters is (n_items, k, ...): each item with its k samples. Only the top level is resampled (Field &
    Welsh 2007): a drawn item brings all its k samples, so its summary is unchanged and computed once.
    """
    summaries = _as_rows(per_cluster(np.asarray(clusters)))
    theta_b = bootstrap_distribution(summaries, weighted_means, n_boot, rng, batch=batch, compress=compress)
    return summaries.mean(axis=0), theta_b


# ---------------------------------------------------------------------------------------------------------
# Tests


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
    distinct, counts = _distinct_rows(d)
    if 8 * len(distinct) <= n:
        # Items with identical rows are exchangeable: how many of a group keep their sign is Binomial(m, 1/2).
        kept = rng.binomial(counts, 0.5, size=(n_perm, counts.size)).astype(np.float64)
        return (2.0 * kept - counts) @ distinct, False
    total = d.sum(axis=0)
    n_bytes = (n + 7) // 8
    tables = _byte_tables(d) if m <= _TABLE_COLUMNS else None
    # The batch of the unpacked draws (the same random bytes whichever way they are summed).
    step = max(1, min(n_perm, _BATCH_ELEMENTS // n))
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
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)


def _byte_tables(d: np.ndarray) -> np.ndarray:
    """(n/8, 256, m): for byte j and each value v of it, the sum of d over items 8j..8j+7 whose bit is set.

    Bits are read most significant first, as np.unpackbits reads them, so a table lookup of a random byte
    gives the sum that unpacking it and multiplying by d gives (to rounding).
    """
    n, m = d.shape
    padded = np.zeros((-(-n // 8) * 8, m))
    padded[:n] = d
    return np.einsum("vt,jtm->jvm", _BYTE_BITS[:, ::-1], padded.reshape(-1, 8, m))


def sign_flip_test(d: np.ndarray, n_perm: int, rng: np.random.Generator) -> SignFlip:
    """Paired permutation test: under H0 each difference's sign is a fair coin; two-sided, as scipy.

    Exact enumeration of all 2^n sign vectors when 2^n <= n_perm, Monte Carlo otherwise, where the
    observed statistic counts as one of the n_perm + 1 (p never 0). Columns share the sign draws.
    """
    d = _as_rows(d)
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


def mcnemar_from_verdicts(pre: np.ndarray, post: np.ndarray) -> McNemar:
    """McNemar from paired boolean verdicts (True = correct)."""
    pre, post = np.asarray(pre, bool), np.asarray(post, bool)
    return mcnemar(int(np.sum(~pre & post)), int(np.sum(pre & ~post)))


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


# ---------------------------------------------------------------------------------------------------------
# pass@k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. 2021 from n samples with c correct, in its stable product form."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_table(n: int, k: int) -> np.ndarray:
    """pass@k for every c = 0..n at once (index by an item's correct count)."""
    terms = 1.0 - k / np.arange(n, 0, -1, dtype=np.float64)
    tail = np.concatenate([[1.0], np.cumprod(terms)])
    table = 1.0 - tail
    table[n - np.arange(n + 1) < k] = 1.0
    return table


def k_grid(n: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, and n itself."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return [*ks, n]


def correct_counts(scores: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Per item, how many of its samples count as correct (score >= threshold)."""
    return (np.asarray(scores) >= threshold).sum(axis=1)


def pass_at_k_items(scores: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """(n_items, len(ks)) per-item pass@k from an (n_items, n) score matrix."""
    scores = np.asarray(scores)
    n = scores.shape[1]
    c = correct_counts(scores)
    return np.stack([pass_at_k_table(n, k)[c] for k in ks], axis=1)


def small_suite_interval(
    ref: np.ndarray, arm: np.ndarray, n_perm: int, rng: np.random.Generator, alpha: float = 0.05
) -> Interval:
    """A small suite's interval of mean(arm - ref) over paired items: Newcombe's paired score interval
    when both arms' per-item values are 0/1, else the inversion of the sign-flip test.

    The sign-flip inversion turns mostly tied 0/1 differences into a point or a sliver (every difference 0
    gives [0, 0]), which covers far less than 95% (analysis/proportions.py says where it was measured).
    """
    if proportions.is_binary(ref, arm):
        return Interval(*proportions.newcombe_paired_interval(ref, arm, alpha), "Newcombe paired score")
    return sign_flip_interval(np.asarray(arm, np.float64) - np.asarray(ref, np.float64), n_perm, rng, alpha)


@dataclass(frozen=True)
class PassAtK:
    """pass@k curves of two arms on shared items, with cluster-bootstrap CIs for each k and the delta."""

    ks: list[int]
    pre: np.ndarray
    post: np.ndarray
    delta: np.ndarray
    pre_ci: list[Interval]
    post_ci: list[Interval]
    delta_ci: list[Interval]
    mean_delta: float  # mean score (not thresholded), from the same cluster resamples
    mean_delta_ci: Interval


def pass_at_k_bootstrap(
    pre_scores: np.ndarray,
    post_scores: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    ks: Sequence[int] | None = None,
    compress: bool = True,
    mean_draws: np.ndarray | None = None,
) -> PassAtK:
    """pass@k of both arms for every k, and the mean score, resampling items with their k samples.

    Each drawn item brings all its k samples, so its summary (pass@k of each arm for each k, the mean score
    difference) is computed once (Field & Welsh 2007, as cluster_bootstrap). The pass@k summaries are
    functions of the correct counts and fall into few groups; with fractional scores the mean difference
    is distinct for every item, and drawn with them it would force an item-by-item draw on all columns.
    The intervals are per column and every pass@k delta comes from the pass@k columns, so then the pass@k
    part is resampled grouped and the mean difference on its own (same Generator, drawn after).
    mean_draws, when given, is the bootstrap distribution (n_boot,) or (n_boot, 1) of the mean difference
    from an item resample already drawn (the cluster bootstrap of a mean score is the item bootstrap of
    each item's mean difference): only the pass@k columns are drawn here.
    """
    pre_scores, post_scores = np.asarray(pre_scores, np.float64), np.asarray(post_scores, np.float64)
    n = pre_scores.shape[1]
    ks = list(ks or k_grid(n))
    passk = np.hstack([pass_at_k_items(pre_scores, ks), pass_at_k_items(post_scores, ks)])
    mean_d = (post_scores - pre_scores).mean(axis=1)[:, None]
    summaries = np.hstack([passk, mean_d])
    est = summaries.mean(axis=0)
    if mean_draws is not None:
        theta_b = np.hstack(
            [
                bootstrap_distribution(passk, weighted_means, n_boot, rng, compress=compress),
                np.asarray(mean_draws, np.float64).reshape(n_boot, 1),
            ]
        )
    elif compress and _groups(summaries) is None and _groups(passk) is not None:
        theta_b = np.hstack(
            [
                bootstrap_distribution(passk, weighted_means, n_boot, rng),
                bootstrap_distribution(mean_d, weighted_means, n_boot, rng),
            ]
        )
    else:
        theta_b = bootstrap_distribution(summaries, weighted_means, n_boot, rng, compress=compress)
    m = len(ks)
    theta_b = np.hstack([theta_b[:, : 2 * m], theta_b[:, m : 2 * m] - theta_b[:, :m], theta_b[:, 2 * m :]])
    lo, hi = percentile_interval(theta_b, alpha)
    cis = [Interval(float(a), float(b), "percentile (cluster)") for a, b in zip(lo, hi, strict=True)]
    pre_est, post_est = est[:m], est[m : 2 * m]
    return PassAtK(
        ks,
        pre_est,
        post_est,
        post_est - pre_est,
        cis[:m],
        cis[m : 2 * m],
        cis[2 * m : 3 * m],
        float(est[2 * m]),
        cis[3 * m],
    )


def beta_binomial_moments(correct: np.ndarray, n: int) -> tuple[float, float] | None:
    """Beta(a, b) of per-item success rates fitted by the method of moments to correct counts of n samples.

    Var(c / n) = m (1 - m) (1 + (n - 1) rho) / n with rho = 1 / (a + b + 1); None when every item has the
    same count (no spread to fit) or n = 1 (the rates' spread is not identifiable from one sample).
    """
    x = np.asarray(correct, dtype=np.float64) / n
    m = float(x.mean())
    if n < 2 or not 0 < m < 1 or x.size < 2:
        return None
    s2 = float(x.var(ddof=1))
    rho = (s2 * n / (m * (1 - m)) - 1) / (n - 1)
    rho = min(max(rho, 1e-6), 1 - 1e-6)
    total = 1 / rho - 1
    return m * total, (1 - m) * total


def beta_binomial_pass_at_k(a: float, b: float, k: np.ndarray | int) -> np.ndarray:
    """pass@k of items whose rates are Beta(a, b): 1 - E[(1 - p)^k] = 1 - B(a, b + k) / B(a, b)."""
    from scipy.special import betaln

    k = np.asarray(k, dtype=np.float64)
    return 1.0 - np.exp(betaln(a, b + k) - betaln(a, b))


def subset_pass_at_k(p: PassAtK, ks: Sequence[int]) -> PassAtK:
    """The rows of a PassAtK at the given k (each one of its own)."""
    idx = [p.ks.index(k) for k in ks]
    return PassAtK(
        list(ks), p.pre[idx], p.post[idx], p.delta[idx], [p.pre_ci[i] for i in idx],
        [p.post_ci[i] for i in idx], [p.delta_ci[i] for i in idx], p.mean_delta, p.mean_delta_ci,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# Multiplicity, power


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


NO_VARIANCE = (
    "the paired differences have no variance (every sample scores the same in both logs), so no "
    "detectable effect or sample size can be estimated from them"
)


@dataclass(frozen=True)
class MDE:
    """Minimum detectable effect of a paired design with k samples per item (Miller 2024).

    mde is None, with reason, when the differences have no variance: 0 would claim any effect is visible.
    """

    mde: float | None
    n_items: int
    k: int
    alpha: float
    power: float
    between_item_var: float
    within_item_var: float | None
    by_k: dict[int, float]
    reason: str | None = None


def mde_paired(
    pre_scores: np.ndarray, post_scores: np.ndarray, alpha: float = 0.05, power: float = 0.8
) -> MDE:
    """Smallest mean difference detectable with the given power at this suite size.

    Var(mean d) = (between-item variance of the true differences + within-item variance / k) / n, with the
    within-item variance of the paired per-sample differences (this keeps common random numbers honest)
    and the between-item part as the observed variance of item differences minus that within part / k.
    """
    pre_scores = np.asarray(pre_scores, dtype=np.float64)
    post_scores = np.asarray(post_scores, dtype=np.float64)
    n, k = pre_scores.shape
    z = float(ndtri(1 - alpha / 2) + ndtri(power))
    diffs = post_scores - pre_scores
    observed = float(diffs.mean(axis=1).var(ddof=1)) if n > 1 else 0.0
    if k > 1:
        within: float | None = float(diffs.var(axis=1, ddof=1).mean())
        between = max(observed - within / k, 0.0)
    else:
        within, between = None, observed

    def at(kk: int) -> float:
        return z * math.sqrt((between + (within or 0.0) / kk) / n)

    if between + (within or 0.0) <= 0:
        return MDE(None, n, k, alpha, power, between, within, {}, NO_VARIANCE)
    by_k = {kk: at(kk) for kk in sorted({1, k, 2 * k, 4 * k})} if within is not None else {k: at(k)}
    return MDE(at(k), n, k, alpha, power, between, within, by_k)


@dataclass(frozen=True)
class PowerPlan:
    """Items needed for a paired comparison to detect mde, for each number of samples per item."""

    mde: float
    alpha: float
    power: float
    between_item_var: float  # of the true per-item differences
    within_item_var: float  # of one sample's paired difference
    rho: float | None  # correlation of the two arms' item means
    assumed: str | None  # what was assumed instead of measured
    items_by_k: dict[int, int]


def paired_items_needed(between: float, within: float, k: int, mde: float, alpha: float, power: float) -> int:
    """n = (z_{1-alpha/2} + z_power)^2 (between + within / k) / mde^2, rounded up (the paired z formula)."""
    from scipy import stats  # here, not at module level: scipy.stats costs a second on every report

    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    return max(2, math.ceil(z * z * (between + within / k) / (mde * mde) - 1e-9))


def item_variances(scores: np.ndarray) -> tuple[float, float]:
    """(between-item variance of the true item means, mean within-item variance of one sample) of one arm."""
    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    within = float(scores.var(axis=1, ddof=1).mean()) if k > 1 else 0.0
    observed = float(scores.mean(axis=1).var(ddof=1)) if n > 1 else 0.0
    return max(observed - within / k, 0.0), within


def power_plan(
    pilot: np.ndarray | None,
    post: np.ndarray | None,
    mde: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    ks: Sequence[int] = (1, 2, 4, 8, 16, 32),
    assumed_p: float = 0.5,
    assumed_rho: float = 0.5,
) -> PowerPlan:
    """Items needed per k for power at alpha, from a pilot arm (and its paired post arm) or assumptions.

    With a pilot and a post log the variances are those of the measured paired differences (their
    correlation is in them); with a pilot alone each arm is taken to have the pilot's variances and the
    two arms' item means correlation assumed_rho; with neither, every score p = assumed_p and the two
    arms' scores correlated assumed_rho. A ValueError when the differences have no variance.
    """
    if not mde > 0:
        raise ValueError(f"the minimum detectable effect must be > 0, got {mde}")
    rho: float | None = assumed_rho
    if pilot is None:
        # The textbook paired binary case: Var(d) = 2 p (1 - p) (1 - rho) per sample, all of it within items.
        between, within = 0.0, 2 * assumed_p * (1 - assumed_p) * (1 - assumed_rho)
        assumed: str | None = (
            f"no pilot: assumed score p = {assumed_p} and correlation rho = {assumed_rho} of the two "
            "arms' scores"
        )
    elif post is None:
        between_arm, within_arm = item_variances(pilot)
        between = 2 * between_arm * (1 - assumed_rho)
        # The two arms' samples are drawn independently: within variances add, the correlation is of items.
        within = 2 * within_arm
        assumed = f"no post log: assumed correlation rho = {assumed_rho} of the two arms' item means"
    else:
        pilot, post = np.asarray(pilot, np.float64), np.asarray(post, np.float64)
        if pilot.shape != post.shape:
            raise ValueError(f"pilot and post scores differ in shape: {pilot.shape} and {post.shape}")
        between, within = item_variances(post - pilot)
        a, b = pilot.mean(axis=1), post.mean(axis=1)
        rho = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else None
        assumed = None
    if between + within <= 0:
        raise ValueError(NO_VARIANCE)
    items = {int(k): paired_items_needed(between, within, int(k), mde, alpha, power) for k in ks}
    return PowerPlan(mde, alpha, power, between, within, rho, assumed, items)


# ---------------------------------------------------------------------------------------------------------
# Noise floor: A/A comparisons of one arm with itself, from the k samples it already has


@dataclass(frozen=True)
class NoiseFloor:
    """One arm against itself: half of each item's samples against the other half (no new generation)."""

    delta: float  # one seeded split: mean of half B minus mean of half A
    ci: Interval  # the report's own interval of that delta
    flip_share: float  # items whose majority verdict (half mean >= 0.5) differs between the halves
    false_positive_rate: float  # share of random splits whose interval excludes 0 (near alpha if honest)
    n_splits: int
    half: int  # samples per item in each half
    alpha: float
    fpr_n_boot: int  # resamples behind each split's interval in the false-positive rate


def split_halves(k: int, n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per item, two disjoint halves of its sample indices (k // 2 each), drawn by a seeded shuffle."""
    order = rng.permuted(np.tile(np.arange(k), (n_items, 1)), axis=1)
    return order[:, : k // 2], order[:, k // 2 : 2 * (k // 2)]


_HALF_TABLE_MAX = 50_000  # largest number of half-splits of k samples listed in a table (k <= 18)


def half_deltas(scores: np.ndarray, n_splits: int, rng: np.random.Generator) -> np.ndarray:
    """(n_items, n_splits) A/A deltas: per split and item, mean of one random half minus the other's.

    Every split of every item is uniform over the ordered pairs of disjoint halves (k // 2 samples each),
    as split_halves draws them. For an even k with few splits (C(k, k/2) <= 50,000: k <= 18) each is
    drawn as one integer naming a half in a table of them, instead of a shuffle of k samples per item
    and split (ten times the time at 10,000 items x 16 samples x 200 splits).
    """
    n, k = scores.shape
    h = k // 2
    if k % 2 == 0 and math.comb(k, h) <= _HALF_TABLE_MAX:
        every = np.arange(1 << k, dtype=np.uint32)
        bits = every[((every[:, None] >> np.arange(k, dtype=np.uint32)) & 1).sum(axis=1) == h]
        mask = bits[rng.integers(0, bits.size, (n_splits, n))]
        # Half B is the named half, half A the rest: B - A = 2 * sum(B) - total.
        if hasattr(np, "bitwise_count") and np.isin(scores, (0.0, 1.0)).all():
            # 0/1 scores: sum(B) counts the right samples in the half, the bits both masks share.
            right = (scores.astype(np.uint32) << np.arange(k, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
            sum_b = np.bitwise_count(mask & right).astype(np.float64)
        else:
            # sum(B) read byte by byte of the mask from each item's sums over the 256 subsets of 8 samples
            # (one product per byte, one lookup per split and item, not k passes over them all).
            sum_b = np.zeros((n_splits, n))
            items = np.arange(n)
            for first in range(0, k, 8):
                part = scores[:, first : first + 8]
                sums = part @ _BYTE_BITS[:, : part.shape[1]].T  # (n, 256)
                sum_b += sums[items, (mask >> first) & 255]
        return ((2.0 * sum_b - scores.sum(axis=1)) / h).T
    rows = np.arange(n)[:, None]
    out = np.empty((n, n_splits))
    for j in range(n_splits):
        a, b = split_halves(k, n, rng)
        out[:, j] = scores[rows, b].mean(axis=1) - scores[rows, a].mean(axis=1)
    return out


def aa_noise_floor(
    scores: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_splits: int = 200,
    fpr_boot: int = 1_000,
    method: str = "bca",
) -> NoiseFloor | None:
    """The A/A delta of one arm with its CI, the verdict flips, and the interval's rate of false alarms.

    Every split's delta is a difference of two halves of the same model's samples, so its true value is 0:
    the share of splits whose interval (item-level paired BCa, as the headline) excludes 0 estimates the
    interval's false-positive rate. The reported split's interval uses n_boot resamples; the n_splits
    others, which only count false alarms, min(n_boot, fpr_boot) each from one shared draw (a rate from
    200 splits is known to about +-0.015 either way; more resamples per split would not sharpen it, and
    at 10,000 items they were most of a report's time). None when k < 2.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    if k < 2:
        return None
    rows = np.arange(n)[:, None]
    a, b = split_halves(k, n, rng)
    half_a, half_b = scores[rows, a].mean(axis=1), scores[rows, b].mean(axis=1)
    flip_share = float(np.mean((half_a >= 0.5) != (half_b >= 0.5)))
    fpr_n_boot = min(n_boot, fpr_boot)
    if method == "sign-flip":
        # The inverted test's interval excludes 0 exactly where the test rejects: the false alarms are
        # the splits whose sign-flip test rejects, all splits tested at once.
        ci = sign_flip_interval(half_b - half_a, n_boot, rng, alpha)
        p = sign_flip_test(half_deltas(scores, n_splits, rng), fpr_n_boot, rng).p
        false_alarms = int((p <= alpha).sum())
    else:
        ci = bootstrap_mean_ci(half_b - half_a, n_boot, rng, alpha=alpha, method=method)[0]
        cis = bootstrap_mean_ci(
            half_deltas(scores, n_splits, rng), fpr_n_boot, rng, alpha=alpha, method=method
        )
        false_alarms = sum(c.excludes_zero() for c in cis)
    return NoiseFloor(
        float((half_b - half_a).mean()), ci, flip_share, false_alarms / n_splits, n_splits, k // 2, alpha,
        fpr_n_boot,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# Budget curves: accuracy when a sample must finish within B generated tokens to count


def budget_grid(max_tokens: int, n: int = 8) -> list[int]:
    """n budgets from max_tokens / n up to max_tokens, evenly spaced (whole tokens, no repeats)."""
    return sorted({max(1, round(max_tokens * (i + 1) / n)) for i in range(n)})


@dataclass(frozen=True)
class BudgetPoint:
    """Both arms' accuracy at one token budget B and the paired delta with its interval."""

    budget: int
    ref: float
    arm: float
    delta: float
    ci: Interval


def budget_accuracy(scores: np.ndarray, tokens: np.ndarray, budgets: Sequence[int]) -> np.ndarray:
    """(n_items, len(budgets)) per-item accuracy when a sample longer than B tokens counts as wrong."""
    scores, tokens = np.asarray(scores, np.float64), np.asarray(tokens, np.float64)
    return np.stack([(scores * (tokens <= b)).mean(axis=1) for b in budgets], axis=1)


def budget_curve(
    ref_scores: np.ndarray,
    arm_scores: np.ndarray,
    ref_tokens: np.ndarray,
    arm_tokens: np.ndarray,
    budgets: Sequence[int],
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    method: str = "bca",
) -> list[BudgetPoint]:
    """Accuracy of each arm when every sample that did not finish within B tokens counts as wrong.

    Unlike the stratified adjustment this conditions on nothing the treatment changed: the budget is an
    intervention on the protocol (what a run capped at B would have scored), so the paired deltas are
    causal contrasts at each B. Paired, item-level BCa per budget (bootstrap_mean_ci: the budgets share
    one draw of item resamples, or are drawn one by one where that is cheaper); method 'sign-flip', for
    small suites: small_suite_interval of each budget (n_boot sign vectors).
    """
    ref = budget_accuracy(ref_scores, ref_tokens, budgets)
    arm = budget_accuracy(arm_scores, arm_tokens, budgets)
    if method == "sign-flip":
        cis = [small_suite_interval(ref[:, j], arm[:, j], n_boot, rng, alpha) for j in range(arm.shape[1])]
    else:
        cis = bootstrap_mean_ci(arm - ref, n_boot, rng, alpha=alpha, method=method)
    return [
        BudgetPoint(
            int(b), float(ref[:, j].mean()), float(arm[:, j].mean()), float((arm - ref)[:, j].mean()), cis[j]
        )
        for j, b in enumerate(budgets)
    ]


# ---------------------------------------------------------------------------------------------------------
# Calibration


def _ece_rows(confidence: np.ndarray, correct: np.ndarray, n_bins: int) -> np.ndarray:
    conf = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if np.any((conf < 0) | (conf > 1)):
        raise ValueError("confidence must lie in [0, 1]")
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    rows = np.zeros((conf.size, n_bins))
    rows[np.arange(conf.size), bins] = y - conf
    return rows


def _ece_statistic(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.abs(w @ rows).sum(axis=1, keepdims=True) / w.sum(axis=1, keepdims=True)


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """ECE with equal-width bins: sum over bins of (bin share) x |accuracy - mean confidence|."""
    rows = _ece_rows(confidence, correct, n_bins)
    return float(_ece_statistic(np.ones((1, rows.shape[0])), rows)[0, 0])


def ece_interval(
    confidence: np.ndarray,
    correct: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 10,
) -> tuple[float, Interval]:
    """ECE with a percentile bootstrap interval, items resampled (ECE is recomputed on each resample)."""
    rows = _ece_rows(confidence, correct, n_bins)
    est = float(_ece_statistic(np.ones((1, rows.shape[0])), rows)[0, 0])
    lo, hi = percentile_interval(bootstrap_distribution(rows, _ece_statistic, n_boot, rng), alpha)
    return est, Interval(float(lo[0]), float(hi[0]), "percentile")


def ece_difference_test(
    conf_pre: np.ndarray,
    correct_pre: np.ndarray,
    conf_post: np.ndarray,
    correct_post: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 10,
) -> tuple[float, Interval, float]:
    """ECE(post) - ECE(pre), its paired percentile interval and two-sided bootstrap p, from one draw.

    Each resample draws the same item indices for both arms. p is twice the share of resampled
    differences on the far side of zero (the estimate counted among them), capped at 1.
    """
    rows = np.hstack([_ece_rows(conf_pre, correct_pre, n_bins), _ece_rows(conf_post, correct_post, n_bins)])

    def diff(w: np.ndarray, r: np.ndarray) -> np.ndarray:
        return _ece_statistic(w, r[:, n_bins:]) - _ece_statistic(w, r[:, :n_bins])

    est = float(diff(np.ones((1, rows.shape[0])), rows)[0, 0])
    draws = bootstrap_distribution(rows, diff, n_boot, rng)
    lo, hi = percentile_interval(draws, alpha)
    # The estimate counts as one of the resamples, so p is never 0 (at least 2 / (n_boot + 1)).
    size = draws.shape[0] + 1
    p = min(1.0, 2.0 * min((int((draws <= 0).sum()) + 1) / size, (int((draws >= 0).sum()) + 1) / size))
    return est, Interval(float(lo[0]), float(hi[0]), "percentile (paired)"), p


# ---------------------------------------------------------------------------------------------------------
# Budget-stratified adjustment: the arm delta within strata of generated tokens, weighted by stratum size


@dataclass(frozen=True)
class BudgetAdjustment:
    """Arm-minus-reference delta with the generated-token budget held fixed by stratification."""

    delta: float | None
    ci: Interval | None
    edges: list[float]
    strata: list[dict]
    no_support: list[int]
    used_weight: float


def _budget_rows(y_ref, y_arm, b_ref, b_arm, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    y_ref, y_arm = np.asarray(y_ref, np.float64), np.asarray(y_arm, np.float64)
    b_ref, b_arm = np.asarray(b_ref, np.float64), np.asarray(b_arm, np.float64)
    edges = np.quantile(b_ref, np.linspace(0.0, 1.0, n_bins + 1))
    ref_bin = np.digitize(b_ref, edges[1:-1])
    arm_bin = np.digitize(b_arm, edges[1:-1])
    eye = np.eye(n_bins)
    return np.hstack([eye[ref_bin], eye[arm_bin], eye[arm_bin] * (y_arm - y_ref)[:, None]]), edges


def _budget_statistic(n_bins: int) -> Statistic:
    def stat(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        # One product for every contrast, then (b, contrasts, 3, bins): reference weight, arm count, sum of d.
        sums = (w @ rows).reshape(w.shape[0], -1, 3, n_bins)
        weight = sums[:, :, 0] / w.sum(axis=1)[:, None, None]
        n_arm, sum_d = sums[:, :, 1], sums[:, :, 2]
        ok = (weight > 0) & (n_arm > 0)
        mean_d = np.where(ok, sum_d / np.where(ok, n_arm, 1.0), 0.0)
        used = (weight * ok).sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(used > 0, (weight * mean_d * ok).sum(axis=2) / used, np.nan)

    return stat


def budget_adjusted_deltas(
    contrasts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_bins: int = 5,
) -> list[BudgetAdjustment]:
    """The budget-stratified adjustment for each (y_ref, y_arm, budget_ref, budget_arm), with bootstrap CIs.

    Strata are quantile bins of the reference arm's per-item budget; each item's difference falls in the
    stratum of the arm's budget; strata are weighted by the reference's share P_ref(z). A stratum with
    reference weight but no arm item has no support: it is dropped, reported, and the rest renormalised.
    All contrasts share one draw of item resamples.
    """
    if not contrasts:
        return []
    built = [_budget_rows(*c, n_bins) for c in contrasts]
    rows = np.hstack([r for r, _ in built])
    stat = _budget_statistic(n_bins)
    point = stat(np.ones((1, rows.shape[0])), rows)[0]
    theta_b = bootstrap_distribution(rows, stat, n_boot, rng)
    out = []
    for c, (r, edges) in enumerate(built):
        weight = r[:, :n_bins].mean(axis=0)
        n_arm = r[:, n_bins : 2 * n_bins].sum(axis=0)
        sum_d = r[:, 2 * n_bins :].sum(axis=0)
        strata = [
            {
                "stratum": z,
                "budget_range": [float(edges[z]), float(edges[z + 1])],
                "ref_weight": float(weight[z]),
                "n_arm_items": int(n_arm[z]),
                "mean_delta": float(sum_d[z] / n_arm[z]) if n_arm[z] else None,
                "supported": bool(weight[z] > 0 and n_arm[z] > 0),
            }
            for z in range(n_bins)
        ]
        no_support = [z for z in range(n_bins) if weight[z] > 0 and n_arm[z] == 0]
        used = float(sum(weight[z] for z in range(n_bins) if strata[z]["supported"]))
        col = theta_b[:, c]
        finite = col[np.isfinite(col)]
        ci = None
        if np.isfinite(point[c]) and finite.size:
            lo, hi = percentile_interval(finite[:, None], alpha)
            ci = Interval(float(lo[0]), float(hi[0]), "percentile")
        delta = float(point[c]) if np.isfinite(point[c]) else None
        out.append(BudgetAdjustment(delta, ci, [float(e) for e in edges], strata, no_support, used))
    return out


# ---------------------------------------------------------------------------------------------------------
# The factorial read-out: training x retrieval x tools, from the cells of the 2 x 2 x 2 design that exist

# A cell is (training, retrieval, tools), each 0 (off) or 1 (on); (0, 0, 0) is the reference.
Cell = tuple[int, int, int]
FACTORS = ("training", "retrieval", "tools")
COMPLEMENTS, SUBSTITUTES, NO_INTERACTION = "complements", "substitutes", "no interaction detected"


@dataclass(frozen=True)
class FactorialEffect:
    """One effect of the factorial read-out: its cells with their signs, estimate and interval.

    estimate and ci are None, with missing naming the cells that would be needed, when a cell was not run.
    reading is the interaction's verdict (complements, substitutes, no interaction detected), None for a
    main effect.
    """

    name: str
    order: int  # 1 main effect, 2 two-way, 3 three-way interaction
    coefficients: dict[Cell, int]
    estimate: float | None
    ci: Interval | None
    reading: str | None
    missing: list[Cell]


def factorial_contrasts() -> list[tuple[str, int, dict[Cell, int]]]:
    """Every effect of a 2^3 design as signed cells, each factor's effect taken with the others off.

    Main effect of A: A - reference. Two-way A x B: (A+B - B) - (A - reference), the change in A's effect
    when B is switched on (the third factor off). Three-way: the change in the A x B interaction when C is
    switched on, the alternating sum over all eight cells.
    """

    def unit(*on: int) -> Cell:
        return tuple(int(f in on) for f in range(3))  # type: ignore[return-value]

    out: list[tuple[str, int, dict[Cell, int]]] = []
    for f in range(3):
        out.append((FACTORS[f], 1, {unit(f): 1, unit(): -1}))
    for f, g in ((0, 1), (0, 2), (1, 2)):
        out.append((f"{FACTORS[f]} x {FACTORS[g]}", 2, {unit(f, g): 1, unit(f): -1, unit(g): -1, unit(): 1}))
    every = sorted((unit(*[f for f in range(3) if (b >> f) & 1]) for b in range(8)), key=lambda c: -sum(c))
    out.append((" x ".join(FACTORS), 3, {c: (-1) ** (3 - sum(c)) for c in every}))
    return out


def interaction_reading(ci: Interval) -> str:
    """complements when the interval lies above 0, substitutes below 0, else no interaction detected."""
    if ci.lo > 0:
        return COMPLEMENTS
    if ci.hi < 0:
        return SUBSTITUTES
    return NO_INTERACTION


def factorial_readout(
    cells: dict[Cell, np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
) -> list[FactorialEffect]:
    """Main effects and interactions from the cells given, each a paired contrast over items.

    cells maps a cell to its (n_items, k) scores, items in one order. Each effect's per-item value is the
    signed sum of its cells' per-item means; its estimate the mean over items and its interval a
    percentile cluster bootstrap (items resampled with the k samples of every cell, so the cells stay
    paired). All effects share one draw. An effect with a cell not given is returned without a value.
    """
    present = sorted(cells)
    effects = factorial_contrasts()
    estimable = [e for e in effects if all(c in cells for c in e[2])]
    out_by_name: dict[str, FactorialEffect] = {}
    if estimable:
        stacked = np.stack([np.asarray(cells[c], np.float64) for c in present], axis=2)  # (n, k, cells)
        coef = np.array([[e[2].get(c, 0) for c in present] for e in estimable], dtype=np.float64)

        def per_item(clusters: np.ndarray) -> np.ndarray:
            return clusters.mean(axis=1) @ coef.T

        est, theta_b = cluster_bootstrap(stacked, per_item, n_boot, rng)
        lo, hi = percentile_interval(theta_b, alpha)
        for j, (name, order, coefficients) in enumerate(estimable):
            ci = Interval(float(lo[j]), float(hi[j]), "percentile (cluster)")
            reading = interaction_reading(ci) if order > 1 else None
            out_by_name[name] = FactorialEffect(name, order, coefficients, float(est[j]), ci, reading, [])
    return [
        out_by_name.get(name)
        or FactorialEffect(
            name, order, coefficients, None, None, None, [c for c in coefficients if c not in cells]
        )
        for name, order, coefficients in effects
    ]
