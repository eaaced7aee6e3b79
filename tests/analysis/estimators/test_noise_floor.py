"""analysis.estimators.noise_floor: the A/A split by hand, its false-positive rate and the uniform
half-splits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.estimators.noise_floor import aa_noise_floor, half_deltas, split_halves


def test_aa_noise_floor_first_split_is_the_seeded_halves_by_hand():
    rng = np.random.default_rng(11)
    scores = (rng.random((50, 6)) < 0.4).astype(float)
    nf = aa_noise_floor(scores, 300, np.random.default_rng(3), n_splits=20)
    a, b = split_halves(6, 50, np.random.default_rng(3))
    assert all(sorted([*a[i], *b[i]]) == list(range(6)) for i in range(50))
    rows = np.arange(50)[:, None]
    half_a, half_b = scores[rows, a].mean(axis=1), scores[rows, b].mean(axis=1)
    assert nf.delta == pytest.approx((half_b - half_a).mean(), abs=1e-15)
    assert nf.flip_share == np.mean((half_a >= 0.5) != (half_b >= 0.5))
    assert nf.ci.lo <= nf.delta <= nf.ci.hi and nf.half == 3 and nf.n_splits == 20


def test_aa_false_positive_rate_of_the_interval_is_near_alpha():
    rng = np.random.default_rng(12)
    p = rng.beta(0.7, 1.5, 300)
    scores = (rng.random((300, 8)) < p[:, None]).astype(float)
    nf = aa_noise_floor(scores, 1000, np.random.default_rng(4), alpha=0.1, n_splits=300)
    assert 0.05 <= nf.false_positive_rate <= 0.15


def test_aa_noise_floor_needs_two_samples_per_item():
    assert aa_noise_floor(np.ones((10, 1)), 100, np.random.default_rng(0)) is None


@pytest.mark.parametrize("k", [4, 5, 20])
def test_half_deltas_are_uniform_over_the_splits_of_each_item(k):
    # Two right samples of k: the A/A delta of an item is +-2/h when both fall in one half, 0 when split
    # (or, for odd k, +-1/h when one is left out). Every path gives the combinatorial frequencies.
    h = k // 2
    scores = np.zeros((4000, k))
    scores[:, :2] = 1
    deltas = half_deltas(scores, 3, np.random.default_rng(7)).ravel()
    both_b = math.comb(k - 2, h - 2) * math.comb(k - h, h) / (math.comb(k, h) * math.comb(k - h, h))
    share = np.mean(np.isclose(deltas, 2 / h))
    assert share == pytest.approx(both_b, abs=4 * math.sqrt(both_b / deltas.size))
    assert np.mean(np.isclose(deltas, -2 / h)) == pytest.approx(
        both_b, abs=4 * math.sqrt(both_b / deltas.size)
    )
    assert deltas.mean() == pytest.approx(0, abs=4 * deltas.std() / math.sqrt(deltas.size))
