"""The one type of a statistic: an estimate, its interval and the method that made the interval.

Every estimator and every contrast returns these frozen values; the report models are built from them, and a
report's JSON writes an interval as `[lo, hi]` beside its method (`ci95`, `ci95_method`), the keys the reports
have always had.
"""

from __future__ import annotations

from dataclasses import dataclass


def excludes(lo: float, hi: float, value: float = 0.0) -> bool:
    """True when [lo, hi] lies wholly on one side of value: the one 'excludes zero' rule of every report."""
    return bool(lo > value or hi < value)


@dataclass(frozen=True)
class Interval:
    """A confidence interval and the method that made it."""

    lo: float
    hi: float
    method: str

    def as_list(self) -> list[float]:
        """[lo, hi] for a JSON report."""
        return [self.lo, self.hi]

    def excludes(self, value: float = 0.0) -> bool:
        """True when the whole interval lies on one side of value (the one 'excludes zero' rule)."""
        return excludes(self.lo, self.hi, value)

    def fields(self, key: str = "ci95") -> dict[str, list[float] | str]:
        """The interval's report keys: key as [lo, hi] and key_method (`ci95`, `ci95_method`)."""
        return {key: self.as_list(), f"{key}_method": self.method}

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of zero."""
        return self.excludes(0.0)


def interval_fields(ci: Interval | None, key: str = "ci95") -> dict[str, list[float] | str | None]:
    """Interval.fields, or both keys null where there is no interval."""
    return ci.fields(key) if ci is not None else {key: None, f"{key}_method": None}


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its interval (None where the report gives no interval)."""

    value: float
    interval: Interval | None = None

    def fields(self, value_key: str, key: str = "ci95") -> dict[str, float | list[float] | str | None]:
        """The report keys: value_key for the value, then the interval's (interval_fields)."""
        return {value_key: self.value, **interval_fields(self.interval, key)}
