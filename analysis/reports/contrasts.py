"""One rule for every contrast: how a paired contrast is estimated and decided, shared by every report.

A contrast (trained vs base, every arm vs base, every trajectory row, every per-family row) is estimated
once here and decided by one rule: it is significant when its multiplicity-adjusted p-value is at most the
report's level AND its interval excludes 0. One interval method (the item-level paired BCa bootstrap of the
mean delta) and one test (the two-sided sign-flip permutation test) for every mean contrast; the level is
the report's multiplicity control:

- the primary contrast, trained vs base, with pass@K beside it: the claim's family of two tests (the mean
  score, which is pass@1 with 0/1 scores, and pass@K at the largest K, each with its sign-flip test), Holm's
  step-down at alpha, so the SHARPENING / EXPANSION / REGRESSION claim holds its family-wise error at alpha;
- every other contrast of a report: Benjamini-Hochberg over that report's secondary contrasts at fdr;
- the per-family rows of one contrast: Benjamini-Hochberg over that contrast's families at fdr.

The delta report, the arm comparison and the trajectory compute the primary contrast through
`primary_contrast` (same seeds, same draws), so its verdict is one and the same wherever it is printed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.estimators.bootstrap_ci import bca_interval_means, bootstrap_mean_ci
from analysis.estimators.estimate import Interval
from analysis.estimators.multiplicity import bh_qvalues, holm_adjusted
from analysis.estimators.passk import PassAtK, k_grid, pass_at_k_bootstrap, pass_at_k_items, subset_pass_at_k
from analysis.estimators.resampling import (
    bootstrap_distribution,
    percentile_interval,
    rng_for,
    weighted_means,
)
from analysis.estimators.signflip import (
    SignFlip,
    sign_flip_interval,
    sign_flip_min_p,
    sign_flip_test,
    small_suite_interval,
)
from analysis.reports.align import ArmData
from analysis.reports.contrast_values import Claim, ContrastStats, Decision
from analysis.reports.number_text import p_bound
from analysis.reports.settings import AnalysisSettings

NO_FAMILY = "(none)"
# The contrast every report decides by the claim's family (docs/reading-the-report.md).
PRIMARY_REFERENCE, PRIMARY_ARM = "base", "trained"
# Below this many items the BCa and percentile intervals cover less than they promise (measured by
# benchmarks/bench_calibration.py; Bowyer et al. 2025): a delta's interval is then the inversion of its
# sign-flip test, the A/A interval's too, or Newcombe's paired interval for 0/1 per-item values
# (small_suite_interval).
BCA_MIN_ITEMS = 100
SMALL_SUITE = (
    "{n} items, fewer than {least}: the BCa and percentile bootstrap intervals cover less than they "
    "promise at this size (benchmarks/bench_calibration.py; Bowyer et al. 2025, 'Don't use the CLT in LLM "
    "evals with fewer than a few hundred datapoints'), so each delta's interval here, the budget curve's "
    "and the A/A interval included, is the inversion of its sign-flip test (every mu the test does not "
    "reject: it excludes 0 when the test rejects), except where both arms' per-item values are 0/1 "
    "(pass@K at K = k, a budget point with one sample per item): there the inversion of mostly tied "
    "differences shrinks to a point (coverage 0.69 and 0.90 measured at 24 items), and the interval is "
    "Newcombe's hybrid score interval for paired proportions (Newcombe 1998, method 10), which covered "
    "at least 0.94 in every design measured; the verdicts rest on the sign-flip tests, whose false-claim "
    "rate holds at alpha at every size measured"
)


def interval_method(n_items: int) -> str:
    """The A/A and budget curve intervals at this many items: 'bca', or 'sign-flip' below BCA_MIN_ITEMS."""
    return "sign-flip" if n_items < BCA_MIN_ITEMS else "bca"


budget_method = interval_method


def greedy_note(temperature: float | None, k: int) -> str | None:
    """What a report says of k > 1 samples decoded greedily (temperature 0), or None otherwise."""
    if temperature != 0 or k <= 1:
        return None
    return (
        f"temperature 0 (greedy decoding): the k = {k} samples of an item are one answer repeated, not "
        f"{k} draws, so pass@k for k > 1 equals pass@1 and the A/A noise floor is 0 by construction; read "
        "the pass@1 rows only (a run at temperature 0 needs k: 1)"
    )


def small_suite_note(n_items: int) -> str | None:
    """What a report of this many items says about its intervals, or None at BCA_MIN_ITEMS and above."""
    return SMALL_SUITE.format(n=n_items, least=BCA_MIN_ITEMS) if n_items < BCA_MIN_ITEMS else None


def delta_interval(d: np.ndarray, settings: AnalysisSettings, key: str) -> Interval:
    """The interval of a mean delta at this suite size: BCa from 100 items, else the sign-flip inversion."""
    if d.size >= BCA_MIN_ITEMS:
        return bootstrap_mean_ci(d, settings.n_boot, rng_for(settings.seed, f"item{key}"),
                                    alpha=settings.alpha)[0]  # fmt: skip
    return sign_flip_interval(d, settings.n_perm, rng_for(settings.seed, f"perm-ci{key}"), settings.alpha)


def significant(p_adjusted: float, ci: Interval, level: float) -> bool:
    """The one rule: the adjusted p is at most the level and the interval lies on one side of 0."""
    return bool(p_adjusted <= level and ci.excludes(0.0))


def paired_stats(
    ref: np.ndarray, arm: np.ndarray, d: np.ndarray, ci: Interval, flip: SignFlip
) -> ContrastStats:
    """The contrast of two arms' scores with their per-item differences d, its interval and its test."""
    return ContrastStats(int(d.size), float(ref.mean()), float(arm.mean()), float(d.mean()), ci,
                         float(flip.p[0]), flip.exact, flip.n_perm)  # fmt: skip


