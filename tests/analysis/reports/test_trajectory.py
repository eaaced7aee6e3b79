"""The checkpoint trajectory report on real EvalLog files, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.reports import arm_comparison, trajectory
from analysis.reports.settings import AnalysisSettings
from tests.helpers.commands import run_cli
from tests.helpers.evallogs import write_log
from tests.helpers.markdown import markdown_view
from tests.helpers.params import write_trajectory_params

FAST = AnalysisSettings(n_boot=400, n_perm=400, seed=5)
# arm -> lift of every item's success probability over base (probability scale: the lift is the true delta)
LIFTS = {"base": 0.0, "step-200": 0.08, "trained": 0.16, "placebo": 0.02}


def world(folder: Path, lifts: dict[str, float] = LIFTS, n_items: int = 300, k: int = 4) -> Path:
    """One log per arm, items sharing their difficulty, each arm of its own model."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(4)
    base = rng.uniform(0.1, 0.5, n_items)
    for arm, lift in lifts.items():
        scores = (rng.random((n_items, k)) < (base + lift)[:, None]).astype(float)
        write_log(folder / f"{arm}.json", scores, arm=arm, model_name=f"demo/models/{arm}")
    return folder


CONFIGURED = "trajectory: {checkpoints: [base, step-200, trained], placebo: placebo}"


def test_every_checkpoint_over_base_and_the_reward_against_the_placebo(tmp_path):
    logs = world(tmp_path / "logs")
    p = write_trajectory_params(tmp_path / "params.yaml", list(LIFTS), CONFIGURED)
    r = trajectory.build(str(logs), FAST, p).model_dump()
    assert r["status"] == "done"
    assert [row["arm"] for row in r["trajectory"]] == ["base", "step-200", "trained"]
    base = json.loads((logs / "base.json").read_text())
    base_means = np.array([np.mean(it["scores"]) for it in sorted(base["items"], key=lambda i: i["item_id"])])
    for row in r["trajectory"][1:]:
        log = json.loads((logs / f"{row['arm']}.json").read_text())
        means = np.array([np.mean(it["scores"]) for it in sorted(log["items"], key=lambda i: i["item_id"])])
        assert row["delta"] == pytest.approx(float((means - base_means).mean()))
        # Within about four standard errors of the planted lift (a 95% interval misses it 1 time in 20).
        lo, hi = row["ci95"]
        assert lo <= row["delta"] <= hi and abs(row["delta"] - LIFTS[row["arm"]]) <= hi - lo, row
    rc = r["reward_contrast"]
    assert (rc["arm"], rc["reference"]) == ("trained", "placebo")
    assert rc["delta"] == pytest.approx(r["trajectory"][2]["delta"] - r["placebo_delta"]["delta"])
    assert rc["ci95"][0] > 0 and r["reward_claim"].startswith("the reward moved the score")
    # Benjamini-Hochberg over the three contrasts besides trained vs base (the claim's family decides it).
    assert r["n_tests"] == 3 and all("q_value" in row for row in [*r["trajectory"][1:], rc])
    assert r["trajectory"][2]["decided_by"].startswith("Holm")
    # The arm report carries the same interval for the same contrast.
    compared = arm_comparison.build(str(logs), FAST, list(LIFTS)).model_dump()
    by_arm = {c["arm"]: c["ci95"] for c in compared["contrasts"]}
    assert all(row["ci95"] == by_arm[row["arm"]] for row in r["trajectory"][1:])


def test_a_placebo_that_scores_as_the_rewarded_run_carries_no_reward_claim(tmp_path):
    logs = world(tmp_path / "logs")
    # The placebo's samples are the rewarded run's, item by item: the contrast is 0 on every item.
    trained = json.loads((logs / "trained.json").read_text())
    scores = [it["scores"] for it in trained["items"]]
    write_log(logs / "placebo.json", scores, arm="placebo", model_name="demo/models/placebo")
    r = trajectory.build(
        str(logs), FAST, write_trajectory_params(tmp_path / "params.yaml", list(LIFTS), CONFIGURED)
    ).model_dump()
    assert r["reward_contrast"]["delta"] == 0.0 and r["reward_contrast"]["ci95"] == [0.0, 0.0]
    assert r["reward_claim"].startswith("no difference between the rewarded run and the placebo detected")
    assert "cannot be credited to the reward" in r["reward_claim"]


