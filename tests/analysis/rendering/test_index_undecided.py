"""The index page and metrics.json: each arm's undecided share and each contrast's decided delta, taken from
the reports; the judge's link and line where the judge stage ran; pass@1 once at k = 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.rendering import index_page as report
from contract.evallog import FORMAT_VERSION
from tests.helpers.evallogs import make_world
from tests.helpers.reports import write_reports

ROOT = Path(__file__).resolve().parents[3]


def undecided_world(folder: Path) -> Path:
    """make_world's logs as format 5 ones, half of base's wrong samples undecided (no answer read)."""
    logs = make_world(folder, arms_=["base", "trained"])
    rng = np.random.default_rng(5)
    for arm in ("base", "trained"):
        doc = json.loads((logs / f"{arm}.json").read_text())
        doc["format_version"] = FORMAT_VERSION
        for it in doc["items"] if arm == "base" else []:
            flags = [s == 0.0 and bool(rng.random() < 0.5) for s in it["scores"]]
            if any(flags):
                it["undecided"] = flags
        (logs / f"{arm}.json").write_text(json.dumps(doc))
    return logs


def test_the_page_and_metrics_show_each_arms_undecided_share_and_each_contrasts_decided_delta(
    tmp_path: Path,
) -> None:
    out = write_reports(tmp_path, undecided_world(tmp_path / "evallogs"))
    report.write(out / "delta", out / "arms", out)
    part = json.loads((out / "arms" / "arm_comparison_report.json").read_text())["undecided"]
    shares = {a["arm"]: a["undecided_share"] for a in part["arms"]}
    assert shares["base"] > 0.05 and shares["trained"] == 0.0
    (c,) = part["contrasts"]
    page, html = (out / "index.md").read_text(), (out / "index.html").read_text()
    line = f"base {shares['base']:.3f}, trained 0.000."
    assert f"counted as wrong above): {line}" in page and line in html
    row = (
        f"| trained vs base | {c['change']['delta']:+.4f} | [{c['change']['ci95'][0]:+.4f}, "
        f"{c['change']['ci95'][1]:+.4f}] | {c['headline_delta']:+.4f} | {c['decided_delta']:+.4f} | "
        f"[{c['decided_ci95'][0]:+.4f}, {c['decided_ci95'][1]:+.4f}] | {c['n_decided']} of {c['n_samples']} |"
    )
    assert row in page
    assert ("the undecided shares differ" in page) == c["shares_differ"]
    metrics = json.loads((out / "metrics.json").read_text())["undecided"]
    assert metrics["share"] == shares
    assert metrics["contrasts"]["trained-base"] == {
        "change": c["change"]["delta"], "decided_delta": c["decided_delta"], "differ": c["shares_differ"]
    }  # fmt: skip
    assert "Model judge" not in page


def judge_json(headline: str, reasons: list[str]) -> dict:
    """A judge report (tests/data/reports_v1) whose judge and one contrast the page reads are these."""
    report = json.loads((ROOT / "tests" / "data" / "reports_v1" / "judge_report.json").read_text())
    contrast = {
        **report["contrasts"][0],
        "pre": "base",
        "post": "trained",
        "headline": headline,
        "reasons": reasons,
    }
    return {**report, "judge": {**report["judge"], "model": "verifier-1.5b"}, "contrasts": [contrast]}


def test_the_page_links_the_judge_report_and_says_fit_or_flagged_and_why(tmp_path: Path) -> None:
    out = write_reports(tmp_path, make_world(tmp_path / "evallogs", arms_=["base", "trained"]))
    (out / "judge").mkdir()
    (out / "judge" / "judge_report.md").write_text("# Model judge: audit and contrasts\n")
    (out / "judge" / "judge_report.json").write_text("{}\n")  # the stage without a judge
    report.write(out / "delta", out / "arms", out)
    assert "judge" not in (out / "index.md").read_text().casefold()
    why = "base: agreement 0.41 under the floor 0.8"
    (out / "judge" / "judge_report.json").write_text(json.dumps(judge_json("rule_decided", [why])))
    report.write(out / "delta", out / "arms", out)
    page, html = (out / "index.md").read_text(), (out / "index.html").read_text()
    flagged = f"verifier-1.5b: flagged, its verdicts kept out of the headline: trained vs base: {why}."
    assert f"- Model judge ([its report](judge/judge_report.md)): {flagged}" in page
    assert '<a href="judge/judge_report.html">its report</a>' in html and flagged in html
    assert "Model judge" in (out / "judge" / "judge_report.html").read_text()
    (out / "judge" / "judge_report.json").write_text(json.dumps(judge_json("with_judge", [])))
    report.write(out / "delta", out / "arms", out)
    assert "verifier-1.5b: fit on every arm's audit" in (out / "index.md").read_text()


def test_at_k_1_the_page_prints_pass_at_1_once(tmp_path: Path) -> None:
    out = write_reports(tmp_path, make_world(tmp_path / "evallogs", k=1, arms_=["base", "trained"]))
    report.write(out / "delta", out / "arms", out)
    d = json.loads((out / "delta" / "delta_report.json").read_text())
    page, html = (out / "index.md").read_text(), (out / "index.html").read_text()
    assert f"- pass@1 {d['mean_pre']:.4f} -> {d['mean_post']:.4f}.\n" in page
    assert f"pass@1 {d['mean_pre']:.4f} &rarr; {d['mean_post']:.4f}.</li>" in html
    assert page.count(f"pass@1 {d['mean_pre']:.4f}") == 1