def mean_contrast(
    ref: np.ndarray, arm: np.ndarray, settings: AnalysisSettings, key: str = ""
) -> ContrastStats:
    """Paired delta of per-item scores: estimate, BCa item-level CI, sign-flip p (every report's rows)."""
    d = arm - ref
    ci = delta_interval(d, settings, key)
    flip = sign_flip_test(d, settings.n_perm, rng_for(settings.seed, f"perm{key}"))
    return paired_stats(ref, arm, d, ci, flip)


def bh_decisions(stats: Sequence[ContrastStats], settings: AnalysisSettings) -> list[Decision]:
    """Benjamini-Hochberg over the contrasts' p, then the one rule: each contrast's Decision, in order."""
    return bh_decide([s.p_value for s in stats], [s.ci for s in stats], [s.delta for s in stats], settings)


def bh_decide(
    p_values: Sequence[float], cis: Sequence[Interval], deltas: Sequence[float], settings: AnalysisSettings
) -> list[Decision]:
    """The Decisions of a Benjamini-Hochberg family of contrasts given by their p, intervals and deltas."""
    decided_by = f"Benjamini-Hochberg over {len(p_values)} contrasts at fdr {settings.fdr}"
    out = []
    for q, ci, delta in zip(bh_qvalues(list(p_values)), cis, deltas, strict=True):
        sig = significant(float(q), ci, settings.fdr)
        out.append(Decision(float(q), sig, bool(sig and abs(delta) < settings.min_effect), decided_by))
    return out


def decide_bh(rows: list[dict[str, Any]], settings: AnalysisSettings, delta_key: str = "delta") -> None:
    """bh_decide for reports still assembled as dicts: sets q_value, significant, negligible, decided_by."""
    cis = [Interval(*r["ci95"], r.get("ci95_method") or "") for r in rows]
    decisions = bh_decide([r["p_value"] for r in rows], cis, [r[delta_key] for r in rows], settings)
    for row, decision in zip(rows, decisions, strict=True):
        row.update(decision.fields())


