"""Error rates of the seen/clean split's calls (analysis.reports.contamination_split), by simulation.

Run as `python -m benchmarks.bench_calibration --part split`.

Each design draws per-item success rates from a Beta distribution (the regimes of bench_calibration) and
flags a share of the items as possibly seen, at random. Base's k samples per item come from those rates;
trained's from rates shifted on the logit scale by:

- null-0: nothing (no gain anywhere);
- null-gain: +0.8 on every item (a real gain, the same on seen and clean items);
- seen-only: +0.8 on the flagged items, nothing on the others (the gain lives on the seen items);
- both: +0.8 on every item and +1.5 more on the flagged ones.

Every rep calls contamination_split.split, the function the delta report and the arm comparison call. Printed
per design, each with its Monte Carlo standard error: the rate of the call DELTA DIFFERS or GAIN ONLY ON
POSSIBLY-SEEN ITEMS (a false call under both nulls, the power otherwise), the rate of GAIN ONLY ON
POSSIBLY-SEEN ITEMS alone (false under the nulls and under `both`, where the clean items gain too) and the
coverage of the clean items' interval of their population delta.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

from analysis.reports import contamination_split as cs
from analysis.reports.settings import AnalysisSettings
from contract.contamination import ContaminationSettings

DESIGNS = {"null-0": (0.0, 0.0), "null-gain": (0.8, 0.8), "seen-only": (0.8, 0.0), "both": (2.3, 0.8)}
COLUMNS = [
    ("any_call", "differs/only", "rate of DIFFERS or ONLY SEEN (false under null-0 and null-gain)"),
    ("only_seen", "only seen", "rate of GAIN ONLY ON POSSIBLY-SEEN ITEMS (false but under seen-only)"),
    ("cov_clean", "clean CI cov", "coverage of the clean items' delta interval (population value)"),
]


def audit_of(ids: list[str], seen: np.ndarray) -> cs.Audit:
    """An audit whose flags are the given ones (no file: the flags alone decide the split)."""
    kinds = {i: ({"recited"} if s else set()) for i, s in zip(ids, seen, strict=True)}
    return cs.Audit(ContaminationSettings(), Path("."), {}, None, kinds=kinds)


def one_rep(
    n: int, k: int, regime: tuple, shifts: tuple, share: float, settings: AnalysisSettings, rng, truth
) -> dict:
    """The calls and the clean interval's hit of one simulated pair of logs."""
    settings = dataclasses.replace(settings, seed=int(rng.integers(2**31)))
    seen = rng.random(n) < share
    if seen.all() or not seen.any():
        seen[0] = not seen[0]
    p = rng.beta(*regime, n)
    shift = np.where(seen, shifts[0], shifts[1])
    q = expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + shift)
    a = (rng.random((n, k)) < p[:, None]).mean(axis=1)
    b = (rng.random((n, k)) < q[:, None]).mean(axis=1)
    ids = [f"q{i:05d}" for i in range(n)]
    s = cs.split(audit_of(ids, seen), ids, a, b, ("base", "trained"), settings)
    clean = s.rows[2]
    return {
        "any_call": s.call in (cs.DIFFERS, cs.ONLY_SEEN),
        "only_seen": s.call == cs.ONLY_SEEN,
        "cov_clean": bool(clean.ci95[0] <= truth <= clean.ci95[1]),
    }


def split_table(sizes: list[int], reps: int, settings: AnalysisSettings, seed: int, regimes: dict) -> None:
    """Print the split's error rates and power over sizes, regimes and designs (k = 8, 30% flagged)."""
    print(f"seen/clean split: {reps} reps per design, {settings.n_perm} permutations, 30% of items flagged")
    print("  n  k  regime    design    " + "  ".join(f"{short:>13}" for _, short, _ in COLUMNS))
    for n, (name, regime), (design, shifts) in itertools.product(sizes, regimes.items(), DESIGNS.items()):
        rng = np.random.default_rng([seed, n, list(regimes).index(name), list(DESIGNS).index(design), 44])
        pop = rng.beta(*regime, 1_000_000)
        truth = float((expit(logit(np.clip(pop, 1e-12, 1 - 1e-12)) + shifts[1]) - pop).mean())
        results = [one_rep(n, 8, regime, shifts, 0.3, settings, rng, truth) for _ in range(reps)]
        cells = []
        for key, _, _ in COLUMNS:
            rate = float(np.mean([r[key] for r in results]))
            cells.append(f"{rate:.3f}+-{math.sqrt(max(rate * (1 - rate), 1e-12) / reps):.3f}".rjust(13))
        print(f"{n:>3}  8  {name:<9} {design:<9} " + "  ".join(cells), flush=True)
    print("columns: " + "; ".join(f"{short}: {what}" for _, short, what in COLUMNS))
