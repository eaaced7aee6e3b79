"""analysis.estimators.mcnemar against R's documented example and scipy.stats' binomtest and chi2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.mcnemar import mcnemar, mcnemar_from_verdicts


def test_mcnemar_exact_reference():
    r = mcnemar(4, 0)
    assert r.exact_p == pytest.approx(0.125, abs=1e-15)
    assert r.chi2 == pytest.approx(2.25)


def test_mcnemar_chi2_matches_r_documentation_example():
    # R ?mcnemar.test, presidential approval (Agresti 1990): discordant 150 and 86 ->
    # McNemar's chi-squared = 16.818, df = 1, p-value = 4.115e-05.
    r = mcnemar(150, 86)
    assert r.chi2 == pytest.approx(16.818, abs=5e-4)
    assert r.chi2_p == pytest.approx(4.115e-05, rel=1e-3)
    assert r.exact_p == pytest.approx(stats.binomtest(150, 236).pvalue)


def test_mcnemar_equals_scipy_binomtest_and_chi2_for_every_split():
    for n in range(1, 121):
        for b in range(n + 1):
            r = mcnemar(b, n - b)
            assert r.exact_p == pytest.approx(stats.binomtest(b, n, 0.5).pvalue, rel=1e-13, abs=1e-300)
            assert r.chi2_p == stats.chi2.sf(r.chi2, 1)


def test_mcnemar_without_discordant_pairs_is_p_one():
    r = mcnemar(0, 0)
    assert (r.exact_p, r.chi2_p, r.chi2) == (1.0, 1.0, 0.0)


def test_mcnemar_chi2_is_zero_as_r_when_the_discordant_counts_are_equal_or_one_apart():
    # R's mcnemar.test drops the continuity correction when |b - c| < 1: b = c gives 0 and p = 1.
    for b, c in ((1, 1), (5, 5), (40, 40)):
        r = mcnemar(b, c)
        assert (r.chi2, r.chi2_p) == (0.0, 1.0)
    assert mcnemar(3, 2).chi2 == 0.0


def test_mcnemar_from_verdicts_counts_flips():
    pre = np.array([0, 0, 1, 1, 0], bool)
    post = np.array([1, 1, 0, 1, 0], bool)
    r = mcnemar_from_verdicts(pre, post)
    assert (r.b, r.c) == (2, 1)
