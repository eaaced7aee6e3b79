"""The arm comparison end to end on a folder of real EvalLog files, through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt
from scipy import stats

from analysis.commands import arm_comparison as arm_comparison_command
from analysis.rendering.arms_report import arms_markdown
from analysis.rendering.markdown_text import items_href
from analysis.reports import arm_comparison, delta
from analysis.reports.design import FACTORIAL_CELLS
from analysis.reports.report_models import ArmComparison
from analysis.reports.settings import AnalysisSettings
from contract.evallog import EvalLog
from tests.helpers.commands import run_cli
from tests.helpers.evallogs import (
    HOSTILE_ARM,
    HOSTILE_FAMILY,
    PATHS,
    WORLD,
    hostile_world,
    make_world,
    write_log,
)
from tests.helpers.markdown import markdown_view
from tests.helpers.params import write_params

ROW_FIELDS = [
    *("arm", "attribution", "naive_delta", "adjusted_delta", "budget_confound", "ci95", "cohens_dz"),
    *("mean_gen_tokens", "flips_fixed_b", "flips_broke_c", "mcnemar_p", "claim"),
    *("p_value", "q_value", "significant", "negligible"),
]
FAST = AnalysisSettings(n_boot=400, n_perm=400, seed=3)


def test_names_reach_the_markdown_and_the_forest_plot_as_written(tmp_path):
    """A '|' in a name shifted the cells of its row, HTML rendered, a '$' in an arm crashed the plot."""
    logs = hostile_world(tmp_path / "logs")
    out = tmp_path / "report"
    r = run_cli("analysis.commands.arm_comparison", "--logs", str(logs), "--out", str(out), "--params",
                str(write_params(tmp_path / "p.yaml")))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (out / "arm_deltas.png").read_bytes().startswith(b"\x89PNG")
    tables, html = markdown_view((out / "arm_comparison_report.md").read_text())
    assert html == []
    for table in tables:
        assert {len(row) for row in table} == {len(table[0])}, table[0]
    contrasts = next(t for t in tables if t[0][:2] == ["contrast", "attribution"])
    report = json.loads((out / "arm_comparison_report.json").read_text())
    row = next(c for c in report["contrasts"] if c["arm"] == HOSTILE_ARM)
    shown = next(cells for cells in contrasts if cells[0] == f"{HOSTILE_ARM} vs base")
    assert shown[2] == f"{row['naive_delta']:+.4f}" and shown[-2] == row["claim"]
    families = next(t for t in tables if t[0][:2] == ["contrast", "family"])
    assert {cells[1] for cells in families[1:]} == {HOSTILE_FAMILY, "plain"}
    # Every contrast row ends in a link to the item browser on its two arms, names percent-encoded.
    assert shown[-1] == "flipped items" and {cells[-1] for cells in families[1:]} == {"flipped items"}
    links = [
        t.attrGet("href")
        for block in MarkdownIt("commonmark")
        .enable("table")
        .parse((out / "arm_comparison_report.md").read_text())
        for t in block.children or []
        if t.type == "link_open"
    ]
    assert items_href("base", HOSTILE_ARM) in links
    assert items_href("base", HOSTILE_ARM, HOSTILE_FAMILY) in links


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    return make_world(tmp_path / "evallogs")


def test_cli_writes_every_arm_and_reruns_byte_identical(world, tmp_path):
    params = write_params(tmp_path / "params.yaml")
    outs = []
    for run in ("one", "two"):
        r = run_cli(
            "analysis.commands.arm_comparison",
            "--logs",
            str(world),
            "--out",
            str(tmp_path / run),
            "--params",
            str(params),
        )
        assert r.returncode == 0, r.stderr
        outs.append(tmp_path / run)
    for name in ("arm_comparison_report.json", "arm_comparison_report.md", "arm_deltas.png"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    report = json.loads((outs[0] / "arm_comparison_report.json").read_text())
    assert [c["arm"] for c in report["contrasts"]] == list(WORLD)[1:]
    pairs = [(m["arm"], m["reference"]) for m in report["marginal"]]
    assert pairs == [("trained+rag", "+rag"), ("trained+tools", "+tools")]
    for row in [*report["contrasts"], *report["marginal"]]:
        for field in ROW_FIELDS:
            assert field in row, (row["arm"], field)
    attribution = {c["arm"]: c["attribution"] for c in report["contrasts"]}
    assert attribution == {a: arm_comparison.DEFAULT_ATTRIBUTION[a] for a in list(WORLD)[1:]}
    md = (outs[0] / "arm_comparison_report.md").read_text()
    assert "CEILING" in md and "arm_deltas.png" in md


def test_rows_agree_with_direct_computation_and_the_delta_report(world):
    report = arm_comparison.build(str(world), FAST).model_dump()
    logs = {a: EvalLog.model_validate_json((world / f"{a}.json").read_text()) for a in WORLD}
    mean = {a: np.array([np.mean(it.scores) for it in log.items]) for a, log in logs.items()}
    rows = {c["arm"]: c for c in report["contrasts"]}
    trained = rows["trained"]
    d = mean["trained"] - mean["base"]
    assert trained["naive_delta"] == pytest.approx(d.mean())
    assert trained["cohens_dz"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert trained["mean_gen_tokens"] == pytest.approx(
        np.mean([np.mean(it.gen_tokens) for it in logs["trained"].items])
    )
    b = int(np.sum((mean["base"] < 0.5) & (mean["trained"] >= 0.5)))
    c = int(np.sum((mean["base"] >= 0.5) & (mean["trained"] < 0.5)))
    assert (trained["flips_fixed_b"], trained["flips_broke_c"]) == (b, c)
    assert trained["mcnemar_p"] == pytest.approx(stats.binomtest(b, b + c).pvalue if b + c else 1.0)
    assert trained["budget_confound"] == pytest.approx(trained["naive_delta"] - trained["adjusted_delta"])
    # The same contrast in the delta report uses the same draws: identical interval and p-value.
    dr = delta.build(
        str(world / "base.json"), logs["base"], str(world / "trained.json"), logs["trained"], FAST
    )
    assert trained["ci95"] == dr.delta_ci95 and trained["p_value"] == dr.perm_p
    marginal = {m["arm"]: m for m in report["marginal"]}
    assert marginal["trained+rag"]["naive_delta"] == pytest.approx(
        (mean["trained+rag"] - mean["+rag"]).mean()
    )


def test_claims_follow_attribution_not_size(world):
    rows = {c["arm"]: c for c in arm_comparison.build(str(world), FAST).model_dump()["contrasts"]}
    assert "NOT reasoning" in rows["+tools"]["claim"] and "tool-access" in rows["+tools"]["claim"]
    assert "NOT reasoning" in rows["+rag"]["claim"] and "retrieval" in rows["+rag"]["claim"]
    assert rows["trained"]["claim"].startswith("parametric")
    assert rows["trained+rag+tools"]["claim"].startswith("CEILING")


def test_ceiling_is_labelled_and_never_decomposed(world):
    rows = {c["arm"]: c for c in arm_comparison.build(str(world), FAST).model_dump()["contrasts"]}
    ceiling = rows["trained+rag+tools"]
    assert ceiling["ceiling"] is True and ceiling["parametric_share"] is None
    assert sum(c["ceiling"] for c in rows.values()) == 1
    with pytest.raises(arm_comparison.CeilingNotDecomposable, match="no parametric share"):
        arm_comparison.parametric_share("ceiling", ceiling["naive_delta"], 0.1)
    assert arm_comparison.parametric_share("parametric", 0.1) == 1.0
    assert arm_comparison.parametric_share("lookup", 0.1) == 0.0
    assert arm_comparison.parametric_share("mixed", 0.2, 0.05) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="no parametric share is defined"):
        arm_comparison.parametric_share("reference", 0.0)


def test_per_family_rows_show_retrieval_on_lookup(world):
    report = arm_comparison.build(str(world), FAST).model_dump()
    fam = {(f["arm"], f["reference"], f["family"]): f for f in report["families"]}
    rag_lookup = fam[("+rag", "base", "lookup")]
    assert rag_lookup["n_items"] == 24
    assert rag_lookup["ci95"][0] > 0 and rag_lookup["significant"]
    assert rag_lookup["delta"] > fam[("+rag", "base", "compute")]["delta"] + 0.2


def test_path_table_of_tool_arms(world):
    report = arm_comparison.build(str(world), FAST).model_dump()
    tables = {t["arm"]: t for t in report["paths"]}
    assert sorted(tables) == ["+tools", "trained+rag+tools", "trained+tools"]
    log = EvalLog.model_validate_json((world / "+tools.json").read_text())
    samples = [s for it in log.items for s in it.samples]
    rows = {v["path"]: v for v in tables["+tools"]["verdicts"]}
    assert [v["path"] for v in tables["+tools"]["verdicts"]] == PATHS
    assert sum(v["share"] for v in rows.values()) == pytest.approx(1.0)
    clean = [s.score for s in samples if s.path == "clean"]
    assert rows["clean"]["count"] == len(clean) and rows["clean"]["accuracy"] == pytest.approx(np.mean(clean))


def test_missing_arms_degrade_gracefully(tmp_path):
    folder = make_world(tmp_path / "logs", arms_=["base", "trained", "trained+rag"])
    report = arm_comparison.build(str(folder), FAST).model_dump()
    assert [c["arm"] for c in report["contrasts"]] == ["trained", "trained+rag"]
    assert report["marginal"] == []
    assert report["arms_missing"] == ["+rag", "+tools", "trained+tools", "trained+rag+tools"]
    alone = make_world(tmp_path / "alone", arms_=["base"])
    assert arm_comparison.build(str(alone), FAST).model_dump()["contrasts"] == []
    assert arm_comparison_command.main(["--logs", str(alone), "--out", str(tmp_path / "out"), "--params",
                      str(write_params(tmp_path / "p.yaml"))]) == 0  # fmt: skip
    assert "Only base is present" in (tmp_path / "out" / "arm_comparison_report.md").read_text()
    assert (tmp_path / "out" / "arm_deltas.png").read_bytes().startswith(b"\x89PNG")


def test_arm_name_and_attribution_fall_back_to_file_stem(tmp_path):
    folder = make_world(tmp_path / "logs", arms_=["base", "+rag"])
    raw = json.loads((folder / "+rag.json").read_text())
    del raw["arm"], raw["attribution"]
    (folder / "+rag.json").write_text(json.dumps(raw))
    raw["arm"] = "my-arm"
    (tmp_path / "logs" / "other.json").write_text(json.dumps(raw))
    rows = {c["arm"]: c for c in arm_comparison.build(str(folder), FAST).model_dump()["contrasts"]}
    assert rows["+rag"]["attribution"] == "lookup"
    assert rows["my-arm"]["attribution"] == "unknown" and "no causal reading" in rows["my-arm"]["claim"]


def test_budget_adjustment_is_null_without_gen_tokens(tmp_path):
    folder = make_world(tmp_path / "logs", arms_=["base", "trained"])
    raw = json.loads((folder / "trained.json").read_text())
    for it in raw["items"]:
        del it["gen_tokens"]
    (folder / "trained.json").write_text(json.dumps(raw))
    report = arm_comparison.build(str(folder), FAST).model_dump()
    row = report["contrasts"][0]
    assert row["adjusted_delta"] is None and row["budget_confound"] is None and row["mean_gen_tokens"] is None
    assert any("gen_tokens" in n and "trained" in n for n in report["notes"])
    assert row["ci95"][0] > 0
    assert row["claim"] == "parametric gain (budget adjustment unavailable: no gen_tokens in the logs)."


def test_significant_but_tiny_delta_is_negligible(tmp_path):
    n = 2000
    base = np.zeros((n, 1))
    base[:1000] = 1
    arm = base.copy()
    arm[1000:1012] = 1  # 12 items fixed, none broken: delta 0.006 < min_effect 0.01
    folder = tmp_path / "logs"
    folder.mkdir()
    write_log(folder / "base.json", base)
    write_log(folder / "trained.json", arm)
    row = arm_comparison.build(
        str(folder), AnalysisSettings(n_boot=2000, n_perm=2000, min_effect=0.01)
    ).model_dump()["contrasts"][0]
    assert row["naive_delta"] == pytest.approx(0.006)
    assert row["significant"] and row["negligible"]


# ------------------------------------------------------------------------------------------- refusals


def test_refuses_an_arm_at_another_protocol(world, tmp_path):
    raw = json.loads((world / "+tools.json").read_text())
    raw["temperature"] = 0.6
    (world / "+tools.json").write_text(json.dumps(raw))
    out = tmp_path / "report"
    out.mkdir()
    (out / "arm_comparison_report.json").write_text("previous\n")
    r = run_cli("analysis.commands.arm_comparison", "--logs", str(world), "--out", str(out), "--params",
                str(write_params(tmp_path / "p.yaml")))  # fmt: skip
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1
    assert str(world / "base.json") in lines[0] and str(world / "+tools.json") in lines[0]
    assert "temperature" in lines[0]
    assert (out / "arm_comparison_report.json").read_text() == "previous\n"
    assert sorted(p.name for p in out.iterdir()) == ["arm_comparison_report.json"]


def test_refuses_a_trained_arm_of_the_base_model_and_a_suite_of_another_file(world, tmp_path, capsys):
    """+rag and +tools share base's model by design; trained may not, or its parametric row reads 0."""
    raw = json.loads((world / "trained.json").read_text())
    (world / "trained.json").write_text(json.dumps({**raw, "model_name": "demo-base"}))
    code = arm_comparison_command.main(["--logs", str(world), "--out", str(tmp_path / "o")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert f"{world / 'base.json'} vs {world / 'trained.json'}: model_name is 'demo-base' in both" in lines[0]
    (world / "trained.json").write_text(json.dumps(raw))
    for name in ("base", "+rag"):
        log = json.loads((world / f"{name}.json").read_text())
        log["pins"] = {"suite": f"sha256:{name}"}
        (world / f"{name}.json").write_text(json.dumps(log))
    code = arm_comparison_command.main(["--logs", str(world), "--out", str(tmp_path / "o")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "+rag.json: pins.suite differs" in lines[0]
    assert not (tmp_path / "o").exists()


def test_refuses_an_arm_on_other_items(world, tmp_path, capsys):
    raw = json.loads((world / "+rag.json").read_text())
    raw["items"] = raw["items"][:-1]
    (world / "+rag.json").write_text(json.dumps(raw))
    code = arm_comparison_command.main(["--logs", str(world), "--out", str(tmp_path / "o")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "items differ" in lines[0] and "+rag.json" in lines[0]
    assert not (tmp_path / "o").exists()


def test_missing_base_names_the_folder(world, tmp_path, capsys):
    shutil.move(world / "base.json", tmp_path / "elsewhere.json")
    code = arm_comparison_command.main(["--logs", str(world), "--out", str(tmp_path / "o")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and str(world) in lines[0] and "no base arm" in lines[0]
    code = arm_comparison_command.main(["--logs", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert code == 2 and "no such folder" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_two_logs_of_one_arm_are_refused(world, tmp_path, capsys):
    shutil.copy(world / "trained.json", world / "trained-copy.json")
    code = arm_comparison_command.main(["--logs", str(world), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "both hold arm 'trained'" in err


def test_too_few_items_never_claim_a_surviving_gain(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    write_log(folder / "base.json", np.zeros((4, 2)), gen_tokens=np.full((4, 2), 10))
    write_log(folder / "trained.json", np.ones((4, 2)), gen_tokens=np.full((4, 2), 10))
    row = arm_comparison.build(str(folder), FAST).model_dump()["contrasts"][0]
    assert "SURVIVES" not in row["claim"] and not row["significant"]
    assert row["claim"].startswith("too few items: 4 paired items cannot reach p < 0.05")


def test_family_contrasts_have_their_own_fdr_family(world):
    report = arm_comparison.build(str(world), FAST).model_dump()
    main, fam = [*report["contrasts"], *report["marginal"]], report["families"]
    # trained vs base is the primary contrast, decided by the claim's Holm family; the rest are one family.
    secondary = [t for t in main if (t["arm"], t["reference"]) != ("trained", "base")]
    q_main = stats.false_discovery_control([t["p_value"] for t in secondary], method="bh")
    assert [t["q_value"] for t in secondary] == pytest.approx(q_main.tolist())
    trained = next(t for t in main if t["arm"] == "trained")
    assert trained["decided_by"].startswith("Holm") and trained["q_value"] >= trained["p_value"]
    # The per-family rows of each contrast are a family of their own.
    for c in main:
        rows = [f for f in fam if (f["arm"], f["reference"]) == (c["arm"], c["reference"])]
        q_fam = stats.false_discovery_control([t["p_value"] for t in rows], method="bh")
        assert [t["q_value"] for t in rows] == pytest.approx(q_fam.tolist())
    assert (report["n_tests"], report["n_family_tests"]) == (7, 32)


def test_a_row_whose_ci_excludes_zero_but_is_not_significant_says_why(world):
    report = arm_comparison.build(
        str(world), AnalysisSettings(n_boot=400, n_perm=400, seed=3, fdr=0.001)
    ).model_dump()
    # A secondary contrast (trained vs base is decided by the claim's family at alpha, not at fdr).
    row = next(c for c in report["contrasts"] if c["ci95"][0] > 0 and c["arm"] != "trained")
    assert not row["significant"]
    text = arms_markdown(ArmComparison.model_validate(report))
    assert f"no (q {row['q_value']:.3g} > fdr 0.001)" in text
    assert "significant means q <= fdr and the" in text


def test_the_budget_adjustment_is_labelled_descriptive(world):
    text = arms_markdown(ArmComparison.model_validate(arm_comparison.build(str(world), FAST).model_dump()))
    assert "descriptive only (it conditions on generated tokens" in text


def planted_factorial_world(folder: Path, interaction: float, n_items: int = 400, k: int = 4) -> Path:
    """Arms whose per-item success probabilities add training, retrieval and tools, plus a planted
    training x retrieval interaction (on the probability scale, so the planted size is the true contrast)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    base = rng.uniform(0.1, 0.3, n_items)
    for name, (t, r, x) in FACTORIAL_CELLS.items():
        if name == "+rag+tools":
            continue
        p = base + 0.10 * t + 0.25 * r + 0.20 * x + interaction * t * r
        scores = (rng.random((n_items, k)) < p[:, None]).astype(float)
        write_log(
            folder / f"{name}.json", scores, arm=name, attribution=arm_comparison.DEFAULT_ATTRIBUTION[name]
        )
    return folder


@pytest.mark.parametrize("planted", [0.15, -0.15])
def test_factorial_readout_recovers_a_planted_interaction(tmp_path, planted):
    report = arm_comparison.build(str(planted_factorial_world(tmp_path / "logs", planted)), FAST).model_dump()
    effects = {e["effect"]: e for e in report["factorial"]["effects"]}
    txr = effects["training x retrieval"]
    assert txr["cells"] == {"trained+rag": 1, "trained": -1, "+rag": -1, "base": 1}
    assert list(report["factorial"]["cells"]) == [a for a in FACTORIAL_CELLS if a != "+rag+tools"]
    lo, hi = txr["ci95"]
    assert lo <= planted <= hi
    assert txr["reading"] == ("complements" if planted > 0 else "substitutes")
    assert np.sign(txr["estimate"]) == np.sign(planted)
    # Training and tools were planted additive: their interval covers 0 (and the truth).
    lo, hi = effects["training x tools"]["ci95"]
    assert lo <= 0.0 <= hi and effects["training x tools"]["reading"] == "no interaction detected"
    for name, size in (("training", 0.10), ("retrieval", 0.25), ("tools", 0.20)):
        lo, hi = effects[name]["ci95"]
        assert lo <= size <= hi, name
    # Without +rag+tools neither retrieval x tools nor the three-way term exists; the page says which arm.
    assert effects["retrieval x tools"]["estimate"] is None
    assert effects["training x retrieval x tools"]["missing_arms"] == ["+rag+tools"]
    text = arms_markdown(ArmComparison.model_validate(report))
    assert "## Factorial read-out: training x retrieval x tools" in text
    assert "never decomposed into shares" in text
    tables, _ = markdown_view(text)
    rows = {row[0]: row for table in tables for row in table}
    assert rows["training x retrieval"][1] == "trained+rag - trained - +rag + base"
    assert rows["training x retrieval x tools"][2] == "not estimable"


def test_factorial_section_only_when_an_interaction_can_be_estimated(tmp_path):
    folder = make_world(tmp_path / "logs", arms_=["base", "trained", "+rag", "+tools", "trained+tools"])
    assert arm_comparison.build(str(folder), FAST).model_dump()["factorial"] is not None
    (folder / "trained+tools.json").unlink()
    report = arm_comparison.build(str(folder), FAST).model_dump()
    assert report["factorial"] is None
    assert "Factorial read-out" not in arms_markdown(ArmComparison.model_validate(report))


def test_a_placebo_arm_is_compared_and_never_credited_to_the_reward(tmp_path):
    folder = make_world(tmp_path / "logs", arms_=["base", "trained"])
    scores = np.array([it["scores"] for it in json.loads((folder / "trained.json").read_text())["items"]])
    write_log(
        folder / "placebo.json", scores, arm="placebo", attribution="placebo", model_name="demo-placebo"
    )
    report = arm_comparison.build(str(folder), FAST).model_dump()
    row = next(c for c in report["contrasts"] if c["arm"] == "placebo")
    assert row["attribution"] == "placebo" and row["claim"].endswith("(placebo), NOT the reward's effect.")


@pytest.mark.parametrize(
    ("planted", "claim"),
    [
        (0.0, "training adds a gain on top of +rag (training x retrieval: no interaction detected)."),
        (0.15, "training adds a gain on top of +rag (training x retrieval: complements)."),
    ],
)
def test_a_marginal_claim_names_the_interaction_only_as_the_factorial_test_reads_it(tmp_path, planted, claim):
    # Training adds the same gain with or without retrieval (planted 0): a significant marginal gain, but
    # no interaction; "complements" is the interaction test's word, never the marginal row's.
    report = arm_comparison.build(str(planted_factorial_world(tmp_path / "logs", planted)), FAST).model_dump()
    marginal = {m["arm"]: m for m in report["marginal"]}
    assert marginal["trained+rag"]["claim"] == claim
    effects = {e["effect"]: e["reading"] for e in report["factorial"]["effects"]}
    for m in report["marginal"]:
        for word in ("complements", "substitutes"):
            named = [name for name, reading in effects.items() if reading == word]
            assert (word in m["claim"]) == any(f"({name}: {word})" in m["claim"] for name in named), m
    assert "(training x tools: no interaction detected)" in marginal["trained+tools"]["claim"]
