"""The delta report end to end: real EvalLog files, the real CLI in a subprocess, refusals, invariants."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.commands import delta as delta_command
from analysis.rendering import delta_report as delta_rendering
from analysis.reports.report_models import DeltaReport
from analysis.reports.settings import AnalysisSettings, read_settings
from contract.evallog import EvalLog
from tests.helpers.commands import run_cli
from tests.helpers.evallogs import FAMILIES, HOSTILE_FAMILY, HOSTILE_MODEL, synthetic_scores, write_log
from tests.helpers.markdown import markdown_view
from tests.helpers.params import write_params
from tests.helpers.reports import build, build_typed

REPORT_FIELDS = [
    *("suite", "suite_revision", "n_items", "n_samples", "pre_model", "post_model", "driver", "measured_at"),
    *("mean_pre", "mean_post", "delta_mean", "delta_ci95", "perm_p", "cohens_dz", "pair_correlation_rho"),
    *("flips_wrong_to_right", "flips_right_to_wrong", "mcnemar_chi2", "mcnemar_p", "pass_at_k_pre"),
    *("pass_at_k_post", "claim"),
]


def write_pair(folder: Path) -> tuple[Path, Path]:
    """Two logs of 120 items at k = 8 in folder, the second lifted: base.json and trained.json."""
    rng = np.random.default_rng(0)
    fam = [FAMILIES[i % 4] for i in range(120)]
    pre, logit = synthetic_scores(rng, 120, 8)
    post, _ = synthetic_scores(rng, 120, 8, lift=0.8, base=logit)
    a = write_log(folder / "base.json", pre, families=fam, arm="base")
    b = write_log(folder / "trained.json", post, families=fam, arm="trained", model_name="demo-trained")
    return a, b


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return write_pair(tmp_path)


@pytest.fixture(scope="module")
def cli_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, list[Path]]:
    """The delta CLI run twice on one pair with one params file: (pre, post, params, [out one, out two]).

    Read by the tests of the CLI's files: one run of the command serves them (it costs seconds: a process
    with scipy and matplotlib, 2000 resamples), the second run is the rerun they compare with.
    """
    folder = tmp_path_factory.mktemp("delta-cli")
    pre, post = write_pair(folder)
    params = write_params(folder / "params.yaml")
    outs = []
    for run in ("one", "two"):
        out = folder / run
        r = run_cli("analysis.commands.delta", "--pre", str(pre), "--post", str(post), "--out", str(out),
                    "--params", str(params))  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.append(out)
    return pre, post, params, outs


# ------------------------------------------------------------------------------------------- the CLI


def test_cli_writes_the_report_and_reruns_byte_identical(cli_twice):
    _, _, _, outs = cli_twice
    for name in ("delta_report.json", "delta_report.md", "passk_curve.png"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    png = (outs[0] / "passk_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and b"Software" not in png
    report = json.loads((outs[0] / "delta_report.json").read_text())
    for field in REPORT_FIELDS:
        assert field in report, field
    assert report["settings"] == {"n_boot": 2000, "n_perm": 2000, "alpha": 0.05, "fdr": 0.05,
                                  "min_effect": 0.01, "max_failed_tool_calls": 0.0, "seed": 1234}  # fmt: skip
    md = (outs[0] / "delta_report.md").read_text()
    assert md.index("Minimum detectable effect") < md.index("Claim:") < md.index("## Headline")
    assert "passk_curve.png" in md


def test_the_figure_drawn_beside_the_statistics_is_the_one_drawn_here(cli_twice):
    """The CLI draws in a forked process while it computes; the bytes are those of drawing in-process."""
    pre, post, params, (out, _) = cli_twice
    here = delta_rendering.outputs(build_typed(pre, post, read_settings(params)))
    assert set(here) == {p.name for p in out.iterdir()}
    for name, data in here.items():
        assert (out / name).read_bytes() == data, name


def test_names_reach_the_markdown_and_the_figure_as_written(tmp_path):
    """A '|' in a family shifted every later cell of its row, HTML rendered, a '$' crashed the figure."""
    rng = np.random.default_rng(4)
    fam = [HOSTILE_FAMILY if i % 2 else "plain" for i in range(40)]
    pre, logit = synthetic_scores(rng, 40, 4)
    post, _ = synthetic_scores(rng, 40, 4, lift=1.0, base=logit)
    a = write_log(tmp_path / "base.json", pre, families=fam, model_name=HOSTILE_MODEL)
    b = write_log(tmp_path / "trained.json", post, families=fam, model_name="demo-trained")
    out = tmp_path / "report"
    r = run_cli("analysis.commands.delta", "--pre", str(a), "--post", str(b), "--out", str(out), "--params",
                str(write_params(tmp_path / "p.yaml")))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (out / "passk_curve.png").read_bytes().startswith(b"\x89PNG")
    md = (out / "delta_report.md").read_text()
    tables, html = markdown_view(md)
    assert html == []
    for table in tables:
        assert {len(row) for row in table} == {len(table[0])}, table[0]
    families = next(t for t in tables if t[0][0] == "family")
    assert [row[0] for row in families[1:]] == sorted({HOSTILE_FAMILY, "plain"})
    report = json.loads((out / "delta_report.json").read_text())
    by_family = {f["family"]: f for f in report["families"]}
    assert families[1][4] == f"{by_family[families[1][0]]['delta']:+.4f}"
    from markdown_it import MarkdownIt

    assert HOSTILE_MODEL in MarkdownIt("commonmark").render(md).replace("&lt;", "<").replace("&gt;", ">")


def test_minimal_logs_are_compared(tmp_path):
    minimal = {"model_name": "m0", "suite": "thesis-suite v1.0", "suite_revision": "v1.0", "n_samples": 2,
               "temperature": 0.7, "max_tokens": 512, "driver": "d", "measured_at": "t"}  # fmt: skip
    pre = {**minimal, "items": [{"item_id": f"i{i}", "scores": [0.0, float(i % 2)]} for i in range(12)]}
    post = {
        **minimal,
        "model_name": "m1",
        "items": [{"item_id": f"i{i}", "scores": [1.0, 1.0]} for i in range(12)],
    }
    (tmp_path / "pre.json").write_text(json.dumps(pre))
    (tmp_path / "post.json").write_text(json.dumps(post))
    r = build(tmp_path / "pre.json", tmp_path / "post.json", AnalysisSettings(n_boot=400, n_perm=5000))
    assert r["delta_mean"] == pytest.approx(0.75) and r["matched_protocol"]["protocol"] is None
    assert r["perm_exact"] and r["perm_p"] == pytest.approx(2 / 2**12)


def test_report_numbers_agree_with_direct_computation(pair):
    pre_path, post_path = pair
    r = build(pre_path, post_path)
    pre = np.array([it.scores for it in EvalLog.model_validate_json(pre_path.read_text()).items])
    post = np.array([it.scores for it in EvalLog.model_validate_json(post_path.read_text()).items])
    assert r["mean_pre"] == pytest.approx(pre.mean())
    assert r["delta_mean"] == pytest.approx(post.mean() - pre.mean())
    c0 = pre.sum(1).astype(int)
    for k in (1, 2, 4, 8):
        expect = np.mean([1 - math.comb(8 - c, k) / math.comb(8, k) for c in c0])
        assert r["pass_at_k_pre"][str(k)] == pytest.approx(expect)
    assert r["pass_at_k_post"]["1"] == pytest.approx(post.mean())
    v0, v1 = pre.mean(1) >= 0.5, post.mean(1) >= 0.5
    assert r["flips_wrong_to_right"] == int(np.sum(~v0 & v1))
    assert r["flips_right_to_wrong"] == int(np.sum(v0 & ~v1))
    assert r["pair_correlation_rho"] == pytest.approx(np.corrcoef(pre.mean(1), post.mean(1))[0, 1])
    lo, hi = r["delta_ci95"]
    assert lo < r["delta_mean"] < hi
    clo, chi = r["delta_ci95_cluster"]
    assert abs(clo - lo) < 0.25 * (hi - lo) and abs(chi - hi) < 0.25 * (hi - lo)
    assert [row["k"] for row in r["pass_at_k"]] == [1, 2, 4, 8]
    assert r["mde"]["n_items"] == 120 and r["mde"]["k"] == 8 and r["mde"]["mde"] > 0
    assert r["matched_protocol"]["fields_checked"][-2:] == ["items", "model_name"]


def test_pass_at_k_curve_up_to_k_1024_from_the_cli_equals_exact_fractions(tmp_path):
    # 500 items x 1,024 samples, the scale of published pass@k curves: every k of the curve, from the real
    # CLI on real files, against 1 - C(n-c, k) / C(n, k) in exact rational arithmetic.
    rng = np.random.default_rng(3)
    n_items, n = 500, 1024
    c_pre = rng.binomial(n, rng.beta(0.4, 2.0, n_items))
    c_post = np.minimum(c_pre + rng.binomial(n, 0.02, n_items), n)
    scores = [(np.arange(n) < c[:, None]).astype(float) for c in (c_pre, c_post)]
    a = write_log(tmp_path / "base.json", scores[0], protocol={"k": n}, n_samples=n)
    b = write_log(tmp_path / "trained.json", scores[1], protocol={"k": n}, n_samples=n, model_name="m1")
    out = tmp_path / "out"
    proc = run_cli("analysis.commands.delta", "--pre", str(a), "--post", str(b), "--out", str(out),
                   "--params", str(write_params(tmp_path / "params.yaml")))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "delta_report.json").read_text())
    ks = [2**i for i in range(11)]
    assert [row["k"] for row in r["pass_at_k"]] == ks
    for row in r["pass_at_k"]:
        k = row["k"]
        for key, counts in (("pre", c_pre), ("post", c_post)):
            exact = sum(1 - Fraction(math.comb(n - int(c), k), math.comb(n, k)) for c in counts) / n_items
            assert row[key] == pytest.approx(float(exact), rel=1e-9, abs=1e-12), (key, k)
            lo, hi = row[f"{key}_ci95"]
            assert lo <= row[key] <= hi
        assert row["delta_ci95"][0] <= row["delta"] <= row["delta_ci95"][1]


def test_family_breakdown_reports_each_family(tmp_path):
    rng = np.random.default_rng(1)
    n = 160
    fam = [FAMILIES[i % 4] for i in range(n)]
    pre, logit = synthetic_scores(rng, n, 4)
    lookup = np.array([f == "lookup" for f in fam])
    post, _ = synthetic_scores(rng, n, 4, base=logit + 4.0 * lookup)  # only lookup items get easier
    r = build(
        write_log(tmp_path / "a.json", pre, families=fam), write_log(tmp_path / "b.json", post, families=fam)
    )
    rows = {f["family"]: f for f in r["families"]}
    assert sorted(rows) == sorted(FAMILIES)
    assert rows["lookup"]["n_items"] == 40
    assert rows["lookup"]["delta"] == pytest.approx(post[lookup].mean() - pre[lookup].mean())
    assert rows["lookup"]["mean_pre"] == pytest.approx(pre[lookup].mean())
    assert rows["lookup"]["ci95"][0] > 0 and rows["lookup"]["significant"]
    assert rows["lookup"]["delta"] > max(rows[f]["delta"] for f in FAMILIES if f != "lookup")
    assert all(0 <= rows[f]["q_value"] <= 1 for f in FAMILIES)


# ------------------------------------------------------------------------------------------- the claim


def test_claim_expansion_when_new_items_become_solvable(tmp_path):
    pre = np.zeros((80, 8))
    pre[:40, :4] = 1
    post = pre.copy()
    post[40:70, :3] = 1  # 30 items that were never solved now are, sometimes
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "EXPANSION"
    assert r["pass_at_k"][-1]["delta_ci95"][0] > 0


def test_claim_sharpening_when_pass1_rises_but_pass_at_n_does_not(tmp_path):
    pre = np.zeros((80, 8))
    pre[:60, :2] = 1  # solvable items solved 2 times in 8
    post = np.zeros((80, 8))
    post[:60, :7] = 1  # the same items, now 7 times in 8; the last 20 stay unsolved
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "SHARPENING", r["claim_detail"]
    assert r["pass_at_k_post"]["8"] == r["pass_at_k_pre"]["8"] == 0.75
    r2 = build(tmp_path / "b.json", tmp_path / "a.json")
    assert r2["claim"] == "REGRESSION"


def test_one_sample_per_item_never_claims_expansion(tmp_path):
    pre = np.zeros((60, 1))
    post = np.zeros((60, 1))
    post[:30] = 1
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "UNDETERMINED" and "one sample per item" in r["claim_detail"]
    same = build(tmp_path / "a.json", write_log(tmp_path / "c.json", pre))
    assert same["claim"] == "no detectable difference"


# ------------------------------------------------------------------------------------ property tests

score_matrices = st.integers(6, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=4, max_size=4), min_size=n, max_size=n),
        st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=4, max_size=4), min_size=n, max_size=n),
    )
)
prop = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@given(score_matrices)
@prop
def test_swapping_pre_and_post_negates_the_delta_and_mirrors_its_ci(tmp_path, mats):
    a = write_log(tmp_path / "a.json", mats[0])
    b = write_log(tmp_path / "b.json", mats[1])
    ab, ba = build(a, b), build(b, a)
    assert ba["delta_mean"] == pytest.approx(-ab["delta_mean"], abs=1e-12)
    for key in ("delta_ci95", "delta_ci95_percentile", "delta_ci95_cluster"):
        assert ba[key] == pytest.approx([-ab[key][1], -ab[key][0]], abs=1e-12), key
    for x, y in zip(ab["pass_at_k"], ba["pass_at_k"], strict=True):
        assert y["delta_ci95"] == pytest.approx([-x["delta_ci95"][1], -x["delta_ci95"][0]], abs=1e-12)
    assert ba["perm_p"] == ab["perm_p"]
    assert (ba["flips_wrong_to_right"], ba["flips_right_to_wrong"]) == (
        ab["flips_right_to_wrong"],
        ab["flips_wrong_to_right"],
    )


@given(score_matrices, st.randoms(use_true_random=False))
@prop
def test_shuffling_item_order_changes_nothing(tmp_path, mats, random):
    n = len(mats[0])
    ids = [f"item-{i:03d}" for i in range(n)]
    fam = [FAMILIES[i % 4] for i in range(n)]
    perm = list(range(n))
    random.shuffle(perm)
    a = write_log(tmp_path / "a.json", mats[0], item_ids=ids, families=fam)
    b = write_log(tmp_path / "b.json", mats[1], item_ids=ids, families=fam)
    b2 = write_log(tmp_path / "b2.json", [mats[1][i] for i in perm], item_ids=[ids[i] for i in perm],
                   families=[fam[i] for i in perm], model_name="demo-b")  # fmt: skip
    r1, r2 = build(a, b), build(a, b2)
    # The post log's file differs, and so does the arm name read from its stem (the logs record none).
    for r in (r1, r2):
        r.pop("post_log"), r.pop("post_arm")
        # The format section names the arms too (the post arm by its stem).
        r["format"]["arms"][1].pop("arm"), r["format"].pop("lenient_missing")
    assert r1 == r2


@given(st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=3, max_size=3), min_size=2, max_size=40))
@prop
def test_identical_scores_are_no_shift(tmp_path, rows):
    a, b = write_log(tmp_path / "a.json", rows), write_log(tmp_path / "b.json", rows)
    r = build(a, b)
    assert r["delta_mean"] == 0.0
    assert r["perm_p"] == 1.0
    # Holm over pass@1 and pass@3: the first step tests at alpha / 2, which 2 / 2^n reaches from 7 items.
    assert r["claim"] == ("no detectable difference" if len(rows) >= 7 else "TOO FEW ITEMS")
    assert r["delta_ci95"] == [0.0, 0.0] and r["delta_ci95_cluster"] == [0.0, 0.0]
    assert r["flips_wrong_to_right"] == r["flips_right_to_wrong"] == 0 and r["mcnemar_p"] == 1.0
    json.dumps(r, allow_nan=False)


# ------------------------------------------------------------------------------------------- refusals

MISMATCHES = [
    ("n_samples", {"n_samples": 8}, "n_samples"),
    ("temperature", {"temperature": 0.7}, "temperature"),
    ("top_p", {"top_p": 0.9}, "top_p"),
    ("max_tokens", {"max_tokens": 128}, "max_tokens"),
    ("seed", {"seed": 99}, "seed"),
    ("protocol", {"protocol": {"max_tool_calls": 2}}, "protocol.max_tool_calls"),
    ("suite_revision", {"suite_revision": "v2.0"}, "suite_revision"),
    ("items", {"item_ids": [f"q{i:04d}" for i in range(1, 21)]}, "items"),
]


def _mismatched(tmp_path: Path, change: dict) -> tuple[Path, Path]:
    rng = np.random.default_rng(2)
    pre = write_log(tmp_path / "pre.json", (rng.random((20, 4)) < 0.5).astype(float))
    change = dict(change)
    k = change.get("n_samples", 4)
    post = (rng.random((20, k)) < 0.5).astype(float)
    if "n_samples" in change:
        change.pop("n_samples")
        change["protocol"] = {"k": k}
    return pre, write_log(tmp_path / "post.json", post, **change)


@pytest.mark.parametrize(("name", "change", "field"), MISMATCHES, ids=[m[0] for m in MISMATCHES])
def test_refuses_mismatched_logs_with_one_line_and_exit_2(tmp_path, capsys, name, change, field):
    pre, post = _mismatched(tmp_path, change)
    out = tmp_path / "report"
    code = delta_command.main(["--pre", str(pre), "--post", str(post), "--out", str(out), "--params",
                       str(write_params(tmp_path / "p.yaml"))])  # fmt: skip
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).strip().splitlines()
    assert code == 2
    assert len(lines) == 1, lines
    assert str(pre) in lines[0] and str(post) in lines[0] and field in lines[0]
    assert not out.exists()


def test_greedy_logs_compare_when_one_does_not_record_top_p(tmp_path, capsys):
    # At temperature 0 the nucleus cannot change a sample: lm-eval's greedy runs record no top_p.
    rng = np.random.default_rng(4)
    greedy = {"temperature": 0.0, "protocol": {"temperature": 0.0}}
    pre = write_log(tmp_path / "pre.json", (rng.random((20, 1)) < 0.5).astype(float), **greedy)
    post = write_log(tmp_path / "post.json", (rng.random((20, 1)) < 0.5).astype(float), top_p=None, **greedy)
    out = tmp_path / "report"
    params = str(write_params(tmp_path / "p.yaml"))
    assert (
        delta_command.main(["--pre", str(pre), "--post", str(post), "--out", str(out), "--params", params])
        == 0
    )
    # Sampled, the same gap is refused: top_p then shapes every sample.
    pre = write_log(tmp_path / "pre1.json", (rng.random((20, 1)) < 0.5).astype(float))
    post = write_log(tmp_path / "post1.json", (rng.random((20, 1)) < 0.5).astype(float), top_p=None)
    args = ["--pre", str(pre), "--post", str(post), "--out", str(tmp_path / "r2"), "--params", params]
    assert delta_command.main(args) == 2 and not (tmp_path / "r2").exists()
    assert "top_p differs (1.0 vs None)" in capsys.readouterr().err


SUITE_PIN, QUESTIONS_PIN = "sha256:" + "5" * 64, "sha256:" + "6" * 64
MODEL_A, MODEL_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
# What two logs of one suite and protocol must also share, and what a pre/post pair must not.
ACROSS = [
    ("suite pin", {"pins": {"suite": "sha256:" + "0" * 64}}, "pins.suite differs"),
    ("questions pin", {"pins": {"questions": "sha256:" + "0" * 64}}, "pins.questions differs"),
    ("sample seeds", {"seed_offset": 1}, "item 'q0003': samples[2].seed differs (102 vs 103)"),
    ("one model by name", {"model": None, "model_name": "demo-pre"}, "model_name is 'demo-pre' in both"),
    ("one model by pin", {"model": MODEL_A}, f"pins.model is '{MODEL_A}' in both"),
]


def _pinned_log(path: Path, model: str | None, seed_offset: int = 0, pins=None, **fields) -> Path:
    """A log with suite (and model) pins and per-sample seeds 100 + j; seed_offset moves one of them."""
    scores = (np.random.default_rng(3).random((6, 4)) < 0.5).astype(float)
    samples = [
        [{"index": j, "seed": 100 + j + (seed_offset if (i, j) == (3, 2) else 0), "score": scores[i, j]}
         for j in range(4)]
        for i in range(6)
    ]  # fmt: skip
    all_pins = {"suite": SUITE_PIN, "questions": QUESTIONS_PIN, **({"model": model} if model else {})}
    return write_log(path, scores, samples=samples, pins={**all_pins, **(pins or {})}, **fields)


def _pinned_pair(tmp_path: Path, change: dict) -> tuple[Path, Path]:
    change = {"model": MODEL_B, **change}
    pre = _pinned_log(tmp_path / "pre.json", MODEL_A if change["model"] else None)
    return pre, _pinned_log(tmp_path / "post.json", **change)


@pytest.mark.parametrize(("name", "change", "field"), ACROSS, ids=[m[0] for m in ACROSS])
def test_refuses_logs_that_do_not_measure_the_same_thing(tmp_path, name, change, field):
    pre, post = _pinned_pair(tmp_path, change)
    out = tmp_path / "report"
    r = run_cli("analysis.commands.delta", "--pre", str(pre), "--post", str(post), "--out", str(out),
                "--params",
                str(write_params(tmp_path / "p.yaml")))  # fmt: skip
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, lines
    assert str(pre) in lines[0] and str(post) in lines[0] and field in lines[0], lines[0]
    assert not out.exists()


def test_pinned_logs_of_two_models_with_one_seed_list_are_compared(tmp_path):
    pre, post = _pinned_pair(tmp_path, {})
    r = build(pre, post)
    checked = r["matched_protocol"]["fields_checked"]
    assert {"pins.suite", "pins.questions", "samples.seed", "pins.model"} <= set(checked)


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda it: it["samples"][1].update(index=0), "samples[1].index: is 0"),
        (lambda it: it["samples"][2].update(score=1.0 - it["samples"][2]["score"]), "samples[2].score: is"),
    ],
    ids=["duplicate sample index", "sample score disagrees with scores"],
)
def test_a_log_whose_samples_contradict_it_is_refused(tmp_path, edit, field):
    """The headline reads `scores` and the path table the samples: a log where they differ is refused."""
    pre, post = _pinned_pair(tmp_path, {})
    raw = json.loads(post.read_text())
    edit(raw["items"][4])
    post.write_text(json.dumps(raw))
    r = run_cli(
        "analysis.commands.delta", "--pre", str(pre), "--post", str(post), "--out", str(tmp_path / "o")
    )
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, lines
    assert f"{post}: item 'q0004': {field}" in lines[0]
    assert not (tmp_path / "o").exists()


def test_cli_refusal_writes_nothing_and_keeps_an_existing_report(tmp_path):
    pre, post = _mismatched(tmp_path, {"temperature": 0.5})
    out = tmp_path / "report"
    out.mkdir()
    (out / "delta_report.json").write_text("previous report\n")
    r = run_cli("analysis.commands.delta", "--pre", str(pre), "--post", str(post), "--out", str(out),
                "--params",
                str(write_params(tmp_path / "p.yaml")))  # fmt: skip
    assert r.returncode == 2
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert len(lines) == 1 and "temperature" in lines[0] and str(pre) in lines[0] and str(post) in lines[0]
    assert sorted(p.name for p in out.iterdir()) == ["delta_report.json"]
    assert (out / "delta_report.json").read_text() == "previous report\n"


def test_a_log_without_items_is_refused(tmp_path, capsys):
    empty = write_log(tmp_path / "empty.json", np.zeros((0, 2)))
    code = delta_command.main(["--pre", str(empty), "--post", str(empty), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no items" in err[0] and str(empty) in err[0]


def test_invalid_log_is_one_line_naming_the_file(tmp_path, capsys):
    good = write_log(tmp_path / "good.json", np.ones((3, 2)))
    bad = tmp_path / "bad.json"
    raw = json.loads(good.read_text())
    raw["items"][1]["scores"] = [1.0, 2.0]
    bad.write_text(json.dumps(raw))
    code = delta_command.main(["--pre", str(good), "--post", str(bad), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and str(bad) in err[0] and "scores" in err[0]
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------- settings


def test_settings_come_from_params_with_the_protocol_seed(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("protocol: {seed: 1234}\nanalysis: {n_boot: 300, fdr: 0.1}\n")
    assert read_settings(p) == AnalysisSettings(
        n_boot=300, n_perm=10_000, alpha=0.05, fdr=0.1, min_effect=0.01, seed=1234
    )
    p.write_text("analysis: {n_boot: 300, seed: 5}\n")
    assert read_settings(p).seed == 5
    p.write_text("analysis: {n_bootstrap: 300}\n")
    with pytest.raises(Exception, match="analysis.n_bootstrap: unknown key .*did you mean 'n_boot'"):
        read_settings(p)
    with pytest.raises(Exception, match="params file not found"):
        read_settings(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("analysys: {n_boot: 300}\n", r"params.yaml: analysys: unknown key .*known keys here: suite, models"),
        (
            "analysis: {n_boot: true}\n",
            r"params.yaml: analysis.n_boot: Input should be a valid integer, got True",
        ),
        (
            "analysis: {alpha: '0.1'}\n",
            r"params.yaml: analysis.alpha: Input should be a valid number, got '0.1'",
        ),
        ("protocol: {seed: 1.5}\n", r"params.yaml: protocol.seed: Input should be a valid integer, got 1.5"),
    ],
)
def test_settings_that_would_be_misread_are_refused(tmp_path, body, message):
    """A typo'd section would leave the defaults running; a bool would run as 1 resample."""
    p = tmp_path / "params.yaml"
    p.write_text(body)
    with pytest.raises(Exception, match=message):
        read_settings(p)


