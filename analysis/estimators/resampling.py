"""The bootstrap's resampling engine: seeded, vectorized draws of item resamples as weights.

A statistic is a function of per-item weights (`bootstrap_distribution`), so one draw of resampling
weights serves every column computed from it (all pass@k values and their deltas, all budget contrasts),
and means, pass@k, ECE and the budget adjustment share one code path. Reports pass each purpose its own
Generator from `rng_for(seed, purpose)`, so adding or dropping an analysis never shifts the draws of
another.

Why the bootstrap is hand-written instead of calling scipy.stats.bootstrap: at the size this project
promises (10,000 items x 10,000 resamples, every k of pass@k, several arms) scipy materialises each
resample as an array of item values (10^8 floats a statistic, or a Python-level loop over small batches)
and recomputes every statistic from scratch; the weights formulation turns each statistic into one matrix
product per batch, and logs of 0/1 scores (where items fall into a few hundred distinct rows) collapse to
a multinomial draw over those rows. tests/test_bootstrap_ci.py checks it against scipy on small data (same
Generator, same draws).
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

# A statistic of a weighted sample: (weights (b, r), rows (r, p)) -> (b, m).
Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]

BATCH_ELEMENTS = 1 << 22  # per batch of resamples: 4 Mi weights (32 MiB as float64)
_DRAW_THREADS = 2  # threads drawing batches of resamples side by side
_MIN_BATCHES = 8  # a grouped draw is cut into at least this many batches, for the threads to share


def rng_for(seed: int, purpose: str) -> np.random.Generator:
    """A Generator for one named purpose of one report, derived from the analysis seed."""
    return np.random.default_rng(
        np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(purpose.encode())])
    )


def weighted_means(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Column means of a weighted sample: the statistic behind every bootstrap of a mean."""
    return (w @ rows) / w.sum(axis=1, keepdims=True)


def as_rows(x: np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def row_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct rows and how many items have each, when few enough (at most n/8) to be drawn grouped."""
    if rows.shape[1] > 1:
        # Rows that differ mostly differ in a random projection: more than n/8 distinct projections
        # prove more than n/8 distinct rows, without sorting the rows (a tenth of a second at 10,000 x 200).
        projection = rows @ np.random.default_rng(0).standard_normal(rows.shape[1])
        if 8 * np.unique(projection).size > rows.shape[0]:
            return None
    distinct, counts = distinct_rows(rows)
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
    rows = as_rows(rows)
    n = rows.shape[0]
    if n == 0:
        raise ValueError("bootstrap of an empty sample")
    if compress and (grouped := row_groups(rows)) is not None:
        return grouped_draws(*grouped, statistic, n_boot, rng, batch)
    step = batch or max(1, min(n_boot, BATCH_ELEMENTS // n))
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


def grouped_draws(
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
    step = batch or max(1, min(BATCH_ELEMENTS // len(distinct), -(-n_boot // _MIN_BATCHES)))

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
