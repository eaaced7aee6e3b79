"""The pass@k crossover: the smallest k at which base's pass@k is no longer detectably below trained's.

Yue et al. 2025 ("Does reinforcement learning really incentivize reasoning capacity in LLMs beyond the
base model?") find that an RLVR model leads at small k while the base model catches up at large k. The
delta report reads the pass@k delta at every k up to the samples per item
(analysis.reports.contrasts.crossover_ks)
from the one draw of the primary contrast: the crossover is the first k whose interval reaches 0. When
every interval up to k lies above 0, the report says so and extrapolates: each arm's per-item success
rates fitted as a Beta distribution (method of moments on the correct counts), pass@k of each from the
Beta-binomial, and the smallest k at which the fitted delta falls to the half-width of this suite's
interval at the largest k (where the delta would no longer be told from 0 at this precision). The
intervals are pointwise, one per k: the crossover is a description of the curves, not a tested claim.
"""

from __future__ import annotations

import numpy as np

from analysis.estimators.passk import PassAtK, beta_binomial_moments, beta_binomial_pass_at_k, correct_counts
from analysis.reports.number_text import interval, signed
from analysis.reports.report_models import Crossover, CrossoverNeeded, CrossoverRow

K_SEARCH = 1 << 20  # the largest k the extrapolation looks at


def needed_k(ref_scores: np.ndarray, arm_scores: np.ndarray, half_width: float) -> CrossoverNeeded:
    """The smallest k at which the Beta-binomial fits of both arms put the delta within half_width."""
    n = ref_scores.shape[1]
    fits = [beta_binomial_moments(correct_counts(s), n) for s in (ref_scores, arm_scores)]
    if n < 2:
        return CrossoverNeeded(
            k=None, reason="with one sample per item the spread of the rates cannot be fitted"
        )
    if fits[0] is None or fits[1] is None:
        return CrossoverNeeded(
            k=None, reason="a rate distribution cannot be fitted (no spread of correct counts)"
        )
    (a0, b0), (a1, b1) = fits
    ks = np.unique(np.round(np.logspace(0, np.log2(K_SEARCH), 400, base=2)).astype(int))
    delta = beta_binomial_pass_at_k(a1, b1, ks) - beta_binomial_pass_at_k(a0, b0, ks)
    hit = np.flatnonzero((delta <= half_width) & (ks > n))
    fit = {"pre_beta": [a0, b0], "post_beta": [a1, b1]}
    if hit.size == 0:
        reason = f"the fitted delta stays above {half_width:.4f} up to k = {K_SEARCH:,}"
        return CrossoverNeeded(k=None, reason=reason, **fit)
    return CrossoverNeeded(k=int(ks[hit[0]]), delta_at_k=float(delta[hit[0]]), reason=None, **fit)


def _ci(row: CrossoverRow) -> str:
    return f"delta {signed(row.delta)}, CI {interval(row.ci95)}"


def crossover(all_k: PassAtK, ref_scores: np.ndarray, arm_scores: np.ndarray) -> Crossover:
    """The crossover section: the first k whose delta interval reaches 0, or none up to k and the k needed."""
    cis = all_k.delta_ci
    rows = [CrossoverRow(k=k, delta=float(all_k.delta[i]), **cis[i].fields()) for i, k in enumerate(all_k.ks)]
    first, last = rows[0], rows[-1]
    if not cis[0].lo > 0:
        text = f"base is not detectably below trained at k = 1 ({_ci(first)}): no crossover to look for."
        return Crossover(k=None, needed=None, status="no lead at k = 1", row=first, text=text)
    for ci, row in zip(cis[1:], rows[1:], strict=True):
        if not ci.lo > 0:
            text = (
                f"crossover at k = {row.k}: base's pass@{row.k} is no longer detectably below "
                f"trained's ({_ci(row)} reaches 0); at every smaller k trained leads, its interval above 0."
            )
            return Crossover(k=row.k, needed=None, status="crossover", row=row, text=text)
    half = (cis[-1].hi - cis[-1].lo) / 2
    need = needed_k(ref_scores, arm_scores, half)
    tail = (
        f"at the observed rates (Beta-binomial fits) the delta would fall to this suite's half-width "
        f"{half:.4f} at k = {need.k:,}"
        if need.k is not None
        else f"the observed rates give no such k: {need.reason}"
    )
    text = f"no crossover up to k = {last.k}: trained leads at every k (pass@{last.k} {_ci(last)}); {tail}."
    return Crossover(k=None, needed=need, status="no crossover", row=last, text=text)
