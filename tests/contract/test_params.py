"""contract.params: params.yaml's `analysis` and `trajectory` sections typed once, so the pipeline's first
stage (pipeline.config.load_params) and the analyses (analysis.reports.settings, .trajectory) refuse a value
in the same words, one line naming the file and the field, and fall back to the same defaults."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis.reports.refusal import Refusal
from analysis.reports.settings import AnalysisSettings, read_arm_list, read_settings, read_swept
from analysis.reports.trajectory import read_trajectory
from contract.params import AnalysisParams
from demo.worlds import ROOT
from pipeline.config import ConfigError, load_params


def params_with(tmp_path: Path, **sections: Any) -> Path:
    """The repository's params.yaml with some top-level sections replaced."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({**raw, **sections}, sort_keys=False))
    return path


def both_refusals(path: Path, read: Any) -> tuple[str, str]:
    """What load_params and the analysis' reader say of one params file."""
    with pytest.raises(ConfigError) as pipeline:
        load_params(path)
    with pytest.raises(Refusal) as analysis:
        read(path)
    return str(pipeline.value), str(analysis.value)


@pytest.mark.parametrize(
    ("analysis", "says"),
    [
        ({"n_bootstrap": 300}, "analysis.n_bootstrap: unknown key (a typo?); did you mean 'n_boot'?"),
        ({"n_boot": True}, "analysis.n_boot: Input should be a valid integer, got True"),
        ({"alpha": 1.5}, "analysis.alpha = 1.5 must lie strictly between 0 and 1"),
        ({"n_perm": 50}, "analysis.n_perm = 50 is too few for alpha = 0.05"),
        ({"min_effect": float("nan")}, "analysis.min_effect = nan must be a number in [0, 1)"),
        (
            {"max_failed_tool_calls": 2},
            "analysis.max_failed_tool_calls = 2.0 must be a share between 0 and 1",
        ),
    ],
)
def test_an_analysis_setting_is_refused_alike_by_the_pipeline_and_the_analyses(
    tmp_path: Path, analysis: dict[str, Any], says: str
) -> None:
    path = params_with(tmp_path, analysis=analysis)
    pipeline, report = both_refusals(path, read_settings)
    assert pipeline == report and pipeline.startswith(f"{path}: {says}") and "\n" not in pipeline


@pytest.mark.parametrize(
    ("trajectory", "says"),
    [
        ({"checkpoints": ["base"]}, "trajectory.checkpoints: must list at least two arms in training order"),
        ({"checkpoints": ["base", "trained", "base"]}, "trajectory.checkpoints: an arm is listed twice"),
        ({"checkpoints": ["base", "trained"], "placebo": "base"}, "trajectory.placebo: must be one arm that"),
        (
            {"checkpoints": ["base", "trained"], "placbo": "x"},
            "trajectory.placbo: unknown key (a typo?); did",
        ),
    ],
)
def test_a_trajectory_is_refused_alike_by_the_pipeline_and_the_analyses(
    tmp_path: Path, trajectory: dict[str, Any], says: str
) -> None:
    path = params_with(tmp_path, trajectory=trajectory)
    pipeline, report = both_refusals(path, lambda p: read_trajectory(p, tmp_path))
    assert pipeline == report and pipeline.startswith(f"{path}: {says}") and "\n" not in pipeline


def test_a_trajectory_without_checkpoints_needs_a_sweep(tmp_path: Path) -> None:
    path = params_with(tmp_path, trajectory={"placebo": "placebo"})
    with pytest.raises(Refusal, match=r"trajectory.checkpoints: must list at least two arms .*; got None"):
        read_trajectory(path, tmp_path)
    assert load_params(path).trajectory is not None  # a sweep may still name them: not the pipeline's call


def test_the_analyses_defaults_are_the_sections(tmp_path: Path) -> None:
    path = params_with(tmp_path, analysis={"n_boot": 400}, protocol={"seed": 7})
    assert asdict(AnalysisSettings()) == {**AnalysisParams().model_dump(), "seed": 0}
    assert read_settings(path) == AnalysisSettings(n_boot=400, seed=7)
    assert read_settings(params_with(tmp_path, analysis={"seed": 3})).seed == 3
    assert read_trajectory(
        params_with(tmp_path, trajectory={"checkpoints": ["base", "trained"]}), tmp_path
    ) == (
        ["base", "trained"],
        None,
    )


@pytest.mark.parametrize(
    ("sweep", "says"),
    [
        (
            {"name": "r", "globs": "x", "base": "base"},
            "sweep.globs: unknown key (a typo?); did you mean 'glob'?",
        ),
        ({"name": "r", "glob": "x"}, "sweep.base: must be a non-empty string (e.g. base)"),
        ({"name": "r s", "glob": "x", "base": "base"}, "sweep.name: 'r s' must be letters, digits"),
    ],
)
def test_a_sweep_is_refused_alike_by_the_pipeline_and_the_analyses(
    tmp_path: Path, sweep: dict[str, Any], says: str
) -> None:
    path = params_with(tmp_path, sweep=sweep)
    pipeline, report = both_refusals(path, lambda p: read_swept(p, tmp_path))
    assert pipeline == report and pipeline.startswith(f"{path}: {says}") and "\n" not in pipeline


@pytest.mark.parametrize(
    ("arms", "says"),
    [
        ([], "arms: the list is empty; name the arms to run"),
        (["base", "trained", "base"], "arms: 'base' is listed twice; list each arm once"),
        ("base", "arms: Input should be a valid list, got 'base'"),
    ],
)
def test_an_arm_list_is_refused_alike_by_the_pipeline_and_the_analyses(
    tmp_path: Path, arms: Any, says: str
) -> None:
    path = params_with(tmp_path, arms=arms)
    pipeline, report = both_refusals(path, read_arm_list)
    assert pipeline == report and pipeline.startswith(f"{path}: {says}") and "\n" not in pipeline