def test_cli_writes_the_report_the_figure_and_states_the_claim_and_its_limits(tmp_path):
    logs = world(tmp_path / "logs")
    p = write_trajectory_params(tmp_path / "params.yaml", list(LIFTS), CONFIGURED)
    out = tmp_path / "out"
    done = run_cli("analysis.commands.trajectory", "--logs", str(logs), "--out", str(out), "--params", str(p))
    assert done.returncode == 0, done.stderr
    assert (out / "trajectory.png").read_bytes().startswith(b"\x89PNG")
    text = (out / "trajectory_report.md").read_text()
    assert "**Reward claim:** the reward moved the score" in text
    assert "not the variation between training runs" in text
    tables, html = markdown_view(text)
    assert html == [] and [row[0] for row in tables[0][1:]] == ["base", "step-200", "trained"]
    first = (out / "trajectory_report.json").read_bytes()
    run_cli("analysis.commands.trajectory", "--logs", str(logs), "--out", str(out), "--params", str(p))
    assert (out / "trajectory_report.json").read_bytes() == first


@pytest.mark.parametrize(
    ("arms", "section", "status", "says"),
    [
        (["base", "trained"], None, "not configured", "no trajectory section"),
        (["base", "trained"], CONFIGURED, "arms missing", "no log of step-200, placebo"),
    ],
)
def test_without_a_section_or_the_logs_a_short_report_and_exit_0(tmp_path, arms, section, status, says):
    logs = world(tmp_path / "logs", {"base": 0.0, "trained": 0.1})
    p = write_trajectory_params(tmp_path / "params.yaml", arms, section)
    out = tmp_path / "out"
    done = run_cli("analysis.commands.trajectory", "--logs", str(logs), "--out", str(out), "--params", str(p))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "trajectory_report.json").read_text())
    assert report["status"] == status and says in report["detail"]
    assert (out / "trajectory.png").is_file() and status.capitalize() in (
        out / "trajectory_report.md"
    ).read_text()


def test_a_log_of_an_arm_not_in_the_arm_list_is_not_used(tmp_path):
    logs = world(tmp_path / "logs")
    r = trajectory.build(
        str(logs),
        FAST,
        write_trajectory_params(tmp_path / "p.yaml", ["base", "trained", "placebo"], CONFIGURED),
    ).model_dump()
    assert r["status"] == "arms missing" and r["missing"] == ["step-200"]


def test_a_missing_placebo_leaves_the_trajectory_without_a_reward_claim(tmp_path):
    logs = world(tmp_path / "logs", {"base": 0.0, "step-200": 0.08, "trained": 0.16})
    r = trajectory.build(
        str(logs),
        FAST,
        write_trajectory_params(tmp_path / "p.yaml", ["base", "step-200", "trained"], CONFIGURED),
    ).model_dump()
    assert r["status"] == "done" and r["placebo"] is None and r["reward_contrast"] is None
    assert "no placebo configured" in r["reward_claim"] and "placebo arm placebo has no log" in r["notes"][0]


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("trajectory: {checkpoints: [base], placebo: null}", "trajectory.checkpoints"),
        ("trajectory: {checkpoints: [base, trained, base]}", "trajectory.checkpoints"),
        ("trajectory: {checkpoints: [base, trained], placebo: trained}", "trajectory.placebo"),
        ("trajectory: {checkpoints: [base, trained], placeb: x}", "trajectory.placeb"),
        ("trajectory: [base, trained]", "trajectory:"),
    ],
)
def test_a_bad_section_is_refused_in_one_line_naming_the_field(tmp_path, section, field):
    logs = world(tmp_path / "logs", {"base": 0.0, "trained": 0.1})
    p = write_trajectory_params(tmp_path / "params.yaml", ["base", "trained"], section)
    out = tmp_path / "out"
    done = run_cli("analysis.commands.trajectory", "--logs", str(logs), "--out", str(out), "--params", str(p))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{p}: {field}" in done.stderr and not out.exists()


def test_checkpoints_of_one_model_are_refused(tmp_path):
    logs = world(tmp_path / "logs", {"base": 0.0, "trained": 0.1})
    write_log(logs / "trained.json", np.zeros((300, 4)), arm="trained", model_name="demo/models/base")
    p = write_trajectory_params(
        tmp_path / "params.yaml", ["base", "trained"], "trajectory: {checkpoints: [base, trained]}"
    )
    done = run_cli(
        "analysis.commands.trajectory", "--logs", str(logs), "--out", str(tmp_path / "o"), "--params", str(p)
    )
    assert done.returncode == 2 and "model_name is 'demo/models/base' in both logs" in done.stderr
