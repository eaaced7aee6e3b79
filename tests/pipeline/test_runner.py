"""The runner without an engine: arms and their refusals, the Hydra command line, pins, shards, seeds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.seeds import sample_seed
from demo.tiny_models import arithmetic_items
from demo.worlds import ROOT, make_world, with_chat_template
from pipeline.config import ConfigError, known_arms, load_arm
from pipeline.generate import run
from pipeline.pins import PinError
from pipeline.plan import plan_arm
from pipeline.prompts import CHAT_INSTRUCTION, PLAIN_STOP
from pipeline.run_paths import RunPaths
from pipeline.settings import RunSettings
from pipeline.shards import Shard, ShardError
from tests.helpers.runner import ARMS, CORPUS


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """python -m pipeline.run_arm ARGS in cwd, with the repository importable from anywhere."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.run_arm", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _copy_checkpoint(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def test_the_seven_arms_of_params_yaml_are_defined() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert set(params["arms"]) == set(ARMS)
    # The trajectory's arms are defined too, and run only when params.yaml lists them (with their models).
    trajectory = {
        "step-200": ("step-200", False, False, "parametric"),
        "placebo": ("placebo", False, False, "placebo"),
        # The GRPO world's checkpoints along its rewarded run (examples/smollm2-grpo).
        "step-12": ("step-12", False, False, "parametric"),
        "step-24": ("step-24", False, False, "parametric"),
    }
    assert set(known_arms()) == set(ARMS) | set(trajectory)
    assert set(params["models"]) == {"base", "trained"}
    for name, (model, retrieval, tools, attribution) in (ARMS | trajectory).items():
        arm = load_arm(name)
        assert (arm.model, arm.retrieval, arm.tools, arm.attribution) == (
            model,
            retrieval,
            tools,
            attribution,
        )


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("temperature: 0.5\n", "temperature"),
        ("protocol:\n  seed: 7\n", "protocol"),
        ("extra:\n  max_tokens: 9\n", "extra.max_tokens"),
    ],
)
def test_an_arm_file_that_sets_a_protocol_key_is_refused(tmp_path: Path, body: str, key: str) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    hot = conf / "arm" / "hot.yaml"
    hot.write_text((conf / "arm" / "base.yaml").read_text() + body)
    with pytest.raises(ConfigError, match=rf"arm/hot.yaml: sets protocol key '{key}'.*params.yaml"):
        load_arm("hot", conf)
    settings = RunSettings(arm="hot", conf_dir=conf, out_dir=tmp_path / "out", params=tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="sets protocol key"):
        run(settings)
    assert not (tmp_path / "out").exists()


def test_cli_refuses_an_unknown_arm_and_lists_the_known_ones(tmp_path: Path) -> None:
    for args in (["arm=nope"], ["-m", "arm=base,nope"]):
        res = _cli(args, tmp_path)
        assert res.returncode == 2
        line = res.stderr.strip()
        assert "\n" not in line
        assert line.startswith("run_arm: unknown arm 'nope'")
        for name in ARMS:
            assert name in line
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_a_protocol_key_set_on_the_arm_from_the_command_line(tmp_path: Path) -> None:
    res = _cli(["arm=base", "+arm.temperature=0.0"], tmp_path)
    assert res.returncode == 2
    assert "command-line override of arm: sets protocol key 'temperature'" in res.stderr


def test_cli_takes_plus_arm_names_as_written_and_leaves_no_hydra_folders(tmp_path: Path) -> None:
    cwd, sweep_tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    sweep_tmp.mkdir()
    # No params.yaml here: each composed arm reaches the runner, which stops at the missing params file.
    for args in (["arm=+rag"], ["arm=trained+rag+tools"], ["-m", "arm=+tools,trained+rag"]):
        res = _cli(args, cwd, TMPDIR=str(sweep_tmp))
        assert res.returncode == 2, res.stderr
        assert "run_arm: params.yaml: params file not found" in res.stderr
    assert list(cwd.iterdir()) == []


