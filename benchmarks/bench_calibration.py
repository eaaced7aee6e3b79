"""Error rates and coverage of the reports' decisions and intervals, by simulation.

    python -m benchmarks.bench_calibration [--reps 200] [--quick] [--n-boot 1000] [--seed 0]

Each design draws per-item success rates from a Beta distribution (sparse: Beta(0.5, 2.5), mean 0.167;
middling: Beta(2, 2), mean 0.5), then k Bernoulli samples per item for base and trained, under the null
(trained draws from the base's own rates) or a planted effect (trained's rates shifted by +0.8 on the
logit scale). Generated tokens are drawn independently of correctness, uniform on 1..64, for the budget
curve. Every rep calls the estimators the reports call (analysis.reports.contrasts.primary_contrast and claim,
mean_contrast for a secondary arm row, noise_floor.aa_noise_floor and budget.budget_curve), not the command
line.

Printed per design: the false-claim rate of the claim (any of EXPANSION, SHARPENING, REGRESSION,
UNDETERMINED under the null), of the delta report's verdict (the same verdict the arm comparison's trained
row and the trajectory print) and of a secondary arm row (Benjamini-Hochberg family of one); the coverage of
every printed interval against the population value (the headline BCa, the cluster interval of the mean,
pass@K's interval, the pass@k intervals between, pooled, the A/A interval, the budget curve's intervals,
pooled over budgets); the power of the claim and of the verdict at the planted effect. Each rate with its
Monte Carlo standard error sqrt(r (1 - r) / reps). `--quick`: 40 reps and 400 resamples, a check that it
runs.

The FORMAT table (`--part format`): each sample is right (Bernoulli of its item's rate, as above) and,
independently, written in the form the report's reader expects (Bernoulli of the arm's format rate);
the report's reader scores it right when both hold, the lenient reader when it is right. Designs: null
(same rates, both arms write the expected form at 0.7), format (same rates; base writes it at 0.5, trained
at 0.9: a pure format effect) and reasoning (trained's rates shifted by +0.8 on the logit scale, both at
0.7). Each rep runs the delta report's claim and FORMAT call (analysis.reports.contrasts.claim,
analysis.reports.answering.primary_part). Printed: the rate of FORMAT (null: a false call; format: the power;
reasoning: a false call), of a SHARPENING / EXPANSION / UNDETERMINED claim that stands (format: the gain
wrongly called reasoning) and of any claim, and the coverage of trained's answered-share and
accuracy-among-answered intervals and of the answered share's change, each with its Monte Carlo standard
error.

The paper metrics' table (`--part metrics`, benchmarks/calibration_metrics.py): the coverage of the
intervals of maj@k's, pass^k's and avg@k's deltas, of Bayes@N's credible intervals, and how well avg@k's
spread estimates the seed-to-seed sd, each with its Monte Carlo standard error.

The seen/clean split's table (`--part split`, benchmarks/calibration_split.py): how often the split calls a
difference between possibly-seen and clean items, or a gain only on possibly-seen items, when there is none
(and when there is), and the coverage of the clean items' interval.

The model judge's table (`--part judge`, benchmarks/calibration_judge.py): the coverage of the with-judge,
the judge-corrected (Rogan-Gladen, bootstrapped with the audit) and the PPI intervals of a paired delta, for a
judge whose error is the same in both arms and one lenient with one arm, and how often the report's
differing-error flag fires.

The undecided table (`--part undecided`, benchmarks/calibration_undecided.py): how often the note "the
undecided shares differ" fires when the arms' undecided rates are equal (a false alarm) and when they
differ (its power), and the coverage of the interval of the delta on the samples both arms decided.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

from analysis.estimators.budget import budget_curve, budget_grid
from analysis.estimators.estimate import Interval
from analysis.estimators.noise_floor import aa_noise_floor
from analysis.estimators.passk import k_grid
from analysis.reports import answering, contrasts
from analysis.reports.format_effect import FORMAT, FORMAT_DECLINE, ReaderArrays
from analysis.reports.settings import AnalysisSettings
from benchmarks.calibration_judge import judge_table
from benchmarks.calibration_metrics import metrics_table
from benchmarks.calibration_split import split_table
from benchmarks.calibration_undecided import undecided_table

REGIMES = {"sparse": (0.5, 2.5), "middling": (2.0, 2.0)}
PLANTED_LOGIT = 0.8
MAX_TOKENS = 64
CLAIMS = {"EXPANSION", "SHARPENING", "REGRESSION", "UNDETERMINED"}


@dataclass(frozen=True)
class Design:
    """One cell of the simulation: items, samples per item, rate regime, effect."""

    n: int
    k: int
    regime: str
    planted: bool


def population(design: Design, rng: np.random.Generator) -> dict[str, float]:
    """The population values the intervals should cover (a million items from the rate distribution)."""
    a, b = REGIMES[design.regime]
    p = rng.beta(a, b, 1_000_000)
    q = expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + PLANTED_LOGIT) if design.planted else p
    return {
        "delta": float((q - p).mean()),
        "top": float(((1 - p) ** design.k - (1 - q) ** design.k).mean()),
        # The pass@K deltas between K = 1 (the headline) and K = k (pass@K), each printed with its interval.
        **{f"pass@{j}": float(((1 - p) ** j - (1 - q) ** j).mean()) for j in k_grid(design.k)[1:-1]},
    }


def one_rep(
    design: Design, settings: AnalysisSettings, rng: np.random.Generator, truth: dict[str, float]
) -> dict:
    """The decisions and interval hits of one simulated pair of logs."""
    # Each rep its own analysis seed, as each real report has its own: a fixed set of sign vectors or
    # resamples would make every rep share one draw's luck.
    settings = dataclasses.replace(settings, seed=int(rng.integers(2**31)))
    a, b = REGIMES[design.regime]
    p = rng.beta(a, b, design.n)
    q = expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + PLANTED_LOGIT) if design.planted else p
    base = (rng.random((design.n, design.k)) < p[:, None]).astype(np.float64)
    trained = (rng.random((design.n, design.k)) < q[:, None]).astype(np.float64)
    other = (rng.random((design.n, design.k)) < p[:, None]).astype(np.float64)
    method = contrasts.interval_method(design.n)
    primary = contrasts.primary_contrast(base, trained, settings)
    verdict, _ = contrasts.claim(primary, settings)
    row = contrasts.mean_contrast(base.mean(axis=1), other.mean(axis=1), settings, key="/secondary")
    (secondary,) = contrasts.bh_decisions([row], settings)

    def covers(ci: list[float] | Interval, value: float) -> bool:
        lo, hi = ci.as_list() if isinstance(ci, Interval) else ci
        return lo <= value <= hi

    out = {
        "claim": verdict in CLAIMS,
        "claim_right": verdict in {"EXPANSION", "SHARPENING", "UNDETERMINED"},
        "verdict": primary.decision.significant,
        "secondary": secondary.significant,
        "cov_bca": covers(primary.stats.ci, truth["delta"]),
        "cov_cluster": covers(primary.passk.mean_delta_ci, truth["delta"]),
        "cov_secondary": covers(row.ci, 0.0),
    }
    if design.k > 1:
        out["cov_passk"] = covers(primary.passk.delta_ci[-1], truth["top"])
        middle = list(zip(primary.passk.ks[1:-1], primary.passk.delta_ci[1:-1], strict=True))
        out["cov_passk_mid"] = float(np.mean([covers(ci, truth[f"pass@{j}"]) for j, ci in middle]))
        noise = aa_noise_floor(
            base, settings.n_boot, rng, alpha=settings.alpha, n_splits=1, fpr_boot=10, method=method
        )
        out["cov_aa"] = covers(noise.ci, 0.0)
    tokens_a = rng.integers(1, MAX_TOKENS + 1, base.shape)
    tokens_b = rng.integers(1, MAX_TOKENS + 1, base.shape)
    budgets = budget_grid(MAX_TOKENS, 4)
    budget = contrasts.budget_method(design.n)
    points = budget_curve(base, trained, tokens_a, tokens_b, budgets, settings.n_boot, rng, method=budget)
    hits = [covers(pt.ci, truth["delta"] * pt.budget / MAX_TOKENS) for pt in points]
    out["cov_budget"] = float(np.mean(hits))
    return out


COLUMNS = [
    ("claim", "claim", "false-claim rate (null) / power (planted: right direction)"),
    ("verdict", "verdict", "delta verdict = arms trained row = trajectory row: rejection rate"),
    ("secondary", "2nd row", "a secondary arm row (null arm): rejection rate"),
    ("cov_bca", "headline", "coverage of the headline interval (BCa; sign-flip inversion below 100 items)"),
    ("cov_cluster", "cluster", "coverage of the cluster interval of the mean delta"),
    ("cov_passk", "pass@K", "coverage of pass@K's interval (cluster; Newcombe's paired score below 100)"),
    (
        "cov_passk_mid",
        "pass@2..K/2",
        "coverage of the pass@k intervals between 1 and K, pooled (cluster; sign-flip inversion below 100)",
    ),
    ("cov_aa", "A/A", "coverage of the A/A interval (of 0)"),
    (
        "cov_budget",
        "budget",
        "coverage of the budget curve's intervals, pooled over 4 budgets (BCa; below "
        "100 items Newcombe's paired score at k = 1, else sign-flip inversion)",
    ),
]


def summarise(reps: list[dict], design: Design) -> dict[str, tuple[float, float] | None]:
    """Each column's rate and its Monte Carlo standard error over the reps."""
    out: dict[str, tuple[float, float] | None] = {}
    for key, _, _ in COLUMNS:
        name = "claim_right" if key == "claim" and design.planted else key
        values = [r[name] for r in reps if name in r]
        if not values:
            out[key] = None
            continue
        rate = float(np.mean(values))
        out[key] = (rate, math.sqrt(max(rate * (1 - rate), 1e-12) / len(values)))
    return out


