"""The delta report's pass@k rows name the method of the interval each one prints."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.reports.contrasts import BCA_MIN_ITEMS, primary_contrast
from analysis.reports.delta import pass_at_k_rows
from analysis.reports.settings import AnalysisSettings

FAST = AnalysisSettings(n_boot=300, n_perm=300, seed=3)


def scores(n_items: int, k: int, seed: int, p: float) -> np.ndarray:
    """0/1 scores of n_items items x k samples."""
    return (np.random.default_rng(seed).random((n_items, k)) < p).astype(np.float64)


@pytest.mark.parametrize("n_items", [48, BCA_MIN_ITEMS + 20])
def test_each_pass_at_k_row_names_the_method_of_its_own_interval(n_items):
    ref, arm = scores(n_items, 4, 1, 0.3), scores(n_items, 4, 2, 0.45)
    primary = primary_contrast(ref, arm, FAST)
    rows = pass_at_k_rows(primary)
    assert [r.k for r in rows] == [1, 2, 4]
    assert rows[0].delta_ci95_method.endswith("(the headline interval)") or n_items >= BCA_MIN_ITEMS
    for row, ci in zip(rows[1:], primary.passk.delta_ci[1:], strict=True):
        assert row.delta_ci95 == ci.as_list()
        assert row.delta_ci95_method == ci.method
    later = {r.delta_ci95_method for r in rows[1:]}
    if n_items < BCA_MIN_ITEMS:
        # A small suite's pass@k intervals invert the sign-flip test (Newcombe's where values are 0/1).
        assert later == {"sign-flip inversion", "Newcombe paired score"}
    else:
        assert later == {"percentile (cluster)"}
