"""Coverage of the paper metrics' intervals (the benchmark table's), by simulation.

The metrics of analysis.estimators.paper_metrics, as the benchmark table prints them:
`python -m benchmarks.bench_calibration --part metrics`.

Each design draws per-item success rates from a Beta distribution (the regimes of bench_calibration), then k
samples per item for base and trained (null: trained draws from base's rates; planted: trained's rates
shifted by +0.8 on the logit scale). A sample is right with its item's rate; a wrong sample gives one of
three wrong answers, uniformly, so maj@k has wrong answers to split the vote. Every rep calls the
estimators the table calls: paper_metrics.maj_at_k_items (with the samples' answers as text),
pass_hat_k_items, avg_at_k, bayes_at_n and bayes_delta, and the paired interval every report takes
(analysis.reports.benchmark_table.metric_interval: BCa from 100 items; below, Newcombe's paired score
interval for
0/1 per-item values, maj@k's and pass^k's, and the sign-flip inversion for avg@k's).

Printed per design, each with its Monte Carlo standard error over the reps:
- the coverage of the paired intervals of maj@k's, pass^k's and avg@k's deltas against the population value
  (a million items from the rate distribution; maj@k's by simulating their votes);
- the coverage of Bayes@N's credible interval (mu +- z sigma) of base, and of the delta's, against the value
  it describes: the drawn items' own mean rate (Bayes@N's sigma is the uncertainty of the N samples, the
  items fixed), and of the delta against the population value;
- the spread: the mean over reps of avg@k's sd over k runs divided by the true seed-to-seed sd of one run's
  accuracy on those items, sqrt(sum p_i (1 - p_i)) / n (1: the spread estimates it without bias).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

from analysis.estimators import paper_metrics as pm
from analysis.reports.benchmark_table import metric_interval
from analysis.reports.settings import AnalysisSettings

WRONG = 3  # wrong answers a wrong sample chooses from, uniformly
COLUMNS = [
    ("cov_maj", "maj delta", "coverage of maj@k's delta interval (population value)"),
    ("cov_pass_hat", "pass^k delta", "coverage of pass^k's delta interval (population value)"),
    ("cov_avg", "avg delta", "coverage of avg@k's delta interval (population value)"),
    ("cov_bayes", "Bayes arm", "coverage of base's Bayes@N credible interval (the drawn items' mean rate)"),
    ("cov_bayes_d", "Bayes delta", "coverage of the Bayes@N delta's credible interval (the items' delta)"),
    ("cov_bayes_pop", "Bayes d pop", "coverage of the Bayes@N delta's credible interval (population value)"),
    ("spread", "sd ratio", "mean of avg@k's sd over runs / the true seed-to-seed sd of one run"),
]


def rates(regime: tuple[float, float], planted: bool, n: int, rng: np.random.Generator) -> tuple:
    """Per-item rates of base and trained."""
    p = rng.beta(*regime, n)
    q = expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + 0.8) if planted else p
    return p, q


def draw(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """(n, k) answer classes: 0 the right answer, 1..WRONG the wrong ones."""
    right = rng.random((p.size, k)) < p[:, None]
    return np.where(right, 0, rng.integers(1, WRONG + 1, size=(p.size, k)))


def majority_of_classes(classes: np.ndarray) -> np.ndarray:
    """Vectorised maj@k of answer classes, ties to the class read first (the population value's votes)."""
    counts = (classes[:, :, None] == np.arange(WRONG + 1)).sum(axis=1)
    top = counts == counts.max(axis=1, keepdims=True)
    first = np.argmax(np.take_along_axis(top, classes, axis=1), axis=1)
    return (classes[np.arange(classes.shape[0]), first] == 0).astype(np.float64)


def population(regime: tuple[float, float], planted: bool, k: int, rng: np.random.Generator) -> dict:
    """The population deltas (a million items)."""
    p, q = rates(regime, planted, 1_000_000, rng)
    maj = majority_of_classes(draw(q, k, rng)).mean() - majority_of_classes(draw(p, k, rng)).mean()
    return {"maj": float(maj), "pass_hat": float((q**k - p**k).mean()), "avg": float((q - p).mean())}


def one_rep(
    n: int, k: int, regime: tuple, planted: bool, settings: AnalysisSettings, rng, truth: dict
) -> dict:
    """The interval hits of one simulated pair of logs."""
    settings = dataclasses.replace(settings, seed=int(rng.integers(2**31)))
    p, q = rates(regime, planted, n, rng)
    ca, cb = draw(p, k, rng), draw(q, k, rng)
    a, b = (ca == 0).astype(np.float64), (cb == 0).astype(np.float64)
    answers_a, answers_b = ca.astype(str).tolist(), cb.astype(str).tolist()

    def covers(d: tuple[np.ndarray, np.ndarray], key: str) -> bool:
        ref, arm = d
        ci = metric_interval(ref, arm, settings, f"/{key}")
        return bool(ci.lo <= truth[key] <= ci.hi)

    z = float(norm.ppf(1 - settings.alpha / 2))
    mu, sd = pm.bayes_at_n(a)
    bd = pm.bayes_delta(a, b, settings.alpha).fields()
    _, spread = pm.avg_at_k(a)
    return {
        "cov_maj": covers((pm.maj_at_k_items(answers_a, a), pm.maj_at_k_items(answers_b, b)), "maj"),
        "cov_pass_hat": covers((pm.pass_hat_k_items(a, k), pm.pass_hat_k_items(b, k)), "pass_hat"),
        "cov_avg": covers((a.mean(axis=1), b.mean(axis=1)), "avg"),
        "cov_bayes": bool(abs(mu - p.mean()) <= z * sd),
        "cov_bayes_d": bool(bd["ci95"][0] <= (q - p).mean() <= bd["ci95"][1]),
        "cov_bayes_pop": bool(bd["ci95"][0] <= truth["avg"] <= bd["ci95"][1]),
        "spread": spread / (math.sqrt((p * (1 - p)).sum()) / n),
    }


def metrics_table(sizes: list[int], reps: int, settings: AnalysisSettings, seed: int, regimes: dict) -> None:
    """Print the coverage of every paper-metric interval over sizes, k, regimes and effects."""
    print(f"paper metrics: {reps} reps per design, {settings.n_boot} resamples and sign vectors per interval")
    print("  n  k  regime    effect  " + "  ".join(f"{short:>13}" for _, short, _ in COLUMNS))
    for n, k, (name, regime), planted in itertools.product(sizes, (4, 8), regimes.items(), (False, True)):
        rng = np.random.default_rng([seed, n, k, list(regimes).index(name), int(planted), 36])
        truth = population(regime, planted, k, rng)
        results = [one_rep(n, k, regime, planted, settings, rng, truth) for _ in range(reps)]
        cells = []
        for key, _, _ in COLUMNS:
            values = np.array([r[key] for r in results], dtype=np.float64)
            rate = float(values.mean())
            if key == "spread":
                se = float(values.std(ddof=1) / math.sqrt(reps))
            else:
                se = math.sqrt(max(rate * (1 - rate), 1e-12) / reps)
            cells.append(f"{rate:.3f}+-{se:.3f}".rjust(13))
        effect = "planted" if planted else "null"
        print(f"{n:>3} {k:>2}  {name:<9} {effect:<7} " + "  ".join(cells), flush=True)
    print("columns: " + "; ".join(f"{short}: {what}" for _, short, what in COLUMNS))
