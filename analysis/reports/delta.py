"""The pre/post delta report built: the two logs aligned, every statistic called, the typed report assembled.

Every statistic comes from analysis.reports.contrasts and the estimators it shares with the other reports;
`build` returns the DeltaReport model itself, so a misnamed or missing field fails where it is computed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.estimators.budget import budget_curve, budget_grid
from analysis.estimators.effect_size import cohens_dz
from analysis.estimators.estimate import Estimate, Interval
from analysis.estimators.mcnemar import majority_verdicts, mcnemar_from_verdicts
from analysis.estimators.noise_floor import aa_noise_floor
from analysis.estimators.power_planning import MDE, mde_paired
from analysis.estimators.resampling import rng_for
from analysis.reports import (
    answering,
    calibration,
    contamination_split,
    contrasts,
    crossover,
    truncation,
    undecided,
)
from analysis.reports.align import ArmData, arm_arrays, check_matched, item_order, measured_line
from analysis.reports.contamination_split import Audit
from analysis.reports.contrast_values import Claim
from analysis.reports.contrasts import Primary
from analysis.reports.prompting import prompt_line
from analysis.reports.report_models import (
    BudgetPoint,
    DeltaFamily,
    DeltaReport,
    Mde,
    NoiseFloor,
    PassAtKRow,
    Verdict,
)
from analysis.reports.report_parts import FormatSection
from analysis.reports.settings import AnalysisSettings, settings_dict
from analysis.reports.undecided import UndecidedSection
from contract.evallog import EvalLog


@dataclass(frozen=True)
class Pair:
    """The two logs of a delta report, aligned on the reference log's item order (the report's pre = ref,
    post = arm)."""

    ref_path: str
    ref_log: EvalLog
    arm_path: str
    arm_log: EvalLog
    order: list[str]
    ref: ArmData
    arm: ArmData

    def names(self) -> tuple[str, str]:
        """The two arms' names (the log's own, else the file's stem); "pre" and "post" when they are equal."""
        ref_name = self.ref_log.arm or Path(self.ref_path).stem
        arm_name = self.arm_log.arm or Path(self.arm_path).stem
        return ("pre", "post") if ref_name == arm_name else (ref_name, arm_name)


def sample_tokens(log: EvalLog, order: list[str]) -> np.ndarray | None:
    """(n_items, k) generated tokens of each sample in the given item order; None when an item lacks them."""
    by_id = {it.item_id: it for it in log.items}
    if any(by_id[i].gen_tokens is None for i in order):
        return None
    return np.array([by_id[i].gen_tokens for i in order], dtype=np.float64).reshape(len(order), -1)


def pass_at_k_rows(primary: Primary) -> list[PassAtKRow]:
    """pass@k of both arms at every k, each delta with its interval; pass@1's is the headline's."""
    passk = primary.passk
    # Each row names the method of the interval it prints: below BCA_MIN_ITEMS pass@k's intervals invert the
    # sign-flip test or are Newcombe's, not the cluster percentile bootstrap of a large suite.
    methods = [ci.method for ci in passk.delta_ci]
    if passk.delta_ci[0].method != "percentile (cluster)":
        methods[0] = f"{primary.stats.ci.method}, item-level (the headline interval)"
    return [
        PassAtKRow(
            k=k,
            pre=float(passk.ref[i]),
            post=float(passk.arm[i]),
            delta=float(passk.delta[i]),
            pre_ci95=passk.ref_ci[i].as_list(),
            post_ci95=passk.arm_ci[i].as_list(),
            delta_ci95=passk.delta_ci[i].as_list(),
            delta_ci95_method=methods[i],
        )
        for i, k in enumerate(passk.ks)
    ]


def format_section(
    pair: Pair, primary: Primary, claim: Claim, settings: AnalysisSettings
) -> tuple[FormatSection, Claim]:
    """The format part (the same generations under the lenient reader) and the claim it leaves.

    A shift the lenient reader does not find is the answer's format: the claim then says so.
    """
    verdict, detail = claim
    ref_name, arm_name = pair.names()
    readers = {
        ref_name: answering.reader_arrays(pair.ref_log, pair.order),
        arm_name: answering.reader_arrays(pair.arm_log, pair.order),
    }
    lenient = answering.primary_part(primary, verdict, readers[ref_name], readers[arm_name], settings)
    if lenient is not None and lenient.call is not None:
        verdict, detail = lenient.call, f"{lenient.detail} Under the report's reader alone: {detail}"
    section = FormatSection(
        arms=[
            answering.arm_row(ref_name, pair.ref.scores, readers[ref_name], settings),
            answering.arm_row(arm_name, pair.arm.scores, readers[arm_name], settings),
        ],
        contrast=lenient,
        lenient_missing=answering.missing_lenient(readers),
    )
    return section, Claim(verdict, detail)


