"""analysis.evalstats against published reference values, scipy on small data, and its own invariants."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import comb

from analysis import evalstats as es

ROOT = Path(__file__).resolve().parents[1]

# Benjamini & Hochberg (1995), section 4: the fifteen p-values of the myocardial-infarction example.
BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719,
           0.6528, 0.7590, 1.000]  # fmt: skip


# ----------------------------------------------------------------------------------------------- pass@k


def test_pass_at_k_reference_values():
    # Chen et al. 2021 (HumanEval): the worked n=5, c=2, k=3 case and the paper's n=200 setting.
    assert es.pass_at_k(5, 2, 3) == pytest.approx(0.9, abs=1e-15)
    assert es.pass_at_k(200, 10, 10) == pytest.approx(0.40854787, abs=5e-9)
    assert es.pass_at_k(10, 0, 5) == 0.0
    assert es.pass_at_k(10, 10, 1) == 1.0
    assert es.pass_at_k(10, 6, 5) == 1.0  # n - c < k: every draw of 5 holds a correct one


def test_pass_at_k_table_equals_the_binomial_definition():
    for n in (1, 2, 5, 8, 16, 30):
        for k in range(1, n + 1):
            table = es.pass_at_k_table(n, k)
            for c in range(n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert table[c] == pytest.approx(exact, abs=1e-12)
                assert es.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """1 - C(n-c, k) / C(n, k) in exact rational arithmetic (scipy.special.comb with exact=True)."""
    return 1 - Fraction(int(comb(n - c, k, exact=True)), int(comb(n, k, exact=True)))


@pytest.mark.parametrize("n", [256, 1024])
def test_pass_at_k_at_the_scale_of_rlvr_studies_equals_exact_fractions(n):
    rng = np.random.default_rng(n)
    for k in es.k_grid(n):
        table = es.pass_at_k_table(n, k)
        edges = {0, 1, 2, 3, n // 2, max(n - k - 1, 0), n - k, min(n - k + 1, n), n - 1, n}
        for c in sorted(edges | set(rng.integers(0, n + 1, 12).tolist())):
            exact = exact_pass_at_k(n, c, k)
            # Absolute error at the 1e-16 level, and relative where pass@k is small (c/n at k = 1).
            assert table[c] == pytest.approx(float(exact), rel=1e-12, abs=1e-15), (n, k, c)
            assert es.pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12, abs=1e-15), (n, k, c)


def test_pass_at_k_items_at_k_1024_equals_exact_fractions():
    n, counts = 1024, [0, 1, 7, 100, 512, 1000, 1023, 1024]
    scores = np.zeros((len(counts), n))
    rng = np.random.default_rng(5)
    for i, c in enumerate(counts):
        scores[i, rng.permutation(n)[:c]] = rng.uniform(0.5, 1.0, c)  # correct means score >= 0.5
        scores[i, scores[i] == 0] = rng.uniform(0.0, 0.49, n - c)
    ks = es.k_grid(n)
    got = es.pass_at_k_items(scores, ks)
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
    ks = es.k_grid(n)
    r = es.pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(4), ks=ks, compress=compress)
    exact = {c: [float(exact_pass_at_k(n, int(c), k)) for k in ks] for c in {*c_pre, *c_post}}
    item_pre = np.array([exact[c] for c in c_pre])
    item_post = np.array([exact[c] for c in c_post])
    assert r.ks == ks and ks[-1] == 1024
    assert r.pre == pytest.approx(item_pre.mean(axis=0), rel=1e-12, abs=1e-15)
    assert r.post == pytest.approx(item_post.mean(axis=0), rel=1e-12, abs=1e-15)
    # The same resamples drawn here: item weights over whole items (each with all 1,024 of its samples).
    draw = np.random.default_rng(4)
    if compress:
        rows = np.hstack([item_pre, item_post, (c_post - c_pre)[:, None] / n])
        distinct, counts = es._distinct_rows(rows)
        assert 8 * len(distinct) <= n_items  # the grouped path is the one exercised
        # In batches, each from its own child Generator (threads draw them side by side).
        step = -(-n_boot // es._MIN_BATCHES)
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
        for got, dist in ((r.pre_ci[j], boot_pre[:, j]), (r.post_ci[j], boot_post[:, j]),
                          (r.delta_ci[j], boot_post[:, j] - boot_pre[:, j])):  # fmt: skip
            lo, hi = np.quantile(dist, [0.025, 0.975])
            assert (got.lo, got.hi) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert r.delta_ci[-1].lo > 0  # pass@1024 moves only where an item without a correct sample gains one


def test_pass_at_k_rejects_impossible_arguments():
    with pytest.raises(ValueError, match="pass@k needs"):
        es.pass_at_k(5, 6, 1)
    with pytest.raises(ValueError, match="pass@k needs"):
        es.pass_at_k(5, 2, 6)


def test_k_grid_is_powers_of_two_and_n():
    assert es.k_grid(1) == [1]
    assert es.k_grid(5) == [1, 2, 4, 5]
    assert es.k_grid(16) == [1, 2, 4, 8, 16]


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
@settings(max_examples=200, deadline=None)
def test_pass_at_k_never_decreases_in_k(nc):
    n, c = nc
    values = [es.pass_at_k_table(n, k)[c] for k in range(1, n + 1)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert all(0.0 <= v <= 1.0 for v in values)


def test_pass_at_k_items_thresholds_scores():
    scores = np.array([[1, 0, 0, 1], [0.4, 0.6, 0.0, 0.0], [0, 0, 0, 0]])
    got = es.pass_at_k_items(scores, [1, 2, 4])
    assert got[0].tolist() == pytest.approx([0.5, 1 - 1 / 6, 1.0])
    assert got[1].tolist() == pytest.approx([0.25, 0.5, 1.0])
    assert got[2].tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------- McNemar


def test_mcnemar_exact_reference():
    r = es.mcnemar(4, 0)
    assert r.exact_p == pytest.approx(0.125, abs=1e-15)
    assert r.chi2 == pytest.approx(2.25)


def test_mcnemar_chi2_matches_r_documentation_example():
    # R ?mcnemar.test, presidential approval (Agresti 1990): discordant 150 and 86 ->
    # McNemar's chi-squared = 16.818, df = 1, p-value = 4.115e-05.
    r = es.mcnemar(150, 86)
    assert r.chi2 == pytest.approx(16.818, abs=5e-4)
    assert r.chi2_p == pytest.approx(4.115e-05, rel=1e-3)
    assert r.exact_p == pytest.approx(stats.binomtest(150, 236).pvalue)


def test_mcnemar_equals_scipy_binomtest_and_chi2_for_every_split():
    for n in range(1, 121):
        for b in range(n + 1):
            r = es.mcnemar(b, n - b)
            assert r.exact_p == pytest.approx(stats.binomtest(b, n, 0.5).pvalue, rel=1e-13, abs=1e-300)
            assert r.chi2_p == stats.chi2.sf(r.chi2, 1)


def test_mcnemar_without_discordant_pairs_is_p_one():
    r = es.mcnemar(0, 0)
    assert (r.exact_p, r.chi2_p, r.chi2) == (1.0, 1.0, 0.0)


def test_mcnemar_chi2_is_zero_as_r_when_the_discordant_counts_are_equal_or_one_apart():
    # R's mcnemar.test drops the continuity correction when |b - c| < 1: b = c gives 0 and p = 1.
    for b, c in ((1, 1), (5, 5), (40, 40)):
        r = es.mcnemar(b, c)
        assert (r.chi2, r.chi2_p) == (0.0, 1.0)
    assert es.mcnemar(3, 2).chi2 == 0.0


def test_mcnemar_from_verdicts_counts_flips():
    pre = np.array([0, 0, 1, 1, 0], bool)
    post = np.array([1, 1, 0, 1, 0], bool)
    r = es.mcnemar_from_verdicts(pre, post)
    assert (r.b, r.c) == (2, 1)


# ------------------------------------------------------------------------------------ Benjamini-Hochberg


def test_bh_rejects_four_of_the_fifteen_1995_p_values():
    q = es.bh_qvalues(BH_1995)
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
    assert es.bh_qvalues(p) == pytest.approx(expected)
    assert es.bh_qvalues([]).size == 0


@given(
    st.lists(st.sampled_from([0.0, 1e-4, 0.01, 0.02, 0.5, 1.0]) | st.floats(0, 1), min_size=0, max_size=30)
)
def test_bh_qvalues_equal_scipy_false_discovery_control(p):
    want = stats.false_discovery_control(p, method="bh") if len(p) > 1 else np.asarray(p, dtype=float)
    assert np.array_equal(es.bh_qvalues(p), want)


def test_bh_qvalues_refuse_a_p_value_outside_the_unit_interval():
    with pytest.raises(ValueError, match="p-values must lie in"):
        es.bh_qvalues([0.2, 1.5])


def test_the_analyses_do_not_import_scipy_stats():
    # scipy.stats costs about a second to import, half of a whole delta report; evalstats uses the
    # scipy.special kernels it would call, which the tests above check against scipy.stats.
    code = "import sys, analysis.delta, analysis.arm_comparison; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------------------- sign flip


def test_exact_sign_flip_of_ten_positive_differences():
    r = es.sign_flip_test(np.arange(1, 11) / 10, 10_000, np.random.default_rng(0))
    assert r.exact and r.n_perm == 1024
    assert r.p[0] == 0.001953125


@pytest.mark.parametrize("n", [5, 9, 12])
def test_exact_sign_flip_equals_scipy_permutation_test(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.4, 1.0, n)
    ours = es.sign_flip_test(d, 10_000, rng)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000)
    assert ours.exact
    assert ours.p[0] == pytest.approx(ref.pvalue, abs=1e-12)


def test_monte_carlo_sign_flip_agrees_with_scipy():
    rng = np.random.default_rng(11)
    d = rng.normal(0.35, 1.0, 40)  # continuous: the general (unpacked random bits) path
    ours = es.sign_flip_test(d, 40_000, np.random.default_rng(1))
    ref = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=40_000, rng=np.random.default_rng(2)
    )
    assert not ours.exact
    assert abs(ours.p[0] - ref.pvalue) < 0.01


@pytest.mark.parametrize(("n", "m"), [(13, 1), (1_003, 1), (250, 3), (64, 9)])
def test_sign_flips_summed_from_byte_tables_equal_unpacked_flips_times_d(n, m):
    """The Monte Carlo null sums each random byte's flips from a table: the sums of unpacking the bits."""
    d = np.random.default_rng(n).normal(0.1, 1.0, (n, m))
    null, exact = es._sign_flip_null(d, 1_000, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    step = max(1, min(1_000, es._BATCH_ELEMENTS // n))
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
    got = es.sign_flip_test(d, 200_000, np.random.default_rng(5))
    assert not got.exact
    assert got.p[0] == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 200_000) + 1e-5)


def test_sign_flip_of_zero_differences_is_p_one():
    for n in (5, 500):
        assert es.sign_flip_test(np.zeros(n), 10_000, np.random.default_rng(0)).p[0] == 1.0


@given(st.lists(st.integers(-8, 8), min_size=15, max_size=60), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_sign_flip_p_is_symmetric_under_negation(values, seed):
    d = np.array(values) / 8
    p = es.sign_flip_test(d, 2000, es.rng_for(seed, "perm")).p[0]
    q = es.sign_flip_test(-d, 2000, es.rng_for(seed, "perm")).p[0]
    assert p == q
    assert 0 < p <= 1


# ----------------------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_bootstrap_mean_ci_equals_scipy_bootstrap(method):
    rng = np.random.default_rng(7)
    x = rng.exponential(1.0, 37)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=999, batch=100, method=method, rng=np.random.default_rng(5)
    )
    ours = es.bootstrap_mean_ci(
        x, 999, np.random.default_rng(5), method=method.lower(), batch=100, compress=False
    )
    assert ours[0].lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours[0].hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert ours[0].method == method.lower()


def test_paired_bootstrap_equals_scipy_paired_bootstrap():
    rng = np.random.default_rng(8)
    pre = rng.random(50)
    post = pre + rng.normal(0.05, 0.2, 50)

    def stat(a, b, axis=-1):
        return np.mean(b - a, axis=axis)

    ref = stats.bootstrap((pre, post), stat, paired=True, n_resamples=2000, batch=500, method="BCa",
                          rng=np.random.default_rng(9))  # fmt: skip
    d = post - pre
    ours = es.bootstrap_mean_ci(d, 2000, np.random.default_rng(9), batch=500, compress=False)[0]
    assert (ours.lo, ours.hi) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)


