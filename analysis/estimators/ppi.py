"""Prediction-powered inference of a mean from a few human labels and many machine verdicts (ppi-python).

The method of Angelopoulos et al. 2023 ("Prediction-powered inference", Science 382:669), through the
authors' `ppi-python`.

The machine verdicts (the rules', or the judge's final ones) are the predictions on every sample; the
people's labels on a random sample of them rectify the predictions' bias. The estimate is the power-tuned
PPI++ mean (Angelopoulos, Duchi & Zrnic 2023): never wider than the labels alone would give, to first order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered mean, its interval, and the classical (labels-only) one beside it."""

    estimate: float
    ci: tuple[float, float]
    labelled: int
    unlabelled: int
    classical: float
    classical_ci: tuple[float, float]
    # "ppi", or "labels only" where every sample is labelled (nothing is left for the predictions to add).
    method: str = "ppi"


def ppi_mean(
    labels: np.ndarray,
    predicted_labelled: np.ndarray,
    predicted_unlabelled: np.ndarray,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIMean:
    """The PPI estimate of the mean of `labels` over the whole population (lam None: tuned; 1: plain PPI)."""
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    y = np.asarray(labels, dtype=float)
    yhat = np.asarray(predicted_labelled, dtype=float)
    yhat_u = np.asarray(predicted_unlabelled, dtype=float)
    if len(y) < 2 or len(y) != len(yhat):
        raise ValueError(f"PPI needs at least 2 labels, one prediction each; got {len(y)} and {len(yhat)}")
    clo, chi = classical_mean_ci(y, alpha=alpha)
    classical = (float(np.atleast_1d(clo)[0]), float(np.atleast_1d(chi)[0]))
    if len(yhat_u) == 0:
        return PPIMean(float(y.mean()), classical, len(y), 0, float(y.mean()), classical, "labels only")
    if lam is None and np.ptp(np.concatenate([yhat, yhat_u])) == 0:
        # Constant predictions carry no information and make the tuned weight 0/0: the labels alone.
        lam = 0.0
    point = float(np.atleast_1d(ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam))[0])
    lo, hi = ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
    return PPIMean(
        estimate=point,
        ci=(float(np.atleast_1d(lo)[0]), float(np.atleast_1d(hi)[0])),
        labelled=len(y),
        unlabelled=len(yhat_u),
        classical=float(y.mean()),
        classical_ci=classical,
    )
