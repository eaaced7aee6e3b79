"""The MCP tool server over stdio (real subprocesses), through the mcp SDK client and through ToolClient.

Hand-computed values use the constants stated in augment/tools/orbital.py:
mu = 398600.4418 km^3/s^2, R = 6378.137 km; tools round results to 2 decimals.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from augment.loop import ToolCallFailed
from augment.tools.client import DEFAULT_COMMAND, ToolClient, ToolServerError
from augment.tools.orbital import TOOLS
from augment.tools.server import EXIT_EVERY_ENV

ROOT = Path(__file__).resolve().parents[2]
FAULTY = (*DEFAULT_COMMAND, "--fault-tools")

# (tool, arguments, result key, value computed by hand)
HAND_VALUES = [
    # a = 6378.137 + 400 = 6778.137 km; a^3 / mu = 781255.8 s^2; T = 2 pi sqrt(781255.8) s = 5553.6 s
    # = 92.56 min
    ("orbital_period", {"altitude_km": 400}, "period_min", 92.56),
    # v = sqrt(398600.4418 / 6778.137) = sqrt(58.8068) = 7.6686 km/s
    ("circular_speed", {"altitude_km": 400}, "speed_km_s", 7.67),
    # v^2 = mu (2/7000 - 1/8000) = 398600.4418 * 1.607143e-4 = 64.0608; v = 8.0038 km/s
    ("vis_viva_speed", {"radius_km": 7000, "semi_major_axis_km": 8000}, "speed_km_s", 8.0),
    # r1 = 6778.137, r2 = 42164.137, a_t = 24471.137: burn 1 = 10.0660 - 7.6686 = 2.3975,
    # burn 2 = 3.0747 - 1.6182 = 1.4565; total 3.8540 km/s (the textbook LEO-to-GEO 3.85 km/s)
    ("hohmann_delta_v", {"from_altitude_km": 400, "to_altitude_km": 35786}, "delta_v_km_s", 3.85),
    # relative r = (10, 0, 0) km, v = (-1, 1, 0) km/s: t* = -r.v / v.v = 5 s, r + v t* = (5, 5, 0),
    # |r + v t*| = 5 sqrt(2) = 7.07 km
    (
        "miss_distance",
        {
            "position1_km": [0, 0, 0],
            "velocity1_km_s": [0, 0, 0],
            "position2_km": [10, 0, 0],
            "velocity2_km_s": [-1, 1, 0],
        },
        "miss_km",
        7.07,
    ),
    # receding objects: closest approach is now (t* < 0 is clamped to 0), 10 km
    (
        "miss_distance",
        {
            "position1_km": [0, 0, 0],
            "velocity1_km_s": [0, 0, 0],
            "position2_km": [10, 0, 0],
            "velocity2_km_s": [1, 0, 0],
        },
        "miss_km",
        10.0,
    ),
]


@pytest.fixture(scope="module")
def client() -> Iterator[ToolClient]:
    with ToolClient(FAULTY) as c:
        yield c


def test_sdk_client_lists_tools_and_calls_one_over_stdio() -> None:
    """Independent of ToolClient: the mcp SDK's own stdio client talks to `python -m augment.tools.server`."""

    async def session() -> tuple[list, object]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "augment.tools.server"], cwd=ROOT)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = await s.list_tools()
            result = await s.call_tool("orbital_period", {"altitude_km": 400})
            return listed.tools, result

    tools, result = anyio.run(session)
    assert sorted(t.name for t in tools) == sorted(TOOLS)
    for t in tools:
        assert t.input_schema == TOOLS[t.name].parameters
        assert t.output_schema["required"] == [TOOLS[t.name].result_key]
    assert not result.is_error
    assert result.structured_content == {"period_min": 92.56}


def test_tool_client_lists_every_tool_with_its_schema(client: ToolClient) -> None:
    listed = {t["name"]: t for t in client.list_tools()}
    assert set(listed) == set(TOOLS) | {"fault_raise", "fault_exit", "fault_hang"}
    for name, spec in TOOLS.items():
        assert listed[name]["input_schema"] == spec.parameters
        assert listed[name]["description"] == spec.description