def test_grouped_bootstrap_has_the_bootstrap_variance_of_a_mean():
    # 0/1-score differences fall into few distinct values: the multinomial path. Its resampled means must
    # have the plug-in variance var(x)/n, as the item-by-item bootstrap does.
    rng = np.random.default_rng(4)
    x = rng.integers(-4, 5, 3000) / 4
    for compress in (True, False):
        theta = es.bootstrap_distribution(
            x, es.weighted_means, 20_000, np.random.default_rng(1), compress=compress
        )
        assert theta.mean() == pytest.approx(x.mean(), abs=4 * x.std() / math.sqrt(3000 * 20_000))
        assert theta.var() == pytest.approx(x.var() / x.size, rel=0.04)
    grouped = es.bootstrap_mean_ci(x, 20_000, np.random.default_rng(2), method="percentile")[0]
    plain = es.bootstrap_mean_ci(x, 20_000, np.random.default_rng(2), method="percentile", compress=False)[0]
    width = plain.hi - plain.lo
    assert abs(grouped.lo - plain.lo) < 0.05 * width and abs(grouped.hi - plain.hi) < 0.05 * width


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_constant_data_gives_a_point_interval(method, compress):
    for value in (0.0, 0.25, 1.0):
        ci = es.bootstrap_mean_ci(
            np.full(64, value), 500, np.random.default_rng(0), method=method, compress=compress
        )
        assert (ci[0].lo, ci[0].hi) == (value, value)


