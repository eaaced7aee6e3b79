"""analysis.estimators.budget: the budget curve by hand and the budget-stratified adjustment against a plain
loop."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.estimators.budget import budget_adjusted_deltas, budget_curve, budget_grid


def loop_budget_adjusted_delta(y_base, y_arm, b_base, b_arm, n_bins=5):
    """The estimator as a plain loop over strata, written apart: the oracle for the vectorized one."""
    edges = np.quantile(b_base, np.linspace(0.0, 1.0, n_bins + 1))
    inner = edges[1:-1]
    ref_bin = np.digitize(b_base, inner)
    arm_bin = np.digitize(b_arm, inner)
    d = y_arm - y_base
    adj, used_w = 0.0, 0.0
    for z in range(n_bins):
        w = float(np.mean(ref_bin == z))
        in_z = arm_bin == z
        if w > 0 and in_z.any():
            adj += d[in_z].mean() * w
            used_w += w
    return float(adj / used_w) if used_w > 0 else float("nan")


def test_budget_adjustment_equals_the_plain_loop():
    rng = np.random.default_rng(5)
    n = 300
    b_base = rng.normal(600, 120, n)
    b_arm = b_base + rng.normal(60, 80, n)
    y_base = rng.integers(0, 9, n) / 8
    y_arm = np.clip(y_base + 0.1 + 0.0005 * (b_arm - 600) + rng.normal(0, 0.1, n), 0, 1)
    got = budget_adjusted_deltas([(y_base, y_arm, b_base, b_arm)], 1000, np.random.default_rng(0))[0]
    assert got.delta == pytest.approx(loop_budget_adjusted_delta(y_base, y_arm, b_base, b_arm), abs=1e-12)
    assert got.ci.lo <= got.delta <= got.ci.hi
    assert sum(s["ref_weight"] for s in got.strata) == pytest.approx(1.0)


def test_budget_adjustment_reports_strata_without_support():
    b_base = np.arange(1.0, 11.0)
    y_base = np.zeros(10)
    y_arm = np.linspace(0, 1, 10)
    got = budget_adjusted_deltas([(y_base, y_arm, b_base, b_base + 100)], 200, np.random.default_rng(0))[0]
    assert got.no_support == [0, 1, 2, 3]
    assert got.used_weight == pytest.approx(0.2)
    assert got.delta == pytest.approx(y_arm.mean())  # every arm item sits in the top stratum
    same = budget_adjusted_deltas([(y_base, y_arm, b_base, b_base)], 200, np.random.default_rng(0))[0]
    assert same.no_support == [] and same.delta == pytest.approx(y_arm.mean())


def test_budget_adjustment_of_several_contrasts_matches_one_at_a_time():
    rng = np.random.default_rng(8)
    n = 200
    b0 = rng.integers(20, 60, n).astype(float)
    y0 = rng.random(n)
    contrasts = [(y0, rng.random(n), b0, b0 + rng.normal(s, 5, n)) for s in (0, 5, 10)]
    joint = budget_adjusted_deltas(contrasts, 100, np.random.default_rng(0))
    for c, j in zip(contrasts, joint, strict=True):
        assert j.delta == pytest.approx(loop_budget_adjusted_delta(*c), abs=1e-12)


def test_budget_curve_counts_unfinished_samples_as_wrong_by_hand():
    ref = np.array([[1, 0], [1, 1], [0, 1]], float)
    arm = np.array([[1, 1], [1, 1], [1, 1]], float)
    ref_tok = np.array([[5, 9], [20, 5], [5, 30]], float)
    arm_tok = np.array([[40, 40], [5, 40], [10, 10]], float)
    pts = budget_curve(ref, arm, ref_tok, arm_tok, [4, 10, 40], 200, np.random.default_rng(0))
    assert [p.budget for p in pts] == [4, 10, 40]
    assert (pts[0].ref, pts[0].arm) == (0.0, 0.0)
    # B = 10: ref keeps (1, 0), (0, 1) of (1, 1), (0, 0): 2/6; arm keeps (0, 0), (1, 0), (1, 1): 3/6.
    assert (pts[1].ref, pts[1].arm) == (pytest.approx(2 / 6), pytest.approx(3 / 6))
    assert pts[2].delta == pytest.approx(arm.mean() - ref.mean())
    assert all(p.ci.lo <= p.delta <= p.ci.hi for p in pts)
    assert budget_grid(64, 4) == [16, 32, 48, 64]
