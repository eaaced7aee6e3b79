"""Settings that would make a statistic meaningless, or that vLLM refuses only after its engine has started,
are refused where they are read: one line naming the file, the key and the fix (exit 2 from a command).
A report of logs decoded greedily with k > 1 says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import numpy as np
import pytest
import yaml

from analysis.commands import arm_comparison as arm_comparison_command
from analysis.commands import delta as delta_command
from analysis.commands.compare_logs import main as compare_main
from analysis.rendering import delta_report as delta_rendering
from analysis.reports import arm_comparison, delta
from analysis.reports.refusal import Refusal
from analysis.reports.report_models import DeltaReport
from analysis.reports.settings import AnalysisSettings, read_arm_list, read_settings
from contract.evallog import EvalLog
from demo.worlds import ROOT
from pipeline import pins
from pipeline.config import ConfigError, load_params
from pipeline.prompts import check_uses_question, compile_template, render_template
from tests.helpers.evallogs import synthetic_scores, write_log


def _analysis_params(tmp_path: Path, **analysis: object) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"protocol": {"seed": 1}, "analysis": analysis}))
    return path


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("n_boot", 1, "analysis.n_boot = 1 is too few for alpha = 0.05"),
        ("n_boot", 199, "set analysis.n_boot: 200 or more"),
        ("n_perm", 10, "analysis.n_perm = 10 is too few"),
        ("min_effect", float("nan"), "analysis.min_effect = nan must be a number in [0, 1)"),
        ("min_effect", float("inf"), "analysis.min_effect = inf must be a number in [0, 1)"),
        ("min_effect", 1.0, "analysis.min_effect = 1.0 must be a number in [0, 1)"),
    ],
)
def test_an_analysis_setting_that_makes_a_statistic_meaningless_is_refused(
    tmp_path: Path, setting: str, value: object, says: str
) -> None:
    path = _analysis_params(tmp_path, **{setting: value})
    with pytest.raises(Refusal) as e:
        read_settings(path)
    assert str(e.value).startswith(f"{path}: analysis.{setting}") and says in str(e.value), e.value
    assert "\n" not in str(e.value)


def test_the_fewest_resamples_allowed_still_run(tmp_path: Path) -> None:
    s = read_settings(_analysis_params(tmp_path, n_boot=200, n_perm=200, min_effect=0.0))
    assert (s.n_boot, s.n_perm, s.min_effect) == (200, 200, 0.0)
    assert read_settings(_analysis_params(tmp_path, n_boot=1000, alpha=0.01)).n_boot == 1000
    with pytest.raises(Refusal, match=r"n_boot = 400 is too few for alpha = 0.01"):
        read_settings(_analysis_params(tmp_path, n_boot=400, alpha=0.01))


def test_the_delta_command_exits_2_on_n_boot_1_and_writes_nothing(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(0)
    pre = write_log(tmp_path / "pre.json", synthetic_scores(rng, 30, 4)[0])
    post = write_log(tmp_path / "post.json", synthetic_scores(rng, 30, 4)[0])
    params = _analysis_params(tmp_path, n_boot=1)
    out = tmp_path / "out"
    code = delta_command.main(
        ["--pre", str(pre), "--post", str(post), "--out", str(out), "--params", str(params)]
    )
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "analysis.n_boot = 1" in err, err
    assert compare_main([str(pre), str(post), "--out", str(out), "--n-boot", "1"]) == 2
    assert "--n-boot 1" in capsys.readouterr().err and not out.exists()


def _greedy_logs(folder: Path, temperature: float) -> tuple[Path, Path]:
    """Logs of base and trained with k = 4 copies of one answer per item, at this temperature."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    one = synthetic_scores(rng, 40, 1)[0]
    two = synthetic_scores(rng, 40, 1)[0]
    fields = {"temperature": temperature}
    proto = {"temperature": temperature}
    pre = write_log(folder / "base.json", np.repeat(one, 4, axis=1), protocol=proto, **fields)
    post = write_log(folder / "trained.json", np.repeat(two, 4, axis=1), protocol=proto, **fields)
    return pre, post


def _delta(pre: Path, post: Path, settings: AnalysisSettings) -> DeltaReport:
    read = EvalLog.model_validate_json
    return delta.build(str(pre), read(pre.read_text()), str(post), read(post.read_text()), settings)