def test_bca_never_returns_nan():
    x = np.zeros(200)
    x[0] = 1.0  # very skewed: most resamples equal the estimate or lie below it
    ci = es.bootstrap_mean_ci(x, 2000, np.random.default_rng(0))[0]
    assert math.isfinite(ci.lo) and math.isfinite(ci.hi) and ci.lo <= x.mean() <= ci.hi


@given(st.lists(st.integers(-4, 4), min_size=20, max_size=120), st.booleans(), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_bootstrap_ci_mirrors_under_negation(values, compress, seed):
    d = np.array(values) / 4
    a = es.bootstrap_mean_ci(d, 400, es.rng_for(seed, "item"), compress=compress)[0]
    b = es.bootstrap_mean_ci(-d, 400, es.rng_for(seed, "item"), compress=compress)[0]
    assert b.lo == pytest.approx(-a.hi, abs=1e-12)
    assert b.hi == pytest.approx(-a.lo, abs=1e-12)


def test_cluster_bootstrap_equals_scipy_resampling_whole_items():
    rng = np.random.default_rng(12)
    scores = (rng.random((30, 6)) < rng.random((30, 1))).astype(float)
    ks = [1, 2, 3, 4, 5, 6]  # more than four columns: the counts-times-rows path (one column gathers)

    def stat(idx, axis=-1):
        resampled = scores[idx]  # (batch, n, k): each drawn item keeps its own k samples
        flat = resampled.reshape(-1, scores.shape[1])
        return es.pass_at_k_items(flat, ks).reshape(*idx.shape, len(ks)).mean(axis=-2).T

    ref = stats.bootstrap((np.arange(30),), stat, n_resamples=500, batch=50, method="percentile",
                          rng=np.random.default_rng(3))  # fmt: skip
    est, theta = es.cluster_bootstrap(
        scores, lambda cl: es.pass_at_k_items(cl, ks), 500, np.random.default_rng(3), batch=50, compress=False
    )
    lo, hi = es.percentile_interval(theta, 0.05)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert est == pytest.approx(es.pass_at_k_items(scores, ks).mean(axis=0))


def test_pass_at_k_bootstrap_of_fractional_scores_draws_the_pass_at_k_part_grouped():
    # Fractional scores: every item's mean difference is distinct, its correct counts are not. The pass@k
    # part is drawn grouped and the mean difference apart; both agree with the item-by-item draw.
    rng = np.random.default_rng(8)
    n_items, k, n_boot = 3000, 8, 4000
    p = rng.beta(1.0, 1.5, n_items)[:, None]
    pre = np.clip(p + rng.normal(0, 0.25, (n_items, k)), 0, 1).round(6)
    post = np.clip(p + 0.05 + rng.normal(0, 0.25, (n_items, k)), 0, 1).round(6)
    passk = np.hstack([es.pass_at_k_items(pre, es.k_grid(k)), es.pass_at_k_items(post, es.k_grid(k))])
    assert es._groups(passk) is not None
    assert es._groups(np.hstack([passk, (post - pre).mean(axis=1)[:, None]])) is None
    split = es.pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(1))
    plain = es.pass_at_k_bootstrap(pre, post, n_boot, np.random.default_rng(2), compress=False)
    assert split.pre == pytest.approx(plain.pre) and split.mean_delta == pytest.approx(plain.mean_delta)
    draw = np.random.default_rng(1)  # the same two draws, one after the other
    theta = es.bootstrap_distribution(passk, es.weighted_means, n_boot, draw)
    mean_d = es.bootstrap_distribution((post - pre).mean(axis=1), es.weighted_means, n_boot, draw)
    assert split.post_ci[-1].lo == pytest.approx(np.quantile(theta[:, -1], 0.025), abs=1e-12)
    assert split.mean_delta_ci.hi == pytest.approx(np.quantile(mean_d[:, 0], 0.975), abs=1e-12)
    mine = [*split.pre_ci, *split.post_ci, *split.delta_ci, split.mean_delta_ci]
    theirs = [*plain.pre_ci, *plain.post_ci, *plain.delta_ci, plain.mean_delta_ci]
    for a, b in zip(mine, theirs, strict=True):
        width = b.hi - b.lo
        assert abs(a.lo - b.lo) < 0.08 * width and abs(a.hi - b.hi) < 0.08 * width


