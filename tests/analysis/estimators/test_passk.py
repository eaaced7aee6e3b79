"""analysis.estimators.passk: pass@k against exact fractions and a direct resampling, and its invariants."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import comb

from analysis.estimators import resampling
from analysis.estimators.passk import k_grid, pass_at_k, pass_at_k_bootstrap, pass_at_k_items, pass_at_k_table
from analysis.estimators.resampling import bootstrap_distribution, distinct_rows, row_groups, weighted_means


def test_pass_at_k_reference_values():
    # Chen et al. 2021 (HumanEval): the worked n=5, c=2, k=3 case and the paper's n=200 setting.
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9, abs=1e-15)
    assert pass_at_k(200, 10, 10) == pytest.approx(0.40854787, abs=5e-9)
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k: every draw of 5 holds a correct one


def test_pass_at_k_table_equals_the_binomial_definition():
    for n in (1, 2, 5, 8, 16, 30):
        for k in range(1, n + 1):
            table = pass_at_k_table(n, k)
            for c in range(n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert table[c] == pytest.approx(exact, abs=1e-12)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """1 - C(n-c, k) / C(n, k) in exact rational arithmetic (scipy.special.comb with exact=True)."""
    return 1 - Fraction(int(comb(n - c, k, exact=True)), int(comb(n, k, exact=True)))


@pytest.mark.parametrize("n", [256, 1024])
def test_pass_at_k_at_the_scale_of_rlvr_studies_equals_exact_fractions(n):
    rng = np.random.default_rng(n)
    for k in k_grid(n):
        table = pass_at_k_table(n, k)
        edges = {0, 1, 2, 3, n // 2, max(n - k - 1, 0), n - k, min(n - k + 1, n), n - 1, n}
        for c in sorted(edges | set(rng.integers(0, n + 1, 12).tolist())):
            exact = exact_pass_at_k(n, c, k)
            # Absolute error at the 1e-16 level, and relative where pass@k is small (c/n at k = 1).
            assert table[c] == pytest.approx(float(exact), rel=1e-12, abs=1e-15), (n, k, c)
            assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12, abs=1e-15), (n, k, c)


def test_pass_at_k_items_at_k_1024_equals_exact_fractions():
    n, counts = 1024, [0, 1, 7, 100, 512, 1000, 1023, 1024]
    scores = np.zeros((len(counts), n))
    rng = np.random.default_rng(5)
    for i, c in enumerate(counts):
        scores[i, rng.permutation(n)[:c]] = rng.uniform(0.5, 1.0, c)  # correct means score >= 0.5
        scores[i, scores[i] == 0] = rng.uniform(0.0, 0.49, n - c)
    ks = k_grid(n)
    got = pass_at_k_items(scores, ks)
    for i, c in enumerate(counts):
        assert got[i] == pytest.approx([float(exact_pass_at_k(n, c, k)) for k in ks], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("compress", [True, False])
def test_pass_at_k_bootstrap_at_k_1024_equals_a_direct_resampling(compress):
    # 0/1 scores at k = 1,024 with few distinct correct counts (the multinomial path) or item by item.
    rng = np.random.default_rng(21)
    n_items, n, n_boot = 400, 1024, 300
    levels = np.array([0, 1, 3, 40, 300, 900, 1021, 1024])
    c_pre = rng.choice(levels, n_items)
    c_post = np.minimum(c_pre + rng.choice([0, 0, 1, 50], n_items), n)
    pre = (np.arange(n) < c_pre[:, None]).astype(float)[:, rng.permutation(n)]
    post = (np.arange(n) < c_post[:, None]).astype(float)[:, rng.permutation(n)]
    ks = k_grid(n)
    r = pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(4), ks=ks, compress=compress)
    exact = {c: [float(exact_pass_at_k(n, int(c), k)) for k in ks] for c in {*c_pre, *c_post}}
    item_pre = np.array([exact[c] for c in c_pre])
    item_post = np.array([exact[c] for c in c_post])
    assert r.ks == ks and ks[-1] == 1024
    assert r.ref == pytest.approx(item_pre.mean(axis=0), rel=1e-12, abs=1e-15)
    assert r.arm == pytest.approx(item_post.mean(axis=0), rel=1e-12, abs=1e-15)
    # The same resamples drawn here: item weights over whole items (each with all 1,024 of its samples).
    draw = np.random.default_rng(4)
    if compress:
        rows = np.hstack([item_pre, item_post, (c_post - c_pre)[:, None] / n])
        distinct, counts = distinct_rows(rows)
        assert 8 * len(distinct) <= n_items  # the grouped path is the one exercised
        # In batches, each from its own child Generator (threads draw them side by side).
        step = -(-n_boot // resampling._MIN_BATCHES)
        sizes = [min(step, n_boot - s) for s in range(0, n_boot, step)]
        weights = np.vstack(
            [child.multinomial(n_items, counts / n_items, size=size)
             for child, size in zip(draw.spawn(len(sizes)), sizes, strict=True)]
        )  # fmt: skip
        keys = [tuple(row) for row in rows]
        groups = [[i for i, key in enumerate(keys) if key == tuple(row)] for row in distinct]
        w = np.zeros((n_boot, n_items))
        for g, members in enumerate(groups):
            w[:, members[0]] = weights[:, g]  # one member carries the group's weight: same means
    else:
        idx = draw.integers(0, n_items, (n_boot, n_items))
        w = np.stack([np.bincount(row, minlength=n_items) for row in idx]).astype(float)
    boot_pre, boot_post = w @ item_pre / n_items, w @ item_post / n_items
    for j in range(len(ks)):
        for got, dist in ((r.ref_ci[j], boot_pre[:, j]), (r.arm_ci[j], boot_post[:, j]),
                          (r.delta_ci[j], boot_post[:, j] - boot_pre[:, j])):  # fmt: skip
            lo, hi = np.quantile(dist, [0.025, 0.975])
            assert (got.lo, got.hi) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert r.delta_ci[-1].lo > 0  # pass@1024 moves only where an item without a correct sample gains one


def test_pass_at_k_rejects_impossible_arguments():
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(5, 2, 6)


def test_k_grid_is_powers_of_two_and_n():
    assert k_grid(1) == [1]
    assert k_grid(5) == [1, 2, 4, 5]
    assert k_grid(16) == [1, 2, 4, 8, 16]


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
@settings(max_examples=200, deadline=None)
def test_pass_at_k_never_decreases_in_k(nc):
    n, c = nc
    values = [pass_at_k_table(n, k)[c] for k in range(1, n + 1)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert all(0.0 <= v <= 1.0 for v in values)


def test_pass_at_k_items_thresholds_scores():
    scores = np.array([[1, 0, 0, 1], [0.4, 0.6, 0.0, 0.0], [0, 0, 0, 0]])
    got = pass_at_k_items(scores, [1, 2, 4])
    assert got[0].tolist() == pytest.approx([0.5, 1 - 1 / 6, 1.0])
    assert got[1].tolist() == pytest.approx([0.25, 0.5, 1.0])
    assert got[2].tolist() == [0.0, 0.0, 0.0]


def test_pass_at_k_bootstrap_of_fractional_scores_draws_the_pass_at_k_part_grouped():
    # Fractional scores: every item's mean difference is distinct, its correct counts are not. The pass@k
    # part is drawn grouped and the mean difference apart; both agree with the item-by-item draw.
    rng = np.random.default_rng(8)
    n_items, k, n_boot = 3000, 8, 4000
    p = rng.beta(1.0, 1.5, n_items)[:, None]
    pre = np.clip(p + rng.normal(0, 0.25, (n_items, k)), 0, 1).round(6)
    post = np.clip(p + 0.05 + rng.normal(0, 0.25, (n_items, k)), 0, 1).round(6)
    passk = np.hstack([pass_at_k_items(pre, k_grid(k)), pass_at_k_items(post, k_grid(k))])
    assert row_groups(passk) is not None
    assert row_groups(np.hstack([passk, (post - pre).mean(axis=1)[:, None]])) is None
    split = pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(1))
    plain = pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(2), compress=False)
    assert split.ref == pytest.approx(plain.ref) and split.mean_delta == pytest.approx(plain.mean_delta)
    draw = np.random.default_rng(1)  # the same two draws, one after the other
    theta = bootstrap_distribution(passk, weighted_means, n_boot, draw)
    mean_d = bootstrap_distribution((post - pre).mean(axis=1), weighted_means, n_boot, draw)
    assert split.arm_ci[-1].lo == pytest.approx(np.quantile(theta[:, -1], 0.025), abs=1e-12)
    assert split.mean_delta_ci.hi == pytest.approx(np.quantile(mean_d[:, 0], 0.975), abs=1e-12)
    mine = [*split.ref_ci, *split.arm_ci, *split.delta_ci, split.mean_delta_ci]
    theirs = [*plain.ref_ci, *plain.arm_ci, *plain.delta_ci, plain.mean_delta_ci]
    for a, b in zip(mine, theirs, strict=True):
        width = b.hi - b.lo
        assert abs(a.lo - b.lo) < 0.08 * width and abs(a.hi - b.hi) < 0.08 * width


def test_pass_at_k_bootstrap_of_identical_arms_is_zero():
    scores = (np.random.default_rng(0).random((40, 8)) < 0.4).astype(float)
    r = pass_at_k_bootstrap(scores, scores, 500, np.random.default_rng(0))
    assert r.ks == [1, 2, 4, 8]
    assert np.all(r.delta == 0)
    assert all((c.lo, c.hi) == (0.0, 0.0) for c in r.delta_ci)
    assert r.mean_delta == 0 and r.mean_delta_ci.as_list() == [0.0, 0.0]