def test_defaults_without_params(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_settings(None) == AnalysisSettings(
        n_boot=10_000, n_perm=10_000, alpha=0.05, fdr=0.05, min_effect=0.01, seed=0
    )


# ------------------------------------------------------------------------------ what the report may claim


@pytest.mark.parametrize("n_items", [1, 3, 6])
def test_too_few_items_to_reach_alpha_make_no_claim(tmp_path, n_items):
    pre, post = np.zeros((n_items, 8)), np.zeros((n_items, 8))
    post[:, :6] = 1  # every item rises: the largest effect these few items can show
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "TOO FEW ITEMS", r["claim_detail"]
    assert f"{n_items} paired items cannot reach p < 0.05 with a sign-flip test" in r["claim_detail"]


def test_seven_items_can_reach_the_holm_level_and_are_claimed(tmp_path):
    pre, post = np.zeros((7, 8)), np.zeros((7, 8))
    post[:, :6] = 1
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "EXPANSION", r["claim_detail"]
    # One sample per item: pass@1 is the only test, at alpha itself, which 6 items reach (2 / 64).
    one_pre, one_post = np.zeros((6, 1)), np.ones((6, 1))
    r1 = build(write_log(tmp_path / "c.json", one_pre), write_log(tmp_path / "d.json", one_post))
    assert r1["claim"] == "UNDETERMINED", r1["claim_detail"]


def test_sharpening_reads_an_unmoved_pass_at_n_as_not_detected(tmp_path):
    pre = np.zeros((80, 8))
    pre[:60, :2] = 1
    post = np.zeros((80, 8))
    post[:60, :7] = 1
    r = build(write_log(tmp_path / "a.json", pre), write_log(tmp_path / "b.json", post))
    assert r["claim"] == "SHARPENING"
    assert "not detected" in r["claim_detail"] and "not capability expansion" not in r["claim_detail"]


def test_one_interval_per_number_with_its_method_named(pair):
    r = build(*pair)
    row1 = r["pass_at_k"][0]
    # With 0/1 scores pass@1 is the mean score: its delta carries the headline interval, not a second one.
    assert row1["delta"] == pytest.approx(r["delta_mean"])
    assert row1["delta_ci95"] == r["delta_ci95"] and r["delta_ci95_method"] in row1["delta_ci95_method"]
    from analysis.rendering.delta_report import delta_markdown

    tables, _ = markdown_view(delta_markdown(DeltaReport.model_validate(r)))
    headline = next(t for t in tables if t[0] == ["quantity", "value"])
    ci_rows = [row for row in headline if "CI of the delta" in row[0] or "bootstrap" in row[0]]
    assert len(ci_rows) == 1 and "bootstrap" in ci_rows[0][0] and r["delta_ci95_method"] in ci_rows[0][0]
    # The claim line quotes the interval of the number it rests on: pass@1's is the headline's.
    quoted = r["pass_at_k"][-1] if r["claim"] == "EXPANSION" else row1
    assert f"{quoted['delta_ci95'][0]:+.4f}" in r["claim_detail"]


def test_p_at_the_permutation_floor_is_printed_as_a_bound(pair):
    from analysis.rendering.delta_report import delta_markdown

    r = build(*pair)
    assert not r["perm_exact"] and r["perm_p"] == pytest.approx(2 / 401)
    text = delta_markdown(DeltaReport.model_validate(r))
    # In a table cell the bound is marked, and the note under the table says what the floor is.
    assert "| <=\u00a00.00499\\* |" in text
    assert "\\*: the floor of the sign-flip test at 400 permutations, 0.00499: no permutation" in text
    assert "| 0.004988 |" not in text


def test_interval_labels_follow_alpha(pair):
    from analysis.rendering.delta_report import delta_markdown

    r = build(*pair, AnalysisSettings(n_boot=400, n_perm=400, seed=7, alpha=0.1))
    text = delta_markdown(DeltaReport.model_validate(r))
    assert "90% CI" in text and "95%" not in text


def test_identical_logs_print_no_zero_mde(tmp_path):
    from analysis.rendering.delta_report import delta_markdown

    rows = np.array([[1, 0, 1], [0, 0, 0]] * 5, float)
    r = build(write_log(tmp_path / "a.json", rows), write_log(tmp_path / "b.json", rows))
    assert r["mde"]["mde"] is None and "no variance" in r["mde"]["reason"]
    text = delta_markdown(DeltaReport.model_validate(r))
    assert "Minimum detectable effect: 0.0000" not in text and "not estimable" in text


def test_power_cli_plans_from_a_pilot_pair_and_refuses_identical_logs(tmp_path):
    from analysis.estimators.power_planning import power_plan

    rng = np.random.default_rng(5)
    pre, logit = synthetic_scores(rng, 60, 4)
    post, _ = synthetic_scores(rng, 60, 4, lift=0.5, base=logit)
    a = write_log(tmp_path / "a.json", pre)
    b = write_log(tmp_path / "b.json", post)
    out = run_cli("analysis.commands.power", "--pilot", str(a), "--post", str(b), "--mde", "0.02")
    assert out.returncode == 0, out.stderr
    plan = power_plan(pre, post, 0.02)
    row = next(line for line in out.stdout.splitlines() if line.endswith("<- the pilot's k"))
    assert f"| {plan.items_by_k[4]:>12,} |" in row and "assumed" not in out.stdout
    same = run_cli("analysis.commands.power", "--pilot", str(a), "--post", str(a), "--mde", "0.02")
    assert same.returncode == 2 and "no variance" in same.stderr and "0.0000" not in same.stdout
    bare = run_cli("analysis.commands.power", "--mde", "0.02")
    assert bare.returncode == 0 and "assumed (not measured): no pilot" in bare.stdout
    assert "4,906" in bare.stdout


def test_the_noise_floor_stands_beside_the_headline_delta(pair, tmp_path):
    from analysis.rendering.delta_report import delta_markdown

    r = build(*pair)
    nf = r["noise_floor"]
    assert nf["half"] == 4 and nf["n_splits"] == 200 and 0 <= nf["false_positive_rate"] <= 1
    tables, _ = markdown_view(delta_markdown(DeltaReport.model_validate(r)))
    headline = [row[0] for row in next(t for t in tables if t[0] == ["quantity", "value"])]
    at = headline.index(next(h for h in headline if h.startswith("95% CI of the delta")))
    assert headline[at + 1].startswith("noise floor: pre against itself, 4 vs 4")
    one = build(
        write_log(tmp_path / "a.json", np.zeros((10, 1))), write_log(tmp_path / "b.json", np.ones((10, 1)))
    )
    assert one["noise_floor"] is None
    assert "no halves" in delta_markdown(DeltaReport.model_validate(one))


def test_budget_curve_shows_a_gain_that_needs_long_generations(tmp_path):
    from analysis.rendering.delta_report import delta_markdown

    rng = np.random.default_rng(8)
    pre = (rng.random((60, 4)) < 0.3).astype(float)
    post = np.maximum(pre, (rng.random((60, 4)) < 0.5).astype(float))
    pre_tok = np.full((60, 4), 10)
    post_tok = np.where(post > pre, 60, 10)  # the newly solved samples need 60 tokens
    a = write_log(tmp_path / "a.json", pre, gen_tokens=pre_tok)
    b = write_log(tmp_path / "b.json", post, gen_tokens=post_tok)
    r = build(a, b)
    curve = {p["budget"]: p for p in r["budget_curve"]}
    assert curve[16]["delta"] == 0.0 and curve[64]["delta"] == pytest.approx(r["delta_mean"])
    assert curve[64]["ci95"] == r["delta_ci95"] and "headline" in curve[64]["ci95_method"]
    assert curve[64]["ci95"][0] > 0
    assert "## Token budget curve" in delta_markdown(DeltaReport.model_validate(r))
