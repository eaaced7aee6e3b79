"""The format estimators (analysis.reports.format_effect) against closed forms, scipy and the headline's own
draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.passk import pass_at_k
from analysis.estimators.proportions import newcombe_paired_interval
from analysis.reports import contrasts
from analysis.reports import format_effect as fe
from analysis.reports.report_parts import LenientTopK, MeanContrast
from analysis.reports.settings import AnalysisSettings

FAST = AnalysisSettings(n_boot=4000, n_perm=2000, seed=3)


def _answers(rng: np.random.Generator, n: int, k: int, rate: float) -> np.ndarray:
    return (rng.random((n, k)) < rate).astype(float)


def test_answered_share_is_the_mean_share_and_its_interval_scipy_percentile_bootstrap():
    rng = np.random.default_rng(0)
    answered = _answers(rng, 150, 4, 0.7)
    got = fe.answered_share(answered, FAST)
    items = answered.mean(axis=1)
    assert got.value == pytest.approx(answered.mean(), abs=1e-15)
    ref = stats.bootstrap(
        (items,), np.mean, n_resamples=20_000, method="percentile", random_state=np.random.default_rng(1)
    ).confidence_interval
    # Two Monte Carlo bootstraps of the same statistic: their ends agree to a few thousandths.
    assert got.interval.as_list() == pytest.approx([ref.low, ref.high], abs=0.008)
    assert fe.answered_share(np.ones((30, 2)), FAST).interval.as_list() == [1.0, 1.0]
    # One sample per item: Wilson's score interval, as scipy computes it.
    one = answered[:, :1]
    got = fe.answered_share(one, FAST)
    ref = stats.binomtest(int(one.sum()), one.size).proportion_ci(0.95, method="wilson")
    assert got.interval.as_list() == pytest.approx([ref.low, ref.high], abs=1e-12)
    assert got.interval.method == "Wilson score"


def test_accuracy_among_answered_is_the_pooled_ratio_with_a_cluster_bootstrap_interval():
    scores = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 1]], float)
    answered = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 0], [1, 1, 0]], float)
    # Answered samples: 2 + 3 + 0 + 2 = 7, of which right 1 + 2 + 0 + 2 = 5 (item 4's third is not read).
    got = fe.accuracy_among_answered(scores, answered, FAST)
    assert got.ratio == pytest.approx(5 / 7)
    assert got.n_counted == 7

    rng = np.random.default_rng(2)
    n, k = 120, 4
    answered = _answers(rng, n, k, 0.6)
    scores = answered * _answers(rng, n, k, 0.5)
    right, read = scores.sum(axis=1), answered.sum(axis=1)
    got = fe.accuracy_among_answered(scores, answered, FAST)
    assert got.ratio == pytest.approx(right.sum() / read.sum())
    ref = stats.bootstrap(
        (right, read), lambda r, a: r.sum() / a.sum(), paired=True, vectorized=False, n_resamples=4000,
        method="BCa", random_state=np.random.default_rng(3),
    ).confidence_interval  # fmt: skip
    assert got.ci is not None and got.ci.as_list() == pytest.approx([ref.low, ref.high], abs=0.01)
    assert got.empty_resamples == 0


def test_accuracy_among_answered_is_none_when_nothing_is_answered():
    got = fe.accuracy_among_answered(np.zeros((5, 2)), np.zeros((5, 2)), FAST)
    assert got.ratio is None and got.ci is None and got.n_counted == 0


@pytest.mark.parametrize("n", [40, 150])
def test_a_lenient_reader_that_agrees_gives_the_headline_numbers_and_verdicts_exactly(n):
    """Common random numbers: the lenient contrast draws as the headline does; equal scores, equal numbers."""
    rng = np.random.default_rng(n)
    base, trained = _answers(rng, n, 4, 0.4), _answers(rng, n, 4, 0.55)
    primary = contrasts.primary_contrast(base, trained, FAST)
    lenient, top = fe.lenient_primary(base, trained, FAST)
    mean, verdict = primary.stats, primary.decision
    headline = {"delta": mean.delta, "ci95": mean.ci.as_list(), "p_value": mean.p_value}
    headline |= {"q_value": verdict.q_value, "significant": verdict.significant}
    for key, value in headline.items():
        assert getattr(lenient, key) == value, key
    assert (top.p_value, top.p_holm, top.significant) == (
        primary.top_p,
        primary.top_p_holm,
        primary.top_significant,
    )
    assert top.ci95 == primary.passk.delta_ci[-1].as_list()
    # The mean-contrast form every other row uses draws the same interval and p as well.
    row = fe.lenient_contrast(base, trained, FAST, FAST.fdr)
    assert (row.ci95, row.p_value) == (mean.ci.as_list(), mean.p_value)
    # So the two readers reach the same verdicts: no FORMAT call from Monte Carlo luck.
    claim, _ = contrasts.claim(primary, FAST)
    assert fe.primary_call(claim, mean.delta, lenient, top, None)[0] is None


def test_the_lenient_pass_at_k_is_the_per_item_pass_at_k_difference():
    base = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]], float)
    trained = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]], float)
    _, top = fe.lenient_primary(base, trained, FAST)
    assert top.k == 4
    want = np.mean([pass_at_k(4, 1, 4) - 0.0, pass_at_k(4, 1, 4) - 0.0, 0.0 - pass_at_k(4, 2, 4)])
    assert top.delta == pytest.approx(want) == pytest.approx(1 / 3)
    lenient, top = fe.lenient_primary(base[:, :1], trained[:, :1], FAST)
    assert top is None and lenient.delta == pytest.approx(trained[:, 0].mean() - base[:, 0].mean())


def test_the_answered_change_is_newcombes_interval_for_one_sample_per_item_below_100_items():
    rng = np.random.default_rng(5)
    ref, arm = _answers(rng, 60, 1, 0.5), _answers(rng, 60, 1, 0.8)
    got = fe.answered_change(ref, arm, FAST)
    assert got.delta == pytest.approx(arm.mean() - ref.mean())
    assert got.ci95 == pytest.approx(list(newcombe_paired_interval(ref[:, 0], arm[:, 0], FAST.alpha)))
    assert got.ci95_method == "Newcombe paired score"
    # From 100 items, the headline's BCa interval of the per-item differences.
    ref, arm = _answers(rng, 200, 4, 0.5), _answers(rng, 200, 4, 0.6)
    got = fe.answered_change(ref, arm, FAST)
    want = contrasts.delta_interval(arm.mean(axis=1) - ref.mean(axis=1), FAST, "/answered")
    assert got.ci95 == want.as_list() and got.ci95_method == "bca"


def test_the_format_call_truth_table():
    assert fe.format_call(1, False) == fe.FORMAT
    assert fe.format_call(-1, False) == fe.FORMAT_DECLINE
    assert fe.format_call(1, True) is None and fe.format_call(-1, True) is None
    assert fe.format_call(0, False) is None


def _row(delta: float, significant: bool) -> MeanContrast:
    return MeanContrast(n_items=40, mean_ref=0.5, mean_arm=0.5 + delta, delta=delta,
                        ci95=[delta - 0.1, delta + 0.1], p_value=0.01 if significant else 0.5,
                        significant=significant)  # fmt: skip


def _top(delta: float, significant: bool) -> LenientTopK:
    return LenientTopK(k=4, pre=0.5, post=0.5 + delta, delta=delta, ci95=[delta - 0.1, delta + 0.1],
                       ci95_method="percentile (cluster)", p_value=0.01 if significant else 0.5,
                       significant=significant)  # fmt: skip


@pytest.mark.parametrize(
    ("claim", "lenient", "top", "call"),
    [
        ("EXPANSION", _row(0.0, False), _top(0.0, False), fe.FORMAT),
        ("SHARPENING", _row(0.0, False), _top(0.0, False), fe.FORMAT),
        ("SHARPENING", _row(0.2, True), _top(0.0, False), None),
        # A gain the lenient reader finds at pass@K only is not FORMAT either.
        ("EXPANSION", _row(0.0, False), _top(0.2, True), None),
        ("REGRESSION", _row(0.0, False), _top(0.0, False), fe.FORMAT_DECLINE),
        ("no detectable difference", _row(0.0, False), _top(0.0, False), None),
        ("TOO FEW ITEMS", _row(0.0, False), None, None),
    ],
)
def test_the_primary_call_reads_the_claim_and_both_lenient_tests(claim, lenient, top, call):
    got, detail = fe.primary_call(claim, 0.3 if claim != "REGRESSION" else -0.3, lenient, top, None)
    assert got == call
    assert ("where the report's reader looks" in detail) == (call is not None)