def mde_part(pair: Pair, alpha: float) -> Mde:
    """The minimum detectable effect of the suite, or the reason it is not estimable."""
    mde: MDE = mde_paired(pair.ref.scores, pair.arm.scores, alpha)
    return Mde(
        mde=mde.mde,
        power=mde.power,
        alpha=mde.alpha,
        n_items=mde.n_items,
        k=mde.k,
        between_item_var=mde.between_item_var,
        within_item_var=mde.within_item_var,
        by_k={str(k): v for k, v in mde.by_k.items()},
        reason=mde.reason,
    )


def noise_floor_part(pair: Pair, settings: AnalysisSettings) -> NoiseFloor | None:
    """The A/A noise floor of the pre arm (half of each item's samples against the other half)."""
    method = contrasts.interval_method(len(pair.order))
    noise = aa_noise_floor(
        pair.ref.scores, settings.n_boot, rng_for(settings.seed, "noise"), alpha=settings.alpha, method=method
    )
    if noise is None:
        return None
    return NoiseFloor(
        arm="pre",
        delta=noise.delta,
        **noise.ci.fields(),
        half=noise.half,
        flip_share=noise.flip_share,
        false_positive_rate=noise.false_positive_rate,
        n_splits=noise.n_splits,
        fpr_n_boot=noise.fpr_n_boot,
    )


def budget_points(pair: Pair, settings: AnalysisSettings, headline: Interval) -> list[BudgetPoint]:
    """Both arms' accuracy at each token budget, where the logs record every sample's tokens."""
    tokens_ref, tokens_arm = sample_tokens(pair.ref_log, pair.order), sample_tokens(pair.arm_log, pair.order)
    if tokens_ref is None or tokens_arm is None:
        return []
    points = budget_curve(
        pair.ref.scores, pair.arm.scores, tokens_ref, tokens_arm, budget_grid(pair.ref_log.max_tokens),
        settings.n_boot, rng_for(settings.seed, "budget-curve"), alpha=settings.alpha,
        method=contrasts.budget_method(len(pair.order)),
    )  # fmt: skip
    longest = max(tokens_ref.max(), tokens_arm.max())
    curve = []
    # Once every sample finishes within B the row is the headline delta: it carries the headline interval.
    for p in points:
        ci = p.ci
        if p.budget >= longest:
            ci = dataclasses.replace(headline, method=f"{headline.method} (the headline interval)")
        curve.append(BudgetPoint(budget=p.budget, pre=p.ref, post=p.arm, delta=p.delta, **ci.fields()))
    return curve


def verdict_part(primary: Primary) -> Verdict:
    """The verdict on the mean delta (pass@1): the claim's Holm family, the one rule of the contrasts.

    The arm comparison's trained row and the trajectory's carry this same verdict.
    """
    head = primary.decision
    return Verdict(
        significant=head.significant,
        negligible=head.negligible,
        p_holm=head.q_value,
        decided_by=head.decided_by,
        top_k=primary.top_k,
        top_k_perm_p=primary.top_p,
        top_k_p_holm=primary.top_p_holm,
        top_k_significant=primary.top_significant,
        n_tests=primary.n_tests,
    )


def families(pair: Pair, settings: AnalysisSettings) -> list[DeltaFamily]:
    """Each item family's delta, its arms' means named mean_pre and mean_post (after the verdict)."""
    out = []
    for f in contrasts.family_rows(pair.ref, pair.arm, settings, pair.ref.families):
        fields = {"family": f.family, **f.stats.fields(), **f.decision.fields()}
        fields["mean_pre"], fields["mean_post"] = fields.pop("mean_ref"), fields.pop("mean_arm")
        out.append(DeltaFamily.model_validate(fields))
    return out