def family_groups(families: list[str | None]) -> dict[str, np.ndarray]:
    """Item indices per family (sorted by name); empty when no item carries a family."""
    if all(f is None for f in families):
        return {}
    labels = np.array([NO_FAMILY if f is None else f for f in families], dtype=object)
    return {name: np.flatnonzero(labels == name) for name in sorted(set(labels))}


@dataclass(frozen=True)
class FamilyContrast:
    """One item family's contrast and its verdict (one Benjamini-Hochberg family per contrast)."""

    family: str
    stats: ContrastStats
    decision: Decision


def family_rows(
    ref: ArmData, arm: ArmData, settings: AnalysisSettings, families: list[str | None]
) -> list[FamilyContrast]:
    """Delta, CI, p per item family of one contrast, decided as one Benjamini-Hochberg family."""
    groups = family_groups(families)
    stats = [
        mean_contrast(ref.item_mean[idx], arm.item_mean[idx], settings, key=f"/family/{name}")
        for name, idx in groups.items()
    ]
    decisions = bh_decisions(stats, settings)
    return [FamilyContrast(*row) for row in zip(groups, stats, decisions, strict=True)]


def too_few_items(n_items: int, settings: AnalysisSettings, n_tests: int = 1) -> str | None:
    """Why no claim may be made from this many items (no adjusted sign-flip p can reach alpha), or None.

    n_tests: the size of the Holm family the claim combines; its first step tests at alpha / n_tests.
    """
    floor = sign_flip_min_p(n_items, settings.n_perm)
    if floor * n_tests <= settings.alpha:
        return None
    family = "" if n_tests == 1 else f" (Holm over {n_tests} tests: {n_tests} x {floor:.3g})"
    return (
        f"too few items: {n_items} paired items cannot reach p < {settings.alpha} with a sign-flip test "
        f"(its smallest p is {floor:.3g}{family}); no claim is made, whatever the intervals show."
    )


@dataclass(frozen=True)
class Primary:
    """The primary contrast (trained vs base) and the claim's family of tests, decided once."""

    stats: ContrastStats  # the mean delta (pass@1 with 0/1 scores), its headline interval and sign-flip p
    decision: Decision  # Holm over the claim's family
    passk: PassAtK  # pass@k of both arms at every k of the grid, with cluster-bootstrap intervals
    mean_draws: np.ndarray  # the item bootstrap of the mean delta (the headline's BCa draw)
    percentile: Interval  # the percentile interval of the same draw
    top_k: int
    top_p: float  # sign-flip p of the pass@K delta (per-item pass@K differences)
    top_p_holm: float
    top_significant: bool
    n_tests: int  # 1 when K = 1 (pass@1 is the only test), else 2
    all_k: PassAtK  # pass@k at every k of crossover_ks, from the same draw


def crossover_ks(n: int) -> list[int]:
    """The k at which the crossover is looked for: every k up to 64, beyond that four per doubling."""
    if n <= 64:
        return list(range(1, n + 1))
    return sorted(
        {*range(1, 65), *(min(n, round(2 ** (e / 4))) for e in range(24, 4 * n.bit_length() + 1)), n}
    )


def _small_suite_passk(
    ref_scores: np.ndarray,
    arm_scores: np.ndarray,
    every: list[int],
    settings: AnalysisSettings,
    passk: PassAtK,
    mean_ci: Interval,
) -> PassAtK:
    """pass@k's delta intervals of a small suite: each inverts the sign-flip test of its per-item differences.

    Items are taken whole with their k samples; where the per-item values are 0/1 (pass@K at K = k),
    Newcombe's paired interval (small_suite_interval).
    """
    ref_items, arm_items = pass_at_k_items(ref_scores, every), pass_at_k_items(arm_scores, every)
    cis = [
        small_suite_interval(
            ref_items[:, j],
            arm_items[:, j],
            settings.n_perm,
            rng_for(settings.seed, f"perm-ci/pass@{k}"),
            settings.alpha,
        )  # fmt: skip
        for j, k in enumerate(every)
    ]
    return dataclasses.replace(passk, delta_ci=cis, mean_delta_ci=mean_ci)


