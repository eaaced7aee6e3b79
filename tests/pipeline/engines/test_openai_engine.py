"""The openai engine against a small OpenAI-compatible HTTP server run here (retries, refusals, credentials),
and its settings; tests/pipeline/engines/test_served_engine.py drives vLLM's real server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from contract.engine import GenRequest
from pipeline.config import CONF_DIR, ConfigError, engine_config
from pipeline.engines import EngineStartError, settings_record
from pipeline.engines import openai_engine as oe
from pipeline.engines.vllm_server import server_flags
from tests.helpers.openai_stub import SAMPLED, Stub, stub_engine, stub_requests


@pytest.fixture
def stub(untrained_checkpoint: Path) -> Iterator[Stub]:
    """A stub server that serves the untrained checkpoint under its path."""
    yield from Stub({"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}).serve()


def test_a_request_answered_with_503_is_sent_again_with_the_same_seed_and_prompt(
    stub: Stub, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    stub.fail = {100: 2, 103: 1}
    engine = stub_engine(untrained_checkpoint, stub.url, retries=2)
    got: list[Any] = []
    results = engine.generate(stub_requests(5), SAMPLED, on_result=got.append)
    assert [r.text for r in results] == [f"seed {100 + i}\n" for i in range(5)]  # the stop string kept
    assert sorted(r.key for r in got) == sorted(r.key for r in results)
    sent = [b for b in stub.bodies if b["seed"] == 100]
    assert len(sent) == 3 and all(b == sent[0] for b in sent)
    assert sent[0]["n"] == 1 and sent[0]["stop"] == ["\n"] and sent[0]["max_tokens"] == 4
    assert (
        sent[0]["top_k"] == 0 and sent[0]["repetition_penalty"] == 1.0 and isinstance(sent[0]["prompt"], list)
    )
    assert results[0].gen_tokens == 2 and results[0].finish_reason == "stop"
    assert engine.info.server == stub.url.removeprefix("http://") and engine.info.version == "vllm 0.0.stub"


def test_a_server_that_stops_answering_ends_the_call_in_one_line_with_the_finished_samples_handed_over(
    stub: Stub, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    stub.dead_after = 6
    engine = stub_engine(untrained_checkpoint, stub.url, retries=2, concurrency=2)
    got: list[Any] = []
    with pytest.raises(oe.ServerGoneError) as e:
        engine.generate(stub_requests(20), SAMPLED, on_result=got.append)
    assert len(got) == 6
    message = str(e.value)
    assert "\n" not in message and "did not answer after 2 retries" in message and "HTTP 503" in message
    assert "rerun the same command to resume" in message


def test_a_refused_request_is_one_line_naming_the_sample(stub: Stub, untrained_checkpoint: Path):
    stub.refuse = True
    engine = stub_engine(untrained_checkpoint, stub.url)
    with pytest.raises(
        oe.RunnerError, match=r"refused sample 0 of item 'q0' \(HTTP 400: This model's max"
    ) as e:
        engine.generate(stub_requests(1), SAMPLED)
    assert "\n" not in str(e.value) and len(stub.bodies) == 1  # a 400 is not sent again


def test_a_server_of_another_model_is_refused_in_one_line(untrained_checkpoint: Path):
    for served in Stub({"id": "org/other", "root": "/models/other"}).serve():
        with pytest.raises(
            EngineStartError, match="serves org/other \\(root /models/other\\), not the arm's model"
        ) as e:
            stub_engine(untrained_checkpoint, served.url)
        assert "\n" not in str(e.value)
        # Served under another name: accepted when served_model names it (and recorded).
        engine = stub_engine(untrained_checkpoint, served.url, served_model="org/other")
        assert engine.info.served_model == "org/other"
        with pytest.raises(EngineStartError, match="no model with id 'org/nope'"):
            stub_engine(untrained_checkpoint, served.url, served_model="org/nope")


def test_two_servers_share_the_requests_and_an_items_samples_go_to_one(untrained_checkpoint: Path):
    served = {"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}
    one, two = Stub(served), Stub(served)
    for a in one.serve():
        for b in two.serve():
            engine = stub_engine(untrained_checkpoint, [a.url, f"{b.url}/v1/"])
            reqs = [
                GenRequest(key=(f"q{i // 4}", i % 4), prompt=f"Q{i // 4}", seed=i, max_tokens=4)
                for i in range(80)
            ]
            results = engine.generate(reqs, SAMPLED)
            assert [r.text for r in results] == [f"seed {i}" for i in range(80)]
            assert a.bodies and b.bodies and len(a.bodies) + len(b.bodies) == 80
            assert {tuple(x["prompt"]) for x in a.bodies}.isdisjoint({tuple(x["prompt"]) for x in b.bodies})
            assert engine.info.server == f"{a.url[7:]}, {b.url[7:]}"


def test_credentials_come_from_the_environment_and_are_never_recorded(
    stub: Stub, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    with pytest.raises(ConfigError, match="carries credentials; remove them") as e:
        oe.parse_urls(f"http://me:s3cret@{stub.url[7:]}")
    assert "s3cret" not in str(e.value)
    with pytest.raises(ConfigError, match="'NO_SUCH_KEY_VAR': that environment variable is not set"):
        stub_engine(untrained_checkpoint, stub.url, api_key_env="NO_SUCH_KEY_VAR")
    monkeypatch.setenv("SERVED_KEY", "s3cret-key")
    engine = stub_engine(untrained_checkpoint, stub.url, api_key_env="SERVED_KEY")
    engine.generate(stub_requests(1), SAMPLED)
    assert all(h.get("Authorization") == "Bearer s3cret-key" for h in stub.headers)
    assert "s3cret" not in engine.info.model_dump_json()


def test_base_url_forms_and_the_settings_a_run_is_fingerprinted_by():
    assert oe.parse_urls("http://gpu1:8000/v1/") == ["http://gpu1:8000"]
    assert oe.parse_urls(["http://a:1", "https://b/x"]) == ["http://a:1", "https://b/x"]
    for bad, why in (
        ("gpu1:8000", "not an http"),
        (["http://a:1", "http://a:1/"], "twice"),
        ([], "give null"),
    ):
        with pytest.raises(ConfigError, match=why):
            oe.parse_urls(bad)
    cfg = engine_config("openai", base_url="http://gpu1:8000", concurrency=8, api_key_env="K")
    record = settings_record(cfg)
    assert not {"base_url", "concurrency", "api_key_env", "timeout_s", "retries"} & set(record)
    assert record["name"] == "openai" and record["max_model_len"] is None


def test_the_runners_own_server_gets_every_setting_of_the_offline_engine():
    offline = yaml.safe_load((CONF_DIR / "engine" / "vllm.yaml").read_text())
    served = yaml.safe_load((CONF_DIR / "engine" / "openai.yaml").read_text())
    for key, value in offline.items():
        if key not in ("name", "save_every"):  # a server saves per sample, no call to cut
            assert served.get(key) == value, key
    flags = server_flags({
        "model": "m", "dtype": "float32", "enforce_eager": True, "enable_prefix_caching": False,
        "enable_chunked_prefill": None, "max_num_seqs": 512, "hf_overrides": {"a": 1},
    })  # fmt: skip
    assert flags == ["--dtype", "float32", "--enforce-eager", "--no-enable-prefix-caching", "--max-num-seqs",
                     "512", "--hf-overrides", '{"a": 1}']  # fmt: skip


def test_a_hub_snapshot_is_known_by_its_repository_id(tmp_path: Path):
    snap = tmp_path / "hub" / "models--Qwen--Qwen2.5-0.5B" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    assert "Qwen/Qwen2.5-0.5B" in oe.checkpoint_names(str(snap))


def test_a_server_that_dies_mid_run_stops_the_command_with_exit_2_and_the_rerun_resumes(
    tmp_path: Path, untrained_checkpoint: Path
):
    import json
    import os
    import subprocess
    import sys

    from demo.tiny_models import arithmetic_items
    from demo.worlds import ROOT, make_world

    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(10), k=4, max_tokens=8)
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "pipeline.run_arm", "arm=base", f"params={w.params}", f"pins={w.pins}",
        f"out_dir={out}", "engine=openai", "engine.retries=1", "engine.concurrency=1", "progress=false",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for served in Stub({"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}).serve():
        served.dead_after = 15
        first = subprocess.run(
            [*cmd, f"engine.base_url={served.url}"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        lines = [ln for ln in first.stderr.splitlines() if ln.strip()]
        assert first.returncode == 2 and len(lines) == 1, first.stderr
        assert "did not answer after 1 retries (HTTP 503: engine dead)" in lines[0]
        assert "rerun the same command to resume" in lines[0]
        assert not (out / "base.json").exists()
        sent = len(served.bodies)
        served.dead_after = None
        again = subprocess.run(
            [*cmd, f"engine.base_url={served.url}"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert again.returncode == 0, again.stderr
        assert json.loads((out / "base.provenance.json").read_text())["samples_resumed"] == 15
        assert len(served.bodies) - sent == 25  # only the samples not saved were sent again


def test_a_chat_prompt_is_sent_as_the_offline_engines_tokens_with_one_bos(
    tmp_path: Path, untrained_checkpoint: Path
):
    from demo.worlds import with_chat_template

    chat = with_chat_template(untrained_checkpoint, tmp_path / "chat")
    for served in Stub({"id": "chat-model", "root": str(chat)}).serve():
        engine = stub_engine(chat, served.url)
        assert engine.chat
        prompt = "<s><|user|>What is 2 + 3?\n<|assistant|>"
        engine.generate([GenRequest(key=("q", 0), prompt=prompt, seed=1, max_tokens=4)], SAMPLED)
        ids = served.bodies[0]["prompt"]
        assert ids == engine.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        assert ids.count(engine.tokenizer.bos_token_id) == 1


def test_a_base_url_per_model_sends_each_arm_to_the_servers_of_its_model(
    tmp_path: Path, untrained_checkpoint: Path
):
    from contract.generations import load_generations
    from demo.tiny_models import arithmetic_items
    from demo.worlds import make_world
    from pipeline.generate import run
    from tests.helpers.worlds import link_or_copy

    trained = tmp_path / "trained"
    trained.mkdir()
    for f in untrained_checkpoint.iterdir():
        if f.is_file():
            link_or_copy(str(f), str(trained / f.name))
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint, "trained": trained}, arithmetic_items(3))
    for a in Stub({"id": "base-model", "root": str(untrained_checkpoint)}).serve():
        for b in Stub({"id": "trained-model", "root": str(trained)}).serve():
            urls = {"base": a.url, "trained": [b.url]}
            for arm in ("base", "trained"):
                dest = run(w.settings(arm, engine=engine_config("openai", base_url=urls)))
                assert load_generations(dest).engine.served_model == f"{arm}-model"
            assert len(a.bodies) == len(b.bodies) == 6
            with pytest.raises(ConfigError, match="not for model 'trained'; add trained: <URL>"):
                run(
                    w.settings(
                        "trained", engine=engine_config("openai", base_url={"base": a.url}), force=True
                    )
                )
