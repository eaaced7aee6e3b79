"""The GRPO world (examples/smollm2-grpo/): GRPO with the verifier's reward, its placebo, the trajectory.

The fast tests read the committed run: training problems disjoint from the suite, the placebo's coin, the
checkpoints named in training order, the logs of both runs step for step, the adapters' size. The slow
ones rebuild every checkpoint (on the SmolLM2 world's base, built once a session) and compare its sha256
with README.md's, and run a reduced run end to end on the repository's tiny checkpoint: training, placebo,
build, generation, scoring and the trajectory report.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from contract.digest import file_sha256
from contract.jsonl import read_jsonl
from tests.helpers.worlds import link_or_copy, world_env

ROOT = Path(__file__).resolve().parents[2]
WORLD = ROOT / "examples" / "smollm2-grpo"
TINY = ROOT / "tests" / "checkpoints" / "arith-v1"


def _module(name: str, path: Path):  # noqa: ANN202  (a module loaded from a file)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


grpo = _module("smollm2_grpo", WORLD / "grpo.py")
build = _module("smollm2_grpo_build", WORLD / "build.py")
problems = grpo.world


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def _params() -> dict:
    return yaml.safe_load((WORLD / "params.yaml").read_text())


def test_the_training_problems_are_disjoint_from_the_suite() -> None:
    suite = [row for _, row in read_jsonl(grpo.SUITE)]
    questions = {item["question"] for item in suite}
    assert len(questions) == len(suite) and {i["verifier"]["type"] for i in suite} == {"math"}
    # The committed suite is the one the shared generator writes, and params.yaml evaluates it.
    assert problems.problems(len(suite) // len(problems.FAMILIES), problems.SUITE_SEED) == suite
    assert WORLD / _params()["suite"]["path"] == grpo.SUITE
    settings = json.loads((WORLD / "logs" / "verifier.txt").read_text().splitlines()[1].split(": ", 1)[1])
    train = grpo.train_problems(settings["problems"], settings["seed"])
    assert len(train) == settings["problems"] and len({p["question"] for p in train}) == len(train)
    assert not questions & {p["question"] for p in train}
    # Interleaved: the first steps already see every family.
    assert {p["family"] for p in train[: len(problems.FAMILIES)]} == set(problems.FAMILIES)


def test_the_audits_training_questions_are_the_runs_problems() -> None:
    # export_prompts.py wrote them; the contamination audit (params.yaml) checks the suite against them.
    settings = json.loads((WORLD / "logs" / "verifier.txt").read_text().splitlines()[1].split(": ", 1)[1])
    train = grpo.train_problems(settings["problems"], settings["seed"])
    exported = [row for _, row in read_jsonl(WORLD / "train_prompts.jsonl")]
    assert [r["question"] for r in exported] == [p["question"] for p in train]
    audit = _params()["contamination"]
    assert audit["training_data"] == [{"path": "train_prompts.jsonl", "field": "question"}]


def test_the_placebo_reward_is_a_seeded_coin_that_ignores_the_completion() -> None:
    coin = grpo.random_reward(0.375, 7)
    ids = [f"add-{i:03d}" for i in range(250) for _ in range(4)]
    state = SimpleNamespace(global_step=3)
    a = coin(["right"] * len(ids), item_id=ids, trainer_state=state)
    assert a == coin(["other text"] * len(ids), item_id=ids, trainer_state=state)
    assert set(a) == {0.0, 1.0} and abs(sum(a) / len(a) - 0.375) < 0.05
    # Another step (or seed) draws other coins; within a group the four draws are not one copied draw.
    assert a != coin(["right"] * len(ids), item_id=ids, trainer_state=SimpleNamespace(global_step=4))
    assert a != grpo.random_reward(0.375, 8)(["right"] * len(ids), item_id=ids, trainer_state=state)
    assert any(len(set(a[i : i + 4])) == 2 for i in range(0, len(a), 4))


def test_the_verifier_reward_is_the_math_verifier() -> None:
    reward = grpo.verifier_reward(chat=True)
    kw = {
        "item_id": ["f-1"] * 3,
        "family": ["fraction"] * 3,
        "question": ["q"] * 3,
        "answer": ["\\frac{3}{4}"] * 3,
    }
    texts = ["So the answer is \\boxed{\\frac{3}{4}}.", "That is 0.75 of it. \\boxed{0.75}", "\\boxed{4}"]
    assert reward(texts, **kw) == [1.0, 1.0, 0.0]


def test_the_rewarded_runs_checkpoints_are_swept_in_training_order_with_the_placebo_last() -> None:
    params = _params()
    assert params["arms"] == ["base", "trained", "placebo"] and params["protocol"]["k"] >= 4
    assert params["trajectory"] == {"placebo": "placebo"}  # the checkpoints: the sweep's, base first
    sweep = params["sweep"]
    assert sweep == {
        "name": "grpo",
        "glob": "checkpoints/verifier/global_step_*/actor/huggingface",
        "base": "base",
    }
    for arm in ("trained", "placebo"):
        assert params["models"][arm]["path"] == f"models/{arm}"
        assert yaml.safe_load((ROOT / "conf" / "arm" / f"{arm}.yaml").read_text())["model"] == arm
    # build.py lays each rewarded checkpoint out at its adapter's step, as verl names its folders.
    for arm, step in build.RUN_STEPS.items():
        assert build.CHECKPOINTS[arm] == f"adapters/verifier/step-{step}"
    steps = list(build.RUN_STEPS.values())
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    # The saved steps are 25%, 50% and 100% of the run; the placebo's adapter is of the same last step.
    rows = _csv(WORLD / "logs" / "verifier.csv")
    assert steps == grpo.checkpoint_steps(len(rows))
    assert build.CHECKPOINTS["placebo"] == f"adapters/random/step-{steps[-1]}"
    assert build.RUN_STEPS["trained"] == steps[-1]


def test_both_runs_logged_the_same_steps_and_the_placebo_rate_is_the_first_step_reward() -> None:
    real, fake = _csv(WORLD / "logs" / "verifier.csv"), _csv(WORLD / "logs" / "random.csv")
    assert [r["step"] for r in real] == [r["step"] for r in fake] == [str(i) for i in range(1, len(real) + 1)]
    for rows in (real, fake):
        assert all(r["reward"] and r["kl"] and r["completion_length"] for r in rows)
    rate = float(re.search(r"P\(1\) = ([0-9.]+)", (WORLD / "logs" / "random.txt").read_text()).group(1))
    assert rate == pytest.approx(grpo.first_step_rate(WORLD / "logs" / "verifier.csv"), abs=1e-4)
    # Same settings apart from the reward (and the placebo's rate).
    settings = [json.loads((WORLD / "logs" / f"{r}.txt").read_text().splitlines()[1].split(": ", 1)[1])
                for r in ("verifier", "random")]  # fmt: skip
    for s in settings:
        for key in ("reward", "rate", "stop_file", "steps"):
            s.pop(key)
    assert settings[0] == settings[1]


def test_the_adapters_are_small_and_no_weights_are_committed() -> None:
    files = subprocess.run(
        ["git", "ls-files", "examples/smollm2-grpo"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [f for f in files if Path(f).name in ("model.safetensors", "pytorch_model.bin")]
    adapters = [ROOT / f for f in files if f.endswith("adapter_model.safetensors")]
    assert len(adapters) == len(build.CHECKPOINTS)
    assert sum(a.stat().st_size for a in adapters) < 20 * 2**20


def _readme_sha256() -> dict[str, str]:
    text = (WORLD / "README.md").read_text()
    return dict(re.findall(r"^\| `([\w-]+)` \| `([0-9a-f]{64})` \|", text, re.M))


@pytest.mark.slow
def test_every_rebuilt_checkpoint_has_the_readmes_sha256(tmp_path: Path, smollm2_checkpoints: Path) -> None:
    expected = _readme_sha256()
    assert set(expected) == {"base", *build.CHECKPOINTS}
    # The base is the SmolLM2 world's (build.py imports its build_base): that world's build, made once a
    # session, is this base; the four checkpoints are merged into it here by this world's build.py.
    (tmp_path / "base").mkdir()
    for f in (smollm2_checkpoints / "base").iterdir():
        link_or_copy(str(f), str(tmp_path / "base" / f.name))
    done = subprocess.run(
        [sys.executable, str(WORLD / "build.py"), "--models", str(tmp_path), "--keep-base", "--sha256"],
        env=world_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = dict(line.split() for line in done.stdout.splitlines() if re.fullmatch(r"\S+  [0-9a-f]{64}", line))
    got["base"] = file_sha256(tmp_path / "base" / "model.safetensors")
    assert got == expected


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, env=world_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done.stdout + done.stderr


# The world's scripts, each through its main(argv) as `python <script> ...` runs it, one after another in one
# Python process: grpo.py imports trl (which imports vLLM) and build.py peft, about 10 s of a CPU each time,
# paid here once for the three runs instead of once per run. A script that returns non-zero stops the rest.
_SCRIPTS = """
import importlib.util, json, sys
for name, script, argv in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if module.main(argv) != 0:
        sys.exit(f"{script} {' '.join(argv)}: failed")
