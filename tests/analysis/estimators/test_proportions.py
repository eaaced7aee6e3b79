"""analysis/estimators/proportions.py: Newcombe's paired interval against a published value, Wilson's against
scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from analysis.estimators.proportions import is_binary, newcombe_paired_interval, wilson_interval
from analysis.estimators.signflip import sign_flip_interval, small_suite_interval


def _paired(both: int, arm_only: int, ref_only: int, neither: int) -> tuple[np.ndarray, np.ndarray]:
    arm = np.r_[np.ones(both + arm_only), np.zeros(ref_only + neither)]
    ref = np.r_[np.ones(both), np.zeros(arm_only), np.ones(ref_only), np.zeros(neither)]
    return ref, arm


def test_newcombe_matches_the_published_example() -> None:
    # Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables" (2017), chapter 8: complete
    # response before and after consolidation therapy (Cavo et al. 2012), the paired table [[59, 6],
    # [16, 80]]; the Newcombe square-and-add interval printed there: -0.0621 (95% CI -0.1186 to -0.0046).
    ref, arm = _paired(59, 6, 16, 80)
    lo, hi = newcombe_paired_interval(ref, arm)
    assert arm.mean() - ref.mean() == pytest.approx(-0.0621, abs=5e-5)
    assert (lo, hi) == (pytest.approx(-0.1186, abs=5e-5), pytest.approx(-0.0046, abs=5e-5))


@pytest.mark.parametrize(("x", "n"), [(0, 24), (7, 20), (24, 24), (1, 3), (150, 161)])
def test_wilson_matches_scipy(x: int, n: int) -> None:
    ci = binomtest(x, n).proportion_ci(method="wilson")
    assert wilson_interval(x, n) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_all_ties_give_a_real_interval_around_zero() -> None:
    # Every item solved by both arms (or by neither): the sign-flip inversion is the point [0, 0]; Newcombe's
    # interval keeps the uncertainty of 24 items (symmetric about 0, 0.138 either side).
    for ref, arm in (_paired(24, 0, 0, 0), _paired(0, 0, 0, 24)):
        lo, hi = newcombe_paired_interval(ref, arm)
        assert lo == pytest.approx(-hi) and 0.13 < hi < 0.15
        assert sign_flip_interval(arm - ref, 1000, np.random.default_rng(0)).as_list() == [0.0, 0.0]


def test_the_interval_widens_at_lower_confidence_and_stays_in_range() -> None:
    ref, arm = _paired(2, 10, 0, 12)
    lo95, hi95 = newcombe_paired_interval(ref, arm, 0.05)
    lo80, hi80 = newcombe_paired_interval(ref, arm, 0.20)
    assert -1 <= lo95 < lo80 < arm.mean() - ref.mean() < hi80 < hi95 <= 1


def test_refuses_what_is_not_paired_zero_one_data() -> None:
    with pytest.raises(ValueError, match="0/1"):
        newcombe_paired_interval(np.array([0.5, 1.0]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="same"):
        newcombe_paired_interval(np.ones(3), np.ones(4))


def test_small_suite_interval_picks_the_method_by_the_values() -> None:
    ref, arm = _paired(3, 5, 1, 15)
    binary = small_suite_interval(ref, arm, 1000, np.random.default_rng(0))
    assert binary.method == "Newcombe paired score"
    assert binary.as_list() == list(newcombe_paired_interval(ref, arm))
    fractional = small_suite_interval(ref * 0.5, arm, 1000, np.random.default_rng(0))
    assert fractional.method == "sign-flip inversion" and is_binary(ref, arm) and not is_binary(ref * 0.5)
