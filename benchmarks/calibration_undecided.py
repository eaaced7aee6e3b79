"""The undecided table of the calibration bench (`python -m benchmarks.bench_calibration --part undecided`).

Each rep draws per-item success rates from a Beta regime (as the verdicts' table), base's from them and
trained's shifted by +0.8 on the logit scale, k samples per item; each sample is, independently of its
correctness, undecided with its arm's rate (the reader could not settle it: it scores 0). Every rep calls
what the reports call for a contrast (analysis.reports.undecided.undecided_contrast: the change in undecided
share, its sign-flip test and the note "the undecided shares differ", and the delta on the samples both
arms decided with its interval). Designs: equal rates (0.2 in both arms: the note is a false alarm),
and rates 0.25 vs 0.15 and 0.3 vs 0.1 (base vs trained: the note's power). Printed per design: how often
the note fires, the coverage of the decided delta's interval of the population delta (undecided samples
are a random share, so the decided samples' delta is the arms' delta in accuracy), and the headline delta's
mean bias against it (what the decided delta is there to show), each with its Monte Carlo standard error.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
from scipy.special import expit, logit

from analysis.reports.settings import AnalysisSettings
from analysis.reports.undecided import undecided_contrast

# Undecided rates of (base, trained).
UNDECIDED_RATES = {"equal": (0.2, 0.2), "0.25 vs 0.15": (0.25, 0.15), "0.3 vs 0.1": (0.3, 0.1)}
SHIFT = 0.8


def _rates(p: np.ndarray) -> np.ndarray:
    return expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + SHIFT)


def undecided_rep(
    n: int, k: int, ab: tuple[float, float], rates: tuple[float, float], settings: AnalysisSettings, rng
) -> dict[str, float]:
    """One simulated pair: whether the note fired, whether the decided interval covers the population
    delta, and the headline and decided deltas."""
    settings = dataclasses.replace(settings, seed=int(rng.integers(2**31)))
    p = rng.beta(*ab, n)
    right = {"base": rng.random((n, k)) < p[:, None], "trained": rng.random((n, k)) < _rates(p)[:, None]}
    flags = {arm: (rng.random((n, k)) < u).astype(np.float64) for arm, u in zip(right, rates, strict=True)}
    scores = {arm: right[arm] * (1.0 - flags[arm]) for arm in right}
    row = undecided_contrast("base", "trained", scores, flags, settings)
    return {"note": row.shares_differ, "ci": row.decided_ci95, "headline": row.headline_delta,
            "decided": row.decided_delta}  # fmt: skip


def undecided_table(sizes: list[int], reps: int, settings: AnalysisSettings, seed: int, regimes: dict) -> int:
    """Print the note's rate and the decided delta's coverage per design; return the coverage misses."""
    print(f"Undecided samples: {reps} reps per design; undecided rates (base, trained) as named")
    print("  n  k  regime    rates          note fires   decided cov  headline bias   decided bias")
    misses = 0
    for n, k, regime, design in itertools.product(sizes, (1, 8), regimes, UNDECIDED_RATES):
        ab = regimes[regime]
        population = np.random.default_rng([seed, 99, list(regimes).index(regime)]).beta(*ab, 1_000_000)
        truth = float(_rates(population).mean() - population.mean())
        rng = np.random.default_rng(
            [seed, n, k, list(regimes).index(regime), 20 + list(UNDECIDED_RATES).index(design)]
        )
        runs = [undecided_rep(n, k, ab, UNDECIDED_RATES[design], settings, rng) for _ in range(reps)]
        note = float(np.mean([r["note"] for r in runs]))
        cover = float(np.mean([r["ci"] is not None and r["ci"][0] <= truth <= r["ci"][1] for r in runs]))
        bias = {key: float(np.mean([r[key] for r in runs if r[key] is not None]) - truth)
                for key in ("headline", "decided")}  # fmt: skip
        se_note, se_cover = (math.sqrt(max(x * (1 - x), 1e-12) / reps) for x in (note, cover))
        off = cover < 1 - settings.alpha - 2 * se_cover
        misses += off
        print(f"{n:>3} {k:>2}  {regime:<9} {design:<13} {note:.3f}+-{se_note:.3f}  "
              f"{cover:.3f}+-{se_cover:.3f}{'*' if off else ' '}  {bias['headline']:+.4f}        "
              f"{bias['decided']:+.4f}", flush=True)  # fmt: skip
    print("note fires: how often the report says the undecided shares differ (equal: a false alarm, "
          "target <= alpha; else: its power); decided cov: coverage of the delta on decided samples' "
          "interval; bias: mean estimate minus the population delta in accuracy")  # fmt: skip
    print(f"* coverage below 0.95 - 2 s.e.: {misses}")
    return misses
