"""The report stage: one page led by the claim lines, DVC metrics and plot data, from real reports."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis.commands import index_page as index_command
from analysis.rendering import index_page as report
from analysis.rendering.markdown_text import items_href
from tests.helpers.evallogs import HOSTILE_ARM, hostile_world, make_world
from tests.helpers.markdown import markdown_view
from tests.helpers.reports import write_reports, write_reports_saying


@pytest.fixture()
def reports(tmp_path: Path) -> Path:
    return write_reports(tmp_path, make_world(tmp_path / "evallogs"))


def test_names_reach_the_page_as_written(tmp_path: Path) -> None:
    """The markdown page escapes what the html page's autoescape does: table cells and HTML in names."""
    out = write_reports(tmp_path, hostile_world(tmp_path / "evallogs"))
    report.write(out / "delta", out / "arms", out)
    tables, html = markdown_view((out / "index.md").read_text())
    assert html == []
    for table in tables:
        assert {len(row) for row in table} == {len(table[0])}, table[0]
    arms = json.loads((out / "arms" / "arm_comparison_report.json").read_text())
    row = next(c for c in arms["contrasts"] if c["arm"] == HOSTILE_ARM)
    against_base = next(t for t in tables if t[0][:2] == ["arm", "attribution"])
    shown = next(cells for cells in against_base if cells[0] == HOSTILE_ARM)
    assert shown[2] == f"{row['naive_delta']:+.4f}" and shown[-1] == row["claim"]
    assert HOSTILE_ARM in (out / "index.html").read_text().replace("&lt;", "<").replace("&gt;", ">")
    assert "<b>x</b>" not in (out / "index.html").read_text()


def test_page_leads_with_every_claim_and_links_both_reports(reports: Path) -> None:
    logs = reports.parent / "evallogs"
    argv = ["--delta", str(reports / "delta"), "--arms", str(reports / "arms"), "--logs", str(logs)]
    assert index_command.main([*argv, "--out", str(reports)]) == 0
    delta = json.loads((reports / "delta" / "delta_report.json").read_text())
    arms = json.loads((reports / "arms" / "arm_comparison_report.json").read_text())
    page = (reports / "index.md").read_text()
    claims_at = page.index("## Claims")
    assert claims_at < page.index("## Headline")
    assert delta["claim"] in page[claims_at:]
    for c in arms["contrasts"]:
        assert c["claim"] in page
        assert f"| {c['arm']} vs {c['reference']} ({c['attribution']}) |" in page
    for link in ("delta/delta_report.md", "arms/arm_comparison_report.md", "delta/passk_curve.png",
                 "arms/arm_deltas.png"):  # fmt: skip
        assert f"({link})" in page
        assert (reports / link).exists()

    class Links(HTMLParser):
        found: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.found += [v for k, v in attrs if k in ("href", "src")]

    parser = Links()
    parser.feed((reports / "index.html").read_text())
    # The HTML page links to the reports' HTML renderings (a browser shows markdown as raw text), each of
    # which exists, and every contrast row to the item browser on its two arms.
    html_links = {
        "delta/delta_report.html",
        "arms/arm_comparison_report.html",
        "arms/arm_deltas.png",
        "items.html",
    }
    assert html_links <= set(parser.found)
    assert not [link for link in parser.found if link.endswith(".md")]
    # No trajectory or drift report was written here (a world without those stages): none is linked.
    assert not [link for link in parser.found if link.startswith(("trajectory/", "drift/"))]
    assert parser.found.index("delta/delta_report.html") < parser.found.index("arms/arm_deltas.png")
    for link in html_links:
        assert (reports / link).is_file(), link
    for c in [*arms["contrasts"], *arms["marginal"]]:
        assert items_href(c["reference"], c["arm"], page="items.html") in parser.found
    rendered = (reports / "arms" / "arm_comparison_report.html").read_text()
    assert "<table>" in rendered and '<img src="arm_deltas.png"' in rendered
    assert rendered.count('href="../items.html#a=base&amp;b=') >= len(arms["contrasts"])


