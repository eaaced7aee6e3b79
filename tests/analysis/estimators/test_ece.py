"""analysis.estimators.ece: the expected calibration error by hand and binned directly, and its paired
difference."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.estimators.ece import ece_difference_test, expected_calibration_error


def test_ece_hand_computed():
    conf = np.array([0.9, 0.9, 0.1, 0.1])
    correct = np.array([1, 0, 0, 0])
    # bin 9: accuracy 0.5 vs confidence 0.9 on half the items; bin 1: 0 vs 0.1 on the other half.
    assert expected_calibration_error(conf, correct) == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)


def test_ece_equals_a_direct_binned_computation():
    rng = np.random.default_rng(2)
    conf = rng.random(500)
    correct = (rng.random(500) < conf**2).astype(float)
    bins = np.minimum((conf * 15).astype(int), 14)
    direct = sum(
        (bins == b).mean() * abs(correct[bins == b].mean() - conf[bins == b].mean())
        for b in range(15)
        if np.any(bins == b)
    )
    assert expected_calibration_error(conf, correct, n_bins=15) == pytest.approx(direct)


def test_ece_difference_bootstrap():
    rng = np.random.default_rng(3)
    conf = rng.random(400)
    correct = (rng.random(400) < conf).astype(float)
    same = ece_difference_test(conf, correct, conf, correct, 500, np.random.default_rng(0))
    assert same.delta == 0 and same.ci.as_list() == [0.0, 0.0]
    worse = np.clip(conf + 0.3, 0, 1)
    change = ece_difference_test(conf, correct, worse, correct, 2000, np.random.default_rng(0))
    diff, ci = change.delta, change.ci
    assert diff == pytest.approx(
        expected_calibration_error(worse, correct) - expected_calibration_error(conf, correct)
    )
    assert ci.lo > 0 and ci.lo <= diff <= ci.hi