def test_a_checkpoint_changed_after_pinning_is_refused_and_nothing_is_overwritten(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    ckpt = _copy_checkpoint(untrained_checkpoint, tmp_path / "ckpt")
    w = make_world(tmp_path / "w", {"base": ckpt}, arithmetic_items(3))
    w.out_dir.mkdir()
    earlier = w.out_dir / "base.json"
    earlier.write_text('{"an": "earlier log"}\n')
    weights = ckpt / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(PinError, match=r"checkpoint 'base': .*ckpt/model.safetensors changed since pinning"):
        run(w.settings("base"))
    assert earlier.read_text() == '{"an": "earlier log"}\n'
    assert not RunPaths(w.out_dir, "base").partial.exists()
    res = _cli(["arm=base", f"params={w.params}", f"pins={w.pins}", f"out_dir={w.out_dir}"], ROOT)
    assert res.returncode == 2
    assert "model.safetensors changed since pinning" in res.stderr.strip().splitlines()[-1]


def test_a_missing_pins_file_is_refused(tmp_path: Path, untrained_checkpoint: Path) -> None:
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3))
    shutil.rmtree(w.pins)
    with pytest.raises(PinError, match=r"pins/arms/base.json: not found; pin arm 'base' first"):
        run(w.settings("base"))


def test_an_override_that_changes_what_an_arm_is_is_refused(tmp_path: Path) -> None:
    res = _cli(["arm=base", "arm.model=trained"], tmp_path)
    assert res.returncode == 2
    assert "arm.model='trained', but" in res.stderr and "base.yaml says 'base'" in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("override", "setting", "params"),
    [
        (["+protocol.k=1"], "protocol.k", "params.yaml"),
        (["protocol.temperature=0.5"], "protocol.temperature", "params.yaml"),
        (["params=exp.yaml", "++seed=7"], "protocol.seed", "exp.yaml"),
        (["+n_samples=2"], "protocol.k", "params.yaml"),
    ],
)
def test_a_protocol_override_on_the_command_line_is_refused(
    tmp_path: Path, override: list[str], setting: str, params: str
) -> None:
    """Hydra would take `+protocol.k=1` into a config nobody reads, and the run would go on at params' k."""
    res = _cli(["arm=base", *override], tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert f"lives only in {params} ({setting})" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_every_arm_gives_each_item_and_sample_the_same_seed(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    from augment.tools.orbital import TOOLS
    from pipeline.config import load_params

    w = make_world(
        tmp_path / "w",
        {"base": untrained_checkpoint, "trained": untrained_checkpoint},
        arithmetic_items(6),
        corpus=CORPUS,
        k=3,
    )
    params = load_params(w.params)
    tools = [
        {"name": n, "description": t.description, "input_schema": t.parameters} for n, t in TOOLS.items()
    ]
    seeds = {}
    for name in ARMS:
        arm = load_arm(name)
        plan = plan_arm(params, arm, tools if arm.tools else [])
        seeds[name] = {r.key: r.seed for r in plan.requests}
        assert len({r.prompt for r in plan.requests}) == 6
        if arm.retrieval:
            assert all(len(docs) == 2 for docs in plan.retrieved.values())
    first = seeds["base"]
    assert len(first) == 18 and len(set(first.values())) == 18
    assert all(s == first for s in seeds.values())
    assert all(seed == sample_seed(1234, item, j) for (item, j), seed in first.items())


@pytest.mark.parametrize("order", ["best_last", "best_first"])
def test_retrieved_passages_stand_in_the_order_params_yaml_asks(
    tmp_path: Path, untrained_checkpoint: Path, order: str
) -> None:
    from pipeline.config import load_params

    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(3), corpus=CORPUS, k=1)
    raw = yaml.safe_load(w.params.read_text())
    raw["rag"]["order"] = order
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    plan = plan_arm(load_params(w.params), load_arm("+rag"), [])
    texts = {d["doc_id"]: d["text"] for d in CORPUS}
    titles = {d["doc_id"]: d["title"] for d in CORPUS}
    for req in plan.requests:
        ranked = [texts[d.doc_id] for d in plan.retrieved[req.key[0]]]
        assert [d.rank for d in plan.retrieved[req.key[0]]] == [1, 2]
        # The generations keep each passage's text and title, as a reader of the log needs them.
        assert [(d.text, d.title) for d in plan.retrieved[req.key[0]]] == [
            (texts[d.doc_id], titles[d.doc_id]) for d in plan.retrieved[req.key[0]]
        ]
        shown = ranked[::-1] if order == "best_last" else ranked
        assert req.prompt.startswith(f"[1] {shown[0]}\n[2] {shown[1]}\nQuestion: ")


def test_an_unknown_passage_order_is_refused_naming_the_field(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    from pipeline.config import load_params

    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(1), corpus=CORPUS, k=1)
    raw = yaml.safe_load(w.params.read_text())
    raw["rag"]["order"] = "random"
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError, match=r"params.yaml.*rag.*order"):
        load_params(w.params)


