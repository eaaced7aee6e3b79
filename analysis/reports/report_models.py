"""The typed reports: the delta report, the arm comparison and the trajectory report as pydantic models.

Each report is assembled as a dict where its numbers are computed (analysis.reports.delta,
analysis.reports.arm_comparison,
analysis.reports.trajectory) and validated into its model before it is rendered and written: the markdown, the
one-page report and its templates read the model by attribute, and a renamed or unknown key fails
validation (extra="forbid").

The JSON of a model is the report's JSON as it always was, byte for byte (`report_json`): the keys in the
order the report assembled them, a key the report left out left out (older reports lack some), an int kept
an int, and every float through writing.clean (10 significant digits, NaN and infinity as null). The
attributes hold the numbers as computed, so the markdown prints what it printed from the dict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from analysis.reports.writing import clean


def _python_number(x: Any) -> Any:
    """A numpy scalar as the Python number it holds (np.int64 an int, np.float64 a float), else x."""
    return x.item() if isinstance(x, np.generic) else x


# A real number as computed: an int stays an int (its JSON keeps no ".0"), a float is written through
# writing.clean. The same for any value the model does not type (the matched protocol).
Real = Annotated[int | float, BeforeValidator(_python_number), PlainSerializer(clean, when_used="json")]
Loose = Annotated[Any, PlainSerializer(clean, when_used="json")]
Interval = list[Real | None]


class ReportPart(BaseModel):
    """A part of a report: its keys in the order they were assembled, and no key the model does not name."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    _keys: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        part = handler(data)
        if isinstance(data, Mapping) and isinstance(part, ReportPart):
            part._keys = tuple(data)
        return part

    @model_serializer(mode="wrap")
    def _in_assembled_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        return out if self._keys is None else {k: out[k] for k in self._keys}

    def has(self, key: str) -> bool:
        """Whether the report holds this key (a field left at its default when absent says None)."""
        return key in self.model_fields_set

    def with_fields(self, **changes: Any) -> Self:
        """A copy with these fields set; a field the part did not hold comes after the others in its JSON."""
        held = self._keys if self._keys is not None else tuple(self.model_fields_set)
        return self.model_validate({**{k: getattr(self, k) for k in held}, **changes})


def report_json(report: ReportPart) -> bytes:
    """The report's canonical JSON bytes (what writing.dump_json writes for the dict it was built from)."""
    return (
        json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    ).encode()


# ---------------------------------------------------------------------------------------------------------
# Parts every report shares


class RecordedSettings(ReportPart):
    """The analysis settings a report was computed with (analysis.reports.settings.Settings)."""

    n_boot: int
    n_perm: int
    alpha: Real
    fdr: Real
    min_effect: Real
    max_failed_tool_calls: Real | None = None
    seed: int


class TruncationArm(ReportPart):
    """One arm's samples and those that ended at the budget (None where finish reasons are not recorded)."""

    arm: str
    samples: int | None
    at_budget: int | None
    share: Real | None


class Truncation(ReportPart):
    """Samples that ended at the budget, per arm (analysis.reports.truncation)."""

    max_tokens: int
    finish_reason: str
    arms: list[TruncationArm]
    share_gap: Real | None


class ReliabilityBin(ReportPart):
    """One bin of a reliability diagram."""

    bin: Interval
    items: int
    confidence: Real
    accuracy: Real


class CalibrationArm(ReportPart):
    """One arm's ECE with its interval, mean confidence, accuracy and reliability bins."""

    arm: str
    ece: Real
    ci95: Interval
    ci95_method: str
    mean_confidence: Real
    accuracy: Real
    reliability: list[ReliabilityBin]


class CalibrationDelta(ReportPart):
    """The paired ECE delta of an arm against the reference."""

    arm: str
    reference: str
    delta: Real
    ci95: Interval
    ci95_method: str
    p_value: Real | None
    significant: bool
    negligible: bool


class Calibration(ReportPart):
    """The calibration section (analysis.reports.calibration)."""

    confidence: str
    n_bins: int
    min_effect: Real
    arms: list[CalibrationArm]
    deltas: list[CalibrationDelta]
    arms_without_answers: list[str]


