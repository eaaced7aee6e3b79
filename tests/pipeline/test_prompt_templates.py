"""Prompt templates for every model: presets, few-shot examples, stops, answer rules, matched prompting.

Fast: the real tokenizers of the tiny checkpoints, the real plan and pins, no engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from contract.protocol import Protocol
from contract.suite import SuiteItem
from demo.tiny_models import arithmetic_items
from demo.worlds import make_world, with_chat_template
from pipeline.config import CONF_DIR, ConfigError, known_presets, load_arm, load_params, template_header
from pipeline.pins import PinError, check_pins, pinned_index, suite_items
from pipeline.plan import check_matched_prompting, plan_arm, ships_chat_template
from pipeline.prompts import PLAIN_STOP, build_prompt, compile_template, render_template
from pipeline.run_paths import RunPaths
from scoring.reading import read_answer
from scoring.verifiers import score

PROTOCOL = {"k": 1, "max_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": 1}
SHOTS = [
    {"id": "shot-1", "question": "What is 10 + 10?", "answer": "10 + 10 = 20. The answer is 20."},
    {"id": "shot-2", "question": "What is 11 - 2?", "answer": "11 - 2 = 9. The answer is 9."},
]


def _world(tmp_path: Path, models: dict[str, Path], **protocol: object):
    return make_world(tmp_path / "w", models, arithmetic_items(3), **{**PROTOCOL, **protocol})


def _shots(tmp_path: Path, rows: list[dict[str, str]]) -> str:
    path = tmp_path / "shots.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_every_preset_says_where_its_answer_is_and_plain_is_the_built_in_format() -> None:
    assert known_presets() == ["boxed", "gsm8k", "minerva", "plain"]
    rules = {
        n: template_header(CONF_DIR / "prompt" / f"{n}.jinja", "prompt", Path("p")) for n in known_presets()
    }
    assert {n: h.answer for n, h in rules.items()} == {
        "boxed": "last_boxed", "gsm8k": "answer_is", "minerva": "answer_is", "plain": "first_answer"
    }  # fmt: skip
    assert rules["gsm8k"].fewshot and rules["minerva"].fewshot and not rules["plain"].fewshot
    plain = compile_template((CONF_DIR / "prompt" / "plain.jinja").read_text(), "plain")
    tools = [{"name": "hohmann"}, {"name": "orbit"}]
    for passages, tool_specs in (((), []), (("p one", "p two"), []), (("p",), tools), ((), tools)):
        names = [t["name"] for t in tool_specs]
        assert render_template(plain, "plain", "What is 2 + 2?", passages, tool_specs, []) == build_prompt(
            "What is 2 + 2?", passages, names
        )


def test_unset_prompt_keys_leave_the_protocol_dump_as_it_was() -> None:
    proto = Protocol(**PROTOCOL)
    assert proto.model_dump() == {**PROTOCOL, "max_tool_calls": 0}
    set_ = Protocol(
        **PROTOCOL, prompt="gsm8k", chat=False, fewshot={"path": "f.jsonl", "n": 2}, stop=["\n\n"]
    )
    assert set_.model_dump()["fewshot"] == {"path": "f.jsonl", "n": 2} and set_.model_dump()["chat"] is False


def test_a_few_shot_preset_renders_its_examples_pinned_and_records_its_rule(
    tmp_path, untrained_checkpoint
) -> None:
    shots = _shots(tmp_path, SHOTS)
    w = _world(tmp_path, {"base": untrained_checkpoint}, prompt="gsm8k", fewshot={"path": shots, "n": 2})
    params = load_params(w.params)
    assert params.protocol.answer == "answer_is" and params.protocol.stop == ["\n\n"]
    plan = plan_arm(params, load_arm("base"), [])
    first = plan.items[0]
    assert plan.prompts[first.item_id] == (
        "Question: What is 10 + 10?\nAnswer: 10 + 10 = 20. The answer is 20.\n\n"
        "Question: What is 11 - 2?\nAnswer: 11 - 2 = 9. The answer is 9.\n\n"
        f"Question: {first.question}\nAnswer:"
    )
    assert plan.requests[0].stop == (*PLAIN_STOP, "\n\n")
    pins = check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params)).flat
    assert pins["prompt_template"].startswith("sha256:") and pins["fewshot"].startswith("sha256:")
    # Another example file under the same path is drift: the runner refuses it until it is pinned again.
    Path(shots).write_text(Path(shots).read_text().replace("20.", "21."))
    with pytest.raises(PinError, match="fewshot: .* or its file changed since pinning"):
        check_pins(
            load_params(w.params),
            w.pins,
            load_arm("base"),
            pinned_index(load_params(w.params)),
            suite_items(load_params(w.params)),
        )


@pytest.mark.parametrize(
    ("shot", "why"),
    [({"id": "arith-001", "question": "What is 1 + 1?", "answer": "2"}, "its id is also a suite item"),
     ({"id": "x", "question": None, "answer": "2"}, "its question is also a suite item")],
)  # fmt: skip
def test_an_example_that_is_a_suite_item_is_refused(tmp_path, untrained_checkpoint, shot, why) -> None:
    items = arithmetic_items(3)
    shot = {**shot, "question": shot["question"] or items[1]["question"]}
    w = make_world(
        tmp_path / "w", {"base": untrained_checkpoint}, items, **PROTOCOL, prompt="gsm8k",
        fewshot={"path": _shots(tmp_path, [SHOTS[0], shot]), "n": 2},
    )  # fmt: skip
    with pytest.raises(ConfigError, match=why):
        plan_arm(load_params(w.params), load_arm("base"), [])


def test_few_shot_settings_that_cannot_work_are_refused_in_one_line(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, {"base": untrained_checkpoint})
    raw = yaml.safe_load(w.params.read_text())
    cases = [
        ({"prompt": "gsm8k"}, "gsm8k.jinja is a few-shot format; set protocol.fewshot"),
        ({"prompt": "nope"}, "known presets: boxed, gsm8k, minerva, plain"),
        ({"prompt": "plain", "prompt_template": "x.jinja"}, "give one"),
        ({"prompt": "gsm8k", "fewshot": {"path": _shots(tmp_path, SHOTS), "n": 3}}, "holds 2 examples"),
    ]
    for extra, why in cases:
        raw["protocol"] = {**PROTOCOL, **extra}
        w.params.write_text(yaml.safe_dump(raw))
        with pytest.raises(ConfigError, match=why) as e:
            plan_arm(load_params(w.params), load_arm("base"), [])
        assert "\n" not in str(e.value)


def test_a_base_models_continuation_past_its_answer_does_not_decide_its_score() -> None:
    item = SuiteItem(item_id="a", family="f", question="q", answer="14", verifier={"type": "math"})
    # The continuation a real base checkpoint wrote after "Question: ...\nAnswer:" (scored with the tag).
    text = "Answer: 20 - 6 = 14 marbles\n\nANSWER: 14\nAnswer: 14, 20\nAnswer: 18 - 6"
    assert read_answer(text).answer == "20 - 6 = 14 marbles" and score(item, text).score == 1.0
    few = " 3 + 4 = 7. The answer is 7.\nQuestion: What is 2 + 2?\nAnswer: 2 + 2 = 4. The answer is 4."
    assert read_answer(few, rule="answer_is").answer == "7"
    boxed = "so \\boxed{3}, then \\boxed{\\frac{1}{2}}. Question: next \\boxed{...}"
    assert read_answer(boxed, rule="last_boxed").answer == "\\frac{1}{2}"
    minerva = " $1+1=2$.\nFinal Answer: The final answer is $2$. I hope it is correct.\n"
    assert read_answer(minerva, rule="answer_is").answer == "$2$"
    assert read_answer("no box", rule="last_boxed").reason == "no \\boxed{} with an answer"


def test_the_chat_template_check_reads_the_files_as_transformers_loads_them(
    tmp_path, untrained_checkpoint
) -> None:
    import shutil

    from transformers import AutoTokenizer

    from pipeline.prompts import is_chat_model

    chat = with_chat_template(untrained_checkpoint, tmp_path / "chat")
    # Each place a template can live, and a config whose template is empty.
    in_config = shutil.copytree(chat, tmp_path / "in-config")
    (in_config / "chat_template.jinja").unlink()
    config = json.loads((in_config / "tokenizer_config.json").read_text())
    template = {**config, "chat_template": "{{ messages }}"}
    (in_config / "tokenizer_config.json").write_text(json.dumps(template))
    empty = shutil.copytree(in_config, tmp_path / "empty")
    (empty / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": ""}))
    extra = shutil.copytree(untrained_checkpoint, tmp_path / "extra")
    (extra / "additional_chat_templates").mkdir()
    (extra / "additional_chat_templates" / "tool_use.jinja").write_text("{{ messages }}")
    found = {}
    for folder in (untrained_checkpoint, chat, in_config, empty, extra):
        loaded = is_chat_model(AutoTokenizer.from_pretrained(folder))
        assert ships_chat_template(folder) == loaded, folder
        found[folder.name] = loaded
    assert found == {"ckpt": False, "chat": True, "in-config": True, "empty": False, "extra": True}
    (in_config / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="tokenizer_config.json: cannot read the tokenizer config"):
        ships_chat_template(in_config)


def test_mixed_plain_and_chat_arms_are_refused_and_chat_false_prompts_both_plain(
    tmp_path, untrained_checkpoint, capsys
) -> None:
    from pipeline import run_arms

    chat = with_chat_template(untrained_checkpoint, tmp_path / "chat")
    w = _world(tmp_path, {"base": untrained_checkpoint, "trained": chat})
    raw = yaml.safe_load(w.params.read_text())
    raw["arms"] = ["base", "trained"]
    w.params.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="protocol.chat: false to prompt both plain"):
        check_matched_prompting(load_params(w.params), [load_arm("base"), load_arm("trained")])
    # The command refuses before any engine starts: one line, exit 2.
    with pytest.raises(SystemExit) as e:
        run_arms.main([f"params={w.params}", f"pins={w.pins}", f"out_dir={w.out_dir}"])
    err = capsys.readouterr()
    assert e.value.code == 2 and "starting the vllm engine" not in err.out
    line = err.err.strip()
    assert "\n" not in line and f"base ({untrained_checkpoint})" in line and f"trained ({chat})" in line
    raw["protocol"]["chat"] = False
    w.params.write_text(yaml.safe_dump(raw))
    check_matched_prompting(load_params(w.params), [load_arm("base"), load_arm("trained")])
    plans = {a: plan_arm(load_params(w.params), load_arm(a), []) for a in ("base", "trained")}
    assert not plans["base"].chat and not plans["trained"].chat
    assert plans["base"].prompts == plans["trained"].prompts
    assert all(p.endswith("\nAnswer:") for p in plans["trained"].prompts.values())


def test_a_partial_file_without_samples_never_blocks_a_run_with_other_settings(tmp_path, capsys) -> None:
    from pipeline.shards import Shard, ShardError

    path = RunPaths(tmp_path, "base").shard
    old = Shard(path, {"engine": {"max_model_len": None}})
    old.set_meta("engine", {"name": "vllm"})  # an engine record, but no sample: the engine never generated
    old.close()
    new = Shard(path, {"engine": {"max_model_len": 4096}})
    assert new.records == {} and new.meta == {} and "held no samples" in capsys.readouterr().err
    new.append([{"item_id": "a", "index": 0, "text": "x"}])
    new.close()
    with pytest.raises(ShardError, match="holds 1 samples of a run with other settings"):
        Shard(path, {"engine": {"max_model_len": 8192}})


def test_max_model_len_auto_fits_the_run_and_keeps_the_earlier_fingerprints(untrained_checkpoint) -> None:
    from transformers import AutoConfig

    from pipeline.config import engine_config
    from pipeline.engines import fit_context, settings_record, start_failure
    from pipeline.engines.vllm_engine import check_cpu_kv_cache, context_length

    cfg = engine_config("vllm")
    assert cfg["max_model_len"] == "auto"
    # Files made when the default was null keep their inputs and shards: auto is recorded as null.
    assert settings_record(cfg) == settings_record(engine_config("vllm", max_model_len=None))
    context = context_length(AutoConfig.from_pretrained(untrained_checkpoint), "m")
    assert fit_context(cfg, untrained_checkpoint, 200).max_model_len == min(context, 1024)
    assert fit_context(cfg, untrained_checkpoint, 10**6).max_model_len == context
    assert (
        fit_context(engine_config("vllm", max_model_len=300), untrained_checkpoint, 10**6).max_model_len
        == 300
    )
    hf = AutoConfig.from_pretrained(untrained_checkpoint)
    check_cpu_kv_cache(hf, "float32", 1024, 1.0, "m")
    with pytest.raises(ConfigError, match=r"max_model_len 100000000 needs [\d.]+ GiB .* space is 1 GiB") as e:
        check_cpu_kv_cache(hf, "float32", 10**8, 1.0, "m")
    assert "cpu_kvcache_space_gib" in str(e.value) and "\n" not in str(e.value)
    try:
        try:
            raise ValueError("To serve at least one request\nmore detail")
        except ValueError as inner:
            raise RuntimeError("Engine core initialization failed. See root cause above.") from inner
    except RuntimeError as outer:
        line = start_failure("vllm", "models/base", outer)
    assert line.startswith("the vllm engine did not start on models/base: ValueError: To serve at least one")
    assert "\n" not in line


def test_the_chat_template_is_read_when_the_run_is_resolved_not_when_it_is_planned(
    tmp_path, untrained_checkpoint
) -> None:
    from pipeline.plan import plan_run, read_prompting

    chat = with_chat_template(untrained_checkpoint, tmp_path / "chat")
    template = tmp_path / "chat.jinja"
    template.write_text("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>")
    w = _world(tmp_path, {"base": chat}, chat_template=str(template))
    params, arm = load_params(w.params), load_arm("base")
    prompting = read_prompting(params, arm, None, suite_items(params), chat=True)
    assert prompting.chat and prompting.chat_template == template.read_text()
    # Gone after it was read: the plan renders the text read once, the file is not opened again.
    template.unlink()
    plan = plan_run(prompting, [])
    assert all(p.startswith("<|user|>") and p.endswith("<|assistant|>") for p in plan.prompts.values())
    with pytest.raises(ConfigError, match=r"protocol\.chat_template: cannot read .*chat\.jinja") as e:
        read_prompting(params, arm, None, suite_items(params), chat=True)
    assert "\n" not in str(e.value)