def test_chat_models_get_their_chat_template_and_no_plain_stop(
    tmp_path: Path, untrained_checkpoint: Path
) -> None:
    from pipeline.config import load_params

    chat = with_chat_template(untrained_checkpoint, tmp_path / "chat")
    plain = make_world(tmp_path / "p", {"base": untrained_checkpoint}, arithmetic_items(2), k=1)
    w = make_world(tmp_path / "w", {"base": chat}, arithmetic_items(2), k=1)
    p_plan = plan_arm(load_params(plain.params), load_arm("base"), [])
    c_plan = plan_arm(load_params(w.params), load_arm("base"), [])
    assert not p_plan.chat and p_plan.requests[0].stop == PLAIN_STOP
    assert p_plan.requests[0].prompt.endswith("Answer:")
    assert c_plan.chat and c_plan.requests[0].stop == ()
    question = arithmetic_items(2)[0]["question"]
    assert c_plan.requests[0].prompt == f"<s><|user|>{question}\n{CHAT_INSTRUCTION}\n<|assistant|>"


FP = {"arm": {"name": "base"}, "protocol": {"k": 2, "temperature": 1.0}, "engine": {"chunk_size": 4}}


def test_a_shard_resumes_and_drops_a_torn_last_line(tmp_path: Path) -> None:
    path = RunPaths(tmp_path, "base").shard
    shard = Shard(path, FP)
    shard.set_meta("engine", {"name": "vllm"})
    shard.append([{"item_id": "a", "index": 0, "score": 1.0}, {"item_id": "a", "index": 1, "score": 0.0}])
    with open(path, "a") as f:
        f.write('{"item_id": "b", "ind')
    again = Shard(path, FP)
    assert again.resumed and set(again.records) == {("a", 0), ("a", 1)}
    assert again.meta == {"engine": {"name": "vllm"}}
    assert path.read_text().endswith("}\n")
    again.append([{"item_id": "b", "index": 0, "score": 1.0}])
    assert set(Shard(path, FP).records) == {("a", 0), ("a", 1), ("b", 0)}


def test_a_shard_of_other_settings_is_refused_unless_fresh(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    Shard(path, FP).append([{"item_id": "a", "index": 0, "score": 1.0}])
    before = path.read_bytes()
    other = {**FP, "protocol": {"k": 2, "temperature": 0.7}}
    with pytest.raises(
        ShardError, match=r"base.jsonl: holds 1 samples .*protocol.temperature: 1.0 -> 0.7.*fresh=true"
    ):
        Shard(path, other)
    assert path.read_bytes() == before
    fresh = Shard(path, other, fresh=True)
    assert fresh.records == {} and json.loads(path.read_text())["fingerprint"] == other


def test_a_damaged_line_inside_a_shard_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "base.jsonl"
    Shard(path, FP).append([{"item_id": "a", "index": 0}, {"item_id": "a", "index": 1}])
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = "garbage\n"
    path.write_text("".join(lines))
    with pytest.raises(ShardError, match=r"base.jsonl:2: not a sample record"):
        Shard(path, FP)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["enigne=hf"],
            "run_arm: enigne=hf: unknown key 'enigne'; did you mean 'engine'? known: arm, engine, force, "
            "fresh, merge, out_dir, params, part, pins, progress, tool_server (--help lists them)",
        ),
        (
            ["engine=hff"],
            "run_arm: engine=hff: no engine 'hff' (no conf/engine/hff.yaml); did you mean 'hf'? known: hf, "
            "openai, vllm (--help lists them)",
        ),
        (
            ["engine=hf", "engine.chunk_sise=8"],
            "run_arm: engine.chunk_sise=8: engine 'hf' has no key 'chunk_sise'; did you mean 'chunk_size'? "
            "known: ",
        ),
        (
            ["tool_server.max_restart=1"],
            "run_arm: tool_server.max_restart=1: unknown key 'max_restart'; did you mean 'max_restarts'? "
            "known: max_restarts, restart_window, tool_timeout_s",
        ),
    ],
)
def test_cli_refuses_a_mistyped_override_in_one_line_naming_the_known_keys(
    tmp_path: Path, args: list[str], line: str
) -> None:
    res = _cli(["arm=base", *args], tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(line) and res.stderr.count("\n") == 1, res.stderr
    assert list(tmp_path.iterdir()) == []
