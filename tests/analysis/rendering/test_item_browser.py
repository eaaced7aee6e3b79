"""The item browser and the report pages, from logs the real scorer wrote for four arms of a small suite.

The generations are written here (plain, retrieval and tool arms, tool calls with the harness's responses,
a question holding HTML), scored by pipeline.score, and run through the real analysis commands (delta,
arms, report). The fast tests read the pages' files; the slow ones drive headless Chromium over them from
file:// with every request that is not a file blocked and recorded, as a reader opens them offline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.rendering import item_browser
from analysis.rendering.markdown_text import items_href
from contract.arm import ArmSpec
from contract.engine import EngineInfo
from contract.evallog import load
from contract.generations import (
    Generations,
    GenItem,
    GenSample,
    RetrievedDoc,
    ToolCallCounts,
    ToolCallRecord,
    dump_generations,
    prompt_sha256,
)
from contract.protocol import Protocol
from contract.seeds import sample_seed
from contract.suite import load_suite, questions_sha256
from contract.textformat import format_tool_call, format_tool_response
from demo.worlds import ROOT
from pipeline.score import score_file
from tests.helpers.commands import run_cli
from tests.helpers.evallogs import write_log
from tests.helpers.params import write_params

K = 4
FAMILIES = ["lookup", "compute", "raise", "compound"]
HOSTILE_QUESTION = "What does <script>alert(1)</script> <b>print</b> & return at 400 km?"
# arm -> (model, retrieval, tools, attribution, chance of a right sample, extra chance on one family)
ARMS = {
    "base": ("base", False, False, "reference", 0.3, ("", 0.0)),
    "trained": ("trained", False, False, "parametric", 0.55, ("", 0.0)),
    "+rag": ("base", True, False, "lookup", 0.3, ("lookup", 0.6)),
    "+tools": ("base", False, True, "tool_access", 0.3, ("compute", 0.6)),
}


def suite_rows() -> list[dict[str, Any]]:
    """Twenty items, five per family; the first question holds HTML a page must show as text."""
    rows = []
    for i in range(20):
        family = FAMILIES[i % 4]
        question = HOSTILE_QUESTION if i == 0 else f"Item {i}: what is {100 + i} plus {i}?"
        rows.append({"item_id": f"{family}-{i:02d}", "family": family, "question": question,
                     "answer": 100 + 2 * i, "verifier": {"type": "numeric"}})  # fmt: skip
    return rows


def passages(i: int) -> list[RetrievedDoc]:
    return [
        RetrievedDoc(doc_id=f"doc-{i}-{r}", score=3.0 - r, rank=r, title=f"Doc {i}.{r}",
                     text=f"Passage {r} about item {i}: the value is {100 + 2 * i + r - 1}.")
        for r in (1, 2)
    ]  # fmt: skip


def arm_generations(arm: str, suite: list[dict[str, Any]], items_pin: str) -> Generations:
    """One arm's generations: right or wrong samples drawn per item, with the arm's prompts and tool calls."""
    model, retrieval, tools, attribution, p, (family, extra) = ARMS[arm]
    rng = np.random.default_rng(list(ARMS).index(arm))
    items, answered = [], 0
    for i, row in enumerate(suite):
        docs = passages(i) if retrieval else None
        head = "".join(f"[{r}] {d.text}\n" for r, d in enumerate(docs or [], 1))
        prompt = (
            f"{head}Tools: orbital_period\nQuestion: {row['question']}\n"
            if tools
            else f"{head}Question: {row['question']}\nAnswer:"
        )
        chance = p + (extra if row["family"] == family else 0.0)
        if i == 0:  # the item with HTML in its question flips from base to trained
            chance = 1.0 if arm == "trained" else 0.0
        samples = []
        for j in range(K):
            value = row["answer"] + (0 if rng.random() < chance else 1 + j)
            text, calls = f" {value}\n", None
            if tools:
                args = {"altitude_km": 400 + i}
                calls = [ToolCallRecord(name="orbital_period", arguments=args, raw=json.dumps(args),
                                        result={"period_min": value}, round=0)]  # fmt: skip
                text = (
                    f"Let me call a tool. {format_tool_call('orbital_period', args)}"
                    f"{format_tool_response({'period_min': value})}Answer: {value}\n"
                )
                answered += 1
            samples.append(
                GenSample(
                    index=j,
                    seed=sample_seed(1234, row["item_id"], j),
                    text=text,
                    finish_reason="stop",
                    prompt_tokens=len(prompt),
                    gen_tokens=len(text),
                    rounds=1 + bool(calls),
                    tool_calls=calls,
                )  # fmt: skip
            )
        items.append(GenItem(item_id=row["item_id"], prompt=prompt, prompt_sha256=prompt_sha256(prompt),
                             retrieved=docs, samples=samples))  # fmt: skip
    return Generations(
        arm=ArmSpec(name=arm, model=model, retrieval=retrieval, tools=tools, attribution=attribution),
        model=f"demo-{model}", chat=False, tools=["orbital_period"] if tools else [],
        protocol=Protocol(k=K, max_tokens=64, temperature=1.0, top_p=1.0, seed=1234, max_tool_calls=4),
        pins={"questions": items_pin, "model": f"sha256:{model}"}, engine=EngineInfo(name="by-hand"),
        tool_calls=ToolCallCounts(answered=answered, failed=0, restarts=0) if tools else None, items=items,
    )  # fmt: skip


def build_site(root: Path) -> Path:
    """Suite, generations, logs (pipeline.score) and every report page (analysis.reports.delta, arms,
    report)."""
    root.mkdir(parents=True, exist_ok=True)
    suite = root / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in suite_rows()))
    pin = f"sha256:{questions_sha256(load_suite(suite))}"
    logs = root / "evallogs"
    for arm in ARMS:
        gens = root / "generations" / f"{arm}.json"
        gens.parent.mkdir(exist_ok=True)
        gens.write_text(dump_generations(arm_generations(arm, suite_rows(), pin)))
        score_file(gens, suite, logs / f"{arm}.json", "browser-suite", "r1", params=None)
    params = write_params(root / "params.yaml", n_boot=200, n_perm=200)
    out = root / "reports"
    for cmd in (
        ("analysis.commands.delta", "--pre", str(logs / "base.json"), "--post", str(logs / "trained.json"),
         "--out", str(out / "delta"), "--params", str(params)),
        ("analysis.commands.arm_comparison", "--logs", str(logs), "--out", str(out / "arms"), "--params",
         str(params)),
        ("analysis.commands.trajectory", "--logs", str(logs), "--out", str(out / "trajectory"),
         "--params", str(params)),
        ("analysis.commands.drift", "--record", str(out / "drift" / "scorers.json"), "--logs", str(logs),
         "--out", str(out / "drift"), "--params", str(params)),
        ("analysis.commands.index_page", "--delta", str(out / "delta"), "--arms", str(out / "arms"),
         "--logs", str(logs),
         "--out", str(out)),
    ):  # fmt: skip
        done = run_cli(*cmd)
        assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def page_data(reports: Path) -> dict[str, Any]:
    """The JSON block the item browser carries."""
    html = (reports / "items.html").read_text()
    block = re.search(r'<script type="application/json" id="item-data">(.*?)</script>', html, re.S)
    assert block is not None
    return json.loads(block.group(1))


def expected_flips(reports: Path, ref: str, arm: str, family: str | None = None) -> tuple[int, int]:
    """(wrong -> right, right -> wrong) of ref -> arm by the majority verdict, from the logs themselves."""
    logs = {a: load(reports.parent / "evallogs" / f"{a}.json") for a in (ref, arm)}
    up = down = 0
    for it_ref, it_arm in zip(logs[ref].items, logs[arm].items, strict=True):
        if family is not None and it_ref.family != family:
            continue
        before, after = np.mean(it_ref.scores) >= 0.5, np.mean(it_arm.scores) >= 0.5
        up += int(after and not before)
        down += int(before and not after)
    return up, down


def test_the_page_holds_exactly_the_reports_flips_with_what_a_reader_needs(site: Path) -> None:
    data = page_data(site)
    arms_report = json.loads((site / "arms" / "arm_comparison_report.json").read_text())
    delta = json.loads((site / "delta" / "delta_report.json").read_text())
    assert data["arms"] == list(ARMS) and data["default"] == ["base", "trained"]
    index = {a: i for i, a in enumerate(data["arms"])}

    def flips(ref: str, arm: str) -> tuple[int, int]:
        a, b = index[ref], index[arm]
        return (
            sum(it["v"][a] == "0" and it["v"][b] == "1" for it in data["items"]),
            sum(it["v"][a] == "1" and it["v"][b] == "0" for it in data["items"]),
        )

    assert flips("base", "trained") == (delta["flips_wrong_to_right"], delta["flips_right_to_wrong"])
    for c in [*arms_report["contrasts"], *arms_report["marginal"]]:
        assert flips(c["reference"], c["arm"]) == (c["flips_fixed_b"], c["flips_broke_c"]), c["arm"]
    assert flips("base", "trained") == expected_flips(site, "base", "trained")
    assert sum(flips("base", "trained")) > 0
    suite = {r["item_id"]: r for r in suite_rows()}
    strings = data["strings"]
    for it in data["items"]:
        assert len(set(it["v"])) == 2, "an item every arm agrees on never flips"
        assert (it["q"], it["r"]) == (suite[it["id"]]["question"], str(suite[it["id"]]["answer"]))
        for ai, (prompt, docs, samples) in enumerate(it["a"]):
            arm = data["arms"][ai]
            assert suite[it["id"]]["question"] in strings[prompt]
            assert len(samples) == K
            assert bool(docs) == (arm == "+rag")
            for _doc, _score, _rank, title, text in docs:
                assert strings[text] in strings[prompt] and strings[title].startswith("Doc ")
            for _score, answer, path, *_, turns, own in samples:
                assert (path is not None) == (arm == "+tools") and answer is not None and own == 0
                kinds = [t[0] for t in turns]
                assert kinds == ([0, 1, 0] if arm == "+tools" else [0])
                if arm == "+tools":
                    _, response, name, args, error, failed = turns[1]
                    assert (name, json.loads(args), error, failed) == ("orbital_period", {"altitude_km": 400 +
                            int(it["id"][-2:])}, None, False)  # fmt: skip
                    assert json.loads(response) == {"period_min": float(answer)}


def test_every_page_is_self_contained_and_shows_log_text_as_text(site: Path) -> None:
    pages = [site / "index.html", site / "items.html", site / "delta" / "delta_report.html",
             site / "arms" / "arm_comparison_report.html"]  # fmt: skip
    for page in pages:
        html = page.read_text()
        assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I), page
        assert "<link" not in html and "<script src" not in html, page
    items = (site / "items.html").read_text()
    # The question's HTML travels escaped inside the JSON block; the page sets it with textContent.
    assert "<script>alert" not in items and "<b>print" not in items
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in items
    for name in ("delta/delta_report.html", "arms/arm_comparison_report.html"):
        html = (site / name).read_text()
        assert "<table>" in html and ".md" not in re.findall(r'href="([^"]+)"', html)


def test_a_missing_arm_log_is_refused_in_one_line(site: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(site.parent / "evallogs", logs)
    (logs / "+rag.json").unlink()
    done = run_cli("analysis.commands.index_page", "--delta", str(site / "delta"), "--arms",
                   str(site / "arms"),
                   "--logs", str(logs), "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"report: {logs}: no EvalLog of arm '+rag', which the arm comparison lists; pass the folder the arm "
        "comparison read (--logs)"
    )
    assert not (tmp_path / "out" / "items.html").exists()


# --- slow: a real browser -----------------------------------------------------------------------------


class Offline:
    """A Chromium context that lets file: URLs through and blocks and records every other request."""

    def __init__(self, browser: Any) -> None:
        self.attempted: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.route("**/*", self._route)
        self.context.on("request", self._seen)

    def _seen(self, request: Any) -> None:
        if not request.url.startswith(("file:", "data:", "blob:", "about:")):
            self.attempted.append(request.url)

    def _route(self, route: Any) -> None:
        if route.request.url.startswith(("file:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            self.attempted.append(route.request.url)
            route.abort()

    def open(self, path: Path, fragment: str = "") -> Any:
        page = self.context.new_page()
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.goto(path.as_uri() + fragment)
        page.wait_for_load_state("load")
        return page


def images_loaded(page: Any) -> list[tuple[str, int]]:
    """Every image of the page with its natural width (0: it did not load)."""
    return page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])")


@pytest.mark.slow
def test_the_pages_work_in_a_browser_with_the_network_off(site: Path, browser: Any) -> None:
    net = Offline(browser)
    index = net.open(site / "index.html")
    shown = images_loaded(index)
    assert len(shown) == 2 and all(width > 0 for _, width in shown), shown
    links = index.evaluate("Array.from(document.links).map(a => a.getAttribute('href'))")
    for link in links:
        assert not link.endswith(".md") and (site / link.split("#")[0]).is_file(), link
    # At a glance: the plain sentence right under the title, then the links to every report and the plot.
    assert index.evaluate("document.querySelector('h1').nextElementSibling.className") == "lead"
    assert index.inner_text("p.lead").startswith(("Trained beats base", "Trained falls behind", "Trained vs"))
    assert index.locator("nav.reports a").all_inner_texts() == [
        "Delta report", "Arm comparison", "Checkpoint trajectory", "Verifier drift", "Item browser",
    ]  # fmt: skip
    for name in ("delta/delta_report.html", "arms/arm_comparison_report.html"):
        page = net.open(site / name)
        shown = images_loaded(page)
        assert shown and all(width > 0 for _, width in shown), (name, shown)
        assert page.locator("table").count() >= 2
    # Every page fits a 1,400 px window: no table or line runs past it (Offline opens at 1,400 px).
    for name in ("index.html", "delta/delta_report.html", "arms/arm_comparison_report.html",
                 "trajectory/trajectory_report.html", "drift/drift_report.html"):  # fmt: skip
        page = net.open(site / name)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400, name
        assert page.get_by_role("link", name=re.compile("Back to the report page|Delta report")).count() >= 1

    # A contrast row of the arm comparison opens the browser on its two arms.
    arms_page = net.open(site / "arms" / "arm_comparison_report.html")
    row = arms_page.locator("tr", has_text="+rag vs base")
    row.get_by_role("link", name="flipped items").first.click()
    arms_page.wait_for_url(re.compile(r"items\.html#"))
    assert (arms_page.input_value("#arm-a"), arms_page.input_value("#arm-b")) == ("base", "+rag")
    up, down = expected_flips(site, "base", "+rag")
    assert f"{up} wrong \u2192 right, {down} right \u2192 wrong" in arms_page.inner_text("#summary")

    items = net.open(site / "items.html", items_href("base", "trained", page=""))
    rows = items.locator("#rows tr.item")
    total = rows.count()
    assert total == sum(expected_flips(site, "base", "trained"))
    families = sorted({rows.nth(i).locator("td").nth(1).inner_text() for i in range(total)})
    assert len(families) >= 2, families
    items.select_option("#family", families[-1])
    assert rows.count() == sum(expected_flips(site, "base", "trained", families[-1])) < total
    assert {rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())} == {families[-1]}
    assert "family=" + families[-1] in items.url

    # The question with HTML in it reads as written and runs nothing.
    items.select_option("#family", "lookup")
    items.locator("#rows tr.item", has_text="lookup-00").click()
    assert "Question: " + HOSTILE_QUESTION in items.locator("tr.detail-row").first.inner_text()

    # The tool arm: an item opens with both sides, and a sample's transcript shows its turns in order.
    items.select_option("#arm-b", "+tools")
    items.select_option("#family", "compute")
    assert rows.count() == sum(expected_flips(site, "base", "+tools", "compute")) > 0
    rows.first.click()
    detail = items.locator("tr.detail-row").first
    assert detail.locator(".side").count() == 2
    tool_side = detail.locator(".side").nth(1)
    tool_side.locator("details.transcript summary").first.click()
    transcript = tool_side.locator("details.transcript").first
    # The turns are filled in when the transcript opens (its toggle event comes after the click).
    transcript.locator(".turn.prompt pre").wait_for(state="visible", timeout=5000)
    kinds = transcript.locator(".turn").evaluate_all("ts => ts.map(t => t.className)")
    assert kinds == ["turn prompt", "turn model", "turn tool", "turn model"]
    assert "tool call: orbital_period" in transcript.locator(".turn.tool .who").inner_text()
    assert "period_min" in transcript.locator(".turn.tool pre").inner_text()
    shot = site / "item-browser.png"
    items.screenshot(path=str(shot), full_page=True)
    print(f"item browser screenshot: {shot}")
    assert net.dialogs == [] and net.errors == []
    assert net.attempted == [], f"requests beyond the file system: {net.attempted}"


@pytest.mark.slow
def test_dvc_plots_show_renders_offline_into_an_ignored_folder(tmp_path: Path, browser: Any) -> None:
    template = ROOT / "vendor" / "dvc_plots.html"
    if not template.is_file():
        pytest.fail(f"{template} is missing: run bash scripts/setup.sh (python scripts/offline_plots.py)")
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    (repo / "vendor").mkdir()
    shutil.copy(template, repo / "vendor" / template.name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "dvc", "plots", "show"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = repo / "reports" / "dvc_plots" / "index.html"
    assert done.stdout.strip() == page.as_uri()
    assert not (repo / "dvc_plots").exists()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert "!! reports/dvc_plots/" in status.splitlines() and "?? " not in status
    html = page.read_text()
    # Nothing is loaded from anywhere: no script or stylesheet element with a source, and no attribute or
    # CSS that names an http(s) address (the specs' "$schema" strings name a schema, which vega-embed only
    # reads as a version, and the scripts' own help links are text).
    assert not re.search(r"<script[^>]*\ssrc=|<link\b", html, re.I)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?https?:""", html, re.I)
    assert "offline-plots: vega@" in html
    # The project's plot templates: named axes, k as whole numbers (ordinal), each arm's interval drawn.
    assert "k (samples per item)" in html and "delta in mean score (arm - base)" in html
    assert "ordinal" in html and "ci_lo" in html
    net = Offline(browser)
    shown = net.open(page)
    shown.wait_for_function("document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length >= 2")
    drawn = shown.evaluate(
        "Array.from(document.querySelectorAll('.vega-embed'))"
        ".map(e => e.querySelectorAll('svg, canvas').length)"
    )
    assert len(drawn) == 2 and all(n > 0 for n in drawn), drawn
    assert net.attempted == [] and net.errors == []


