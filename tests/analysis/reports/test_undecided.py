"""The third verdict: undecided samples in the EvalLog (format 5), read by both log readers, older logs still
read, and the reports' undecided share, its change and the delta on the samples both arms decided."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.estimators.ratio import decided_delta, pooled_ratio
from analysis.estimators.resampling import rng_for
from analysis.rendering.delta_report import delta_markdown
from analysis.reports import delta
from analysis.reports.settings import AnalysisSettings
from contract import logreader
from contract.evallog import FORMAT_VERSION, EvalLog, EvalLogError, load

FAST = AnalysisSettings(n_boot=400, n_perm=400, seed=7)


def log_doc(scores: np.ndarray, undecided: np.ndarray | None, version: int = FORMAT_VERSION, **extra) -> dict:
    """A scorer-shaped log: per item its scores, undecided flags and samples with their verdicts."""
    items = []
    for i, row in enumerate(scores):
        flags = None if undecided is None else [bool(x) for x in undecided[i]]
        samples = []
        for j, sc in enumerate(row):
            sample = {"index": j, "seed": 100 * i + j, "score": float(sc)}
            sample["answer"] = None if flags and flags[j] else "1"
            if flags:
                sample["verdict"] = "undecided" if flags[j] else ("right" if sc else "wrong")
            samples.append(sample)
        items.append({"item_id": f"q{i:03d}", "scores": [float(s) for s in row], "samples": samples,
                      **({"undecided": flags} if flags and any(flags) else {})})  # fmt: skip
    return {
        "format_version": version, "model_name": extra.pop("model_name", "m"), "suite": "s",
        "suite_revision": "r", "n_samples": scores.shape[1], "temperature": 1.0, "max_tokens": 64,
        "driver": "cpu test", "measured_at": "2026-01-01T00:00:00Z", "items": items, **extra,
    }  # fmt: skip


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_a_format_5_log_round_trips_and_keeps_its_undecided_samples(tmp_path: Path) -> None:
    scores = np.array([[1, 0, 0], [0, 1, 1]], float)
    flags = np.array([[0, 1, 0], [0, 0, 0]], bool)
    path = write(tmp_path / "log.json", log_doc(scores, flags))
    full = load(path)
    assert full.items[0].undecided == [False, True, False] and full.items[1].undecided is None
    assert [s.verdict for s in full.items[0].samples or []] == ["right", "undecided", "wrong"]
    again = EvalLog.model_validate_json(full.model_dump_json(exclude_none=True))
    assert again == full
    # The analyses' reader drops the samples and keeps the list.
    fast = logreader.read_log(path)
    assert fast.items[0].samples is None and fast.items[0].undecided == [False, True, False]


def test_a_format_4_log_still_reads_without_verdicts(tmp_path: Path) -> None:
    path = write(tmp_path / "old.json", log_doc(np.array([[1.0, 0.0]]), None, version=4))
    for read in (load, logreader.read_log):
        log = read(path)
        assert log.format_version == 4 and log.items[0].undecided is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["items"][0]["samples"][1].update(verdict="wrong"), "samples[1].verdict: is 'wrong'"),
        (
            lambda d: d["items"][0].update(undecided=[True, False, False]),
            "undecided[0]: is true but scores[0]",
        ),
        (lambda d: d["items"][0]["samples"][0].update(verdict="maybe"), "verdict"),
    ],
)
def test_verdicts_that_disagree_with_the_list_are_refused_by_both_readers(
    tmp_path: Path, edit, message: str
) -> None:
    doc = log_doc(np.array([[1, 0, 0]], float), np.array([[0, 1, 0]], bool))
    edit(doc)
    path = write(tmp_path / "bad.json", doc)
    for read in (load, logreader.read_log):
        with pytest.raises(EvalLogError, match=message.replace("[", "\\[").replace("]", "\\]")):
            read(path)


def test_the_decided_delta_is_the_mean_over_samples_both_arms_decided() -> None:
    ref = np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1]], float)
    arm = np.array([[1, 1, 0, 1], [1, 0, 1, 0], [1, 1, 0, 1]], float)
    u_ref = np.array([[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], float)
    u_arm = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1]], float)
    decided = (1 - u_ref) * (1 - u_arm)
    want = float(((arm - ref) * decided).sum() / decided.sum())  # 6 samples, differences +1, +1, -1
    est = decided_delta(ref, arm, u_ref, u_arm, 2000, rng_for(1, "t"), 0.05)
    assert est.ratio == pytest.approx(want) and est.n_counted == 6
    assert est.ci is not None and est.ci.lo <= want <= est.ci.hi
    none = pooled_ratio(np.zeros(3), np.zeros(3), 100, rng_for(1, "t"), 0.05)
    assert none.ratio is None and none.ci is None


def test_the_delta_report_shows_the_undecided_shares_and_the_decided_delta(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n, k = 60, 4
    base = (rng.random((n, k)) < 0.5).astype(float)
    trained = (rng.random((n, k)) < 0.6).astype(float)
    # The base arm leaves a third of its samples unread (scored 0); the trained arm reads every one.
    u_base = rng.random((n, k)) < 0.35
    base[u_base] = 0.0
    u_trained = np.zeros((n, k), bool)
    pre = write(tmp_path / "base.json", log_doc(base, u_base, arm="base"))
    post = write(tmp_path / "trained.json", log_doc(trained, u_trained, arm="trained", model_name="m2"))
    report = delta.build(str(pre), load(pre), str(post), load(post), FAST)
    part = report.undecided
    assert part is not None
    shares = {a.arm: a.undecided_share for a in part.arms}
    assert shares == {"base": pytest.approx(u_base.mean()), "trained": 0.0}
    (contrast,) = part.contrasts
    decided = ~u_base
    assert contrast.decided_delta == pytest.approx(float((trained - base)[decided].mean()))
    assert contrast.headline_delta == pytest.approx(float(trained.mean() - base.mean()))
    assert contrast.n_decided == int(decided.sum()) and contrast.shares_differ
    text = delta_markdown(report)
    assert "## Undecided: answers the reader could not settle" in text
    assert "**trained vs base: the undecided shares differ**" in text


def test_a_report_of_older_logs_says_the_undecided_are_not_recorded(tmp_path: Path) -> None:
    scores = np.array([[1.0, 0.0]] * 12)
    pre = write(tmp_path / "a.json", log_doc(scores, None, version=4))
    post = write(tmp_path / "b.json", log_doc(scores, None, version=4, model_name="m2"))
    report = delta.build(str(pre), load(pre), str(post), load(post), FAST)
    assert report.undecided is None and not report.has("undecided")
    assert any(note.startswith("undecided samples not recorded in these logs") for note in report.notes)
