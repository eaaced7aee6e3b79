"""The sections of the typed reports: the base models that keep a report's JSON as assembled, shared sections.

Each report is constructed as its model where its numbers are computed (analysis.reports.delta,
analysis.reports.arm_comparison, analysis.reports.trajectory); the markdown, the one-page report and its
templates read the model by attribute, and a renamed or unknown key fails validation (extra="forbid").

The JSON of a model is the report's JSON as it always was, byte for byte: the keys in the
order the report assembled them (a model's keyword arguments, or a section's dict), a key the report left out
left out (older reports lack some), an int kept an int, and every float through writing.clean (10
significant digits, NaN and infinity as null). The attributes hold the numbers as computed. A whole report
is a ReportModel; its file, with the format's version, is written and read by analysis.reports.report_files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self

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
# A number written as computed, not through writing.clean (the judge report's, which never was).
Unrounded = Annotated[int | float, BeforeValidator(_python_number)]
Bounds = list[Real | None]


class ReportSection(BaseModel):
    """A section of a report: its keys in the order they were assembled, no key the model does not name."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    _keys: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        section = handler(data)
        if isinstance(data, Mapping) and isinstance(section, ReportSection):
            section._keys = tuple(data)
        return section

    @model_serializer(mode="wrap")
    def _in_assembled_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        return out if self._keys is None else {k: out[k] for k in self._keys}

    def has(self, key: str) -> bool:
        """Whether the report holds this key (a field left at its default when absent says None)."""
        return key in self.model_fields_set

    def with_fields(self, **changes: Any) -> Self:
        """A copy with these fields set; a field the section did not hold comes after the others in JSON."""
        held = self._keys if self._keys is not None else tuple(self.model_fields_set)
        return self.model_validate({**{k: getattr(self, k) for k in held}, **changes})


class ReportModel(ReportSection):
    """A whole report, one JSON file: json.dumps' options for its bytes (analysis.reports.report_files)."""

    # Most reports write through writing.clean, indented by 2, non-ASCII as is, no NaN; the judge report
    # keeps the options it has always been written with (analysis.reports.judge).
    json_options: ClassVar[dict[str, Any]] = {"indent": 2, "ensure_ascii": False, "allow_nan": False}


# ---------------------------------------------------------------------------------------------------------
# Sections every report shares


class RecordedSettings(ReportSection):
    """The analysis settings a report was computed with (analysis.reports.settings.AnalysisSettings)."""

    n_boot: int
    n_perm: int
    alpha: Real
    fdr: Real
    min_effect: Real
    max_failed_tool_calls: Real | None = None
    seed: int


class TruncationArm(ReportSection):
    """One arm's samples and those that ended at the budget (None where finish reasons are not recorded)."""

    arm: str
    samples: int | None
    at_budget: int | None
    share: Real | None


class Truncation(ReportSection):
    """Samples that ended at the budget, per arm (analysis.reports.truncation)."""

    max_tokens: int
    finish_reason: str
    arms: list[TruncationArm]
    share_gap: Real | None


class ReliabilityBin(ReportSection):
    """One bin of a reliability diagram."""

    bin: Bounds
    items: int
    confidence: Real
    accuracy: Real


class CalibrationArm(ReportSection):
    """One arm's ECE with its interval, mean confidence, accuracy and reliability bins."""

    arm: str
    ece: Real
    ci95: Bounds
    ci95_method: str
    mean_confidence: Real
    accuracy: Real
    reliability: list[ReliabilityBin]


class CalibrationDelta(ReportSection):
    """The paired ECE delta of an arm against the reference."""

    arm: str
    reference: str
    delta: Real
    ci95: Bounds
    ci95_method: str
    p_value: Real | None
    significant: bool
    negligible: bool


class Calibration(ReportSection):
    """The calibration section (analysis.reports.calibration)."""

    confidence: str
    n_bins: int
    min_effect: Real
    arms: list[CalibrationArm]
    deltas: list[CalibrationDelta]
    arms_without_answers: list[str]


class Decision(ReportSection):
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
    ci95: Bounds | None
    ci95_method: str | None = None
    p_value: Real | None = None
    perm_exact: bool | None = None
    perm_n: int | None = None


class PaperMetrics(ReportSection):
    """One arm's paper numbers on a set of items (analysis.estimators.paper_metrics.ArmMetrics)."""

    n_items: int
    k: int
    avg: Real
    avg_sd: Real | None
    maj: Real | None
    pass_hat: Real
    pass_at_k: Real
    bayes: Real
    bayes_sd: Real


class ArmAnswering(ReportSection):
    """One arm's answered share and accuracy among answered, each with its interval
    (analysis.reports.answering)."""

    arm: str
    answered_share: Real | None
    answered_ci95: Bounds | None
    answered_ci95_method: str | None
    accuracy_answered: Real | None
    accuracy_answered_ci95: Bounds | None
    accuracy_answered_ci95_method: str | None
    n_answered: int | None
    n_samples: int
    lenient_mean: Real | None


class LenientTopK(ReportSection):
    """The lenient reader's pass@K delta of trained vs base, with pass@K's interval and test."""

    k: int
    pre: Real
    post: Real
    delta: Real
    ci95: Bounds
    ci95_method: str
    p_value: Real
    p_holm: Real | None = None
    significant: bool


class AnsweredChange(ReportSection):
    """The paired change in answered share of a contrast, with its interval and sign-flip test."""

    share_ref: Real
    share_arm: Real
    delta: Real
    ci95: Bounds
    ci95_method: str
    p_value: Real
    perm_exact: bool
    perm_n: int
    significant: bool


class FormatContrast(ReportSection):
    """A contrast under the lenient reader: its delta, the answered share's change and the FORMAT call."""

    lenient: MeanContrast
    lenient_top_k: LenientTopK | None = None
    answered_change: AnsweredChange | None
    call: str | None
    detail: str


class FormatSection(ReportSection):
    """The delta report's format part: each arm's answering, trained vs base under the lenient reader."""

    arms: list[ArmAnswering]
    contrast: FormatContrast | None
    lenient_missing: list[str]