def within_target(summary: dict, design: Design, alpha: float) -> list[str]:
    """The columns off target: false-claim rate above alpha + 2 s.e., coverage below 0.95 - 2 s.e."""
    misses = []
    for key, value in summary.items():
        if value is None:
            continue
        rate, se = value
        if key.startswith("cov_") and rate < 1 - alpha - 2 * se:
            misses.append(key)
        if not design.planted and key in ("claim", "verdict", "secondary") and rate > alpha + 2 * se:
            misses.append(key)
    return misses


# The share of samples written in the form the report's reader expects: (base, trained) per FORMAT design.
FORMAT_RATES = {"null": (0.7, 0.7), "format": (0.5, 0.9), "reasoning": (0.7, 0.7)}
GAINS = {"EXPANSION", "SHARPENING", "UNDETERMINED"}


def format_rep(
    n: int,
    k: int,
    regime: str,
    design: str,
    settings: AnalysisSettings,
    rng: np.random.Generator,
    accuracy: float,
) -> dict:
    """One simulated pair under two readers: the claim under the report's reader, the FORMAT call, and
    whether trained's answered share, its accuracy among answered (population value: accuracy) and the
    answered share's change are covered by their intervals."""
    settings = dataclasses.replace(settings, seed=int(rng.integers(2**31)))
    a, b = REGIMES[regime]
    p = rng.beta(a, b, n)
    q = expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + PLANTED_LOGIT) if design == "reasoning" else p
    right_base = (rng.random((n, k)) < p[:, None]).astype(np.float64)
    right_trained = (rng.random((n, k)) < q[:, None]).astype(np.float64)
    form_base, form_trained = FORMAT_RATES[design]
    read_base = (rng.random((n, k)) < form_base).astype(np.float64)
    read_trained = (rng.random((n, k)) < form_trained).astype(np.float64)
    primary = contrasts.primary_contrast(right_base * read_base, right_trained * read_trained, settings)
    claim, _ = contrasts.claim(primary, settings)
    part = answering.primary_part(
        primary,
        claim,
        ReaderArrays(read_base, right_base),
        ReaderArrays(read_trained, right_trained),
        settings,
    )
    call = part.call if part is not None else None
    final = call or claim
    row = answering.arm_row(
        "trained", right_trained * read_trained, ReaderArrays(read_trained, None), settings
    )
    change = part.answered_change if part is not None else None

    def covers(ci: list[float] | None, value: float) -> bool:
        return ci is not None and ci[0] <= value <= ci[1]

    return {
        "format": call == FORMAT,
        "format_any": call in (FORMAT, FORMAT_DECLINE),
        "gain_claim": final in GAINS,
        "any_claim": final in CLAIMS or call is not None,
        "cov_share": covers(row.answered_ci95, form_trained),
        "cov_accuracy": covers(row.accuracy_answered_ci95, accuracy),
        "cov_change": covers(change.ci95 if change else None, form_trained - form_base),
    }


