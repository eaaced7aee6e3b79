"""The factorial read-out: training x retrieval x tools, from the cells of the 2 x 2 x 2 design that exist."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analysis.estimators.bootstrap_ci import cluster_bootstrap
from analysis.estimators.estimate import Interval
from analysis.estimators.resampling import percentile_interval

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
    interval: Callable[[str, np.ndarray], Interval] | None = None,
) -> list[FactorialEffect]:
    """Main effects and interactions from the cells given, each a paired contrast over items.

    cells maps a cell to its (n_items, k) scores, items in one order. Each effect's per-item value is the
    signed sum of its cells' per-item means; its estimate the mean over items and its interval a
    percentile cluster bootstrap (items resampled with the k samples of every cell, so the cells stay
    paired; all effects share one draw), or interval(name, per-item values) where given (a report's one
    method for every mean contrast). An effect with a cell not given is returned without a value.
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

        if interval is None:
            est, theta_b = cluster_bootstrap(stacked, per_item, n_boot, rng)
            lo, hi = percentile_interval(theta_b, alpha)
            cis = [Interval(float(a), float(b), "percentile (cluster)") for a, b in zip(lo, hi, strict=True)]
        else:
            values = per_item(stacked)
            est = values.mean(axis=0)
            cis = [interval(name, values[:, j]) for j, (name, _, _) in enumerate(estimable)]
        for j, (name, order, coefficients) in enumerate(estimable):
            ci = cis[j]
            reading = interaction_reading(ci) if order > 1 else None
            out_by_name[name] = FactorialEffect(name, order, coefficients, float(est[j]), ci, reading, [])
    return [
        out_by_name.get(name)
        or FactorialEffect(
            name, order, coefficients, None, None, None, [c for c in coefficients if c not in cells]
        )
        for name, order, coefficients in effects
    ]