def test_pass_at_k_bootstrap_of_identical_arms_is_zero():
    scores = (np.random.default_rng(0).random((40, 8)) < 0.4).astype(float)
    r = es.pass_at_k_bootstrap(scores, scores, 500, np.random.default_rng(0))
    assert r.ks == [1, 2, 4, 8]
    assert np.all(r.delta == 0)
    assert all((c.lo, c.hi) == (0.0, 0.0) for c in r.delta_ci)
    assert r.mean_delta == 0 and r.mean_delta_ci.as_list() == [0.0, 0.0]


def test_rng_for_is_deterministic_and_separates_purposes():
    a = es.rng_for(1234, "item").integers(0, 1 << 30, 5)
    b = es.rng_for(1234, "item").integers(0, 1 << 30, 5)
    c = es.rng_for(1234, "perm").integers(0, 1 << 30, 5)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


# -------------------------------------------------------------------------------------------- effect size


def test_cohens_dz_ci_inverts_the_noncentral_t():
    rng = np.random.default_rng(1)
    d = rng.normal(0.3, 1.0, 25)
    r = es.cohens_dz(d)
    n = d.size
    t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    assert r.dz == pytest.approx(d.mean() / d.std(ddof=1))
    assert stats.nct.cdf(t, n - 1, r.lo * math.sqrt(n)) == pytest.approx(0.975, abs=1e-9)
    assert stats.nct.cdf(t, n - 1, r.hi * math.sqrt(n)) == pytest.approx(0.025, abs=1e-9)
    assert r.lo < r.dz < r.hi