@pytest.mark.parametrize(("tool", "arguments", "key", "expected"), HAND_VALUES)
def test_each_tool_over_mcp_matches_hand_computation(
    client: ToolClient, tool: str, arguments: dict, key: str, expected: float
) -> None:
    assert client.call(tool, arguments) == {key: expected}


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("orbital_period", {"altitude_km": "400"}, "argument 'altitude_km' must be a number, got str"),
        ("orbital_period", {}, "'orbital_period' is missing argument(s): altitude_km"),
        ("orbital_period", {"altitude_km": 400, "x": 1}, "'orbital_period' got unknown argument(s): x"),
        ("orbital_period", {"altitude_km": -7000}, "argument 'altitude_km' must be >= -6377.137"),
        ("miss_distance", {**HAND_VALUES[4][1], "position1_km": [1, 2]}, "must be a list of 3 numbers"),
        ("vis_viva_speed", {"radius_km": 20000, "semi_major_axis_km": 8000}, "could not be computed"),
        ("warp_drive", {"speed": 9}, "unknown tool 'warp_drive'; known tools: circular_speed"),
        ("orbital_period", [400], "arguments of 'orbital_period' must be a JSON object, got list"),
        (None, {}, "tool name must be a non-empty string"),
    ],
)
def test_bad_calls_come_back_as_error_results(
    client: ToolClient, tool: object, arguments: object, message: str
):
    out = client.call(tool, arguments)
    assert set(out) == {"error"}
    assert message in out["error"]


