"""maj@k, pass^k, avg@k with its spread and Bayes@N (analysis.estimators.paper_metrics) against reference
values: the
authors' published Bayes@N example, closed forms (the Beta posterior, C(c, k) / C(n, k)), brute-force
enumeration, and lighteval 0.13's own rules (MajAtN's vote, G-Pass@k at threshold 1)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta, hypergeom

from analysis.estimators import paper_metrics as pm

GRPO_LOGS = Path(__file__).resolve().parents[3] / "examples" / "smollm2-grpo" / "evallogs"


def test_pass_hat_k_is_the_share_of_k_subsets_all_right_and_lighteval_g_pass_at_threshold_one() -> None:
    for n in range(1, 8):
        for c in range(n + 1):
            row = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(row, k))
                brute = sum(all(s) for s in subsets) / len(subsets)
                # lighteval G-Pass@k_tau (GPassAtK): hypergeom.sf(m - 1, n, c, k), m = ceil(k tau)
                g_pass = hypergeom.sf(k - 1, n, c, k) if k <= c else 0.0
                assert pm.pass_hat_k(n, c, k) == pytest.approx(brute, abs=1e-12)
                assert pm.pass_hat_k(n, c, k) == pytest.approx(g_pass, abs=1e-12)
    assert pm.pass_hat_k(8, 6, 4) == pytest.approx(math.comb(6, 4) / math.comb(8, 4))  # 15 / 70
    with pytest.raises(ValueError, match="pass\\^k needs"):
        pm.pass_hat_k(4, 5, 2)


def test_pass_hat_k_items_reads_correct_counts_at_half() -> None:
    scores = np.array([[1, 1, 1, 1], [1, 1, 0.6, 0.4], [0, 0, 0, 0]], dtype=float)
    np.testing.assert_allclose(pm.pass_hat_k_items(scores, 2), [1.0, 3 / 6, 0.0])
    np.testing.assert_allclose(pm.pass_hat_k_items(scores, 4), [1.0, 0.0, 0.0])


def _lighteval_maj(answers: list[str], gold: str) -> float:
    """lighteval 0.13 MajAtN.compute: max(all_answers, key=all_answers.count) compared with the gold."""
    return float(max(answers, key=answers.count) == gold)


def test_majority_right_follows_lightevals_vote_where_answers_are_text() -> None:
    rng = np.random.default_rng(7)
    for _ in range(2000):
        k = int(rng.integers(1, 9))
        answers = [str(a) for a in rng.integers(0, 4, size=k)]  # class "0" is the reference answer
        scores = [1.0 if a == "0" else 0.0 for a in answers]
        assert pm.majority_right(answers, scores) == _lighteval_maj(answers, "0"), answers


def test_majority_groups_right_answers_by_the_verifier_and_skips_no_answer() -> None:
    # The verifier judged '1/2' and '0.5' right: one answer with two votes against 'x' with two, read later.
    assert pm.majority_right(["1/2", "x", "0.5", "X "], [1, 0, 1, 0]) == 1.0
    # Tie between two wrong-or-right answers: the answer read first wins (here the wrong one).
    assert pm.majority_right(["7", "3", "3", "7"], [0, 1, 1, 0]) == 0.0
    assert pm.majority_right(["3", "7", "7", "3"], [1, 0, 0, 1]) == 1.0
    # No answer does not vote: one right answer against three unread samples is the majority.
    assert pm.majority_right([None, None, "4", None], [0, 0, 1, 0]) == 1.0
    assert pm.majority_right([None, None], [0, 0]) == 0.0
    items = pm.maj_at_k_items([["a", "a", "b"], ["c", "d", "d"]], np.array([[1, 1, 0], [1, 0, 0]]))
    np.testing.assert_array_equal(items, [1.0, 0.0])


def test_avg_at_k_is_the_mean_and_sd_of_per_run_accuracies() -> None:
    scores = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]], dtype=float)
    runs = [2 / 3, 1 / 3, 1.0, 1 / 3]
    mean, sd = pm.avg_at_k(scores)
    assert mean == pytest.approx(np.mean(runs))
    assert mean == pytest.approx(scores.mean())  # avg@k is pass@1
    assert sd == pytest.approx(math.sqrt(sum((r - np.mean(runs)) ** 2 for r in runs) / 3))
    # One run has no spread: undefined (None), never printed as "± 0.000".
    assert pm.avg_at_k(scores[:, :1]) == (pytest.approx(2 / 3), None)


def test_bayes_categorical_gives_the_authors_published_example() -> None:
    # Hariri et al.'s reference implementation (scorio.eval.bayes, docstring): R = [[0,1,2,2,1],[1,1,0,2,2]],
    # w = (0, 0.5, 1), no prior outcomes: mu 0.5625, sigma 0.091998.
    r = np.array([[0, 1, 2, 2, 1], [1, 1, 0, 2, 2]])
    counts = np.stack([np.bincount(row, minlength=3) for row in r])
    mu, sigma = pm.bayes_categorical(counts, [0.0, 0.5, 1.0])
    assert round(mu, 6) == 0.5625
    assert round(sigma, 6) == 0.091998


def test_bayes_at_n_is_the_beta_posterior_of_each_item_averaged() -> None:
    rng = np.random.default_rng(3)
    scores = (rng.random((40, 6)) < rng.random((40, 1))).astype(float)
    c = scores.sum(axis=1)
    mu, sd = pm.bayes_at_n(scores)
    post = beta(c + 1, 6 - c + 1)
    assert mu == pytest.approx(post.mean().mean())
    assert sd == pytest.approx(math.sqrt(post.var().sum()) / 40)
    counts = np.stack([6 - c, c], axis=1)
    assert pm.bayes_categorical(counts, [0.0, 1.0]) == (pytest.approx(mu), pytest.approx(sd))
    # The posterior of the suite mean, drawn: its mean and sd agree with the closed form.
    draws = post.rvs(size=(20000, 40), random_state=np.random.default_rng(5)).mean(axis=1)
    assert draws.mean() == pytest.approx(mu, abs=0.001)
    assert draws.std() == pytest.approx(sd, rel=0.03)


def test_bayes_delta_is_the_difference_of_independent_posteriors() -> None:
    a = np.array([[1, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    b = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], dtype=float)
    d = pm.bayes_delta(a, b, alpha=0.05)
    (ma, sa), (mb, sb) = pm.bayes_at_n(a), pm.bayes_at_n(b)
    assert d.estimate.value == pytest.approx(mb - ma) == pytest.approx(((4 + 2) - (2 + 1)) / 6 / 2)
    assert d.sd == pytest.approx(math.hypot(sa, sb))
    assert d.estimate.interval is not None
    assert d.estimate.interval.hi - d.estimate.value == pytest.approx(1.959964 * d.sd, rel=1e-6)


def test_arm_metrics_on_a_committed_log() -> None:
    from analysis.estimators.passk import pass_at_k_items
    from analysis.reports.align import arm_arrays, item_order, load_log

    log = load_log(GRPO_LOGS / "sweep" / "grpo-step-24.json")
    order = item_order(log)
    scores = arm_arrays(log, order).scores
    answers = [next(it for it in log.items if it.item_id == i).sample_answers() for i in order]
    m = pm.arm_metrics(scores, answers)
    assert (m.n_items, m.k) == (48, 4)
    assert m.avg == pytest.approx(scores.mean())
    assert m.pass_at_k == pytest.approx(pass_at_k_items(scores, [4]).mean())
    assert m.pass_hat == pytest.approx(np.mean(scores.sum(axis=1) == 4))
    assert m.maj is not None and 0 <= m.maj <= m.pass_at_k
    assert pm.arm_metrics(scores, None).maj is None