class Decision(ReportPart):
    """The verdict fields of a contrast (analysis.reports.contrasts): q, significant, negligible, decided
    by."""

    q_value: Real | None = None
    significant: bool | None = None
    negligible: bool | None = None
    decided_by: str | None = None


class MeanContrast(Decision):
    """A paired mean contrast's numbers (analysis.reports.contrasts.mean_contrast)."""

    n_items: int
    mean_ref: Real
    mean_arm: Real
    delta: Real
    ci95: Interval | None
    ci95_method: str | None = None
    p_value: Real | None = None
    perm_exact: bool | None = None
    perm_n: int | None = None


class ArmAnswering(ReportPart):
    """One arm's answered share and accuracy among answered, each with its interval
    (analysis.reports.answering)."""

    arm: str
    answered_share: Real | None
    answered_ci95: Interval | None
    answered_ci95_method: str | None
    accuracy_answered: Real | None
    accuracy_answered_ci95: Interval | None
    accuracy_answered_ci95_method: str | None
    n_answered: int | None
    n_samples: int
    lenient_mean: Real | None


class LenientTopK(ReportPart):
    """The lenient reader's pass@K delta of trained vs base, with pass@K's interval and test."""

    k: int
    pre: Real
    post: Real
    delta: Real
    ci95: Interval
    ci95_method: str
    p_value: Real
    p_holm: Real | None = None
    significant: bool


class AnsweredChange(ReportPart):
    """The paired change in answered share of a contrast, with its interval and sign-flip test."""

    share_ref: Real
    share_arm: Real
    delta: Real
    ci95: Interval
    ci95_method: str
    p_value: Real
    perm_exact: bool
    perm_n: int
    significant: bool


class FormatContrast(ReportPart):
    """A contrast under the lenient reader: its delta, the answered share's change and the FORMAT call."""

    lenient: MeanContrast
    lenient_top_k: LenientTopK | None = None
    answered_change: AnsweredChange | None
    call: str | None
    detail: str


class FormatSection(ReportPart):
    """The delta report's format part: each arm's answering, trained vs base under the lenient reader."""

    arms: list[ArmAnswering]
    contrast: FormatContrast | None
    lenient_missing: list[str]


# ---------------------------------------------------------------------------------------------------------
# The delta report


class Mde(ReportPart):
    """The minimum detectable effect of the suite, or the reason it is not estimable."""

    mde: Real | None
    power: Real
    alpha: Real
    n_items: int
    k: int
    between_item_var: Real | None
    within_item_var: Real | None
    by_k: dict[str, Real | None]
    reason: str | None


class NoiseFloor(ReportPart):
    """The A/A noise floor: pre against itself, half of each item's samples against the other half."""

    arm: str
    delta: Real
    ci95: Interval
    ci95_method: str
    half: int
    flip_share: Real
    false_positive_rate: Real
    n_splits: int
    fpr_n_boot: int | None = None


class Verdict(ReportPart):
    """The one verdict on trained vs base: the claim's Holm family over pass@1 and pass@K."""

    significant: bool
    negligible: bool
    p_holm: Real | None
    decided_by: str
    top_k: int | None
    top_k_perm_p: Real | None
    top_k_p_holm: Real | None
    top_k_significant: bool | None
    n_tests: int


class PassAtKRow(ReportPart):
    """pass@k of both arms at one k, and the delta with its interval."""

    k: int
    pre: Real
    post: Real
    delta: Real
    pre_ci95: Interval
    post_ci95: Interval
    delta_ci95: Interval
    delta_ci95_method: str = "percentile (cluster)"


class BudgetPoint(ReportPart):
    """Both arms' accuracy when every sample not finished within the budget counts as wrong."""

    budget: int
    pre: Real
    post: Real
    delta: Real
    ci95: Interval
    ci95_method: str


class CrossoverRow(ReportPart):
    """The pass@k delta at the k the crossover text quotes."""

    k: int
    delta: Real
    ci95: Interval
    ci95_method: str


