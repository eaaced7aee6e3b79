"""analysis.estimators.signflip against scipy.stats.permutation_test and the exact binomial null."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators import signflip
from analysis.estimators.resampling import BATCH_ELEMENTS, rng_for
from analysis.estimators.signflip import sign_flip_test


def test_exact_sign_flip_of_ten_positive_differences():
    r = sign_flip_test(np.arange(1, 11) / 10, 10_000, np.random.default_rng(0))
    assert r.exact and r.n_perm == 1024
    assert r.p[0] == 0.001953125


@pytest.mark.parametrize("n", [5, 9, 12])
def test_exact_sign_flip_equals_scipy_permutation_test(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.4, 1.0, n)
    ours = sign_flip_test(d, 10_000, rng)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000)
    assert ours.exact
    assert ours.p[0] == pytest.approx(ref.pvalue, abs=1e-12)


def test_monte_carlo_sign_flip_agrees_with_scipy():
    rng = np.random.default_rng(11)
    d = rng.normal(0.35, 1.0, 40)  # continuous: the general (unpacked random bits) path
    ours = sign_flip_test(d, 40_000, np.random.default_rng(1))
    ref = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=40_000, rng=np.random.default_rng(2)
    )
    assert not ours.exact
    assert abs(ours.p[0] - ref.pvalue) < 0.01


@pytest.mark.parametrize(("n", "m"), [(13, 1), (1_003, 1), (250, 3), (64, 9)])
def test_sign_flips_summed_from_byte_tables_equal_unpacked_flips_times_d(n, m):
    """The Monte Carlo null sums each random byte's flips from a table: the sums of unpacking the bits."""
    d = np.random.default_rng(n).normal(0.1, 1.0, (n, m))
    null, exact = signflip._sign_flip_null(d, 1_000, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    step = max(1, min(1_000, BATCH_ELEMENTS // n))
    expected = []
    for start in range(0, 1_000, step):
        random_bytes = rng.integers(0, 256, (min(step, 1_000 - start), (n + 7) // 8), dtype=np.uint8)
        flips = np.unpackbits(random_bytes, axis=1, count=n).astype(np.float64)
        expected.append(d.sum(axis=0) - 2.0 * (flips @ d))
    assert not exact and null.shape == (1_000, m)
    np.testing.assert_allclose(null, np.concatenate(expected), rtol=0, atol=1e-11 * np.abs(d).sum())


def test_grouped_sign_flip_matches_the_exact_binomial_null():
    # 20 differences of size 1 and 20 of size 2 (the grouped path): T = (2 B1 - 20) + 2 (2 B2 - 20),
    # B1, B2 ~ Bin(20, 1/2) independent.
    d = np.array([1.0] * 20 + [2.0] * 20)
    d[:3] *= -1
    t_obs = d.sum()
    pmf = stats.binom.pmf(np.arange(21), 20, 0.5)
    b1, b2 = np.meshgrid(np.arange(21), np.arange(21), indexing="ij")
    t = (2 * b1 - 20) + 2 * (2 * b2 - 20)
    exact = float((np.outer(pmf, pmf) * (np.abs(t) >= abs(t_obs) - 1e-9)).sum())
    got = sign_flip_test(d, 200_000, np.random.default_rng(5))
    assert not got.exact
    assert got.p[0] == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 200_000) + 1e-5)


def test_sign_flip_of_zero_differences_is_p_one():
    for n in (5, 500):
        assert sign_flip_test(np.zeros(n), 10_000, np.random.default_rng(0)).p[0] == 1.0


@given(st.lists(st.integers(-8, 8), min_size=15, max_size=60), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_sign_flip_p_is_symmetric_under_negation(values, seed):
    d = np.array(values) / 8
    p = sign_flip_test(d, 2000, rng_for(seed, "perm")).p[0]
    q = sign_flip_test(-d, 2000, rng_for(seed, "perm")).p[0]
    assert p == q
    assert 0 < p <= 1
