"""analysis.estimators.effect_size: Cohen's d_z and its noncentral-t interval against scipy.stats.nct."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.effect_size import cohens_dz


def test_cohens_dz_ci_inverts_the_noncentral_t():
    rng = np.random.default_rng(1)
    d = rng.normal(0.3, 1.0, 25)
    r = cohens_dz(d)
    n = d.size
    t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    assert r.dz == pytest.approx(d.mean() / d.std(ddof=1))
    assert stats.nct.cdf(t, n - 1, r.lo * math.sqrt(n)) == pytest.approx(0.975, abs=1e-9)
    assert stats.nct.cdf(t, n - 1, r.hi * math.sqrt(n)) == pytest.approx(0.025, abs=1e-9)
    assert r.lo < r.dz < r.hi


def test_cohens_dz_ci_approaches_the_large_sample_normal_interval():
    rng = np.random.default_rng(2)
    d = rng.normal(0.5, 1.0, 20_000)
    r = cohens_dz(d)
    se = math.sqrt(1 / d.size + r.dz**2 / (2 * d.size))  # Hedges & Olkin's asymptotic variance
    assert r.lo == pytest.approx(r.dz - 1.959964 * se, abs=1e-3)
    assert r.hi == pytest.approx(r.dz + 1.959964 * se, abs=1e-3)


def test_cohens_dz_undefined_for_differences_constant_up_to_rounding():
    # 0.3 - 0.1 and 0.2 - 0.0 are both 0.2 but differ in the last bit: sd ~ 1e-17, not an effect of 1e16.
    pre, post = np.array([0.1, 0.0] * 5), np.array([0.3, 0.2] * 5)
    d = post - pre
    assert d.std(ddof=1) > 0
    assert cohens_dz(d) is None


def test_cohens_dz_undefined_for_constant_differences():
    assert cohens_dz(np.zeros(10)) is None
    assert cohens_dz(np.ones(10)) is None
    assert cohens_dz(np.array([0.5])) is None
