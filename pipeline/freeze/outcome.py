"""What freezing refuses (FreezeError, UnreadableReference, FreezeRefusal) and what it wrote (Frozen).

A FreezeRefusal holds every record's refusal at once."""

from __future__ import annotations

from dataclasses import dataclass, field


class FreezeError(ValueError):
    """A source that cannot be frozen; the message names the file, the line and the field."""


class UnreadableReference(FreezeError):
    """A math reference math-verify cannot read whole (or finds unequal to itself): the fallback's case."""


class FreezeRefusal(FreezeError):
    """Every record that cannot be frozen: `problems` holds one line for each (file:line, field, why)."""

    def __init__(self, problems: list[str], total: int, unreadable: int) -> None:
        self.problems = problems
        self.hint = (
            "judge those with --fallback-verifier exact or leave them out with --skip-unreadable"
            if unreadable
            else ""
        )
        of_them = (
            f"; {unreadable} of them a reference math-verify cannot read whole: {self.hint}"
            if unreadable
            else ""
        )
        super().__init__(f"{len(problems)} of {total} records cannot be frozen{of_them}; nothing written")

    def lines(self) -> list[str]:
        """The lines the command prints: one per record, then the count (one record: its line, hinted)."""
        if len(self.problems) == 1:
            return [self.problems[0] + (f"; {self.hint.replace(' those', ' it')}" if self.hint else "")]
        return [*self.problems, str(self)]


@dataclass
class Frozen:
    """What freeze wrote: the suite's sha256, how many items each verifier judges, and what was changed."""

    digest: str
    per_verifier: dict[str, int]
    fallback: str | None = None
    # "where" of each item given the fallback verifier, and the refusal line of each skipped record.
    fallen_back: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        """Items written."""
        return sum(self.per_verifier.values())