def test_cohens_dz_ci_approaches_the_large_sample_normal_interval():
    rng = np.random.default_rng(2)
    d = rng.normal(0.5, 1.0, 20_000)
    r = es.cohens_dz(d)
    se = math.sqrt(1 / d.size + r.dz**2 / (2 * d.size))  # Hedges & Olkin's asymptotic variance
    assert r.lo == pytest.approx(r.dz - 1.959964 * se, abs=1e-3)
    assert r.hi == pytest.approx(r.dz + 1.959964 * se, abs=1e-3)


def test_cohens_dz_undefined_for_differences_constant_up_to_rounding():
    # 0.3 - 0.1 and 0.2 - 0.0 are both 0.2 but differ in the last bit: sd ~ 1e-17, not an effect of 1e16.
    pre, post = np.array([0.1, 0.0] * 5), np.array([0.3, 0.2] * 5)
    d = post - pre
    assert d.std(ddof=1) > 0
    assert es.cohens_dz(d) is None


def test_cohens_dz_undefined_for_constant_differences():
    assert es.cohens_dz(np.zeros(10)) is None
    assert es.cohens_dz(np.ones(10)) is None
    assert es.cohens_dz(np.array([0.5])) is None


# ----------------------------------------------------------------------------------------------- MDE


def test_mde_for_one_binary_sample_matches_its_closed_form():
    # Base rate 0.5 in both arms and correlation 0.5: MDE = (z.975 + z.80) sqrt(2 p (1 - p) (1 - rho) / n).
    block_pre = [1, 1, 1, 0, 0, 0, 1, 0]
    block_post = [1, 1, 1, 0, 0, 0, 0, 1]
    pre = np.array(block_pre * 125, float)[:, None]
    post = np.array(block_post * 125, float)[:, None]
    assert np.corrcoef(pre[:, 0], post[:, 0])[0, 1] == pytest.approx(0.5)
    m = es.mde_paired(pre, post)
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
    m = es.mde_paired(pre, post)
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
    small = es.mde_paired(pre, post).mde
    big = es.mde_paired(np.tile(pre, (4, 1)), np.tile(post, (4, 1))).mde
    assert big == pytest.approx(small / 2, rel=0.01)


# ----------------------------------------------------------------------------------------------- ECE


