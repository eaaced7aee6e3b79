"""params.yaml `sweep`: a glob over a run's checkpoint folders (verl's global_step_<n>/actor/huggingface,
TRL's checkpoint-<n>) made into models, plain arms, pins and the trajectory, in step order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from analysis.commands import benchmark_table as benchmark_table_command
from analysis.commands import trajectory as trajectory_command
from contract.sweep import SweepError, expand, step_of

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "models"
GRPO_LOGS = ROOT / "examples" / "smollm2-grpo" / "evallogs"


def _checkpoint(folder: Path, source: Path = DEMO / "step-200") -> None:
    folder.mkdir(parents=True)
    for f in source.iterdir():
        shutil.copy(f, folder / f.name)


def test_step_of_reads_verl_trl_and_plain_step_folders() -> None:
    assert step_of("runs/a/global_step_120/actor/huggingface") == 120
    assert step_of("out/checkpoint-500") == 500
    assert step_of("run7/step_3") == 3
    assert step_of("runs/final") is None


def test_verl_and_trl_layouts_expand_in_step_order_not_text_order(tmp_path: Path) -> None:
    for n in (100, 20, 5):
        (tmp_path / f"verl/global_step_{n}/actor/huggingface").mkdir(parents=True)
        (tmp_path / f"trl/checkpoint-{n * 10}").mkdir(parents=True)
    (tmp_path / "trl/runs").mkdir()  # TRL's logging folder: not matched by the glob
    verl = expand({"name": "r", "glob": "verl/global_step_*/actor/huggingface", "base": "base"}, tmp_path)
    assert [(c.arm, c.step) for c in verl] == [("r-step-5", 5), ("r-step-20", 20), ("r-step-100", 100)]
    assert verl[0].path == "verl/global_step_5/actor/huggingface"
    trl = expand({"name": "t", "glob": "trl/checkpoint-*", "base": "base"}, tmp_path)
    assert [c.step for c in trl] == [50, 200, 1000]


def test_a_sweep_that_cannot_be_read_is_refused_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "a/checkpoint-5").mkdir(parents=True)
    (tmp_path / "b/checkpoint-5").mkdir(parents=True)
    (tmp_path / "c/final").mkdir(parents=True)
    with pytest.raises(SweepError, match="both step 5"):
        expand({"name": "r", "glob": "*/checkpoint-5", "base": "base"}, tmp_path)
    with pytest.raises(SweepError, match="names no step"):
        expand({"name": "r", "glob": "c/*", "base": "base"}, tmp_path)
    with pytest.raises(SweepError, match="sweep.globs: unknown key"):
        expand({"name": "r", "globs": "x", "base": "base"}, tmp_path)
    with pytest.raises(SweepError, match="sweep.base: must be a non-empty string"):
        expand({"name": "r", "glob": "x"}, tmp_path)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo's params with a sweep over two verl-style checkpoints, run from a temporary folder."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"]["path"] = str(ROOT / params["suite"]["path"])
    params["rag"].update(corpus=str(ROOT / params["rag"]["corpus"]), index=str(ROOT / "index"))
    params["models"] = {"base": {"path": str(DEMO / "base")}, "trained": {"path": str(DEMO / "trained")}}
    params["arms"] = ["base", "trained"]
    params["sweep"] = {"name": "run", "glob": "ckpt/global_step_*/actor/huggingface", "base": "base"}
    params.pop("trajectory")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _checkpoint(tmp_path / "ckpt/global_step_10/actor/huggingface", DEMO / "trained")
    _checkpoint(tmp_path / "ckpt/global_step_2/actor/huggingface")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_sweep_makes_models_and_plain_arms_in_step_order(world: Path) -> None:
    from pipeline.config import arms_of, known_arms, load_arm, load_params
    from pipeline.settings import compose_settings

    # Hydra composes a swept arm that has no conf/arm file (the run_arm, run_arms and score commands),
    # before anything else has listed the arms.
    settings = compose_settings("run-step-2")
    assert settings.arm == "run-step-2" and settings.arm_node["model"] == "run-step-2"
    params = load_params("params.yaml")
    assert arms_of(params) == ["base", "trained", "run-step-2", "run-step-10"]
    assert params.models["run-step-2"].path == "ckpt/global_step_2/actor/huggingface"
    arm = load_arm("run-step-10")
    assert (arm.model, arm.retrieval, arm.tools, arm.attribution) == (
        "run-step-10",
        False,
        False,
        "parametric",
    )
    assert {"run-step-2", "run-step-10"} <= set(known_arms())


def test_each_swept_checkpoint_is_pinned_as_any_local_model(world: Path) -> None:
    from pipeline.config import load_params
    from pipeline.pins import compute_pins

    pins = compute_pins(load_params("params.yaml"))
    swept = pins["inputs"]["models"]["run-step-10"]
    assert swept["path"] == "ckpt/global_step_10/actor/huggingface"
    # The same bytes as the trained checkpoint it was copied from: the same content hash.
    assert swept["sha256"] == pins["inputs"]["models"]["trained"]["sha256"]
    assert pins["inputs"]["models"]["run-step-2"]["sha256"] != swept["sha256"]
    assert pins["arms"]["run-step-2"]["model"]["path"] == "ckpt/global_step_2/actor/huggingface"


def test_score_sweep_keeps_only_the_sweeps_logs_and_names_a_missing_generations_file(world: Path) -> None:
    from pipeline.config import ConfigError
    from pipeline.score_sweep import main, score_sweep

    out = world / "evallogs" / "sweep"
    out.mkdir(parents=True)
    (out / "run-step-99.json").write_text("{}")  # a checkpoint no longer swept
    with pytest.raises(ConfigError, match="generations/run-step-2.json: no generations of swept arm"):
        score_sweep(Path("params.yaml"), Path("generations"), out, 30.0)
    assert not (out / "run-step-99.json").exists()
    assert main(["--out", str(out)]) == 2


def test_the_trajectory_reads_the_sweep_and_plots_every_metric(tmp_path: Path) -> None:

    logs = tmp_path / "evallogs"
    (logs / "sweep").mkdir(parents=True)
    shutil.copy(GRPO_LOGS / "base.json", logs / "base.json")
    shutil.copy(GRPO_LOGS / "placebo.json", logs / "placebo.json")
    for step in (12, 24, 48):
        shutil.copy(GRPO_LOGS / "sweep" / f"grpo-step-{step}.json", logs / "sweep")
    params = yaml.safe_load((ROOT / "examples/smollm2-grpo/params.yaml").read_text())
    params["arms"] = ["base", "placebo"]
    params["sweep"] = {"name": "grpo", "glob": "none/global_step_*", "base": "base"}
    params["trajectory"] = {"placebo": "placebo"}
    params["analysis"].update(n_boot=200, n_perm=200)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    out = tmp_path / "reports"
    assert (
        trajectory_command.main(
            ["--logs", str(logs), "--out", str(out), "--params", str(tmp_path / "params.yaml")]
        )
        == 0
    )
    report = json.loads((out / "trajectory_report.json").read_text())
    assert report["checkpoints"] == ["base", "grpo-step-12", "grpo-step-24", "grpo-step-48"]
    assert [m["step"] for m in report["metrics"]] == [0, 12, 24, 48]
    assert {"avg", "avg_sd", "maj", "pass_at_k", "pass_hat", "bayes", "bayes_sd"} <= set(report["metrics"][0])
    assert report["reward_contrast"]["arm"] == "grpo-step-48"
    assert (out / "trajectory_metrics.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Paper metrics by step" in (out / "trajectory_report.md").read_text()


def test_the_benchmark_table_lists_arms_then_swept_steps(tmp_path: Path) -> None:

    logs = tmp_path / "evallogs"
    (logs / "sweep").mkdir(parents=True)
    for arm in ("base", "trained"):
        shutil.copy(GRPO_LOGS / f"{arm}.json", logs / f"{arm}.json")
    shutil.copy(GRPO_LOGS / "sweep" / "grpo-step-24.json", logs / "sweep")
    shutil.copy(GRPO_LOGS / "sweep" / "grpo-step-12.json", logs / "sweep")
    params = yaml.safe_load((ROOT / "examples/smollm2-grpo/params.yaml").read_text())
    params["arms"] = ["base", "trained"]
    params["analysis"].update(n_boot=200, n_perm=200)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    out = tmp_path / "table"
    argv = ["--logs", str(logs), "--out", str(out), "--params", str(tmp_path / "params.yaml")]
    assert benchmark_table_command.main(argv) == 0
    table = json.loads((out / "benchmark_table.json").read_text())
    assert [(r["arm"], r["step"]) for r in table["rows"]] == [
        ("base", 0), ("trained", None), ("grpo-step-12", 12), ("grpo-step-24", 24)
    ]  # fmt: skip
    assert table["families"] == ["add", "div", "fraction", "mul", "sub", "two_step", "all"]
    csv_lines = (out / "benchmark_table.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 4 * 7 * 5
    tex = (out / "benchmark_table.tex").read_text()
    assert tex.count("\\toprule") == 5 and "two\\_step" in tex and "grpo-step-12 &" in tex
    md = (out / "benchmark_table.md").read_text()
    assert "| grpo-step-24 (step 24) |" in md and "## Against base: paired deltas" in md


def _with_sweep(world: Path, **changes: object) -> None:
    params = yaml.safe_load((world / "params.yaml").read_text())
    for key, value in changes.items():
        if key == "glob":
            params["sweep"]["glob"] = value
        else:
            params["models"][key] = value
    (world / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def test_an_absolute_glob_is_read_and_one_matching_nothing_is_refused_where_params_is_read(
    world: Path,
) -> None:
    from pipeline.config import ConfigError, load_params, swept_arms, unknown_arm

    _with_sweep(world, glob=str(world / "ckpt/global_step_*/actor/huggingface"))
    params = load_params("params.yaml")
    assert [c.arm for c in params._swept] == ["run-step-2", "run-step-10"] == swept_arms()
    assert params.models["run-step-10"].path == str(world / "ckpt/global_step_10/actor/huggingface")
    _with_sweep(world, glob="ckpt/checkpoint-*")
    with pytest.raises(ConfigError) as e:
        load_params("params.yaml")
    assert "sweep.glob: 'ckpt/checkpoint-*' matches no folder" in str(e.value) and "\n" not in str(e.value)
    # An arm looked up in a params file whose sweep is refused is told the sweep's problem, not "unknown arm".
    assert unknown_arm("run-step-2") == str(e.value)


def test_a_params_model_named_like_a_swept_step_must_be_that_checkpoint(world: Path) -> None:
    from pipeline.config import ConfigError, load_params

    _with_sweep(world, **{"run-step-2": {"path": str(DEMO / "base")}})
    with pytest.raises(
        ConfigError, match=r"models.run-step-2: names .*demo/models/base, but run-step-2 is the "
    ):
        load_params("params.yaml")
    # The same folder under its own entry (a display name, say) is that checkpoint: accepted.
    _with_sweep(world, **{"run-step-2": {"path": "./ckpt/global_step_2/actor/huggingface"}})
    assert load_params("params.yaml").models["run-step-2"].path == "./ckpt/global_step_2/actor/huggingface"


def test_the_swept_arms_are_those_of_the_params_file_the_command_reads(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline import run_arms
    from pipeline.config import known_arms, load_arm
    from pipeline.settings import compose_settings

    (world / "sub").mkdir()
    (world / "params.yaml").rename(world / "sub" / "params.yaml")
    settings = compose_settings("run-step-10", ["params=sub/params.yaml"])
    assert settings.arm_node["model"] == "run-step-10"
    assert load_arm("run-step-10", params="sub/params.yaml").model == "run-step-10"
    assert "run-step-2" in known_arms(params="sub/params.yaml")
    _with_sweep(world / "sub", glob="ckpt/nothing-*")
    with pytest.raises(SystemExit) as e:
        run_arms.main(["--status", "--arms", "run-step-2", "params=sub/params.yaml"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1, err
    assert "sweep.glob: 'ckpt/nothing-*' matches no folder" in err and "rerun" not in err


def test_a_step_whose_checkpoint_folder_was_deleted_keeps_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.score_sweep import score_sweep
    from tests.helpers.scoring import write_world

    _suite, gens, params = write_world(tmp_path)
    raw = yaml.safe_load(params.read_text())
    raw["sweep"] = {"name": "run", "glob": "ckpt/checkpoint-*", "base": "base"}
    params.write_text(yaml.safe_dump(raw))
    for step in (10, 20):
        (tmp_path / f"ckpt/checkpoint-{step}").mkdir(parents=True)
        shutil.copy(gens, tmp_path / "generations" / f"run-step-{step}.json")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "evallogs" / "sweep"
    assert score_sweep(params, Path("generations"), out, 30.0) == [
        out / "run-step-10.json",
        out / "run-step-20.json",
    ]
    shutil.rmtree(tmp_path / "ckpt/checkpoint-20")  # deleted after it was generated and scored
    capsys.readouterr()
    assert score_sweep(params, Path("generations"), out, 30.0) == [
        out / "run-step-10.json",
        out / "run-step-20.json",
    ]
    err = capsys.readouterr().err
    assert (
        "run-step-20: sweep.glob no longer matches its checkpoint folder; scored from its generations" in err
    )
    (tmp_path / "generations" / "run-step-20.json").unlink()  # its generations gone too: the step goes, named
    assert score_sweep(params, Path("generations"), out, 30.0) == [out / "run-step-10.json"]
    assert f"removed {out / 'run-step-20.json'}" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("*.json")) == ["run-step-10.json"]