def test_metrics_and_plot_data_are_the_reports_numbers(reports: Path) -> None:
    report.write(reports / "delta", reports / "arms", reports)
    delta = json.loads((reports / "delta" / "delta_report.json").read_text())
    arms = json.loads((reports / "arms" / "arm_comparison_report.json").read_text())
    m = json.loads((reports / "metrics.json").read_text())
    assert m["delta"] == {
        "mean": delta["delta_mean"], "lo": delta["delta_ci95"][0], "hi": delta["delta_ci95"][1],
        "p": delta["perm_p"], "significant": delta["verdict"]["significant"],
    }  # fmt: skip
    assert m["arms"] == {c["arm"]: c["naive_delta"] for c in arms["contrasts"]}
    # One verdict: the page's trained row is the delta report's, and the claim is the delta report's.
    assert m["significant"] == {c["arm"]: c["significant"] for c in arms["contrasts"]}
    assert m["significant"]["trained"] == m["delta"]["significant"] and m["claim"] == delta["claim"]
    rows = list(csv.DictReader((reports / "plots" / "passk.csv").open()))
    assert [int(r["k"]) for r in rows] == sorted(int(k) for k in delta["pass_at_k_pre"])
    assert [float(r["trained"]) for r in rows] == [delta["pass_at_k_post"][r["k"]] for r in rows]
    deltas = list(csv.DictReader((reports / "plots" / "arm_deltas.csv").open()))
    assert [r["arm"] for r in deltas] == [c["arm"] for c in arms["contrasts"]]


def test_rerun_is_byte_identical(reports: Path) -> None:
    first = {p: p.read_bytes() for p in report.write(reports / "delta", reports / "arms", reports)}
    second = {p: p.read_bytes() for p in report.write(reports / "delta", reports / "arms", reports)}
    assert first == second


def test_missing_report_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(report.Refusal, match=r"delta_report\.json: not found"):
        report.write(tmp_path / "delta", tmp_path / "arms", tmp_path)


def test_a_tool_arm_that_does_not_count_its_failed_calls_is_left_out_and_the_page_says_so(
    tmp_path: Path,
) -> None:
    """A log of format 2 records its tool calls but not how many the server failed to answer: the arm
    comparison leaves it out, naming the fix, and the page lists it where its claim would stand."""
    logs = make_world(tmp_path / "evallogs", arms_=["base", "trained", "+tools"])
    path = logs / "+tools.json"
    log = json.loads(path.read_text())
    log["format_version"] = 2
    for it in log["items"]:
        for s in it["samples"]:
            s["tool_calls"] = [{"name": "orbital_period", "arguments": {"altitude_km": 400}, "error": "x"}]
    path.write_text(json.dumps(log))
    out, warned = write_reports_saying(tmp_path, logs)
    why = "its log records tool calls but not how many failed (format_version 2, older than 3"
    assert f"arms: warning: +tools left out, not usable: {why}" in warned
    arms = json.loads((out / "arms" / "arm_comparison_report.json").read_text())
    assert [c["arm"] for c in arms["contrasts"]] == ["trained"]
    assert [u["arm"] for u in arms["arms_unusable"]] == ["+tools"] and "+tools" not in arms["arms_missing"]
    assert arms["arms_unusable"][0]["reason"].endswith("regenerate and rescore it (dvc repro)")
    assert (
        "**Not usable, left out: +tools** (" + why in (out / "arms" / "arm_comparison_report.md").read_text()
    )
    assert index_command.main(["--delta", str(out / "delta"), "--arms", str(out / "arms"), "--logs",
                              str(logs),
                        "--out", str(out)]) == 0  # fmt: skip
    page = (out / "index.md").read_text()
    assert "| +tools vs base | **NOT USABLE, left out**: " + why in page
    assert "NOT USABLE, left out: " + why in (out / "index.html").read_text()
    assert list(json.loads((out / "metrics.json").read_text())["arms"]) == ["trained"]


@pytest.mark.parametrize("world", ["examples/smollm2", "."])
def test_the_verdict_names_the_claims_family_as_tested(tmp_path: Path, world: str) -> None:
    """At k = 1 the claim's family is pass@1 alone; above it, pass@1 and pass@k (the reports' k)."""
    root = Path(__file__).resolve().parents[3] / world
    k = json.loads((root / "reports/delta/delta_report.json").read_text())["verdict"]["top_k"]
    report.write(root / "reports/delta", root / "reports/arms", tmp_path)
    page = (tmp_path / "index.md").read_text()
    family = "pass@1" if k == 1 else f"pass@1 and pass@{k}"
    assert f"alpha over {family}, and the interval excludes 0" in page
    assert "pass@1 and pass@1" not in page