def test_ece_hand_computed():
    conf = np.array([0.9, 0.9, 0.1, 0.1])
    correct = np.array([1, 0, 0, 0])
    # bin 9: accuracy 0.5 vs confidence 0.9 on half the items; bin 1: 0 vs 0.1 on the other half.
    assert es.expected_calibration_error(conf, correct) == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)


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
    assert es.expected_calibration_error(conf, correct, n_bins=15) == pytest.approx(direct)


def test_ece_difference_bootstrap():
    rng = np.random.default_rng(3)
    conf = rng.random(400)
    correct = (rng.random(400) < conf).astype(float)
    same, ci, _ = es.ece_difference_test(conf, correct, conf, correct, 500, np.random.default_rng(0))
    assert same == 0 and ci.as_list() == [0.0, 0.0]
    worse = np.clip(conf + 0.3, 0, 1)
    diff, ci, _ = es.ece_difference_test(conf, correct, worse, correct, 2000, np.random.default_rng(0))
    assert diff == pytest.approx(
        es.expected_calibration_error(worse, correct) - es.expected_calibration_error(conf, correct)
    )
    assert ci.lo > 0 and ci.lo <= diff <= ci.hi


# ------------------------------------------------------------------------------------ budget adjustment


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
    got = es.budget_adjusted_deltas([(y_base, y_arm, b_base, b_arm)], 1000, np.random.default_rng(0))[0]
    assert got.delta == pytest.approx(loop_budget_adjusted_delta(y_base, y_arm, b_base, b_arm), abs=1e-12)
    assert got.ci.lo <= got.delta <= got.ci.hi
    assert sum(s["ref_weight"] for s in got.strata) == pytest.approx(1.0)


def test_budget_adjustment_reports_strata_without_support():
    b_base = np.arange(1.0, 11.0)
    y_base = np.zeros(10)
    y_arm = np.linspace(0, 1, 10)
    got = es.budget_adjusted_deltas([(y_base, y_arm, b_base, b_base + 100)], 200, np.random.default_rng(0))[0]
    assert got.no_support == [0, 1, 2, 3]
    assert got.used_weight == pytest.approx(0.2)
    assert got.delta == pytest.approx(y_arm.mean())  # every arm item sits in the top stratum
    same = es.budget_adjusted_deltas([(y_base, y_arm, b_base, b_base)], 200, np.random.default_rng(0))[0]
    assert same.no_support == [] and same.delta == pytest.approx(y_arm.mean())


def test_budget_adjustment_of_several_contrasts_matches_one_at_a_time():
    rng = np.random.default_rng(8)
    n = 200
    b0 = rng.integers(20, 60, n).astype(float)
    y0 = rng.random(n)
    contrasts = [(y0, rng.random(n), b0, b0 + rng.normal(s, 5, n)) for s in (0, 5, 10)]
    joint = es.budget_adjusted_deltas(contrasts, 100, np.random.default_rng(0))
    for c, j in zip(contrasts, joint, strict=True):
        assert j.delta == pytest.approx(loop_budget_adjusted_delta(*c), abs=1e-12)


# ---------------------------------------------------------------------------------------- power planning

Z_POWER = 1.959963984540054 + 0.8416212335729143  # z_{0.975} + z_{0.8}, from a normal table


def test_power_plan_without_a_pilot_is_the_textbook_paired_binary_formula():
    plan = es.power_plan(None, None, 0.02)
    # Var(d) = 2 p (1 - p) (1 - rho) = 2 * 0.25 * 0.5 = 0.25 per sample.
    assert plan.items_by_k[1] == math.ceil(Z_POWER**2 * 0.25 / 0.02**2) == 4906
    assert plan.items_by_k[8] == math.ceil(Z_POWER**2 * 0.25 / 8 / 0.02**2)
    assert "p = 0.5" in plan.assumed and "rho = 0.5" in plan.assumed


def test_power_plan_from_a_pilot_pair_by_hand():
    pilot = np.array([[1, 0], [1, 1], [0, 0], [0, 1]], float)
    post = np.array([[1, 1], [1, 1], [0, 1], [0, 0]], float)
    # d = [[0, 1], [0, 0], [0, 1], [0, -1]]: within = mean(1/2, 0, 1/2, 1/2) = 3/8; item means (1/2, 0, 1/2,
    # -1/2) have variance 11/48; between = 11/48 - (3/8) / 2 = 1/24.
    plan = es.power_plan(pilot, post, 0.1, ks=(1, 2))
    assert plan.within_item_var == pytest.approx(3 / 8) and plan.between_item_var == pytest.approx(1 / 24)
    assert plan.items_by_k == {
        1: math.ceil(Z_POWER**2 * (1 / 24 + 3 / 8) / 0.01),
        2: math.ceil(Z_POWER**2 * (1 / 24 + 3 / 16) / 0.01),
    }
    assert plan.assumed is None


