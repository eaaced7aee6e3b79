"""analysis.estimators.factorial: effects against hand-worked values and the reading of an interaction."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.estimators.estimate import Interval
from analysis.estimators.factorial import (
    COMPLEMENTS,
    NO_INTERACTION,
    SUBSTITUTES,
    factorial_readout,
    interaction_reading,
)


def test_factorial_effects_equal_hand_worked_values():
    # Per-item means: base (0, 1/2, 0), trained (1/2, 1/2, 0), +rag (0, 1, 1/2), trained+rag (1, 1, 1).
    cells = {
        (0, 0, 0): np.array([[0, 0], [1, 0], [0, 0]]),
        (1, 0, 0): np.array([[1, 0], [1, 0], [0, 0]]),
        (0, 1, 0): np.array([[0, 0], [1, 1], [1, 0]]),
        (1, 1, 0): np.array([[1, 1], [1, 1], [1, 1]]),
    }
    effects = {e.name: e for e in factorial_readout(cells, 2000, np.random.default_rng(0))}
    # training: trained - base per item (1/2, 0, 0); retrieval: +rag - base (0, 1/2, 1/2);
    # training x retrieval: (trained+rag - +rag) - (trained - base) per item (1/2, 0, 1/2).
    assert effects["training"].estimate == pytest.approx(1 / 6)
    assert effects["retrieval"].estimate == pytest.approx(1 / 3)
    txr = effects["training x retrieval"]
    assert txr.estimate == pytest.approx(1 / 3)
    assert txr.coefficients == {(1, 1, 0): 1, (1, 0, 0): -1, (0, 1, 0): -1, (0, 0, 0): 1}
    # Every resample is a mean of the per-item values 0 and 1/2; all three items at 0 has chance 1/27 > 2.5%,
    # so the interval reaches 0 and no interaction is claimed from three items.
    assert txr.ci is not None and txr.ci.lo == 0.0 and 1 / 3 <= txr.ci.hi <= 0.5
    assert txr.reading == NO_INTERACTION
    assert effects["training"].reading is None
    assert effects["tools"].estimate is None and effects["tools"].missing == [(0, 0, 1)]
    assert effects["training x tools"].missing == [(1, 0, 1), (0, 0, 1)]
    assert effects["training x retrieval x tools"].ci is None
    assert len(effects["training x retrieval x tools"].missing) == 4


def test_factorial_three_way_term_is_the_alternating_sum_of_the_eight_cells():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.1, 0.3, 40)
    planted = {"training": 0.1, "retrieval": 0.2, "tools": 0.3, "training x retrieval": 0.05}
    planted |= {"training x tools": -0.07, "retrieval x tools": 0.02, "training x retrieval x tools": 0.04}
    cells = {}
    for t in (0, 1):
        for r in (0, 1):
            for x in (0, 1):
                y = base + 0.1 * t + 0.2 * r + 0.3 * x + 0.05 * t * r - 0.07 * t * x + 0.02 * r * x
                cells[(t, r, x)] = (y + 0.04 * t * r * x)[:, None]
    effects = factorial_readout(cells, 500, np.random.default_rng(2))
    assert {e.name: round(e.estimate, 12) for e in effects} == planted
    # Every item carries the same contrast: each interval is that point, and the readings follow its sign.
    readings = {e.name: e.reading for e in effects if e.order > 1}
    assert readings == {
        "training x retrieval": COMPLEMENTS,
        "training x tools": SUBSTITUTES,
        "retrieval x tools": COMPLEMENTS,
        "training x retrieval x tools": COMPLEMENTS,
    }


def test_an_interaction_is_read_from_its_interval_alone():
    assert interaction_reading(Interval(0.0001, 0.3, "x")) == COMPLEMENTS
    assert interaction_reading(Interval(-0.3, -0.0001, "x")) == SUBSTITUTES
    assert interaction_reading(Interval(-0.0001, 0.3, "x")) == NO_INTERACTION
    assert interaction_reading(Interval(0.0, 0.0, "x")) == NO_INTERACTION