def notes(pair: Pair, fmt: FormatSection) -> list[str]:
    """The notes: a small suite, greedy decoding, family labels that differ, a reader not recorded."""
    out = [n for n in [contrasts.small_suite_note(len(pair.order))] if n]
    out += [n for n in [contrasts.greedy_note(pair.ref_log.temperature, pair.ref_log.n_samples)] if n]
    if any(f is not None for f in pair.ref.families) and pair.ref.families != pair.arm.families:
        out.append("family labels differ between the logs; families are taken from the pre log")
    if fmt.lenient_missing:
        out.append(answering.not_recorded(fmt.lenient_missing, 2))
    return out


def pair_correlation(ref: ArmData, arm: ArmData) -> float | None:
    """The correlation of the two arms' item means; None when either has no spread."""
    if ref.item_mean.std() > 0 and arm.item_mean.std() > 0:
        return float(np.corrcoef(ref.item_mean, arm.item_mean)[0, 1])
    return None


def cluster_method(ci: Interval) -> str:
    """How the cluster-bootstrap interval of the mean delta was made."""
    if ci.method.startswith("percentile"):
        return "percentile, cluster bootstrap (items resampled with their k samples; the headline's draw)"
    return ci.method


@dataclass(frozen=True)
class Headline:
    """The mean delta with its headline interval, and the two other intervals the report prints beside it."""

    estimate: Estimate
    percentile: Interval  # the percentile interval of the headline's item bootstrap
    cluster: Interval  # the cluster bootstrap (items resampled with their k samples)

    @classmethod
    def of(cls, pair: Pair, primary: Primary) -> Headline:
        """The headline of the primary contrast of the pair."""
        delta = float((pair.arm.item_mean - pair.ref.item_mean).mean())
        return cls(Estimate(delta, primary.stats.ci), primary.percentile, primary.passk.mean_delta_ci)

    def report_fields(self) -> dict[str, float | str | list[float] | None]:
        """The report's flat keys of the headline, written here only: delta_mean, delta_ci95 and the rest."""
        return {
            **self.estimate.fields("delta_mean", "delta_ci95"),
            "delta_ci95_percentile": self.percentile.as_list(),
            "delta_ci95_cluster": self.cluster.as_list(),
            "delta_ci95_cluster_method": cluster_method(self.cluster),
        }


def build(
    ref_path: str,
    ref_log: EvalLog,
    arm_path: str,
    arm_log: EvalLog,
    settings: AnalysisSettings,
    on_pass_at_k: Callable[[dict[str, Any]], None] | None = None,
    distinct_models: bool = True,
    allow: frozenset[str] = frozenset(),
    audit: Audit | None = None,
) -> DeltaReport:
    """The delta report of arm_log against ref_log (its post and pre): a pure function of logs and settings.

    on_pass_at_k, when given, is called once the pass@k rows and the claim are known with the part of
    the report the pass@k figure draws (so that it can be drawn while the rest is computed).
    distinct_models=False, allow: two logs of one model (analysis.commands.compare_logs labels them).
    audit: the contamination files (contamination_split.read_audit), for the seen/clean split.
    """
    matched = check_matched(
        ref_path, ref_log, arm_path, arm_log, distinct_models=distinct_models, allow=allow
    )
    order = item_order(ref_log)
    ref, arm = arm_arrays(ref_log, order), arm_arrays(arm_log, order)
    pair = Pair(ref_path, ref_log, arm_path, arm_log, order, ref, arm)
    # The primary contrast, decided once (analysis.reports.contrasts): the arm comparison and the trajectory
    # compute the same draws for trained vs base, so every report prints the same interval and verdict.
    primary = contrasts.primary_contrast(pair.ref.scores, pair.arm.scores, settings)
    fmt, claim = format_section(pair, primary, contrasts.claim(primary, settings), settings)
    passk_rows = pass_at_k_rows(primary)
    if on_pass_at_k is not None:
        on_pass_at_k(
            {
                "pre_model": ref_log.model_name,
                "post_model": arm_log.model_name,
                "claim": claim[0],
                "pass_at_k": [row.model_dump() for row in passk_rows],
                "settings": settings_dict(settings),
            }
        )
    report = assemble(pair, settings, matched, primary, claim, fmt, passk_rows)
    if audit is None:
        return report
    names = (report.pre_arm, report.post_arm)
    part = contamination_split.split(
        audit, pair.order, pair.ref.item_mean, pair.arm.item_mean, names, settings
    )
    return report.with_fields(contamination=part)