def test_power_plan_from_a_pilot_alone_assumes_the_correlation():
    pilot = np.array([[1, 0], [1, 1], [0, 0], [0, 1]], float)
    # One arm: item means (1/2, 1, 0, 1/2), variance 1/6; within mean(1/2, 0, 0, 1/2) = 1/4; between 1/24.
    plan = es.power_plan(pilot, None, 0.1, ks=(2,))
    assert plan.between_item_var == pytest.approx(2 * (1 / 6 - 1 / 8) * 0.5)
    assert plan.within_item_var == pytest.approx(2 * 1 / 4)
    assert "rho = 0.5" in plan.assumed


def test_no_variance_gives_no_plan_and_no_zero_mde():
    scores = np.array([[1, 0], [0, 0], [1, 1]], float)
    with pytest.raises(ValueError, match="no variance"):
        es.power_plan(scores, scores.copy(), 0.02)
    mde = es.mde_paired(scores, scores.copy())
    assert mde.mde is None and "no variance" in mde.reason


# ------------------------------------------------------------------------------------------- noise floor


def test_aa_noise_floor_first_split_is_the_seeded_halves_by_hand():
    rng = np.random.default_rng(11)
    scores = (rng.random((50, 6)) < 0.4).astype(float)
    nf = es.aa_noise_floor(scores, 300, np.random.default_rng(3), n_splits=20)
    a, b = es.split_halves(6, 50, np.random.default_rng(3))
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
    nf = es.aa_noise_floor(scores, 1000, np.random.default_rng(4), alpha=0.1, n_splits=300)
    assert 0.05 <= nf.false_positive_rate <= 0.15


def test_aa_noise_floor_needs_two_samples_per_item():
    assert es.aa_noise_floor(np.ones((10, 1)), 100, np.random.default_rng(0)) is None


# ----------------------------------------------------------------------------------------- budget curves


def test_budget_curve_counts_unfinished_samples_as_wrong_by_hand():
    ref = np.array([[1, 0], [1, 1], [0, 1]], float)
    arm = np.array([[1, 1], [1, 1], [1, 1]], float)
    ref_tok = np.array([[5, 9], [20, 5], [5, 30]], float)
    arm_tok = np.array([[40, 40], [5, 40], [10, 10]], float)
    pts = es.budget_curve(ref, arm, ref_tok, arm_tok, [4, 10, 40], 200, np.random.default_rng(0))
    assert [p.budget for p in pts] == [4, 10, 40]
    assert (pts[0].ref, pts[0].arm) == (0.0, 0.0)
    # B = 10: ref keeps (1, 0), (0, 1) of (1, 1), (0, 0): 2/6; arm keeps (0, 0), (1, 0), (1, 1): 3/6.
    assert (pts[1].ref, pts[1].arm) == (pytest.approx(2 / 6), pytest.approx(3 / 6))
    assert pts[2].delta == pytest.approx(arm.mean() - ref.mean())
    assert all(p.ci.lo <= p.delta <= p.ci.hi for p in pts)
    assert es.budget_grid(64, 4) == [16, 32, 48, 64]


# ---------------------------------------------------------------------------------------------------------
# The factorial read-out


def test_factorial_effects_equal_hand_worked_values():
    # Per-item means: base (0, 1/2, 0), trained (1/2, 1/2, 0), +rag (0, 1, 1/2), trained+rag (1, 1, 1).
    cells = {
        (0, 0, 0): np.array([[0, 0], [1, 0], [0, 0]]),
        (1, 0, 0): np.array([[1, 0], [1, 0], [0, 0]]),
        (0, 1, 0): np.array([[0, 0], [1, 1], [1, 0]]),
        (1, 1, 0): np.array([[1, 1], [1, 1], [1, 1]]),
    }
    effects = {e.name: e for e in es.factorial_readout(cells, 2000, np.random.default_rng(0))}
    # training: trained - base per item (1/2, 0, 0); retrieval: +rag - base (0, 1/2, 1/2);
    # training x retrieval: (trained+rag - +rag) - (trained - base) per item (1/2, 0, 1/2).
    assert effects["training"].estimate == pytest.approx(1 / 6)
    assert effects["retrieval"].estimate == pytest.approx(1 / 3)
    txr = effects["training x retrieval"]
    assert txr.estimate == pytest.approx(1 / 3)
    assert txr.coefficients == {(1, 1, 0): 1, (1, 0, 0): -1, (0, 1, 0): -1, (0, 0, 0): 1}
    # Every resample is a mean of the per-item values 0 and 1/2; all three items at 0 has chance 1/27 > 2.5%,
    # so the interval reaches 0 and no interaction is claimed from three items.
    assert txr.ci is not None and txr.ci.lo == 0.0 and 1 / 3 <= txr.ci.hi <= 0.5
    assert txr.reading == es.NO_INTERACTION
    assert effects["training"].reading is None
    assert effects["tools"].estimate is None and effects["tools"].missing == [(0, 0, 1)]
    assert effects["training x tools"].missing == [(1, 0, 1), (0, 0, 1)]
    assert effects["training x retrieval x tools"].ci is None
    assert len(effects["training x retrieval x tools"].missing) == 4


