"""The numbers RLVR papers print: maj@k, pass^k, avg@k with its spread, Bayes@N, and paired deltas.

Their definitions are DEFINITIONS below, which the benchmark table reprints word for word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The standard normal through scipy.special, not scipy.stats.norm: scipy.stats takes most of a second to
# import, paid by every report command that imports this module (the index page, the trajectory, the table).
from scipy.special import comb, ndtri

from analysis.estimators.estimate import Estimate, Interval, interval_fields

# What each number means, as the benchmark table prints it (its `definitions` field).
DEFINITIONS = """\
The numbers RLVR papers print, from one arm's k samples per item: maj@k, pass^k, avg@k with its spread
and Bayes@N, each per item where it has a per-item value, and the paired delta of two arms.

- maj@k: the majority answer of an item's k samples is right. Answers are grouped by the verifier's own
  equality where the log records it without an engine: every sample the verifier judged right gave an
  answer equal to the reference, so the right samples form one answer; the other samples are grouped by
  their answer text with white space collapsed and case folded (two wrong answers the verifier would
  call equal but that are written differently, '0.5' and '1/2', count as two answers: a lower bound on
  the largest wrong answer's votes). A sample with no answer read does not vote; an item with no answer
  at all is wrong. Ties go to the answer read first (the lowest sample index among the tied answers), as
  Python's Counter.most_common does in lighteval's maj@k and as analysis.reports.calibration's majority does.
- pass^k ("all k right", Yao et al. 2024's tau-bench reliability, Inspect's pass_k): the unbiased
  C(c, k) / C(n, k) per item (the chance that k samples drawn without replacement from the n are all
  right), averaged over items.
- avg@k with its spread: the k samples read as k runs (sample j of every item is run j); avg@k is the
  mean of the k per-run accuracies (equal to pass@1), the spread their standard deviation (ddof = 1, as
  "mean +- std over seeds" is printed).
- Bayes@N (Hariri et al. 2025, "Don't Pass@k", Algorithm 1 with two categories, weights 0 and 1 and the
  uniform Dirichlet prior): per item the posterior Beta(c + 1, N - c + 1) of its success rate; the
  estimate is the mean of the posterior means (c + 1) / (N + 2), its standard deviation the square root of
  the summed posterior variances over M^2. Of two arms, the posterior of the difference (independent
  posteriors): mean difference, sd sqrt(sd_a^2 + sd_b^2), and the central normal credible interval.

Per-item values (maj@k, pass^k) take the paired interval every mean contrast of the project takes
(analysis.reports.contrasts.mean_contrast); avg@k's delta is pass@1's.
"""

RIGHT = "\x00right"  # the answer class of every sample the verifier judged right
THRESHOLD = 0.5  # a score at or above it counts as right (analysis.estimators.passk.correct_counts)


def answer_key(answer: str | None) -> str | None:
    """A wrong answer's voting key: white space collapsed, case folded; None (no answer) does not vote."""
    if answer is None:
        return None
    key = " ".join(answer.split()).casefold()
    return key or None


def majority_right(answers: Sequence[str | None], scores: Sequence[float]) -> float:
    """1.0 when the majority answer of one item's samples is right (module docstring: grouping, ties)."""
    keys = [RIGHT if s >= THRESHOLD else answer_key(a) for a, s in zip(answers, scores, strict=True)]
    votes = Counter(k for k in keys if k is not None)
    if not votes:
        return 0.0
    # Counter keeps first-insertion order among equal counts: most_common(1) is the tied answer read first.
    return float(votes.most_common(1)[0][0] == RIGHT)


def maj_at_k_items(answers: Sequence[Sequence[str | None]], scores: np.ndarray) -> np.ndarray:
    """(n_items,) maj@k per item, k = all the item's samples."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.array([majority_right(a, s) for a, s in zip(answers, scores, strict=True)], dtype=np.float64)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one item: C(c, k) / C(n, k), the chance k of its n samples are all right."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return float(comb(c, k, exact=True) / comb(n, k, exact=True))


def pass_hat_k_items(scores: np.ndarray, k: int) -> np.ndarray:
    """(n_items,) per-item pass^k from an (n_items, n) score matrix."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[1]
    table = np.array([pass_hat_k(n, c, k) for c in range(n + 1)])
    return table[(scores >= THRESHOLD).sum(axis=1)]


def per_run_accuracy(scores: np.ndarray) -> np.ndarray:
    """(k,) the accuracy of each run, run j being sample j of every item (mean score over items)."""
    return np.asarray(scores, dtype=np.float64).mean(axis=0)


def avg_at_k(scores: np.ndarray) -> tuple[float, float | None]:
    """(avg@k, spread): the mean and the sd (ddof 1) of the per-run accuracies; the spread of one run is
    undefined (None), not 0."""
    runs = per_run_accuracy(scores)
    return float(runs.mean()), float(runs.std(ddof=1)) if runs.size > 1 else None


def bayes_items(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item the posterior mean and variance of its success rate: Beta(c + 1, N - c + 1)."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[1]
    c = (scores >= THRESHOLD).sum(axis=1).astype(np.float64)
    a, b = c + 1, n - c + 1
    return a / (n + 2), a * b / ((n + 2) ** 2 * (n + 3))


def bayes_at_n(scores: np.ndarray) -> tuple[float, float]:
    """Bayes@N: the posterior mean of the suite's accuracy and its posterior standard deviation."""
    mean, var = bayes_items(scores)
    m = mean.size
    return float(mean.mean()), float(np.sqrt(var.sum()) / m)


def bayes_categorical(counts: np.ndarray, weights: Sequence[float]) -> tuple[float, float]:
    """Bayes@N of Hariri et al. 2025 (Algorithm 1, no prior outcomes) for categorical outcomes.

    counts (M, C + 1): how many of an item's N samples fell in each category; weights: each category's
    score. With the uniform Dirichlet prior each item's posterior is Dirichlet(counts + 1), T = N + C + 1
    its total; mu is the mean over items of the posterior mean score, sigma the posterior sd of that mean.
    Two categories with weights (0, 1) give bayes_at_n.
    """
    nu = np.asarray(counts, dtype=np.float64) + 1.0
    w = np.asarray(weights, dtype=np.float64)
    m, t = nu.shape[0], float(nu.sum(axis=1)[0])
    dw = w - w[0]
    share = nu / t
    first = share @ dw
    var = ((share @ (dw**2)) - first**2).sum() / (m**2 * (t + 1))
    return float(w[0] + first.mean()), float(np.sqrt(var))


@dataclass(frozen=True)
class BayesDelta:
    """The posterior of one arm's Bayes@N minus another's: its mean with the credible interval, and its sd."""

    estimate: Estimate
    sd: float

    def fields(self) -> dict[str, float | list[float] | str | None]:
        """The report keys: delta, sd, ci95, ci95_method."""
        return {"delta": self.estimate.value, "sd": self.sd, **interval_fields(self.estimate.interval)}


def bayes_delta(ref: np.ndarray, arm: np.ndarray, alpha: float = 0.05) -> BayesDelta:
    """The posterior of arm's Bayes@N minus ref's: mean, sd and the central normal credible interval."""
    mu_ref, sd_ref = bayes_at_n(ref)
    mu_arm, sd_arm = bayes_at_n(arm)
    sd = float(np.hypot(sd_ref, sd_arm))
    z = float(ndtri(1 - alpha / 2))
    d = mu_arm - mu_ref
    return BayesDelta(Estimate(d, Interval(d - z * sd, d + z * sd, "posterior (normal)")), sd)


@dataclass(frozen=True)
class ArmMetrics:
    """One arm's paper numbers on a set of items (k: the samples per item)."""

    n_items: int
    k: int
    avg: float
    avg_sd: float | None  # None: one run (k = 1), whose spread is undefined
    maj: float | None  # None: the log records no answers
    pass_hat: float
    pass_at_k: float
    bayes: float
    bayes_sd: float

    def as_dict(self) -> dict[str, float | None]:
        """The metrics as a JSON object."""
        return dict(self.__dict__)


def arm_metrics(scores: np.ndarray, answers: Sequence[Sequence[str | None]] | None) -> ArmMetrics:
    """Every metric of one arm on the given items (an (n_items, k) score matrix and their answers)."""
    from analysis.estimators.passk import pass_at_k_items

    scores = np.asarray(scores, dtype=np.float64)
    k = scores.shape[1]
    avg, sd = avg_at_k(scores)
    bayes, bayes_sd = bayes_at_n(scores)
    return ArmMetrics(
        n_items=int(scores.shape[0]),
        k=k,
        avg=avg,
        avg_sd=sd,
        maj=None if answers is None else float(maj_at_k_items(answers, scores).mean()),
        pass_hat=float(pass_hat_k_items(scores, k).mean()),
        pass_at_k=float(pass_at_k_items(scores, [k])[:, 0].mean()),
        bayes=bayes,
        bayes_sd=bayes_sd,
    )
