"""Greedy decoding reads neither the seed nor top_p: two logs at temperature 0 may differ in them (an lm-eval
log records no sampling seed), and an import can record the run's seed when its files do not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.reports.align import check_matched
from analysis.reports.refusal import Refusal
from contract.evallog import EvalLog, load
from tests.helpers.evallogs import write_log
from tests.helpers.foreign_logs import N_DOCS, imports, write_run


def _pair(tmp_path: Path, temperature: float) -> tuple[Path, EvalLog, Path, EvalLog]:
    """The pipeline's log (seed 1234, top_p 1.0) and an imported one of another model recording neither."""
    scores = (np.random.default_rng(0).random((20, 1)) < 0.5).astype(float)
    proto = {"k": 1, "temperature": temperature}
    ours = write_log(tmp_path / "ours.json", scores, temperature=temperature, protocol=proto)
    theirs = write_log(tmp_path / "theirs.json", scores, temperature=temperature, seed=None, top_p=None)
    raw = json.loads(theirs.read_text())
    del raw["protocol"]  # an imported log has no protocol block
    theirs.write_text(json.dumps(raw))
    return ours, load(ours), theirs, load(theirs)


def test_at_temperature_0_seed_and_top_p_recorded_in_one_log_only_are_no_refusal(tmp_path: Path) -> None:
    matched = check_matched(*_pair(tmp_path, 0.0))
    assert "seed" not in matched["fields_checked"] and "top_p" not in matched["fields_checked"]
    assert "temperature" in matched["fields_checked"]


def test_when_sampling_a_seed_recorded_in_one_log_only_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(Refusal, match=r"top_p differs \(1.0 vs None\); it is recorded in only one log"):
        check_matched(*_pair(tmp_path, 1.0))


def test_an_import_records_the_seed_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = write_run(tmp_path / "bare", list(range(N_DOCS)), 0, model=None)
    rc, err = imports(capsys, "lm-eval", bare, "--out", tmp_path / "a.json", "--seed", "1234")
    assert rc == 0, err
    assert load(tmp_path / "a.json").seed == 1234
    with_seed = write_run(tmp_path / "seeded", list(range(N_DOCS)), 0, seed=7)
    rc, err = imports(capsys, "lm-eval", with_seed, "--out", tmp_path / "b.json", "--seed", "1234")
    assert rc == 2 and "seed: the file records 7, --seed says 1234; drop the flag" in err, err
    assert not (tmp_path / "b.json").exists()
