"""The judge's estimators against published reference values: Cohen's kappa, sensitivity and specificity,
Rogan-Gladen, the corrected delta's bootstrap, and prediction-powered inference."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.estimators.judge_error import (
    NO_VERDICT,
    JudgedArm,
    agreement,
    cohens_kappa,
    corrected_accuracy,
    corrected_delta,
    differing_error,
    rogan_gladen,
)
from analysis.estimators.ppi import ppi_mean


def test_kappa_of_the_textbook_table() -> None:
    # Two readers of 50 proposals: 20 both yes, 15 both no, 5 and 10 split: p_o 0.7, p_e 0.5, kappa 0.4
    # (the worked example of the Wikipedia article "Cohen's kappa").
    kappa, ci = cohens_kappa(np.array([[20, 5], [10, 15]]))
    assert kappa == pytest.approx(0.4)
    assert ci is not None and ci[0] < 0.4 < ci[1]


def test_sensitivity_and_specificity_of_altman_and_bland() -> None:
    # Altman & Bland 1994 (BMJ 308:1552), liver scan against pathology: 231 of 258 abnormal found
    # (sensitivity 0.895), 54 of 86 normal found (specificity 0.628).
    rule = np.array([1] * 258 + [0] * 86)
    judge = np.array([1] * 231 + [0] * 27 + [1] * 32 + [0] * 54)
    a = agreement(rule, judge)
    assert round(a.sensitivity.value, 3) == 0.895 and round(a.specificity.value, 3) == 0.628
    assert a.agreement.k == 285 and a.no_verdict.k == 0


def test_no_verdict_counts_against_agreement_only() -> None:
    a = agreement(np.array([1, 1, 0, 0]), np.array([1, NO_VERDICT, 0, NO_VERDICT]))
    assert a.agreement.value == 0.5 and a.no_verdict.value == 0.5
    assert a.sensitivity.value == 1.0 and a.specificity.value == 1.0


def test_rogan_gladen_inverts_misclassification() -> None:
    # Rogan & Gladen 1978: apparent = p Se + (1 - p)(1 - Sp), so p = (apparent + Sp - 1) / (Se + Sp - 1).
    for p, se, sp in [(0.3, 0.9, 0.95), (0.6, 0.8, 0.7), (0.05, 0.99, 0.9)]:
        apparent = p * se + (1 - p) * (1 - sp)
        assert rogan_gladen(apparent, se, sp) == pytest.approx(p)
    assert rogan_gladen(0.5, 0.5, 0.55) is None  # Youden 0.05: no correction


def test_corrected_accuracy_and_its_bootstrap_recover_a_planted_judge() -> None:
    rng = np.random.default_rng(1)
    n, se, sp = 4000, 0.8, 0.9

    def arm(p: float) -> JudgedArm:
        truth = rng.random((n, 1)) < p
        said = np.where(truth, rng.random((n, 1)) < se, rng.random((n, 1)) > sp)
        audit_truth = rng.random(2000) < 0.5
        audit_said = np.where(audit_truth, rng.random(2000) < se, rng.random(2000) > sp)
        return JudgedArm(
            np.zeros((n, 1)), np.ones((n, 1)), said.astype(float), audit_truth * 1, audit_said * 1
        )

    a, b = arm(0.3), arm(0.5)
    assert corrected_accuracy(a.kept, a.judged, a.equivalent, se, sp) == pytest.approx(0.3, abs=0.03)
    d, ci, undefined = corrected_delta(a, b, 300, rng)
    assert d == pytest.approx(0.2, abs=0.04) and ci is not None and ci[0] < 0.2 < ci[1] and undefined == 0


def test_differing_error_names_the_rate_whose_intervals_part() -> None:
    lenient = agreement(np.array([1] * 50 + [0] * 50), np.array([1] * 50 + [1] * 40 + [0] * 10))
    strict = agreement(np.array([1] * 50 + [0] * 50), np.array([1] * 50 + [0] * 50))
    assert differing_error(lenient, strict) == ["specificity"]
    assert differing_error(strict, strict) == []


def test_ppi_with_lambda_one_is_the_papers_rectified_mean() -> None:
    # Angelopoulos et al. 2023, mean estimation: theta = mean(f(X_unlabelled)) + mean(Y - f(X)), with the
    # normal interval of the two independent means' sum.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200).astype(float)
    yhat = np.where(rng.random(200) < 0.9, y, 1 - y)
    yhat_u = rng.integers(0, 2, 5000).astype(float)
    res = ppi_mean(y, yhat, yhat_u, lam=1.0)
    theta = yhat_u.mean() + (y - yhat).mean()
    se = np.sqrt(yhat_u.var(ddof=1) / 5000 + (y - yhat).var(ddof=1) / 200)
    assert res.estimate == pytest.approx(theta)
    assert res.ci[0] == pytest.approx(theta - 1.959964 * se, abs=1e-3)
    assert res.ci[1] == pytest.approx(theta + 1.959964 * se, abs=1e-3)
    constant = ppi_mean(y, np.ones(200), np.ones(5000))
    assert constant.estimate == pytest.approx(y.mean()) and constant.ci == pytest.approx(
        constant.classical_ci
    )
    everything = ppi_mean(y, yhat, np.array([]))
    assert everything.method == "labels only" and everything.estimate == pytest.approx(y.mean())
