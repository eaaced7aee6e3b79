"""Hostile model output against the tool loop and the MCP tool server: a tool error or a protocol error,
never a crash, never a hang.

Properties (hypothesis): any text between <tool_call> tags (numbers past a float or past Python's int-string
limit, NaN and Infinity, lone surrogate escapes, nesting to thousands of levels, long strings, any unicode)
parses to a call or to a malformed-call error, and what it records can be written to a generations file;
the tool loop, over a real tool server, answers every such call and finishes; the server, fed the same kind
of lines raw (as request ids, as arguments, as bytes that are not UTF-8), answers each request it can read
an id from, stays alive and still answers the next request within seconds.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from augment.loop import ParsedCall, parse_tool_call, run_tool_loop
from augment.tools.client import DEFAULT_COMMAND, ToolClient
from contract.engine import Decoding, EngineInfo, GenRequest, GenResult
from contract.generations import ToolCallRecord
from contract.textformat import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from demo.worlds import ROOT

DECODING = Decoding(temperature=1.0, top_p=1.0)

# JSON-like text a model could write, including what Python's json module reads but no file can store.
_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n),  # past the int-string limit
    st.floats(allow_nan=True, allow_infinity=True).map(repr),  # nan, inf: written as Python spells them
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "0.1e400", "-0"]),
)
_strings = st.one_of(
    st.text(max_size=40).map(json.dumps),
    st.sampled_from(['"\\ud800"', '"\\udfff x"', '"\\u0000"', '"\\u202e evil"', '"\\"', '"\\x41"']),
    st.integers(min_value=1, max_value=200_000).map(lambda n: json.dumps("a" * n)),
)
_scalar = st.one_of(_numbers.map(str), _strings, st.sampled_from(["true", "false", "null", "tru", "nul"]))


def _nest(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


_value = st.recursive(
    _scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(_strings, children), max_size=4).map(
            lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"
        ),
    ),
    max_leaves=12,
)
_deep = st.tuples(st.integers(min_value=1, max_value=5000), _scalar).map(lambda t: _nest(*t))
_name = st.one_of(_strings, _numbers.map(str), st.sampled_from(['"orbital_period"', '"escape_velocity"']))
_call = st.one_of(
    st.tuples(_name, st.one_of(_value, _deep)).map(lambda t: f'{{"name": {t[0]}, "arguments": {t[1]}}}'),
    st.tuples(_name, _value).map(lambda t: f'{{"name": {t[0]}, "arguments": {{"altitude_km": {t[1]}}}}}'),
    _value,
    _deep,
    st.text(max_size=200),
)


def _storable(record: ToolCallRecord) -> None:
    """What the runner does with a record: serialize it, UTF-8, as the generations file holds it."""
    record.model_dump_json().encode("utf-8")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_call)
def test_any_tool_call_text_parses_to_a_call_or_an_error_that_can_be_stored(body: str) -> None:
    parsed = parse_tool_call(f"Let me compute. {TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}")
    assert isinstance(parsed, ParsedCall)
    if parsed.error is None:
        assert isinstance(parsed.name, str)
        json.dumps(parsed.arguments, allow_nan=False).encode("utf-8")
        _storable(ToolCallRecord(name=parsed.name, arguments=parsed.arguments, raw=parsed.raw, round=0))
    else:
        assert parsed.error.startswith("malformed tool call")
        _storable(ToolCallRecord(raw=parsed.raw, error=parsed.error, round=0))


class _Engine:
    """Round 0 of each request is its hostile tool call; every later round answers and stops."""

    info = EngineInfo(name="scripted", version="test", device="cpu", dtype="none")

    def __init__(self, bodies: dict[tuple[str, int], str]):
        self.bodies = bodies

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def generate(
        self, requests: Sequence[GenRequest], decoding: Decoding, on_result: Any = None
    ) -> list[GenResult]:
        out = []
        for r in requests:
            first = TOOL_CALL_OPEN not in r.prompt
            text = f"{TOOL_CALL_OPEN}{self.bodies[r.key]}{TOOL_CALL_CLOSE}" if first else "Answer: 1\n"
            out.append(GenResult(r.key, text, "stop", 3, 3))
        return out


@pytest.fixture(scope="module")
def tool_client() -> Iterator[ToolClient]:
    with ToolClient(DEFAULT_COMMAND, call_timeout_s=20) as client:
        yield client


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(_call, min_size=1, max_size=4))
def test_the_tool_loop_answers_every_hostile_call_over_a_real_server(
    tool_client: ToolClient, bodies: list[str]
) -> None:
    keys = [(f"item-{i}", 0) for i in range(len(bodies))]
    requests = [GenRequest(k, "Question: how high?\n", 1, 100) for k in keys]
    outcomes = run_tool_loop(
        _Engine(dict(zip(keys, bodies, strict=True))), requests, DECODING, tool_client, 2
    )
    assert [o.key for o in outcomes] == keys
    for o in outcomes:
        assert o.tool_calls, o
        for record in o.tool_calls:
            assert (record.error is None) != (record.result is None), record
            assert not record.failed, record  # the server answered: no call was lost to a crash
            _storable(record)
    assert tool_client.deaths == 0


class _Server:
    """A real `python -m augment.tools.server` fed raw lines; its stdout read by a thread into a queue."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "augment.tools.server"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        self.send(json.dumps(init).encode())
        assert self.reply_to("init")
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply_to(self, rid: Any, timeout: float = 15.0) -> dict[str, Any]:
        """The reply carrying id rid; the replies before it (to hostile lines) are dropped."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no reply to id {rid!r} within {timeout} s (server hung)") from None
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=15)
        return self.proc.stderr.read().decode(errors="replace")


@pytest.fixture(scope="module")
def raw_server() -> Iterator[_Server]:
    server = _Server()
    yield server
    assert "Traceback" not in server.close()


_line = st.one_of(
    _call.map(str.encode),
    _value.map(lambda v: f'{{"jsonrpc": "2.0", "id": {v}, "method": "tools/list"}}'.encode()),
    _value.map(
        lambda v: (
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "orbital_period", '
            f'"arguments": {{"altitude_km": {v}}}}}}}'
        ).encode()
    ),
    _deep.map(lambda v: f'{{"jsonrpc": "2.0", "id": {v}, "method": "tools/list"}}'.encode()),
    st.binary(max_size=300).filter(lambda b: b"\n" not in b and b"\r" not in b),
)
_pings = iter(range(10**9))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=_line)
def test_the_server_answers_or_refuses_every_hostile_line_and_keeps_serving(
    raw_server: _Server, line: bytes
) -> None:
    raw_server.send(line)
    ping = f"ping-{next(_pings)}"
    raw_server.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "tools/list"}).encode())
    reply = raw_server.reply_to(ping)
    assert reply["result"]["tools"], reply
    assert raw_server.proc.poll() is None