def test_factorial_three_way_term_is_the_alternating_sum_of_the_eight_cells():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.1, 0.3, 40)
    planted = {"training": 0.1, "retrieval": 0.2, "tools": 0.3, "training x retrieval": 0.05}
    planted |= {"training x tools": -0.07, "retrieval x tools": 0.02, "training x retrieval x tools": 0.04}
    cells = {}
    for t in (0, 1):
        for r in (0, 1):
            for x in (0, 1):
                y = base + 0.1 * t + 0.2 * r + 0.3 * x + 0.05 * t * r - 0.07 * t * x + 0.02 * r * x
                cells[(t, r, x)] = (y + 0.04 * t * r * x)[:, None]
    effects = es.factorial_readout(cells, 500, np.random.default_rng(2))
    assert {e.name: round(e.estimate, 12) for e in effects} == planted
    # Every item carries the same contrast: each interval is that point, and the readings follow its sign.
    readings = {e.name: e.reading for e in effects if e.order > 1}
    assert readings == {
        "training x retrieval": es.COMPLEMENTS,
        "training x tools": es.SUBSTITUTES,
        "retrieval x tools": es.COMPLEMENTS,
        "training x retrieval x tools": es.COMPLEMENTS,
    }


def test_an_interaction_is_read_from_its_interval_alone():
    assert es.interaction_reading(es.Interval(0.0001, 0.3, "x")) == es.COMPLEMENTS
    assert es.interaction_reading(es.Interval(-0.3, -0.0001, "x")) == es.SUBSTITUTES
    assert es.interaction_reading(es.Interval(-0.0001, 0.3, "x")) == es.NO_INTERACTION
    assert es.interaction_reading(es.Interval(0.0, 0.0, "x")) == es.NO_INTERACTION


def test_threaded_draws_do_not_depend_on_the_number_of_threads(monkeypatch):
    rows = np.random.default_rng(5).random((700, 3))
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(es, "_DRAW_THREADS", threads)
        runs.append(es.bootstrap_distribution(rows, es.weighted_means, 900, es.rng_for(1, "x"), batch=100))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    # A statistic of more than four columns is counted in the caller's thread: the same draws.
    wide = np.hstack([rows, rows])
    theta = es.bootstrap_distribution(wide, es.weighted_means, 900, es.rng_for(1, "x"), batch=100)
    assert theta[:, :3] == pytest.approx(runs[0], abs=1e-12)
    assert theta.var(axis=0) == pytest.approx(wide.var(axis=0) / 700, rel=0.15)


@pytest.mark.parametrize("k", [4, 5, 20])
def test_half_deltas_are_uniform_over_the_splits_of_each_item(k):
    # Two right samples of k: the A/A delta of an item is +-2/h when both fall in one half, 0 when split
    # (or, for odd k, +-1/h when one is left out). Every path gives the combinatorial frequencies.
    h = k // 2
    scores = np.zeros((4000, k))
    scores[:, :2] = 1
    deltas = es.half_deltas(scores, 3, np.random.default_rng(7)).ravel()
    both_b = math.comb(k - 2, h - 2) * math.comb(k - h, h) / (math.comb(k, h) * math.comb(k - h, h))
    share = np.mean(np.isclose(deltas, 2 / h))
    assert share == pytest.approx(both_b, abs=4 * math.sqrt(both_b / deltas.size))
    assert np.mean(np.isclose(deltas, -2 / h)) == pytest.approx(
        both_b, abs=4 * math.sqrt(both_b / deltas.size)
    )
    assert deltas.mean() == pytest.approx(0, abs=4 * deltas.std() / math.sqrt(deltas.size))
