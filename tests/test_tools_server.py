"""The MCP tool server over stdio (real subprocesses), through the mcp SDK client and through ToolClient.

Hand-computed values use the constants stated in arms/tools/orbital.py:
mu = 398600.4418 km^3/s^2, R = 6378.137 km; tools round results to 2 decimals.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from arms.tools.client import DEFAULT_COMMAND, ToolClient, ToolServerError
from arms.tools.orbital import TOOLS

ROOT = Path(__file__).resolve().parents[1]
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
    """Independent of ToolClient: the mcp SDK's own stdio client talks to `python -m arms.tools.server`."""

    async def session() -> tuple[list, object]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "arms.tools.server"], cwd=ROOT)
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
    assert set(listed) == set(TOOLS) | {"fault_raise", "fault_exit"}
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


def test_dead_server_is_restarted_once_then_calls_are_errors() -> None:
    with ToolClient(FAULTY) as c:
        assert c.call("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}
        died = c.call("fault_exit", {})
        assert died["error"].startswith("tool server died during the call")
        # The next call starts a new server and succeeds.
        assert c.call("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}
        assert c.restarts == 1
        assert c.call("fault_exit", {})["error"].startswith("tool server died during the call")
        for _ in range(2):
            out = c.call("orbital_period", {"altitude_km": 400})
            assert out["error"].startswith(
                "tool server unavailable: tool server died and was already restarted"
            )
        assert c.restarts == 1
        with pytest.raises(ToolServerError, match="already restarted"):
            c.list_tools()


def test_server_killed_from_outside_is_reported_then_restarted() -> None:
    psutil = pytest.importorskip("psutil")
    with ToolClient(DEFAULT_COMMAND) as c:
        assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
        servers = [
            p
            for p in psutil.Process().children(recursive=True)
            if "arms.tools.server" in p.cmdline() and "--fault-tools" not in p.cmdline()
        ]
        assert len(servers) == 1
        servers[0].kill()
        servers[0].wait(10)
        assert "error" in c.call("circular_speed", {"altitude_km": 400})
        assert c.call("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}
        assert c.restarts == 1


def test_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolServerError, match="failed to start"):
        ToolClient([sys.executable, "-c", "raise SystemExit(5)"], start_timeout_s=30).start()


def test_call_outside_the_context_is_an_error_result() -> None:
    out = ToolClient().call("orbital_period", {"altitude_km": 400})
    assert out == {
        "error": "tool server unavailable: tool client is not started (use `with ToolClient() as tools:`)"
    }
