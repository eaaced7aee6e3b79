"""One arm contrast of the arm comparison as typed pieces, one per pass, and the ArmContrast built from them.

The passes of analysis.reports.arm_comparison each return their own frozen piece keyed by the contrast (ref,
arm): its statistics (ContrastPiece), its budget adjustment, its decision, its claim and its FORMAT call.
`arm_contrast` builds the report row once from the five, its keys in the order the report has always had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.estimators.budget import BudgetAdjustment, budget_adjusted_deltas
from analysis.estimators.effect_size import EffectSize
from analysis.estimators.mcnemar import McNemar
from analysis.estimators.resampling import rng_for
from analysis.reports.align import ArmData
from analysis.reports.contrast_values import ContrastStats, Decision
from analysis.reports.contrasts import Primary, bh_decisions, family_rows
from analysis.reports.report_models import ArmContrast, ArmFamily
from analysis.reports.report_parts import FormatContrast
from analysis.reports.settings import AnalysisSettings
from contract.generations import ToolCallCounts

# A contrast's key: (ref, arm), the reference arm and the compared arm.
Pair = tuple[str, str]


@dataclass(frozen=True)
class ContrastPiece:
    """One arm against a reference: its paired statistics, effect size, flips, budgets and MDE."""

    ref: str
    arm: str
    model_name: str
    attribution: str
    marginal: bool  # a combination arm against its augmentation (its row names no tool calls)
    tool_calls: ToolCallCounts | None
    stats: ContrastStats
    dz: EffectSize | None
    flips: McNemar
    gen_tokens: float | None
    ref_gen_tokens: float | None
    mde: float | None
    primary: Primary | None  # the delta report's contrast whole, decided by the claim's family

    @property
    def key(self) -> Pair:
        """The contrast's key, (ref, arm)."""
        return (self.ref, self.arm)


@dataclass(frozen=True)
class ArmClaim:
    """What a contrast claims (from its attribution and verdict), its ceiling flag, its parametric share."""

    ceiling: bool
    parametric_share: float | None
    claim: str


@dataclass(frozen=True)
class FormatCall:
    """A contrast under the lenient reader (None: not recorded) and the claim it leaves (None: unchanged)."""

    part: FormatContrast | None
    claim: str | None = None


def budget_adjustments(
    rows: Sequence[ContrastPiece], data: dict[str, ArmData], settings: AnalysisSettings
) -> tuple[dict[Pair, BudgetAdjustment | None], str | None]:
    """Each contrast's budget-adjusted delta (where both arms record gen_tokens); a note on those without."""
    with_budget = [c for c in rows if data[c.arm].budget is not None and data[c.ref].budget is not None]
    missing = sorted({a for c in rows for a in (c.arm, c.ref) if data[a].budget is None})
    adjustments = budget_adjusted_deltas(
        [(data[c.ref].item_mean, data[c.arm].item_mean, data[c.ref].budget, data[c.arm].budget)
         for c in with_budget],
        settings.n_boot,
        rng_for(settings.seed, "budget"),
        alpha=settings.alpha,
    )  # fmt: skip
    by_key = {c.key: adj for c, adj in zip(with_budget, adjustments, strict=True)}
    out = {c.key: by_key.get(c.key) for c in rows}
    if not missing:
        return out, None
    note = f"no gen_tokens on every item of {', '.join(missing)}: the budget adjustment of contrasts "
    return out, note + "involving them is null"


def decisions(rows: Sequence[ContrastPiece], settings: AnalysisSettings) -> dict[Pair, Decision]:
    """Each contrast's verdict: the primary one by the claim's family (as in the delta report), every other
    one Benjamini-Hochberg over the report's other contrasts, so no verdict depends on the report printing
    it."""
    others = [c for c in rows if c.primary is None]
    out = {c.key: c.primary.decision for c in rows if c.primary is not None}
    out.update(zip([c.key for c in others], bh_decisions([c.stats for c in others], settings), strict=True))
    return out


def family_sections(
    rows: Sequence[ContrastPiece],
    data: dict[str, ArmData],
    settings: AnalysisSettings,
    families: list[str | None],
) -> list[ArmFamily]:
    """Each contrast's per-family rows (one Benjamini-Hochberg family per contrast), in the rows' order."""
    return [
        ArmFamily.model_validate(
            {"arm": c.arm, "reference": c.ref, "family": f.family, **f.stats.fields(), **f.decision.fields()}
        )
        for c in rows
        for f in family_rows(data[c.ref], data[c.arm], settings, families)
    ]


def _budget_fields(c: ContrastPiece, adj: BudgetAdjustment | None) -> dict[str, object]:
    return {
        "adjusted_delta": adj.delta if adj else None,
        "adjusted_ci95": adj.ci.as_list() if adj and adj.ci else None,
        "budget_confound": c.stats.delta - adj.delta if adj and adj.delta is not None else None,
        "budget_strata": adj.strata if adj else None,
        "budget_no_support": adj.no_support if adj else [],
    }


def arm_contrast(
    c: ContrastPiece, adj: BudgetAdjustment | None, decision: Decision, claim: ArmClaim, fmt: FormatCall
) -> ArmContrast:
    """The report row of one contrast, built once from its pieces (and checked by its model here)."""
    s = c.stats
    fields: dict[str, object] = {
        "arm": c.arm, "reference": c.ref, "model_name": c.model_name, "n_items": s.n_items,
        "mean_ref": s.mean_ref, "mean_arm": s.mean_arm, "naive_delta": s.delta,
        **s.ci.fields(),
        "cohens_dz": c.dz.dz if c.dz else None, "cohens_dz_ci95": [c.dz.lo, c.dz.hi] if c.dz else None,
        "mean_gen_tokens": c.gen_tokens, "ref_mean_gen_tokens": c.ref_gen_tokens,
        "flips_fixed_b": c.flips.b, "flips_broke_c": c.flips.c,
        "mcnemar_p": c.flips.exact_p, "mcnemar_chi2": c.flips.chi2,
        "p_value": s.p_value, "perm_exact": s.perm_exact, "perm_n": s.perm_n, "mde": c.mde,
    }  # fmt: skip
    # The primary contrast's verdict was known with its statistics; the others' after the budget pass: each
    # report row has kept its keys in that order.
    if c.primary is not None:
        fields |= decision.fields()
    fields["attribution"] = c.attribution
    if not c.marginal:
        fields["tool_calls"] = c.tool_calls.model_dump() if c.tool_calls is not None else None
    fields |= _budget_fields(c, adj)
    if c.primary is None:
        fields |= decision.fields()
    fields |= {"ceiling": claim.ceiling, "parametric_share": claim.parametric_share}
    fields["claim"] = fmt.claim if fmt.claim is not None else claim.claim
    if fmt.part is not None:
        fields["format"] = fmt.part
    return ArmContrast.model_validate(fields)
