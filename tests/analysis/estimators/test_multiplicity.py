"""analysis.estimators.multiplicity against Benjamini & Hochberg (1995) and
scipy.stats.false_discovery_control."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.multiplicity import bh_qvalues

# Benjamini & Hochberg (1995), section 4: the fifteen p-values of the myocardial-infarction example.
BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719,
           0.6528, 0.7590, 1.000]  # fmt: skip


def test_bh_rejects_four_of_the_fifteen_1995_p_values():
    q = bh_qvalues(BH_1995)
    assert int(np.sum(q <= 0.05)) == 4
    assert np.flatnonzero(q <= 0.05).tolist() == [0, 1, 2, 3]


def test_bh_qvalues_are_the_step_up_adjustment():
    rng = np.random.default_rng(3)
    p = rng.random(40) ** 3
    m = p.size
    order = np.argsort(p)
    adjusted = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    expected = np.empty(m)
    expected[order] = np.minimum(adjusted, 1)
    assert bh_qvalues(p) == pytest.approx(expected)
    assert bh_qvalues([]).size == 0


@given(
    st.lists(st.sampled_from([0.0, 1e-4, 0.01, 0.02, 0.5, 1.0]) | st.floats(0, 1), min_size=0, max_size=30)
)
def test_bh_qvalues_equal_scipy_false_discovery_control(p):
    want = stats.false_discovery_control(p, method="bh") if len(p) > 1 else np.asarray(p, dtype=float)
    assert np.array_equal(bh_qvalues(p), want)


def test_bh_qvalues_refuse_a_p_value_outside_the_unit_interval():
    with pytest.raises(ValueError, match="p-values must lie in"):
        bh_qvalues([0.2, 1.5])
