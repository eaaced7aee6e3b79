"""Chat prompting as part of the matched protocol: system prompt, instruction, chat template and its options;
a tool arm whose template ignores `tools=` is refused before it generates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from analysis.commands import delta as delta_command
from augment.tools.orbital import TOOLS
from contract.protocol import Protocol
from demo.tiny_models import arithmetic_items
from demo.worlds import make_world, with_chat_template
from pipeline.config import ConfigError, load_arm, load_params
from pipeline.pins import PinError, check_pins, pinned_index, suite_items
from pipeline.plan import plan_arm
from pipeline.prompts import CHAT_INSTRUCTION
from tests.helpers.evallogs import write_log
from tests.helpers.params import write_params

# The orbital tools as the MCP server lists them (name, description, input_schema).
TOOL_SPECS = [
    {"name": t.name, "description": t.description, "input_schema": t.parameters}
    for t in sorted(TOOLS.values(), key=lambda t: t.name)
]
# A template that renders tools= (as Qwen's and Hermes' do) and knows enable_thinking (as Qwen3's does).
TOOLS_TEMPLATE = (
    "{{ bos_token }}{% if tools %}<|tools|>{% for t in tools %}{{ t | tojson }}\n{% endfor %}{% endif %}"
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n{% endif %}{% endif %}"
)


def _world(tmp_path: Path, checkpoint: Path, **protocol):
    return make_world(tmp_path / "w", {"base": checkpoint}, arithmetic_items(2), k=1, **protocol)


@pytest.fixture
def chat_checkpoint(tmp_path: Path, untrained_checkpoint: Path) -> Path:
    """The tiny checkpoint with a chat template that renders messages only (it ignores tools=)."""
    return with_chat_template(untrained_checkpoint, tmp_path / "chat")


def test_the_built_in_protocol_prompts_and_serializes_as_before_these_keys(tmp_path, chat_checkpoint) -> None:
    w = _world(tmp_path, chat_checkpoint)
    plan = plan_arm(load_params(w.params), load_arm("base"), [])
    question = arithmetic_items(2)[0]["question"]
    assert plan.requests[0].prompt == f"<s><|user|>{question}\n{CHAT_INSTRUCTION}\n<|assistant|>"
    # What generations, EvalLogs and run fingerprints record of an unset key: nothing, as before it existed.
    proto = load_params(w.params).protocol
    assert set(proto.model_dump()) == {"k", "max_tokens", "temperature", "top_p", "seed", "max_tool_calls"}


def test_system_prompt_instruction_and_template_options_shape_every_prompt(tmp_path, chat_checkpoint) -> None:
    template = tmp_path / "qwen-like.jinja"
    template.write_text(TOOLS_TEMPLATE)
    w = _world(
        tmp_path,
        chat_checkpoint,
        system_prompt="You are a careful calculator.",
        instruction="Reply with the number only.",
        chat_template=str(template),
        chat_template_kwargs={"enable_thinking": False},
    )
    params = load_params(w.params)
    question = arithmetic_items(2)[0]["question"]
    plan = plan_arm(params, load_arm("base"), [])
    assert plan.requests[0].prompt == (
        f"<s><|system|>You are a careful calculator.\n<|user|>{question}\nReply with the number only.\n"
        "<|assistant|><think>\n\n</think>\n"
    )
    # Recorded with the protocol wherever it is (generations, EvalLogs), and read back the same.
    assert Protocol.model_validate_json(params.protocol.model_dump_json()) == params.protocol
    assert params.protocol.model_dump()["chat_template_kwargs"] == {"enable_thinking": False}
    # The template's content is pinned: an edit to the file is drift, named as such.
    check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))
    template.write_text(TOOLS_TEMPLATE + " ")
    with pytest.raises(PinError, match=r"base.json: chat_template: .*changed since pinning"):
        check_pins(params, w.pins, load_arm("base"), pinned_index(params), suite_items(params))


def test_an_empty_instruction_adds_nothing(tmp_path, chat_checkpoint) -> None:
    w = _world(tmp_path, chat_checkpoint, instruction="")
    plan = plan_arm(load_params(w.params), load_arm("base"), [])
    question = arithmetic_items(2)[0]["question"]
    assert plan.requests[0].prompt == f"<s><|user|>{question}\n<|assistant|>"


def test_a_tool_arm_whose_template_ignores_tools_is_refused_with_the_way_out(
    tmp_path, chat_checkpoint
) -> None:
    w = _world(tmp_path, chat_checkpoint)
    with pytest.raises(ConfigError) as refused:
        plan_arm(load_params(w.params), load_arm("+tools"), TOOL_SPECS)
    message = str(refused.value)
    assert "arm '+tools': the chat template of" in message and "it ignores tools=" in message
    assert "circular_speed" in message and "protocol.chat_template" in message
    assert "\n" not in message
    # With a template that renders tools, the same arm plans, and every prompt carries every schema.
    template = tmp_path / "tools.jinja"
    template.write_text(TOOLS_TEMPLATE)
    raw = yaml.safe_load(w.params.read_text())
    raw["protocol"]["chat_template"] = str(template)
    w.params.write_text(yaml.safe_dump(raw, sort_keys=False))
    plan = plan_arm(load_params(w.params), load_arm("+tools"), TOOL_SPECS)
    for prompt in plan.prompts.values():
        assert all(f'"name": "{spec["name"]}"' in prompt for spec in TOOL_SPECS)
        assert prompt.count('"type": "function"') == len(TOOL_SPECS)


def test_chat_settings_on_a_plain_model_are_refused(tmp_path, untrained_checkpoint) -> None:
    w = _world(tmp_path, untrained_checkpoint, system_prompt="Be brief.")
    with pytest.raises(
        ConfigError, match=r"protocol.system_prompt: applies to chat models; .* no chat template"
    ):
        plan_arm(load_params(w.params), load_arm("base"), [])


def test_template_options_the_runner_sets_itself_are_refused(tmp_path, chat_checkpoint) -> None:
    w = _world(tmp_path, chat_checkpoint, chat_template_kwargs={"add_generation_prompt": False})
    with pytest.raises(
        ConfigError, match=r"protocol.chat_template_kwargs.add_generation_prompt: set by the runner"
    ):
        plan_arm(load_params(w.params), load_arm("base"), [])


def test_an_arm_may_not_set_a_prompting_key(tmp_path) -> None:
    conf = tmp_path / "conf"
    (conf / "arm").mkdir(parents=True)
    (conf / "arm" / "base.yaml").write_text(
        "model: base\nretrieval: false\ntools: false\nattribution: reference\nsystem_prompt: Be brief.\n"
    )
    with pytest.raises(ConfigError, match=r"sets protocol key 'system_prompt'"):
        load_arm("base", conf)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"system_prompt": "Be brief."}, "protocol.system_prompt"),
        ({"chat_template_kwargs": {"enable_thinking": False}}, "protocol.chat_template_kwargs"),
    ],
)
def test_logs_prompted_differently_are_not_compared(tmp_path, capsys, change, field) -> None:
    rng = np.random.default_rng(2)
    pre = write_log(tmp_path / "pre.json", (rng.random((12, 4)) < 0.5).astype(float))
    post = write_log(tmp_path / "post.json", (rng.random((12, 4)) < 0.5).astype(float), protocol=change)
    code = delta_command.main(["--pre", str(pre), "--post", str(post), "--out", str(tmp_path / "r"),
                       "--params", str(write_params(tmp_path / "p.yaml"))])  # fmt: skip
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and f"{field} differs" in lines[0], lines
