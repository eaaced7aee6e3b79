"""analysis.estimators.power_planning: the MDE and the items a paired design needs, by hand and in closed
form."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.power_planning import mde_paired, power_plan

ROOT = Path(__file__).resolve().parents[3]


def test_the_analyses_do_not_import_scipy_stats():
    # scipy.stats costs about a second to import, half of a whole delta report; the estimators use the
    # scipy.special kernels it would call (checked against scipy.stats in test_mcnemar.py and
    # test_effect_size.py), and power_planning imports it only inside paired_items_needed.
    code = (
        "import sys, analysis.commands.delta, analysis.commands.arm_comparison; "
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_mde_for_one_binary_sample_matches_its_closed_form():
    # Base rate 0.5 in both arms and correlation 0.5: MDE = (z.975 + z.80) sqrt(2 p (1 - p) (1 - rho) / n).
    block_pre = [1, 1, 1, 0, 0, 0, 1, 0]
    block_post = [1, 1, 1, 0, 0, 0, 0, 1]
    pre = np.array(block_pre * 125, float)[:, None]
    post = np.array(block_post * 125, float)[:, None]
    assert np.corrcoef(pre[:, 0], post[:, 0])[0, 1] == pytest.approx(0.5)
    m = mde_paired(pre, post)
    closed = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * math.sqrt(2 * 0.25 * 0.5 / 1000)
    assert m.mde == pytest.approx(closed, rel=1e-3)  # ddof=1 vs the population formula
    assert m.within_item_var is None


def test_mde_separates_between_and_within_item_variance():
    rng = np.random.default_rng(6)
    n, k = 4000, 8
    p = rng.beta(2, 2, n)
    lift = rng.normal(0.05, 0.1, n)
    pre = (rng.random((n, k)) < p[:, None]).astype(float)
    post = (rng.random((n, k)) < np.clip(p + lift, 0, 1)[:, None]).astype(float)
    m = mde_paired(pre, post)
    expected_within = (
        np.mean(p * (1 - p) + np.clip(p + lift, 0, 1) * (1 - np.clip(p + lift, 0, 1))) * k / (k - 1)
    )
    assert m.within_item_var == pytest.approx(expected_within * (k - 1) / k, rel=0.05)
    assert m.between_item_var == pytest.approx(np.var(np.clip(p + lift, 0, 1) - p), rel=0.25)
    assert m.by_k[k] == m.mde and m.by_k[1] > m.by_k[k] > m.by_k[4 * k]


def test_mde_shrinks_with_the_square_root_of_items():
    rng = np.random.default_rng(0)
    pre = (rng.random((500, 4)) < 0.5).astype(float)
    post = (rng.random((500, 4)) < 0.6).astype(float)
    small = mde_paired(pre, post).mde
    big = mde_paired(np.tile(pre, (4, 1)), np.tile(post, (4, 1))).mde
    assert big == pytest.approx(small / 2, rel=0.01)


Z_POWER = 1.959963984540054 + 0.8416212335729143  # z_{0.975} + z_{0.8}, from a normal table


def test_power_plan_without_a_pilot_is_the_textbook_paired_binary_formula():
    plan = power_plan(None, None, 0.02)
    # Var(d) = 2 p (1 - p) (1 - rho) = 2 * 0.25 * 0.5 = 0.25 per sample.
    assert plan.items_by_k[1] == math.ceil(Z_POWER**2 * 0.25 / 0.02**2) == 4906
    assert plan.items_by_k[8] == math.ceil(Z_POWER**2 * 0.25 / 8 / 0.02**2)
    assert "p = 0.5" in plan.assumed and "rho = 0.5" in plan.assumed


def test_power_plan_from_a_pilot_pair_by_hand():
    pilot = np.array([[1, 0], [1, 1], [0, 0], [0, 1]], float)
    post = np.array([[1, 1], [1, 1], [0, 1], [0, 0]], float)
    # d = [[0, 1], [0, 0], [0, 1], [0, -1]]: within = mean(1/2, 0, 1/2, 1/2) = 3/8; item means (1/2, 0, 1/2,
    # -1/2) have variance 11/48; between = 11/48 - (3/8) / 2 = 1/24.
    plan = power_plan(pilot, post, 0.1, ks=(1, 2))
    assert plan.within_item_var == pytest.approx(3 / 8) and plan.between_item_var == pytest.approx(1 / 24)
    assert plan.items_by_k == {
        1: math.ceil(Z_POWER**2 * (1 / 24 + 3 / 8) / 0.01),
        2: math.ceil(Z_POWER**2 * (1 / 24 + 3 / 16) / 0.01),
    }
    assert plan.assumed is None


def test_power_plan_from_a_pilot_alone_assumes_the_correlation():
    pilot = np.array([[1, 0], [1, 1], [0, 0], [0, 1]], float)
    # One arm: item means (1/2, 1, 0, 1/2), variance 1/6; within mean(1/2, 0, 0, 1/2) = 1/4; between 1/24.
    plan = power_plan(pilot, None, 0.1, ks=(2,))
    assert plan.between_item_var == pytest.approx(2 * (1 / 6 - 1 / 8) * 0.5)
    assert plan.within_item_var == pytest.approx(2 * 1 / 4)
    assert "rho = 0.5" in plan.assumed


def test_no_variance_gives_no_plan_and_no_zero_mde():
    scores = np.array([[1, 0], [0, 0], [1, 1]], float)
    with pytest.raises(ValueError, match="no variance"):
        power_plan(scores, scores.copy(), 0.02)
    mde = mde_paired(scores, scores.copy())
    assert mde.mde is None and "no variance" in mde.reason