def _claim_family(
    ref_scores: np.ndarray, arm_scores: np.ndarray, top_k: int, p_mean: float, settings: AnalysisSettings
) -> tuple[int, float, list[float]]:
    """The claim's family: pass@1 alone (k = 1), else pass@1 and pass@K; its tests, pass@K's p, Holm's p."""
    if top_k == 1:
        return 1, p_mean, [p_mean]
    top_d = pass_at_k_items(arm_scores, [top_k])[:, 0] - pass_at_k_items(ref_scores, [top_k])[:, 0]
    top_p = float(sign_flip_test(top_d, settings.n_perm, rng_for(settings.seed, "perm-top-k")).p[0])
    return 2, top_p, list(holm_adjusted([p_mean, top_p]))


def primary_contrast(ref_scores: np.ndarray, arm_scores: np.ndarray, settings: AnalysisSettings) -> Primary:
    """Trained vs base: the headline mean delta and pass@k, with Holm over pass@1 and pass@K at alpha.

    The intervals: the mean delta's item-level BCa (which is pass@1's with 0/1 scores), pass@K's the
    cluster bootstrap (items resampled with their k samples); the tests: sign-flip on the per-item mean
    differences and on the per-item pass@K differences. Each test's Holm-adjusted p must be <= alpha and
    its interval exclude 0: two tests at alpha each would make a claim twice as often under the null.
    """
    ref_scores, arm_scores = np.asarray(ref_scores, np.float64), np.asarray(arm_scores, np.float64)
    seed, alpha = settings.seed, settings.alpha
    d = arm_scores.mean(axis=1) - ref_scores.mean(axis=1)
    theta_b = bootstrap_distribution(d, weighted_means, settings.n_boot, rng_for(seed, "item"))
    small = d.size < BCA_MIN_ITEMS
    if small:
        inv = sign_flip_interval(d, settings.n_perm, rng_for(seed, "perm-ci"), alpha)
        lo, hi, methods = np.array([inv.lo]), np.array([inv.hi]), [inv.method]
    else:
        lo, hi, methods = bca_interval_means(d, theta_b, alpha)
    pct_lo, pct_hi = percentile_interval(theta_b, alpha)
    flip = sign_flip_test(d, settings.n_perm, rng_for(seed, "perm"))
    ks, every = k_grid(ref_scores.shape[1]), crossover_ks(ref_scores.shape[1])
    # One draw for every k of the crossover search: items group by their two correct counts whatever the
    # columns, so the grid's columns are the draws they would be on their own.
    passk = pass_at_k_bootstrap(
        ref_scores, arm_scores, settings.n_boot, rng_for(seed, "cluster"), alpha=alpha, ks=every,
        mean_draws=theta_b,
    )  # fmt: skip
    if small:
        mean_ci = Interval(float(lo[0]), float(hi[0]), f"{methods[0]} (item-level, the headline's)")
        passk = _small_suite_passk(ref_scores, arm_scores, every, settings, passk, mean_ci)
    headline = Interval(float(lo[0]), float(hi[0]), methods[0])
    all_k = passk
    if np.isin(ref_scores, (0.0, 1.0)).all() and np.isin(arm_scores, (0.0, 1.0)).all():
        # With 0/1 scores pass@1 of an item is its mean score: one number, so it carries one interval,
        # the headline's, and the claim quotes that same interval.
        all_k = dataclasses.replace(all_k, delta_ci=[headline, *all_k.delta_ci[1:]])
    passk = subset_pass_at_k(all_k, ks)
    stats = paired_stats(ref_scores, arm_scores, d, headline, flip)
    top_k = ks[-1]
    n_tests, top_p, holm = _claim_family(ref_scores, arm_scores, top_k, stats.p_value, settings)
    enough = too_few_items(stats.n_items, settings, n_tests) is None
    sig = significant(holm[0], headline, alpha) and enough
    decision = Decision(
        float(holm[0]),
        sig,
        bool(sig and abs(stats.delta) < settings.min_effect),
        f"Holm over pass@1 and pass@{top_k} at alpha {alpha} (the claim's family)"
        if n_tests == 2
        else f"sign-flip test at alpha {alpha} (one sample per item: pass@1 is the only test)",
    )
    top_holm = float(holm[-1])
    top_sig = n_tests == 2 and significant(top_holm, passk.delta_ci[-1], alpha) and enough
    percentile = Interval(float(pct_lo[0]), float(pct_hi[0]), "percentile")
    return Primary(
        stats, decision, passk, theta_b, percentile, top_k, top_p, top_holm, bool(top_sig), n_tests, all_k
    )


