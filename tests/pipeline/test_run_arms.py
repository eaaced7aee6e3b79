"""Every arm, one engine per model (pipeline.run_arms), and the up-to-date check that keeps per-arm staleness.

The engine here is the transformers one (conf/engine/hf.yaml) on an untrained tiny checkpoint: a real engine
that starts in about a second, so the skip logic is tested without a vLLM start; the DVC tests check the
same with vLLM on the demo world (two engine starts for seven arms).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world
from pipeline.config import engine_config
from pipeline.engines import engines_started, release_engine
from pipeline.generate import run
from pipeline.run_arms import by_model


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """python -m pipeline.run_arms ARGS in cwd."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.run_arms", *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_arms_are_grouped_by_model_in_order_of_first_appearance() -> None:
    models = {"base": "m0", "trained": "m1", "+rag": "m0", "trained+rag": "m1", "+tools": "m0"}
    assert by_model(["base", "trained", "+rag", "trained+rag", "+tools"], models) == [
        ("m0", ["base", "+rag", "+tools"]),
        ("m1", ["trained", "trained+rag"]),
    ]


def test_an_up_to_date_arm_starts_no_engine_and_a_changed_input_regenerates_it(
    tmp_path: Path, untrained_checkpoint: Path, capsys
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    hf = engine_config("hf")
    try:
        first = run(w.settings("base", engine=hf))
        text, started = first.read_bytes(), engines_started()
        assert "base: generating (not generated yet)" in capsys.readouterr().out

        assert run(w.settings("base", engine=hf)) == first
        assert "base: up to date" in capsys.readouterr().out
        assert engines_started() == started and first.read_bytes() == text

        # force=true regenerates on the running engine, and gives the same bytes (per-sample seeds).
        run(w.settings("base", engine=hf, force=True))
        assert "base: generating (force=true)" in capsys.readouterr().out
        assert first.read_bytes() == text

        params = yaml.safe_load(w.params.read_text())
        params["protocol"]["k"] = 1
        w.params.write_text(yaml.safe_dump(params))
        run(w.settings("base", engine=hf))
        assert "base: generating (its inputs changed)" in capsys.readouterr().out
        assert first.read_bytes() != text

        # A damaged file is not trusted: it is generated again.
        first.write_text("{")
        run(w.settings("base", engine=hf))
        assert "base: generating (unreadable" in capsys.readouterr().out
    finally:
        release_engine()


def test_status_names_what_would_be_generated_and_generates_nothing(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    where = [f"params={w.params}", f"pins={w.pins}", f"out_dir={w.out_dir}"]
    res = _cli(["--status", "--arms", "base", *where], tmp_path)
    assert res.returncode == 0, res.stderr
    assert re.search(r"^  base +to generate: not generated yet$", res.stdout, flags=re.M), res.stdout
    assert not w.out_dir.exists()
    res = _cli(["--arms", "base", "engine=hf", "progress=false", *where], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "run_arms: done; 1 engine started" in res.stdout
    res = _cli(["--status", "--arms", "base", "engine=hf", *where], tmp_path)
    assert re.search(r"^  base +up to date$", res.stdout, flags=re.M), res.stdout
    res = _cli(["--arms", "base", "engine=hf", *where], tmp_path)
    assert "run_arms: done; 0 engines started" in res.stdout and "base: up to date" in res.stdout


def test_a_hand_edit_that_still_validates_is_stale_for_the_runner_and_refused_by_scoring(
    tmp_path: Path, untrained_checkpoint: Path, capsys
) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), k=2, max_tokens=4)
    hf = engine_config("hf")
    try:
        path = run(w.settings("base", engine=hf))
        original = path.read_text()
        raw = json.loads(original)
        raw["items"][0]["samples"][0]["text"] = " 4"  # validates: only the seal can tell
        path.write_text(json.dumps(raw, indent=1))
        where = [f"params={w.params}", f"pins={w.pins}", f"out_dir={w.out_dir}"]
        res = _cli(["--status", "--arms", "base", "engine=hf", *where], tmp_path)
        assert res.returncode == 0, res.stderr
        assert re.search(r"^  base +to generate: stale \(.*content_sha256: does not match", res.stdout, re.M)

        out = tmp_path / "log.json"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = [
            "--generations",
            str(path),
            "--suite",
            str(w.suite),
            "--out",
            str(out),
            "--params",
            str(w.params),
        ]
        res = subprocess.run([sys.executable, "-m", "pipeline.score", *args], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith(f"score: {path}: content_sha256: does not match") and not out.exists()

        capsys.readouterr()
        run(w.settings("base", engine=hf))
        assert "base: generating (stale (" in capsys.readouterr().out
        assert path.read_text() == original
    finally:
        release_engine()


def test_cli_refuses_an_arm_override_and_an_unknown_arm_in_one_line(tmp_path: Path) -> None:
    for args, expected in (
        (["arm=base"], "run_arms: the arms come from --arms or params.yaml arms; drop the arm= override"),
        (["--arms", "base,nope"], "run_arms: unknown arm 'nope' (no conf/arm/nope.yaml); known arms: "),
        # An arm name written without its '+' (an augmentation of base) is the commonest slip.
        (
            ["--arms", "rag"],
            "run_arms: unknown arm 'rag' (no conf/arm/rag.yaml; did you mean '+rag'?); known ",
        ),
        (
            ["--arms", "trianed"],
            "run_arms: unknown arm 'trianed' (no conf/arm/trianed.yaml; did you mean 'trained'?)",
        ),
        (["nokey=1"], "run_arms: bad override: "),
    ):
        res = _cli(args, tmp_path)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and res.stderr.startswith(expected), res.stderr
    assert list(tmp_path.iterdir()) == []


def test_any_number_of_models_one_engine_each_from_the_arm_files(tmp_path: Path) -> None:
    from pipeline.config import load_arm, load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["models"] |= {
        "step-200": {"path": "demo/models/step-200"},
        "placebo": {"path": "demo/models/placebo"},
    }
    params["arms"] = ["base", "step-200", "trained", "placebo", "+rag"]
    params["trajectory"] = {"checkpoints": ["base", "step-200", "trained"], "placebo": "placebo"}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    loaded = load_params(path)
    assert list(loaded.models) == ["base", "trained", "step-200", "placebo"]
    models = {a: load_arm(a).model for a in loaded.arms or []}
    assert all(m in loaded.models for m in models.values())
    assert by_model(loaded.arms or [], models) == [
        ("base", ["base", "+rag"]),
        ("step-200", ["step-200"]),
        ("trained", ["trained"]),
        ("placebo", ["placebo"]),
    ]