def test_a_report_of_greedy_logs_with_k_above_1_says_its_pass_at_k_is_not_of_draws(tmp_path: Path) -> None:
    settings = AnalysisSettings(n_boot=400, n_perm=400, seed=7)
    report = _delta(*_greedy_logs(tmp_path, 0.0), settings)  # base.json, trained.json in tmp_path
    note = [n for n in report.notes if n.startswith("temperature 0 (greedy decoding)")]
    assert note and "k = 4 samples of an item are one answer repeated" in note[0], report.notes
    assert "temperature 0 (greedy decoding)" in delta_rendering.outputs(report)["delta_report.md"].decode()
    sampled = _delta(*_greedy_logs(tmp_path / "sampled", 1.0), settings)
    assert not [n for n in sampled.notes if "greedy" in n]
    comparison = arm_comparison.build(str(tmp_path), settings).model_dump()
    assert any(n.startswith("temperature 0 (greedy decoding)") for n in comparison["notes"])


def _params(tmp_path: Path, **changes: object) -> Path:
    """The repository's params.yaml with protocol keys or top-level sections changed."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, value in changes.items():
        if key in raw["protocol"] or key in ("stop", "prompt", "prompt_template"):
            raw["protocol"][key] = value
        else:
            raw[key] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"temperature": 0.0}, "protocol.k: 8 samples at protocol.temperature: 0 are one greedy answer"),
        ({"temperature": float("inf")}, "protocol.temperature: Input should be a finite number"),
        ({"stop": [""]}, "protocol.stop.0: String should have at least 1 character"),
        ({"arms": []}, "arms: the list is empty"),
        ({"arms": ["base", "trained", "+rag", "+rag"]}, "arms: '+rag' is listed twice"),
        (
            {"prompt": "../../../../../tmp/x"},
            "protocol.prompt: '../../../../../tmp/x' is not the name of a preset",
        ),
    ],
)
def test_a_protocol_or_arm_list_that_cannot_run_is_refused_by_the_first_stage(
    tmp_path: Path, changes: dict[str, object], says: str, capsys
) -> None:
    path = _params(tmp_path, **changes)
    with pytest.raises(ConfigError) as e:
        load_params(path)
    assert str(e.value).startswith(f"{path}: ") and says in str(e.value), e.value
    # The pin stage, the first that reads params.yaml under dvc repro: exit 2, one line, nothing written.
    out = tmp_path / "pins"
    assert pins.main(["--params", str(path), "--out", str(out), "--hash-cache", "none"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and not out.exists(), err


def test_greedy_decoding_at_k_1_is_accepted(tmp_path: Path) -> None:
    assert load_params(_params(tmp_path, temperature=0.0, k=1)).protocol.k == 1


def test_the_analyses_refuse_an_empty_or_repeated_arm_list(tmp_path: Path) -> None:
    for arms, says in (([], "the list is empty"), (["base", "base"], "'base' is listed twice")):
        path = tmp_path / "params.yaml"
        path.write_text(json.dumps({"arms": arms}))
        with pytest.raises(Refusal, match=f"^{path}: arms: {says}"):
            read_arm_list(path)
        assert (
            arm_comparison_command.main(
                ["--logs", str(tmp_path), "--out", str(tmp_path / "o"), "--params", str(path)]
            )
            == 2
        )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{{ 1/0 }} {{ question }}", "ZeroDivisionError"),
        ("{% include 'other.jinja' %}{{ question }}", "cannot render"),
        ("{% extends 'base.jinja' %}", "cannot render"),
        ("{% for i in range(10**9) %}{% endfor %}{{ question }}", "OverflowError"),
    ],
)
def test_a_runtime_error_of_a_prompt_template_is_one_line_naming_the_file(text: str, says: str) -> None:
    template = compile_template(text, "my.jinja")
    with pytest.raises(ConfigError) as e:
        render_template(template, "my.jinja", "What is 2 + 2?", [], [], [])
    assert str(e.value).startswith("my.jinja: cannot render (") and says in str(e.value), e.value
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["", "Answer the question.\nAnswer:", "{{ examples | length }}"])
def test_a_prompt_template_that_never_uses_the_question_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^my.jinja: renders the same prompt whatever the question"):
        check_uses_question(compile_template(text, "my.jinja"), "my.jinja", [], [])
    check_uses_question(compile_template("Q: {{ question | upper }}\nA:", "ok.jinja"), "ok.jinja", [], [])


def test_every_shipped_preset_uses_the_question() -> None:
    for path in sorted((ROOT / "conf" / "prompt").glob("*.jinja")):
        template = compile_template(path.read_text(), str(path))
        shot = type("Shot", (), {"id": "e1", "question": "1 + 1?", "answer": "2"})()
        check_uses_question(template, str(path), [], [shot])


def test_jinja_is_the_sandbox() -> None:
    assert isinstance(
        compile_template("{{ question }}", "t").environment, jinja2.sandbox.SandboxedEnvironment
    )
