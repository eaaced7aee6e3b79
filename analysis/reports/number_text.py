"""How every report prints a number: one helper for values, signed deltas, intervals and p-values.

A missing number (None) prints as "n/a" unless the caller names another mark. Every p- and q-value prints to
3 significant digits, in every report, page and console line alike, so that one reads as the other.
"""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "n/a"


def num(x: float | None, spec: str = ".4f", missing: str = MISSING) -> str:
    """x formatted with a format spec ('.4f', '+.3f', '.1%'), or the missing mark for None."""
    return missing if x is None else format(x, spec)


def signed(x: float | None, digits: int = 4) -> str:
    """x with its sign and a fixed number of decimals ('+0.0312'), or "n/a" for None."""
    return num(x, f"+.{digits}f")


def interval(ci: Sequence[float | None] | None, spec: str = "+.4f") -> str:
    """An interval as '[lo, hi]' with each end formatted by spec, or "n/a" for None."""
    return MISSING if ci is None else f"[{num(ci[0], spec)}, {num(ci[1], spec)}]"


def pvalue(p: float | None, digits: int = 3) -> str:
    """A p- or q-value to the given significant digits ('0.01234' at 4), or "n/a" for None."""
    return MISSING if p is None else f"{p:.{digits}g}"


def at_floor(p: float | None, n_perm: int | None, exact: bool = True) -> bool:
    """Whether p is the floor of a Monte Carlo sign-flip test (no permutation beat the observed delta)."""
    return p is not None and not exact and bool(n_perm) and p <= 2.0 / (n_perm + 1) * (1 + 1e-9)


def p_bound(p: float | None, n_perm: int | None = None, exact: bool = True) -> str:
    """A sign-flip p as every report prints it: at the floor of a Monte Carlo test the bound it is
    ('<= 0.0002'), else its value; the same p never reads as exact in one place and a bound in another."""
    if at_floor(p, n_perm, exact):
        return f"<= {pvalue(2.0 / (n_perm + 1))}"  # type: ignore[operator]
    return pvalue(p)