FORMAT_COLUMNS = [
    (
        "format_any",
        "FORMAT",
        "rate of a FORMAT call, either direction (null, reasoning: false; format: power)",
    ),
    (
        "gain_claim",
        "reasoning claim",
        "rate of SHARPENING / EXPANSION / UNDETERMINED standing after the call",
    ),
    ("any_claim", "any claim", "rate of any claim (a FORMAT call included)"),
    ("cov_share", "share cov", "coverage of trained's answered-share interval"),
    ("cov_accuracy", "accuracy cov", "coverage of trained's accuracy-among-answered interval"),
    ("cov_change", "change cov", "coverage of the answered share's change interval"),
]


def format_table(args: argparse.Namespace, reps: int, settings: AnalysisSettings) -> None:
    """The FORMAT call's error rates and power over every size, samples per item, regime and design."""
    print(f"FORMAT call: {reps} reps per design; format rates (base, trained): "
          + ", ".join(f"{d} {r}" for d, r in FORMAT_RATES.items()))  # fmt: skip
    print("  n  k  regime    design     " + "  ".join(f"{short:>15}" for _, short, _ in FORMAT_COLUMNS))
    misses = 0
    for n, k, regime, design in itertools.product(args.sizes, (1, 8), REGIMES, FORMAT_RATES):
        rng = np.random.default_rng(
            [args.seed, n, k, list(REGIMES).index(regime), 10 + list(FORMAT_RATES).index(design)]
        )
        # Trained's accuracy among answered in the population: its mean rate (the form is independent of it).
        # (from a Generator of its own, so the reps' draws do not depend on it).
        a, b = REGIMES[regime]
        p = np.random.default_rng([args.seed, 99, list(REGIMES).index(regime)]).beta(a, b, 1_000_000)
        shift = PLANTED_LOGIT if design == "reasoning" else 0.0
        accuracy = float(expit(logit(np.clip(p, 1e-12, 1 - 1e-12)) + shift).mean())
        results = [format_rep(n, k, regime, design, settings, rng, accuracy) for _ in range(reps)]
        cells = []
        for key, _, _ in FORMAT_COLUMNS:
            rate = float(np.mean([r[key] for r in results]))
            se = math.sqrt(max(rate * (1 - rate), 1e-12) / reps)
            off = key.startswith("cov_") and rate < 1 - settings.alpha - 2 * se
            misses += off
            cells.append(f"{rate:.3f}+-{se:.3f}{'*' if off else ''}".rjust(15))
        print(f"{n:>3} {k:>2}  {regime:<9} {design:<10} " + "  ".join(cells), flush=True)
    print("columns: " + "; ".join(f"{short}: {what}" for _, short, what in FORMAT_COLUMNS))
    print(f"* coverage below 0.95 - 2 s.e.: {misses}")