def undecided_part(
    pair: Pair, settings: AnalysisSettings, notes_out: list[str]
) -> dict[str, UndecidedSection]:
    """The report's `undecided` keyword (analysis.reports.undecided), or its note appended to notes_out."""
    pre_arm, post_arm = pair.names()
    return undecided.report_fields(
        {pre_arm: pair.ref_log, post_arm: pair.arm_log}, pair.order, {pre_arm: pair.ref, post_arm: pair.arm},
        [(pre_arm, post_arm)], settings, notes_out,
    )  # fmt: skip


def assemble(
    pair: Pair,
    settings: AnalysisSettings,
    matched: dict[str, Any],
    primary: Primary,
    claim: Claim,
    fmt: FormatSection,
    passk_rows: list[PassAtKRow],
) -> DeltaReport:
    """The DeltaReport of the aligned pair, its fields in the order its JSON has always had them."""
    ref_log, arm_log, ref, arm = pair.ref_log, pair.arm_log, pair.ref, pair.arm
    head, passk = primary.stats, primary.passk
    d = arm.item_mean - ref.item_mean
    dz = cohens_dz(d, settings.alpha)
    flips = mcnemar_from_verdicts(majority_verdicts(ref.item_mean), majority_verdicts(arm.item_mean))
    pre_arm, post_arm = pair.names()
    said = notes(pair, fmt)
    return DeltaReport(
        report="delta",
        suite=ref_log.suite,
        suite_revision=ref_log.suite_revision,
        n_items=len(pair.order),
        n_samples=ref_log.n_samples,
        pre_model=ref_log.model_name,
        post_model=arm_log.model_name,
        pre_log=str(pair.ref_path),
        post_log=str(pair.arm_path),
        # The arm names (the log's own, else the file's stem, as the arm comparison names them), which the
        # item browser's links use.
        pre_arm=ref_log.arm or Path(pair.ref_path).stem,
        post_arm=arm_log.arm or Path(pair.arm_path).stem,
        driver=arm_log.driver,
        measured_at=arm_log.measured_at,
        pre_measured_at=ref_log.measured_at,
        generated=measured_line(ref_log, arm_log),
        mde=mde_part(pair, settings.alpha),
        claim=claim[0],
        claim_detail=claim[1],
        matched_protocol=matched,
        prompting={"pre": prompt_line(ref_log), "post": prompt_line(arm_log)},
        mean_pre=float(ref.item_mean.mean()),
        mean_post=float(arm.item_mean.mean()),
        **Headline.of(pair, primary).report_fields(),
        noise_floor=noise_floor_part(pair, settings),
        perm_p=head.p_value,
        perm_exact=head.perm_exact,
        perm_n=head.perm_n,
        verdict=verdict_part(primary),
        # Each arm's answered share and accuracy among answered; trained vs base under the lenient reader.
        format=fmt,
        **undecided_part(pair, settings, said),
        cohens_dz=dz.dz if dz else None,
        cohens_dz_ci95=[dz.lo, dz.hi] if dz else None,
        pair_correlation_rho=pair_correlation(ref, arm),
        flips_wrong_to_right=flips.b,
        flips_right_to_wrong=flips.c,
        mcnemar_chi2=flips.chi2,
        mcnemar_chi2_p=flips.chi2_p,
        mcnemar_p=flips.exact_p,
        pass_at_k_pre={str(k): float(v) for k, v in zip(passk.ks, passk.ref, strict=True)},
        pass_at_k_post={str(k): float(v) for k, v in zip(passk.ks, passk.arm, strict=True)},
        pass_at_k=passk_rows,
        budget_curve=budget_points(pair, settings, head.ci),
        crossover=crossover.crossover(primary.all_k, ref.scores, arm.scores),
        truncation=truncation.section({"pre": ref_log, "post": arm_log}, ref_log.max_tokens),
        families=families(pair, settings),
        calibration=calibration.section({pre_arm: ref_log, post_arm: arm_log}, pair.order, pre_arm, settings),
        settings=settings_dict(settings),
        notes=said,
    )
