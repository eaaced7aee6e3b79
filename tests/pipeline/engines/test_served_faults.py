"""The openai engine against a hostile OpenAI-compatible server run here: malformed 200 replies, replies that
would save wrong samples, Retry-After, non-JSON model lists; and property tests of the reply parser. Every
failure is one line (exit 2 through the CLI) with the finished samples kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.engine import GenRequest
from pipeline.engines import EngineStartError
from pipeline.engines import openai_engine as oe
from pipeline.engines.served_reply import (
    FINISHES,
    NotJSONError,
    ReplyError,
    completion,
    json_body,
    retry_after_s,
)
from tests.helpers.openai_stub import SAMPLED, Stub, stub_engine, stub_requests

Answer = Callable[[Any, dict[str, Any]], Any]


class Hostile(Stub):
    """The stub server, whose completions answer well `good_first` times, then as `bad` says; its
    /v1/models, /version and /tokenize answer `models`, `version` and `tokenize` when set (raw bytes)."""

    def __init__(self, served: dict[str, Any]) -> None:
        super().__init__(served)
        self.good_first = 0
        self.bad: Answer | None = None
        self.models: bytes | None = None
        self.version: bytes | None = None
        self.tokenize: bytes | None = None
        self.times: list[float] = []

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        if self.models is None:
            return await super()._models(request)
        return web.Response(body=self.models, content_type="application/json")

    async def _version(self, request: Any) -> Any:
        from aiohttp import web

        if self.version is None:
            return await super()._version(request)
        return web.Response(body=self.version, content_type="application/json")

    async def _tokenize(self, request: Any) -> Any:
        from aiohttp import web

        if self.tokenize is None:
            raise web.HTTPNotFound()
        return web.Response(body=self.tokenize, content_type="application/json")

    async def _complete(self, request: Any) -> Any:
        self.times.append(time.monotonic())
        if self.bad is None or len(self.times) <= self.good_first:
            return await super()._complete(request)
        body = await request.json()
        self.bodies.append(body)
        return await self.bad(request, body)

    def _routes(self, app: Any) -> None:
        """/tokenize too (the plain stub has none: a server that is not vLLM)."""
        app.router.add_post("/tokenize", self._tokenize)


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    async def answer(request: Any, body: dict[str, Any]) -> Any:
        from aiohttp import web

        return web.json_response(payload, status=status, headers=headers)

    return answer


def _raw(payload: bytes) -> Answer:
    async def answer(request: Any, body: dict[str, Any]) -> Any:
        from aiohttp import web

        return web.Response(body=payload, content_type="text/html")

    return answer


async def _cut(request: Any, body: dict[str, Any]) -> Any:
    """A 200 without Content-Length whose connection closes mid-body."""
    request.transport.write(
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"choices": [{"te'
    )
    request.transport.close()
    from aiohttp import web

    return web.Response()


def _choice(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"text": "7", "finish_reason": "stop", "token_ids": [5], **fields}]}


MALFORMED: dict[str, tuple[Answer, str]] = {
    "no choices": (_json({"usage": {"completion_tokens": 1}}), "not a completion (choices: Field required)"),
    "choices []": (_json({"choices": []}), "not a completion (choices: List should have at least 1 item"),
    "text null": (_json(_choice(text=None)), "not a completion (choices.0.text: Input should be a valid str"),
    "no usage, no token ids": (
        _json({"choices": [{"text": "7", "finish_reason": "stop"}]}),
        "counts no tokens (no usage.completion_tokens, no token_ids)",
    ),
    "completion_tokens null, no token ids": (
        _json({"choices": [{"text": "7", "finish_reason": "stop"}], "usage": {"completion_tokens": None}}),
        "counts no tokens",
    ),
    "0 tokens for a text": (
        _json({"choices": [{"text": "7", "finish_reason": "stop"}], "usage": {"completion_tokens": 0}}),
        "counts 0 tokens for a text of 1 characters",
    ),
    "two choices": (
        _json({"choices": [_choice()["choices"][0]] * 2}),
        "not a completion (choices: List should have at most 1 item",
    ),
    "lone surrogate": (_json(_choice(text="a\ud800b")), "text is not valid Unicode (a lone surrogate)"),
    "unfinished": (_json(_choice(finish_reason="abort")), "finish_reason: 'abort', not stop or length"),
}


@pytest.fixture
def hostile(untrained_checkpoint: Path) -> Iterator[Hostile]:
    """A hostile server that serves the untrained checkpoint under its path."""
    yield from Hostile({"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}).serve()


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_reply_that_is_not_a_completion_is_refused_in_one_line_and_the_finished_samples_are_handed_over(
    kind: str, hostile: Hostile, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    hostile.good_first, (hostile.bad, why) = 3, MALFORMED[kind]
    engine = stub_engine(untrained_checkpoint, hostile.url, retries=2, concurrency=1)
    got: list[Any] = []
    with pytest.raises(oe.RunnerError) as e:
        engine.generate(stub_requests(6), SAMPLED, on_result=got.append)
    message = str(e.value)
    assert "\n" not in message and why in message, message
    assert "the finished samples are kept" in message and "of item 'q" in message
    assert len(got) == 3 and all(r.gen_tokens == 2 and r.text.startswith("seed ") for r in got)
    # Refused at once: a malformed reply is not the server being busy.
    assert [b["seed"] for b in hostile.bodies].count(103) == 1


@pytest.mark.parametrize("answer", [_raw(b"<html><body>502 Bad Gateway</body></html>"), _cut])
def test_a_200_whose_body_is_not_json_is_retried_then_ends_in_one_line(
    answer: Answer, hostile: Hostile, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    hostile.good_first, hostile.bad = 2, answer
    engine = stub_engine(untrained_checkpoint, hostile.url, retries=2, concurrency=1)
    got: list[Any] = []
    with pytest.raises(oe.ServerGoneError) as e:
        engine.generate(stub_requests(4), SAMPLED, on_result=got.append)
    message = str(e.value)
    assert "\n" not in message and "did not answer after 2 retries" in message, message
    assert "HTTP 200" in message or "ClientPayloadError" in message or "ServerDisconnected" in message
    assert len(got) == 2 and [b["seed"] for b in hostile.bodies].count(102) == 3  # sent three times


def test_a_cut_body_is_sent_again_and_the_second_answer_is_kept(
    hostile: Hostile, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    cuts = [1]

    async def once(request: Any, body: dict[str, Any]) -> Any:
        if cuts.pop() if cuts else 0:
            return await _cut(request, body)
        hostile.bodies.pop()
        return await Stub._complete(hostile, request)

    hostile.bad = once
    engine = stub_engine(untrained_checkpoint, hostile.url, retries=1, concurrency=1)
    results = engine.generate(stub_requests(1), SAMPLED)
    assert [r.text for r in results] == ["seed 100\n"] and len(hostile.times) == 2


def test_a_busy_server_is_left_alone_for_the_retry_after_it_asks_for(
    hostile: Hostile, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    busy = _json({"error": {"message": "overloaded"}}, status=503, headers={"Retry-After": "1"})

    async def until_a_second(request: Any, body: dict[str, Any]) -> Any:
        if time.monotonic() - hostile.times[0] < 1.0:
            return await busy(request, body)
        hostile.bodies.pop()
        return await Stub._complete(hostile, request)

    hostile.bad = until_a_second
    engine = stub_engine(untrained_checkpoint, hostile.url, retries=2, concurrency=1)
    results = engine.generate(stub_requests(1), SAMPLED)
    assert [r.text for r in results] == ["seed 100\n"]
    assert len(hostile.times) == 2 and hostile.times[1] - hostile.times[0] >= 1.0


def test_a_retry_after_beyond_the_timeout_ends_the_run_at_once_in_one_line(
    hostile: Hostile, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    hostile.bad = _json({"error": {"message": "maintenance"}}, status=503, headers={"Retry-After": "7200"})
    engine = stub_engine(untrained_checkpoint, hostile.url, retries=3, timeout_s=60)
    with pytest.raises(
        oe.ServerGoneError, match=r"asks to retry after 7200 s .*longer than timeout_s \(60 s\)"
    ):
        engine.generate(stub_requests(1), SAMPLED)
    assert len(hostile.times) == 1


@pytest.mark.parametrize(
    ("endpoint", "payload", "why"),
    [
        ("models", b"<html>not found</html>", "answered /v1/models with a body that is not JSON"),
        ("models", b'[{"id": "x"}]', "answered /v1/models with a JSON list, not the dict"),
        ("tokenize", b"<html>oops</html>", "answered /tokenize with a body that is not JSON"),
        ("tokenize", b"[1, 2]", "answered /tokenize with a JSON list, not the dict"),
        ("tokenize", b'{"count": 3}', "a probe gives no list of tokens there"),
        ("version", b"vllm 0.11", "answered /version with a body that is not JSON"),
    ],
)
def test_a_server_whose_model_list_or_tokenizer_is_not_json_is_refused_in_one_line(
    endpoint: str, payload: bytes, why: str, hostile: Hostile, untrained_checkpoint: Path
):
    setattr(hostile, endpoint, payload)
    with pytest.raises(EngineStartError) as e:
        stub_engine(untrained_checkpoint, hostile.url)
    assert "\n" not in str(e.value) and why in str(e.value), str(e.value)
    assert f"the server at {hostile.url[7:]}" in str(e.value)


def _run_arm(w: Any, out: Path, url: str) -> subprocess.CompletedProcess[str]:
    from demo.worlds import ROOT

    cmd = [
        sys.executable, "-m", "pipeline.run_arm", "arm=base", f"params={w.params}", f"pins={w.pins}",
        f"out_dir={out}", "engine=openai", "engine.retries=1", "engine.concurrency=1", "progress=false",
        f"engine.base_url={url}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


def _shard_samples(out: Path) -> list[dict[str, Any]]:
    shards = Path(f"{out}.work").rglob("*.jsonl")
    lines = [json.loads(x) for f in shards for x in f.read_text().splitlines()]
    return sorted((x for x in lines if "item_id" in x), key=lambda x: (x["item_id"], x["index"]))


def test_a_malformed_reply_through_the_cli_is_one_line_exit_2_and_the_saved_samples_stay_as_they_were(
    tmp_path: Path, untrained_checkpoint: Path
):
    from contract.generations import load_generations
    from demo.tiny_models import arithmetic_items
    from demo.worlds import make_world

    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(5), k=2, max_tokens=8)
    out = tmp_path / "out"
    for server in Hostile({"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}).serve():
        server.good_first, server.bad = 4, MALFORMED["text null"][0]
        first = _run_arm(w, out, server.url)
        lines = [ln for ln in first.stderr.splitlines() if ln.strip()]
        assert first.returncode == 2 and len(lines) == 1, first.stderr
        assert "not a completion (choices.0.text" in lines[0] and "Traceback" not in first.stderr
        saved = _shard_samples(out)
        assert len(saved) == 4 and not (out / "base.json").exists()
        server.bad = None
        again = _run_arm(w, out, server.url)
        assert again.returncode == 0, again.stderr
        gens = load_generations(out / "base.json")
        texts = {(it.item_id, s.index): s.text for it in gens.items for s in it.samples}
        assert all(texts[(s["item_id"], s["index"])] == s["text"] for s in saved) and len(texts) == 10


# --- property tests of the reply parser ---------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["choices", "usage", "text", "finish_reason", "token_ids", "completion_tokens"])
REQUEST = GenRequest(key=("q", 0), prompt="p", seed=1, max_tokens=4)


def _replies() -> st.SearchStrategy[Any]:
    """Replies near a real one: a valid reply with any field replaced by any JSON value or removed."""
    good = st.fixed_dictionaries({
        "choices": st.lists(
            st.fixed_dictionaries({
                "text": st.text(), "finish_reason": st.sampled_from([*FINISHES, "abort", None]),
                "token_ids": st.none() | st.lists(st.integers(-2, 10**6), max_size=4),
                "stop_reason": st.none() | st.text(max_size=3) | st.integers(0, 9),
                "logprobs": st.none() | st.fixed_dictionaries({"token_logprobs": st.lists(JSON, max_size=3)}),
            }), max_size=2,
        ),
        "usage": st.none() | st.fixed_dictionaries({
            "prompt_tokens": st.none() | st.integers(-1, 99), "completion_tokens": JSON,
        }),
    })  # fmt: skip
    return st.one_of(good, JSON, st.tuples(good, KEYS, JSON).map(_spoil))


def _spoil(args: tuple[dict[str, Any], str, Any]) -> dict[str, Any]:
    reply, key, value = args
    target = reply["choices"][0] if reply["choices"] and key not in ("choices", "usage") else reply
    target[key] = value
    return reply


@settings(max_examples=400, deadline=None)
@given(_replies())
def test_the_reply_parser_returns_a_sample_or_refuses_in_one_line_whatever_the_server_sends(body: Any):
    try:
        result = completion(REQUEST, [1, 2, 3], body)
    except ReplyError as e:
        assert "\n" not in str(e) and str(e)
        return
    choice = body["choices"][0]
    assert len(body["choices"]) == 1 and choice["finish_reason"] in FINISHES
    assert result.text.startswith(choice["text"]) and isinstance(result.text.encode("utf-8"), bytes)
    usage = body.get("usage") or {}
    counted = usage.get("completion_tokens")
    assert result.gen_tokens == (counted if counted is not None else len(choice["token_ids"]))
    assert isinstance(result.gen_tokens, int) and result.gen_tokens >= 0 and result.prompt_tokens >= 0
    assert result.mean_logprob is None or result.mean_logprob <= 0.0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64) | JSON.map(lambda v: json.dumps(v).encode()))
def test_any_body_is_json_or_refused_as_not_json(payload: bytes):
    try:
        json_body(payload)
    except NotJSONError as e:
        assert "not JSON" in str(e) and "\n" not in str(e)


@given(st.text(max_size=40) | st.floats().map(str) | st.integers().map(str))
def test_a_retry_after_is_a_finite_wait_or_none(value: str):
    got = retry_after_s(value, now=0.0)
    assert got is None or (got >= 0.0 and got < float("inf"))


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_s("10") == 10.0 and retry_after_s("-3") == 0.0 and retry_after_s("soon") is None
    assert retry_after_s("Thu, 01 Jan 1970 00:01:40 GMT", now=40.0) == 60.0


def test_a_run_resumed_on_another_server_names_both_and_one_on_another_version_is_refused(
    tmp_path: Path, untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    from contract.generations import load_generations
    from contract.provenance import provenance_path
    from demo.tiny_models import arithmetic_items
    from demo.worlds import make_world
    from pipeline.config import engine_config
    from pipeline.generate import run
    from pipeline.settings import RunnerError

    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    w = make_world(tmp_path / "w", {"base": untrained_checkpoint}, arithmetic_items(4), k=2, max_tokens=8)
    served = {"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}

    def settings(url: str) -> Any:
        return w.settings("base", engine=engine_config("openai", base_url=url, retries=0, concurrency=1))

    for a in Hostile(served).serve():
        for b in Hostile(served).serve():
            for c in Hostile(served).serve():
                a.dead_after, c.version = 3, b'{"version": "0.0.other"}'
                with pytest.raises(oe.ServerGoneError):
                    run(settings(a.url))
                with pytest.raises(RunnerError) as e:
                    run(settings(c.url))
                assert "\n" not in str(e.value) and "version 'vllm 0.0.other' (not 'vllm 0.0.stub')" in str(
                    e.value
                )
                assert "pass fresh=true to start over" in str(e.value) and not c.bodies
                b.dead_after = 3
                with pytest.raises(oe.ServerGoneError):
                    run(settings(b.url))
                a.dead_after = None
                dest = run(settings(a.url))
                engine = load_generations(dest).engine
                assert engine.server == f"{a.url[7:]}, {b.url[7:]}" and engine.version == "vllm 0.0.stub"
                prov = json.loads(provenance_path(dest).read_text())
                assert prov["engine"]["server"] == engine.server
                assert a.answered == 3 + 2 and b.answered == 3


def test_a_server_that_dies_after_the_checks_is_named_stopped_with_the_command_that_works(
    untrained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(oe, "BACKOFF_S", 0.01)
    for server in Stub({"id": str(untrained_checkpoint), "root": str(untrained_checkpoint)}).serve():
        engine = stub_engine(untrained_checkpoint, server.url, retries=1)
    with pytest.raises(oe.ServerGoneError) as e:  # the server has stopped: its port refuses connections
        engine.generate(stub_requests(1), SAMPLED)
    message = str(e.value)
    assert "\n" not in message and "accepted the checks and now refuses connections" in message
    assert "python -m pipeline.engines.serve <model>" in message


def test_the_serve_command_gives_a_cpu_server_the_runners_flags_and_the_gpu_page_shows_it(
    untrained_checkpoint: Path,
):
    from demo.worlds import ROOT
    from pipeline.engines.hardware import platform_info
    from pipeline.engines.serve import command, main

    cmd, env = command(str(untrained_checkpoint), "127.0.0.1", 8123)
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] and "--port" in cmd
    assert "VLLM_CPU_KVCACHE_SPACE" in env
    if platform_info()[0] == "cpu":
        assert "--no-enable-chunked-prefill" in cmd and "--enforce-eager" in cmd
    assert main(["no/such/checkpoint", "--dry-run"]) == 2
    page = (ROOT / "docs" / "gpu.md").read_text()
    assert "python -m pipeline.engines.serve demo/models/base --host 0.0.0.0 --port 8000" in page


@given(st.datetimes(datetime(1970, 1, 1), datetime(9999, 12, 31), timezones=st.just(UTC)))
def test_an_http_date_retry_after_is_the_seconds_until_that_date(when: datetime):
    from email.utils import format_datetime

    got = retry_after_s(format_datetime(when, usegmt=True), now=1e9)
    assert got == max(0.0, when.replace(microsecond=0).timestamp() - 1e9)