def main(argv: list[str] | None = None) -> int:
    """Run every design and print the table."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_calibration", description=__doc__)
    ap.add_argument("--reps", type=int, default=200, help="simulated pairs of logs per design")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval")
    ap.add_argument("--quick", action="store_true", help="40 reps and 400 resamples: a check that it runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=[24, 100, 500], help="suite sizes to simulate (24 100 500)"
    )
    ap.add_argument(
        "--part",
        choices=("all", "verdicts", "format", "metrics", "judge", "undecided", "split"),
        default="all",
        help="the verdicts' table, the FORMAT call's, or both (default); metrics: the paper metrics' table; "
        "judge: the model judge's corrected and PPI intervals; undecided: the undecided note and "
        "decided delta; split: the seen/clean split's calls",
    )
    args = ap.parse_args(argv)
    reps, n_boot = (40, 400) if args.quick else (args.reps, args.n_boot)
    settings = AnalysisSettings(n_boot=n_boot, n_perm=n_boot)
    started, cpu = time.perf_counter(), time.process_time()
    if args.part == "judge":
        judge_table([n for n in args.sizes if n >= 100] or [500], reps, n_boot, args.seed)
        print(f"time: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
        return 0
    if args.part == "undecided":
        undecided_table(args.sizes, reps, settings, args.seed, REGIMES)
        print(f"time: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
        return 0
    if args.part in ("metrics", "split"):
        table = metrics_table if args.part == "metrics" else split_table
        table(args.sizes, reps, settings, args.seed, REGIMES)
        print(f"time: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
        return 0
    if args.part != "verdicts":
        format_table(args, reps, settings)
    if args.part == "format":
        print(f"time: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
        return 0
    header = "  n  k  regime    effect  " + "  ".join(f"{short:>13}" for _, short, _ in COLUMNS)
    print(f"{reps} reps per design, {n_boot} resamples and sign vectors per interval and test, alpha 0.05")
    print(header)
    misses_total = 0
    for n, k, regime, planted in itertools.product(args.sizes, (1, 8), REGIMES, (False, True)):
        design = Design(n, k, regime, planted)
        rng = np.random.default_rng([args.seed, n, k, list(REGIMES).index(regime), int(planted)])
        truth = population(design, rng)
        results = [one_rep(design, settings, rng, truth) for _ in range(reps)]
        summary = summarise(results, design)
        misses = within_target(summary, design, settings.alpha)
        misses_total += len(misses)
        cells = []
        for key, _, _ in COLUMNS:
            value = summary[key]
            text = "-" if value is None else f"{value[0]:.3f}+-{value[1]:.3f}"
            cells.append(f"{text + ('*' if key in misses else ''):>13}")
        effect = "planted" if planted else "null"
        print(f"{n:>3} {k:>2}  {regime:<9} {effect:<7} " + "  ".join(cells), flush=True)
    print("columns: " + "; ".join(f"{short}: {what}" for _, short, what in COLUMNS))
    print(
        f"* misses the target (false-claim rate <= alpha + 2 s.e.; coverage >= 0.95 - 2 s.e.): {misses_total}"
    )
    print(f"time: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
