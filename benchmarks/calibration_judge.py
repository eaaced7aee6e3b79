"""The judge's table of the calibration bench (`python -m benchmarks.bench_calibration --part judge`).

Each rep draws two arms of n items, one sample each: the truth of each sample is Bernoulli(p_arm); the rules
decide a share `decided` of samples (rightly: the rules' verdict is the truth where they decide) and leave
the rest to the judge, which says equivalent with probability sens on a true sample and 1 - spec on a false
one, per arm; the audit asks the judge on `audit` rule-decided samples of each arm. People label `labelled`
items (both arms' samples; the truth). Per design the table prints the coverage of the true paired delta
by: the with-judge interval (the judge's verdicts taken as they are), the Rogan-Gladen corrected interval
(analysis.estimators.judge_error.corrected_delta) and the PPI interval of the labels with the final verdicts
as predictions (analysis.estimators.ppi), each with its Monte Carlo standard error, and how often the
report's flag (error rates apart between the arms) fires. Designs: the same judge error in both arms, and a
judge lenient with one arm only (its specificity lower there), which biases the with-judge delta.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.estimators.bootstrap_ci import paired_bootstrap_ci
from analysis.estimators.judge_error import JudgedArm, agreement, corrected_delta, differing_error
from analysis.estimators.ppi import ppi_mean

# (sens, spec) of the judge on (pre, post).
DESIGNS = {
    "equal error": ((0.85, 0.9), (0.85, 0.9)),
    "lenient on post": ((0.85, 0.9), (0.85, 0.7)),
}
P_PRE, P_POST = 0.45, 0.55


def _arm(n: int, p: float, sens: float, spec: float, decided: float, audit: int, rng: np.random.Generator):
    truth = rng.random(n) < p
    by_rules = rng.random(n) < decided
    said = np.where(truth, rng.random(n) < sens, rng.random(n) > spec)
    kept = np.where(by_rules, truth, 0.0)
    judged = (~by_rules).astype(float)
    audit_truth = truth[by_rules][:audit]
    audit_said = np.where(
        audit_truth, rng.random(len(audit_truth)) < sens, rng.random(len(audit_truth)) > spec
    )
    arm = JudgedArm(
        kept[:, None],
        judged[:, None],
        (judged * said)[:, None],
        audit_truth.astype(int),
        audit_said.astype(int),
    )
    return arm, truth.astype(float)


def judge_rep(design: str, n: int, decided: float, audit: int, labelled: int, n_boot: int, rng) -> dict:
    """One rep: which intervals cover the true delta, and whether the flag fired."""
    (s0, c0), (s1, c1) = DESIGNS[design]
    pre, t0 = _arm(n, P_PRE, s0, c0, decided, audit, rng)
    post, t1 = _arm(n, P_POST, s1, c1, decided, audit, rng)
    true = P_POST - P_PRE
    f0, f1 = (pre.kept + pre.equivalent)[:, 0], (post.kept + post.equivalent)[:, 0]
    naive = paired_bootstrap_ci(f0, f1, n_boot, rng, method="percentile")
    _, ci, _ = corrected_delta(pre, post, n_boot, rng)
    lab = rng.choice(n, labelled, replace=False)
    rest = np.setdiff1d(np.arange(n), lab)
    ppi = ppi_mean(t1[lab] - t0[lab], f1[lab] - f0[lab], f1[rest] - f0[rest])
    a0 = agreement(pre.audit_rule, pre.audit_judge)
    a1 = agreement(post.audit_rule, post.audit_judge)
    return {
        "naive": naive.lo <= true <= naive.hi,
        "corrected": ci is not None and ci[0] <= true <= ci[1],
        "ppi": ppi.ci[0] <= true <= ppi.ci[1],
        "flag": bool(differing_error(a0, a1)),
    }


def judge_table(sizes: list[int], reps: int, n_boot: int, seed: int) -> int:
    """Print the table; return how many coverages fall below 0.95 - 2 s.e."""
    print(
        f"JUDGE: {reps} reps per design; true accuracy {P_PRE} -> {P_POST}; rules decide 60% of samples; "
        "audit 100 rule-decided samples per arm; people label 60 items"
    )
    print("   n  design            with-judge cov   corrected cov       PPI cov   flag rate")
    misses = 0
    for n in sizes:
        for d, design in enumerate(DESIGNS):
            rng = np.random.default_rng([seed, n, d, 43])
            res = [judge_rep(design, n, 0.6, 100, min(60, n // 2), n_boot, rng) for _ in range(reps)]
            cells = []
            for key in ("naive", "corrected", "ppi", "flag"):
                r = float(np.mean([x[key] for x in res]))
                se = math.sqrt(max(r * (1 - r), 1e-12) / reps)
                off = key in ("corrected", "ppi") and r < 0.95 - 2 * se
                misses += off
                cells.append(f"{r:.3f}+-{se:.3f}{'*' if off else ' '}")
            print(f"{n:>4}  {design:<16} " + "  ".join(c.rjust(14) for c in cells), flush=True)
    print(f"* corrected or PPI coverage below 0.95 - 2 s.e.: {misses}")
    return misses
