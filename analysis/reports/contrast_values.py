"""The typed values of a contrast: its paired statistics, its decision and its claim, frozen once computed.

analysis.reports.contrasts computes them; the report models are built from them, each value writing the keys
the report JSON has always had (`fields`), in the order it has always had them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from analysis.estimators.estimate import Interval

# What a value writes into a report row: JSON-ready numbers, flags, words and [lo, hi] lists.
Fields = dict[str, int | float | bool | str | list[float] | None]


@dataclass(frozen=True)
class ContrastStats:
    """A paired mean contrast: both arms' means, the delta with its interval, the sign-flip test."""

    n_items: int
    mean_ref: float
    mean_arm: float
    delta: float
    ci: Interval
    p_value: float
    perm_exact: bool
    perm_n: int

    def fields(self, delta_key: str = "delta", means: tuple[str, str] = ("mean_ref", "mean_arm")) -> Fields:
        """The report keys of the contrast (delta_key: `naive_delta` in the arm comparison)."""
        return {
            "n_items": self.n_items,
            means[0]: self.mean_ref,
            means[1]: self.mean_arm,
            delta_key: self.delta,
            **self.ci.fields(),
            "p_value": self.p_value,
            "perm_exact": self.perm_exact,
            "perm_n": self.perm_n,
        }


@dataclass(frozen=True)
class Decision:
    """A contrast's verdict: its adjusted p (BH's q or Holm's p), significant, negligible, by what rule."""

    q_value: float
    significant: bool
    negligible: bool
    decided_by: str

    def fields(self) -> Fields:
        """The report keys of the verdict."""
        return {
            "q_value": self.q_value,
            "significant": self.significant,
            "negligible": self.negligible,
            "decided_by": self.decided_by,
        }


class Claim(NamedTuple):
    """What a report claims of the primary contrast (EXPANSION, SHARPENING...) and why, in words."""

    verdict: str
    detail: str
