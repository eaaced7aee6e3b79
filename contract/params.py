"""The params.yaml sections the analyses read (`analysis`, `trajectory`, `arms`), typed once for both sides.

pipeline.config validates them inside its Params, the first stage that reads params.yaml; the analyses
(analysis.reports.settings, analysis.reports.trajectory) validate the same models when they read the file
themselves. problem() words the first thing wrong as one line naming the file, the field and the fix, for
these and for every other model of the params file.
"""

from __future__ import annotations

import difflib
import math
import types
import typing
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contract.arm import arm_list_problem

# A percentile interval's tails and a permutation p-value need resamples beyond each cut: fewer than this
# many in a tail and the interval is a few order statistics (n_boot: 1 gives an interval of one point).
TAIL_RESAMPLES = 5


def min_resamples(alpha: float) -> int:
    """The fewest resamples (n_boot, n_perm) that put TAIL_RESAMPLES in each alpha/2 tail: 200 at 0.05."""
    return math.ceil(2 * TAIL_RESAMPLES / alpha)


def _runnable(arms: list[str]) -> list[str]:
    # Refused by the first stage that reads the list: DVC would otherwise fail on a missing pins/arms
    # folder (an empty list), or the sixth stage blame the logs (an arm listed twice).
    why = arm_list_problem(arms)
    if why:
        raise ValueError(why)
    return arms


# params.yaml `arms`: the arms the pipeline runs, each once.
ArmList = Annotated[list[str], AfterValidator(_runnable)]
ARM_LIST: TypeAdapter[list[str]] = TypeAdapter(ArmList)


class AnalysisParams(BaseModel):
    """params.yaml `analysis`: the resampling, the error rates and the claim rules of every report.

    Strict: `n_boot: true` would otherwise run as one resample. A message that starts with '= ' follows
    the field's name, one that starts with '.' the section's (problem() writes `analysis.alpha = 1.5 ...`).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    # In this order in the configuration reference (scripts/config_reference.py) and in Settings.
    n_boot: int = 10_000  # bootstrap resamples
    n_perm: int = 10_000  # sign-flip permutations
    alpha: float = 0.05  # significance level of the intervals and tests
    fdr: float = 0.05  # Benjamini-Hochberg false discovery rate over a report's contrasts
    min_effect: float = 0.01  # the smallest delta worth a claim
    max_failed_tool_calls: float = 0.0  # share of a tool arm's calls the tool server may fail
    seed: int = 0  # the resampling's seed; protocol.seed where the section does not set it

    def seed_given(self) -> bool:
        """Whether the section sets its own seed (else the analyses use protocol.seed)."""
        return "seed" in self.model_fields_set

    @field_validator("alpha", "fdr")
    @classmethod
    def _a_rate(cls, v: float) -> float:
        if not 0 < v < 1:
            raise ValueError(f"= {v} must lie strictly between 0 and 1")
        return v

    @model_validator(mode="after")
    def _enough_resamples(self) -> AnalysisParams:
        # After the fields: the counts are checked against alpha, itself checked first.
        least = min_resamples(self.alpha)
        for name in ("n_boot", "n_perm"):
            if getattr(self, name) < least:
                raise ValueError(
                    f".{name} = {getattr(self, name)} is too few for alpha = {self.alpha}: each tail of a "
                    f"{1 - self.alpha:.0%} interval and the smallest p-value must rest on at least "
                    f"{TAIL_RESAMPLES} resamples; set analysis.{name}: {least} or more (10000 is the default)"
                )
        return self

    @field_validator("min_effect")
    @classmethod
    def _an_effect(cls, v: float) -> float:
        # NaN passes every comparison (a NaN min_effect would switch the negligible rule off); a difference of
        # two means of scores in [0, 1] is never 1 or more, so such a min_effect calls every delta negligible.
        if not (math.isfinite(v) and 0 <= v < 1):
            raise ValueError(
                f"= {v} must be a number in [0, 1) (the smallest delta worth a claim, e.g. 0.01)"
            )
        return v

    @field_validator("max_failed_tool_calls")
    @classmethod
    def _a_share(cls, v: float) -> float:
        if not 0 <= v <= 1:
            raise ValueError(f"= {v} must be a share between 0 and 1")
        return v


class TrajectoryParams(BaseModel):
    """params.yaml `trajectory`: the checkpoints' arms in training order (the reference first), a placebo.

    checkpoints may be left out where a `sweep` names them (its base, then its swept arms in step order).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    checkpoints: list[str] | None = None
    placebo: str | None = None

    @field_validator("checkpoints", mode="before")
    @classmethod
    def _in_training_order(cls, v: Any) -> Any:
        if not isinstance(v, list) or len(v) < 2 or not all(isinstance(c, str) for c in v):
            raise ValueError(
                "must list at least two arms in training order, the reference first, e.g. "
                f"[base, step-200, trained]; got {v!r}"
            )
        if len(set(v)) != len(v):
            raise ValueError(f"an arm is listed twice in {v!r}")
        return v

    @field_validator("placebo", mode="before")
    @classmethod
    def _not_a_checkpoint(cls, v: Any, info: ValidationInfo) -> Any:
        if v is not None and (not isinstance(v, str) or v in (info.data.get("checkpoints") or [])):
            raise ValueError(f"must be one arm that is not a checkpoint (or null); got {v!r}")
        return v


def _without_none(node: Any) -> Any:
    args = [a for a in typing.get_args(node) if a is not type(None)]
    return args[0] if typing.get_origin(node) in (typing.Union, types.UnionType) and len(args) == 1 else node


def known_keys(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed beside the last part of loc (a path into model), for an unknown-key error."""
    node: Any = model
    for part in loc[:-1]:
        node = _without_none(node)
        if hasattr(node, "model_fields"):
            if part not in node.model_fields:
                return []
            node = node.model_fields[part].annotation
        elif typing.get_origin(node) in (dict, list):
            node = typing.get_args(node)[-1]  # part is a mapping key or a list index
        else:
            return []
    return list(getattr(_without_none(node), "model_fields", {}))


def problem(file: Any, e: ValidationError, model: type[BaseModel] | None, where: tuple[str, ...] = ()) -> str:
    """The first thing wrong in one line: `FILE: section.field: what is wrong[; the fix]`.

    model is what was validated (None: no model, as for ARM_LIST) and where the section it stands at
    (("analysis",) for AnalysisParams read alone). An unknown key comes first: a misspelt `protocal:`
    would otherwise be reported as "protocol: Field required".
    """
    err = next((x for x in e.errors() if x["type"] == "extra_forbidden"), e.errors()[0])
    loc = tuple(err["loc"])
    field = ".".join(str(x) for x in (*where, *loc)) or "(top level)"
    if err["type"] == "extra_forbidden":
        known = known_keys(model, loc)
        close = difflib.get_close_matches(str(loc[-1]), known, 1)
        fix = f"did you mean {close[0]!r}? rename it" if close else "remove or rename it"
        return f"{file}: {field}: unknown key (a typo?); {fix}; known keys here: {', '.join(known)}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"].endswith("_type"):
        msg += f", got {err['input']!r}"
    if msg.startswith("= "):  # a sentence on the field's value: `analysis.alpha = 1.5 must ...`
        return f"{file}: {field} {msg}"
    if msg.startswith("."):  # a model's sentence on one of its fields: `analysis` + `.n_boot = 1 is ...`
        return f"{file}: {field}{msg}"
    return f"{file}: {field}: {msg}"
