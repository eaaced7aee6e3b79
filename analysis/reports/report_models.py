"""The typed reports: the delta report, the arm comparison and the trajectory report as pydantic models.

Each builder (analysis.reports.delta, .arm_comparison, .trajectory) constructs its model where the numbers are
computed; the renderings read it by attribute, and its JSON is the report's JSON as it always was, byte for
byte (analysis.reports.report_parts).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import PlainSerializer

from analysis.reports.contamination_split import ContaminationSplit
from analysis.reports.report_parts import (
    ArmAnswering,
    Bounds,
    Calibration,
    Decision,
    FormatContrast,
    FormatSection,
    Loose,
    MeanContrast,
    PaperMetrics,
    Real,
    RecordedSettings,
    ReportModel,
    ReportSection,
    Truncation,
)
from analysis.reports.undecided import UndecidedSection
from analysis.reports.writing import clean

# ---------------------------------------------------------------------------------------------------------
# The delta report


class Mde(ReportSection):
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


class NoiseFloor(ReportSection):
    """The A/A noise floor: pre against itself, half of each item's samples against the other half."""

    arm: str
    delta: Real
    ci95: Bounds
    ci95_method: str
    half: int
    flip_share: Real
    false_positive_rate: Real
    n_splits: int
    fpr_n_boot: int | None = None


class Verdict(ReportSection):
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


class PassAtKRow(ReportSection):
    """pass@k of both arms at one k, and the delta with its interval."""

    k: int
    pre: Real
    post: Real
    delta: Real
    pre_ci95: Bounds
    post_ci95: Bounds
    delta_ci95: Bounds
    delta_ci95_method: str = "percentile (cluster)"


class PassAtKFigure(ReportSection):
    """What the pass@k figure draws, known before the rest of the delta report (analysis.reports.delta)."""

    pre_model: str
    post_model: str
    claim: str
    pass_at_k: list[PassAtKRow]
    settings: RecordedSettings


class BudgetPoint(ReportSection):
    """Both arms' accuracy when every sample not finished within the budget counts as wrong."""

    budget: int
    pre: Real
    post: Real
    delta: Real
    ci95: Bounds
    ci95_method: str


class CrossoverRow(ReportSection):
    """The pass@k delta at the k the crossover text quotes."""

    k: int
    delta: Real
    ci95: Bounds
    ci95_method: str


class CrossoverNeeded(ReportSection):
    """The k needed for a crossover at the observed rates (Beta-binomial fits), or why it has none."""

    k: int | None
    delta_at_k: Real | None = None
    reason: str | None
    pre_beta: list[Real] | None = None
    post_beta: list[Real] | None = None


class Crossover(ReportSection):
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


class OneModel(ReportSection):
    """What a comparison of two logs of one model is (analysis.commands.compare_logs)."""

    kind: str
    model_name: str
    differs_in: list[str]
    label: str


class DeltaReport(ReportModel):
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
    delta_ci95: Bounds
    delta_ci95_method: str
    delta_ci95_percentile: Bounds | None = None
    delta_ci95_cluster: Bounds | None = None
    delta_ci95_cluster_method: str | None = None
    noise_floor: NoiseFloor | None = None
    perm_p: Real | None
    perm_exact: bool
    perm_n: int | None
    verdict: Verdict | None = None
    format: FormatSection | None = None
    undecided: UndecidedSection | None = None
    cohens_dz: Real | None
    cohens_dz_ci95: Bounds | None
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
    # The delta on possibly-seen and clean items (analysis.reports.contamination_split), with an audit.
    contamination: ContaminationSplit | None = None


# ---------------------------------------------------------------------------------------------------------
# The arm comparison


class ToolCalls(ReportSection):
    """A tool arm's tool calls: answered, failed, and tool-server restarts."""

    answered: int
    failed: int
    restarts: int


class UnusableArm(ReportSection):
    """An arm left out of the comparison, with the reason."""

    arm: str
    reason: str
    tool_calls: ToolCalls | None = None


class BaseArm(ReportSection):
    """The reference arm every other is compared with."""

    arm: str
    attribution: str
    model_name: str
    mean: Real
    mean_gen_tokens: Real | None
    measured_at: str
    driver: str
    generated_by: str | None = None


class BudgetStratum(ReportSection):
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
    ci95: Bounds
    ci95_method: str
    cohens_dz: Real | None
    cohens_dz_ci95: Bounds | None
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
    adjusted_ci95: Bounds | None
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


class PathVerdict(ReportSection):
    """One path verdict of a tool arm's samples: count, share and accuracy."""

    path: str
    count: int
    share: Real
    accuracy: Real | None


class PathTable(ReportSection):
    """The path verdicts of one tool arm's samples."""

    arm: str
    n_samples: int
    verdicts: list[PathVerdict]


class FactorialEffect(ReportSection):
    """One effect of the factorial read-out: its signed cells, estimate, interval and reading."""

    effect: str
    order: int
    cells: dict[str, int]
    estimate: Real | None
    ci95: Bounds | None
    ci95_method: str | None
    reading: str | None
    missing_arms: list[str]


class Factorial(ReportSection):
    """The factorial read-out: training x retrieval x tools."""

    cells: dict[str, list[int]]
    effects: list[FactorialEffect]


class ArmComparison(ReportModel):
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
    undecided: UndecidedSection | None = None
    n_tests: int
    n_family_tests: int
    primary_in_report: bool | None = None
    settings: RecordedSettings
    notes: list[str]
    contamination: list[ContaminationSplit] | None = None


# ---------------------------------------------------------------------------------------------------------
# The trajectory report


class TrajectoryRow(MeanContrast):
    """One arm against the reference (the reference's own row carries no interval)."""

    arm: str
    reference: str
    model_name: str
    format: FormatContrast | None = None


class CheckpointMetrics(PaperMetrics):
    """One checkpoint's paper metrics over all items, and its training step (None: not known)."""

    arm: str
    step: int | None


class TrajectoryReport(ReportModel):
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
    undecided: UndecidedSection | None = None
    metrics: list[CheckpointMetrics] | None = None
    limits: str | None = None
    n_tests: int | None = None
    settings: RecordedSettings
    notes: list[str] | None = None