class CrossoverNeeded(ReportPart):
    """The k needed for a crossover at the observed rates (Beta-binomial fits), or why it has none."""

    k: int | None
    delta_at_k: Real | None = None
    reason: str | None
    pre_beta: list[Real] | None = None
    post_beta: list[Real] | None = None


class Crossover(ReportPart):
    """The pass@k crossover of the delta report (analysis.reports.crossover)."""

    k: int | None
    needed: CrossoverNeeded | None
    status: str
    row: CrossoverRow | None
    text: str


class DeltaFamily(MeanContrast):
    """One item family's delta of the delta report."""

    family: str
    mean_pre: Real | None = None
    mean_post: Real | None = None
    mean_ref: Real | None = None
    mean_arm: Real | None = None


class OneModel(ReportPart):
    """What a comparison of two logs of one model is (analysis.commands.compare_logs)."""

    kind: str
    model_name: str
    differs_in: list[str]
    label: str


class DeltaReport(ReportPart):
    """The delta report: trained vs base (analysis.reports.delta)."""

    report: Literal["delta"]
    suite: str
    suite_revision: str
    n_items: int
    n_samples: int
    pre_model: str
    post_model: str
    pre_log: str
    post_log: str
    pre_arm: str = "base"
    post_arm: str = "trained"
    driver: str
    measured_at: str
    pre_measured_at: str | None = None
    generated: str | None = None
    mde: Mde
    claim: str
    claim_detail: str
    matched_protocol: Annotated[dict[str, Any], PlainSerializer(clean, when_used="json")]
    prompting: dict[str, str] | None = None
    mean_pre: Real
    mean_post: Real
    delta_mean: Real
    delta_ci95: Interval
    delta_ci95_method: str
    delta_ci95_percentile: Interval | None = None
    delta_ci95_cluster: Interval | None = None
    delta_ci95_cluster_method: str | None = None
    noise_floor: NoiseFloor | None = None
    perm_p: Real | None
    perm_exact: bool
    perm_n: int | None
    verdict: Verdict | None = None
    format: FormatSection | None = None
    cohens_dz: Real | None
    cohens_dz_ci95: Interval | None
    pair_correlation_rho: Real | None
    flips_wrong_to_right: int
    flips_right_to_wrong: int
    mcnemar_chi2: Real | None
    mcnemar_chi2_p: Real | None
    mcnemar_p: Real | None
    pass_at_k_pre: dict[str, Real]
    pass_at_k_post: dict[str, Real]
    pass_at_k: list[PassAtKRow]
    budget_curve: list[BudgetPoint] = []
    crossover: Crossover | None = None
    truncation: Truncation | None = None
    families: list[DeltaFamily]
    calibration: Calibration | None = None
    settings: RecordedSettings
    notes: list[str]
    comparison: OneModel | None = None


# ---------------------------------------------------------------------------------------------------------
# The arm comparison


class ToolCalls(ReportPart):
    """A tool arm's tool calls: answered, failed, and tool-server restarts."""

    answered: int
    failed: int
    restarts: int


class UnusableArm(ReportPart):
    """An arm left out of the comparison, with the reason."""

    arm: str
    reason: str
    tool_calls: ToolCalls | None = None


class BaseArm(ReportPart):
    """The reference arm every other is compared with."""

    arm: str
    attribution: str
    model_name: str
    mean: Real
    mean_gen_tokens: Real | None
    measured_at: str
    driver: str
    generated_by: str | None = None


class BudgetStratum(ReportPart):
    """One generated-token stratum of the budget adjustment."""

    stratum: int
    budget_range: list[Real]
    ref_weight: Real
    n_arm_items: int
    mean_delta: Real | None
    supported: bool