# A verdict that is not significant, in the one wording of every report (claim, rows, page sentence).
NO_DIFFERENCE = "no detectable difference"


def is_primary(reference: str, arm: str) -> bool:
    """True for the contrast that the claim's family decides wherever it appears."""
    return (reference, arm) == (PRIMARY_REFERENCE, PRIMARY_ARM)


def claim(primary: Primary, settings: AnalysisSettings) -> Claim:
    """EXPANSION / SHARPENING / REGRESSION / no detectable difference, decided by the claim's Holm family.

    With one sample per item pass@1 is the only evidence, which cannot separate sharpening from
    expansion: a significant shift is then UNDETERMINED rather than either. With too few items for any
    Holm-adjusted sign-flip p to reach alpha: TOO FEW ITEMS.
    """
    m, verdict = primary.stats, primary.decision
    if (why := too_few_items(m.n_items, settings, primary.n_tests)) is not None:
        return Claim("TOO FEW ITEMS", why)
    passk, k = primary.passk, primary.top_k
    top, d_top = passk.delta_ci[-1], float(passk.delta[-1])
    one_text = (
        f"pass@1 (the mean score) {m.delta:+.4f} (CI [{m.ci.lo:+.4f}, {m.ci.hi:+.4f}], sign-flip p "
        f"{p_bound(m.p_value, m.perm_n, m.perm_exact)}, Holm {verdict.q_value:.3g})"
    )
    if primary.n_tests == 1:
        if verdict.significant:
            return Claim(
                "UNDETERMINED",
                (
                    f"{one_text} moved, but with one sample per item sharpening and expansion cannot be told "
                    "apart; rerun with more samples per item."
                ),
            )
        return Claim(NO_DIFFERENCE, f"{one_text} is not significant.")
    top_text = (
        f"pass@{k} {d_top:+.4f} (CI [{top.lo:+.4f}, {top.hi:+.4f}], sign-flip p "
        f"{p_bound(primary.top_p, settings.n_perm, exact=False)}, "
        f"Holm {primary.top_p_holm:.3g})"
    )
    family = f" Holm over pass@1 and pass@{k} holds the claim's family-wise error at alpha {settings.alpha}."
    if primary.top_significant and d_top > 0:
        why = (
            f"{top_text} rose: the trained model solves items that were out of reach at this sampling "
            f"budget before; {one_text}."
        )
        return Claim("EXPANSION", why + family)
    if verdict.significant and m.delta > 0:
        why = (
            f"{one_text} rose while no change of pass@{k} was detected ({top_text}): more reliable on items "
            "it could already solve; capability expansion not detected at this suite size."
        )
        return Claim("SHARPENING", why + family)
    if primary.top_significant or (verdict.significant and m.delta < 0):
        return Claim("REGRESSION", f"{one_text}; {top_text}: the trained model lost ground." + family)
    return Claim(NO_DIFFERENCE, f"neither {one_text} nor {top_text} is significant." + family)