def test_an_imported_transcript_is_shown_as_the_source_kept_it(tmp_path: Path) -> None:
    """A log whose samples carry their own messages (an imported Inspect log): the page shows those turns,
    each tool message as the response to the oldest open call, and no prompt of its own before them."""
    messages = [
        {"role": "user", "content": "What is 1 + 1?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
        {"role": "tool", "content": "2"},
        {"role": "assistant", "content": "Answer: 2"},
    ]
    samples = [
        [{"index": 0, "seed": 1, "score": s, "text": "Answer: 2", "transcript": messages}] for s in (0, 1)
    ]
    for name, scores in (("base", [[0.0], [1.0]]), ("other", [[1.0], [0.0]])):
        write_log(tmp_path / f"{name}.json", scores, samples=[[{**samples[i][0], "score": scores[i][0]}]
                  for i in range(2)], arm=name)  # fmt: skip
    data = json.loads(
        item_browser.script_json(
            item_browser.page_data({a: load(tmp_path / f"{a}.json") for a in ("base", "other")})
        )
    )
    assert [it["v"] for it in data["items"]] == ["01", "10"]
    (_, _, _, _, _, _, turns, own) = data["items"][0]["a"][0][2][0]
    assert own == 1
    assert turns == [
        [2, "user", "What is 1 + 1?"],
        [0, ""],
        [1, "2", "add", '{"a": 1, "b": 1}', None, False],
        [0, "Answer: 2"],
    ]


def test_a_long_question_answer_and_reference_are_clipped_to_head_and_tail(tmp_path: Path) -> None:
    long_q = "Q" * 100_000 + "middle" + "q" * 99_994  # 200,000 characters
    samples = [
        [{"index": 0, "seed": 1, "score": s, "text": "Answer: 2", "answer": "7" * 50_000}] for s in (0, 1)
    ]
    for name, scores in (("base", [[0.0], [1.0]]), ("other", [[1.0], [0.0]])):
        own = [[{**samples[i][0], "score": scores[i][0]}] for i in range(2)]
        path = write_log(tmp_path / f"{name}.json", scores, samples=own, arm=name)
        raw = json.loads(path.read_text())
        for it in raw["items"]:
            it["question"], it["reference_answer"] = long_q, "R" * 10_000
        path.write_text(json.dumps(raw))
    data = item_browser.page_data({a: load(tmp_path / f"{a}.json") for a in ("base", "other")})
    item = data["items"][0]
    assert (
        len(item["q"]) < item_browser.MAX_TEXT + 100
        and item["q"].startswith("QQQ")
        and item["q"].endswith("qqq")
    )
    assert "194000 characters left out" in item["q"] and "middle" not in item["q"]
    assert len(item["r"]) < item_browser.MAX_TEXT + 100
    assert len(item["a"][0][2][0][1]) < item_browser.MAX_TEXT + 100  # the answer read


@pytest.mark.slow
def test_a_right_to_left_override_in_a_text_is_shown_as_a_code_point_not_obeyed(
    tmp_path: Path, browser: Any
) -> None:
    """U+202E in a question or a model's text would display what follows it reversed: 'tset' for 'test'."""
    question = "Is \u202etset\u202c right?"
    samples = [
        [{"index": 0, "seed": 1, "score": s, "text": "Answer: \u2066abc\u2069 \u202e123"}] for s in (0, 1)
    ]
    for name, scores in (("base", [[0.0], [1.0]]), ("other", [[1.0], [0.0]])):
        own = [[{**samples[i][0], "score": scores[i][0]}] for i in range(2)]
        path = write_log(tmp_path / f"{name}.json", scores, samples=own, arm=name)
        raw = json.loads(path.read_text())
        for it in raw["items"]:
            it["question"] = question
        path.write_text(json.dumps(raw))
    data = item_browser.page_data({a: load(tmp_path / f"{a}.json") for a in ("base", "other")})
    page_path = tmp_path / "items.html"
    page_path.write_text(item_browser.render_page(data))
    net = Offline(browser)
    page = net.open(page_path)
    page.locator("#rows tr.item").first.click()
    detail = page.locator("tr.detail-row").first
    detail.locator("details.transcript summary").first.click()
    detail.locator(".turn.model pre").first.wait_for(state="visible", timeout=5000)
    text = detail.inner_text()
    assert "Is \u27e8U+202E\u27e9tset\u27e8U+202C\u27e9 right?" in text, text
    assert "\u27e8U+2066\u27e9abc\u27e8U+2069\u27e9 \u27e8U+202E\u27e9123" in text, text
    assert not any(c in text for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert net.errors == [] and net.attempted == []