class ArmContrast(Decision):
    """One arm against its reference: naive and budget-adjusted delta, flips, test, verdict and claim."""

    arm: str
    reference: str
    model_name: str
    n_items: int
    mean_ref: Real
    mean_arm: Real
    naive_delta: Real
    ci95: Interval
    ci95_method: str
    cohens_dz: Real | None
    cohens_dz_ci95: Interval | None
    mean_gen_tokens: Real | None
    ref_mean_gen_tokens: Real | None
    flips_fixed_b: int
    flips_broke_c: int
    mcnemar_p: Real | None
    mcnemar_chi2: Real | None
    p_value: Real | None
    perm_exact: bool
    perm_n: int | None = None
    mde: Real | None
    attribution: str
    tool_calls: ToolCalls | None = None
    adjusted_delta: Real | None
    adjusted_ci95: Interval | None
    budget_confound: Real | None
    budget_strata: list[BudgetStratum] | None
    budget_no_support: list[int]
    ceiling: bool
    parametric_share: Real | None
    claim: str
    format: FormatContrast | None = None


class ArmFamily(MeanContrast):
    """One item family's row of an arm contrast."""

    arm: str
    reference: str
    family: str


class PathVerdict(ReportPart):
    """One path verdict of a tool arm's samples: count, share and accuracy."""

    path: str
    count: int
    share: Real
    accuracy: Real | None


class PathTable(ReportPart):
    """The path verdicts of one tool arm's samples."""

    arm: str
    n_samples: int
    verdicts: list[PathVerdict]


class FactorialEffect(ReportPart):
    """One effect of the factorial read-out: its signed cells, estimate, interval and reading."""

    effect: str
    order: int
    cells: dict[str, int]
    estimate: Real | None
    ci95: Interval | None
    ci95_method: str | None
    reading: str | None
    missing_arms: list[str]


class Factorial(ReportPart):
    """The factorial read-out: training x retrieval x tools."""

    cells: dict[str, list[int]]
    effects: list[FactorialEffect]


class ArmComparison(ReportPart):
    """The arm comparison: every arm against base, the marginal contrasts and the factorial read-out."""

    report: Literal["arms"]
    suite: str
    suite_revision: str
    n_items: int
    n_samples: int
    logs_dir: str
    arms_found: list[str]
    arms_missing: list[str]
    arms_unusable: list[UnusableArm] = []
    logs: dict[str, str]
    matched_protocol: Annotated[dict[str, Any], PlainSerializer(clean, when_used="json")]
    prompting: dict[str, str] | None = None
    base: BaseArm
    contrasts: list[ArmContrast]
    marginal: list[ArmContrast]
    families: list[ArmFamily]
    paths: list[PathTable]
    factorial: Factorial | None = None
    calibration: Calibration | None = None
    truncation: Truncation | None = None
    answering: list[ArmAnswering] | None = None
    lenient_missing: list[str] | None = None
    n_tests: int
    n_family_tests: int
    primary_in_report: bool | None = None
    settings: RecordedSettings
    notes: list[str]


# ---------------------------------------------------------------------------------------------------------
# The trajectory report


class TrajectoryRow(MeanContrast):
    """One arm against the reference (the reference's own row carries no interval)."""

    arm: str
    reference: str
    model_name: str
    format: FormatContrast | None = None


class TrajectoryReport(ReportPart):
    """The checkpoint trajectory: each checkpoint over the reference, the placebo, the reward claim."""

    report: Literal["trajectory"]
    status: str
    detail: str | None = None
    suite: str | None = None
    suite_revision: str | None = None
    n_items: int | None = None
    n_samples: int | None = None
    checkpoints: list[str] | None = None
    placebo: str | None = None
    logs: dict[str, str] | None = None
    missing: list[str] | None = None
    matched_protocol: Loose = None
    prompting: dict[str, str] | None = None
    trajectory: list[TrajectoryRow] | None = None
    placebo_delta: TrajectoryRow | None = None
    reward_contrast: TrajectoryRow | None = None
    reward_claim: str | None = None
    answering: list[ArmAnswering] | None = None
    lenient_missing: list[str] | None = None
    # Each checkpoint's paper metrics (analysis.estimators.paper_metrics.ArmMetrics) and its training step.
    metrics: Loose = None
    limits: str | None = None
    n_tests: int | None = None
    settings: RecordedSettings
    notes: list[str] | None = None