def test_model_text_is_never_evaluated(client: ToolClient, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    out = client.call("orbital_period", {"altitude_km": f"__import__('os').system('touch {marker}') or 400"})
    assert "must be a number" in out["error"]
    assert not marker.exists()


def test_a_tool_that_raises_is_an_error_and_the_server_lives_on(client: ToolClient) -> None:
    out = client.call("fault_raise", {})
    assert out == {"error": "tool 'fault_raise' raised RuntimeError: fault_raise was asked to raise"}
    assert client.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
    assert client.restarts == 0


def test_a_call_that_kills_the_server_is_retried_once_then_failed_and_the_next_call_restarts() -> None:
    with ToolClient(FAULTY) as c:
        assert c.call("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}
        with pytest.raises(ToolCallFailed, match="died during the call, and again when it was retried"):
            c.call("fault_exit", {})
        # The first death restarted the server for the retry; the retry's death left it down.
        assert (c.deaths, c.restarts) == (2, 1)
        assert c.call("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}
        assert (c.deaths, c.restarts, c.calls) == (2, 2, 3)


def test_a_server_dying_again_and_again_is_restarted_within_the_budget_then_refused() -> None:
    """Every server process exits on its 3rd call: two restarts are allowed, the third death ends it."""
    with ToolClient(DEFAULT_COMMAND, env={EXIT_EVERY_ENV: "3"}, max_restarts=2, restart_window=100) as c:
        # Calls 3 and 5 kill their server; each is retried on a new one and answered.
        for alt in range(400, 405):
            assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}, alt
        assert (c.deaths, c.restarts) == (2, 2)
        assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
        with pytest.raises(
            ToolServerError, match="died 3 times in 7 calls, more than the restart budget of 2"
        ):
            c.call("circular_speed", {"altitude_km": 400})
        assert c.restarts == 2
        # Gone for good: every later call and listing is refused, never answered with an error payload.
        with pytest.raises(ToolServerError, match="restart budget"):
            c.call("circular_speed", {"altitude_km": 400})
        with pytest.raises(ToolServerError, match="restart budget"):
            c.list_tools()


@pytest.mark.parametrize(("window", "refused_at"), [(3, None), (4, 7)])
def test_the_restart_budget_counts_restarts_within_a_window_of_calls(window: int, refused_at: int | None):
    """Each server exits on its 4th call, so deaths come at calls 4, 7, 10, ...: three calls apart. One
    restart per 3 calls is never exceeded; one per 4 calls is, at the second death."""
    env = {EXIT_EVERY_ENV: "4"}
    with ToolClient(DEFAULT_COMMAND, env=env, max_restarts=1, restart_window=window) as c:
        for n in range(1, 11):
            if n == refused_at:
                with pytest.raises(ToolServerError, match="restart budget of 1 restarts per 4 calls"):
                    c.call("orbital_period", {"altitude_km": 400})
                return
            assert c.call("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}
        assert (c.calls, c.restarts) == (10, 3)


def test_server_killed_from_outside_is_restarted_and_the_call_answered() -> None:
    psutil = pytest.importorskip("psutil")
    with ToolClient(DEFAULT_COMMAND) as c:
        assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
        servers = [
            p
            for p in psutil.Process().children(recursive=True)
            if "augment.tools.server" in p.cmdline() and "--fault-tools" not in p.cmdline()
        ]
        assert len(servers) == 1
        servers[0].kill()
        servers[0].wait(10)
        assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
        assert (c.deaths, c.restarts) == (1, 1)


def test_a_hanging_tool_gets_a_tool_error_and_the_server_answers_meanwhile() -> None:
    """The server's own timeout answers a tool that never returns, and other calls are served meanwhile."""

    async def session() -> tuple[list[tuple[str, float, Any]], float]:
        params = StdioServerParameters(
            command=sys.executable, args=[*FAULTY[1:], "--tool-timeout-s", "1.5"], cwd=ROOT
        )
        done: list[tuple[str, float, Any]] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            t0 = time.monotonic()

            async def call(name: str, args: dict) -> None:
                result = await s.call_tool(name, args)
                done.append((name, time.monotonic() - t0, result))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "fault_hang", {})
                await anyio.sleep(0.2)
                tg.start_soon(call, "orbital_period", {"altitude_km": 400})
            after = await s.call_tool("circular_speed", {"altitude_km": 400})
        return done, after

    done, after = anyio.run(session)
    (first, t_first, r_first), (second, t_second, r_second) = done
    assert first == "orbital_period" and t_first < 1.0 and r_first.structured_content == {"period_min": 92.56}
    assert second == "fault_hang" and 1.4 < t_second < 10 and r_second.is_error
    assert "did not finish within the server's timeout of 1.5 s" in r_second.content[0].text
    assert after.structured_content == {"speed_km_s": 7.67}


class RawServer:
    """The server as a subprocess spoken to in raw JSON-RPC lines (what a foreign client might send)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            list(DEFAULT_COMMAND),
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 10.0) -> dict:
        return self.lines.get(timeout=timeout)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    server.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )  # fmt: skip
    )
    assert server.answer(30)["id"] == 1
    server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield server
    server.close()


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        # not JSON: a parse error, carrying the id when it stands before the break
        ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": ', -32700, 7),
        ('{"jsonrpc": "2.0", "method": "tools/list", "id": "q-1", "params": [}', -32700, "q-1"),
        ("tools/call orbital_period 400", -32700, None),
        # JSON, but not a JSON-RPC request: an invalid request with its id
        (json.dumps({"jsonrpc": "2.0", "id": 8, "method": 42}), -32600, 8),
        (json.dumps({"jsonrpc": "1.0", "id": "x", "method": "tools/list"}), -32600, "x"),
        (json.dumps({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}), -32600, None),
        (json.dumps([1, 2, 3]), -32600, None),
    ],
)
def test_a_malformed_frame_gets_a_json_rpc_error_and_the_server_goes_on(
    raw_server: RawServer, line: str, code: int, rid: object
) -> None:
    raw_server.send(line)
    err = raw_server.answer()
    assert err["jsonrpc"] == "2.0" and err["id"] == rid and err["error"]["code"] == code, err
    assert err["error"]["message"].startswith("Parse error" if code == -32700 else "Invalid Request")
    call = {"name": "orbital_period", "arguments": {"altitude_km": 400}}
    raw_server.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": call}))
    ok = raw_server.answer()
    assert ok["id"] == 99 and ok["result"]["structuredContent"] == {"period_min": 92.56}


def test_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolServerError, match="failed to start"):
        ToolClient([sys.executable, "-c", "raise SystemExit(5)"], start_timeout_s=30).start()


def test_call_outside_the_context_is_refused() -> None:
    with pytest.raises(
        ToolServerError, match=r"tool client is not started \(use `with ToolClient\(\) as tools:`\)"
    ):
        ToolClient().call("orbital_period", {"altitude_km": 400})