"""


def _run_scripts(runs: list[tuple[str, list[str]]], cwd: Path) -> str:
    """Run each (world script, its arguments) in turn in one Python process (see _SCRIPTS); its output."""
    calls = [[f"world_script_{n}", str(WORLD / script), argv] for n, (script, argv) in enumerate(runs)]
    return _run([sys.executable, "-c", _SCRIPTS, json.dumps(calls)], cwd)


@pytest.mark.slow
def test_a_reduced_run_trains_the_placebo_and_writes_the_trajectory(tmp_path: Path) -> None:
    """4 steps of 2 problems x 2 completions of 8 tokens on the tiny checkpoint, then 3 items at k = 2."""
    py = sys.executable
    small = ["--base", str(TINY), "--logs", str(tmp_path / "logs"), "--steps", "4", "--problems", "8"]
    small += ["--prompts", "2", "--generations", "2", "--max-tokens", "8"]
    train = [
        ("grpo.py", ["--reward", reward, "--out", str(tmp_path / "adapters" / reward), *small])
        for reward in ("verifier", "random")
    ]
    models = tmp_path / "world" / "models"
    shutil.copytree(TINY, models / "base")
    pairs = dict(
        zip(
            build.CHECKPOINTS,
            ["verifier/step-1", "verifier/step-2", "verifier/step-4", "random/step-4"],
            strict=True,
        )
    )
    flags = [f"--checkpoint={arm}=adapters/{a}" for arm, a in pairs.items()]
    build_args = ["--models", str(models), "--adapters", str(tmp_path), "--keep-base"]
    build_args += ["--run-layout", str(tmp_path / "world" / "checkpoints" / "verifier"), *flags]
    # The two training runs (the placebo reads the rewarded run's first-step reward), then the build.
    _run_scripts([*train, ("build.py", build_args)], WORLD)
    real, fake = _csv(tmp_path / "logs" / "verifier.csv"), _csv(tmp_path / "logs" / "random.csv")
    assert len(real) == len(fake) == 4
    # The placebo's coin came up at the rewarded run's first-step rate (0 here: the tiny model is wrong).
    assert f"P(1) = {float(real[0]['reward']):.4f}" in (tmp_path / "logs" / "random.txt").read_text()
    assert sorted(p.name for p in (tmp_path / "adapters" / "verifier").glob("step-*")) == [
        "step-1",
        "step-2",
        "step-4",
    ]

    world = tmp_path / "world"
    suite = [row for _, row in read_jsonl(grpo.SUITE)][:3]
    (world / "suite.jsonl").write_text("".join(json.dumps(i) + "\n" for i in suite))
    params = _params()
    params["suite"].update(path="suite.jsonl", name="grpo-ci")
    params["protocol"].update(k=2, max_tokens=8)
    params["analysis"].update(n_boot=200, n_perm=200)
    (world / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run([py, "-m", "pipeline.pins"], world)
    _run([py, "-m", "pipeline.run_arms", "engine=hf", "progress=false"], world)
    for arm in params["arms"]:
        _run([py, "-m", "pipeline.score", f"arm={arm}"], world)
    _run([py, "-m", "pipeline.score_sweep"], world)
    _run(
        [py, "-m", "analysis.commands.trajectory", "--logs", "evallogs", "--out", "reports/trajectory"], world
    )
    report = json.loads((world / "reports" / "trajectory" / "trajectory_report.json").read_text())
    swept = [f"grpo-step-{n}" for n in build.RUN_STEPS.values()]
    assert report["status"] == "done" and report["checkpoints"] == ["base", *swept]
    assert report["placebo"] == "placebo" and report["n_items"] == 3
    assert (world / "reports" / "trajectory" / "trajectory.png").is_file()
