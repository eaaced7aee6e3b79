"""The MCP server of the +tools arms: every orbital tool with its JSON Schema, over stdio.

    python -m arms.tools.server                    # serve arms.tools.orbital.TOOLS on stdin/stdout
    python -m arms.tools.server --fault-tools      # also serve two fault-injection tools (tests only)

Built on the low-level `mcp.server.Server` rather than `MCPServer` (the FastMCP successor) because the tools
already carry hand-written JSON Schemas with units and bounds; MCPServer would derive weaker ones from
Python signatures. A call returns `structured_content = {result_key: value}` (also as JSON text) or, for
any fault, `is_error=True` with the reason as text: bad arguments and unknown tools come from
arms.tools.orbital.call_tool, and an exception raised inside a tool is caught here and reported, so the
server never dies of a tool. Arguments arrive as JSON objects from the MCP protocol; nothing is evaluated.

Fault tools (only with --fault-tools, so the tests can exercise the client's fault paths through a real
server): `fault_raise` raises RuntimeError inside the handler, `fault_exit` ends the server process at once
(os._exit), as a crash in the middle of a call would.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from arms.tools.orbital import TOOLS, call_tool

SERVER_NAME = "orbital-tools"
FAULT_TOOLS: dict[str, str] = {
    "fault_raise": "Test hook: raises RuntimeError inside the tool.",
    "fault_exit": "Test hook: the server process exits immediately, as in a crash.",
}


def tool_list(fault_tools: bool = False) -> list[types.Tool]:
    """The MCP Tool descriptions: name, description, input schema, and output schema naming the result key."""
    tools = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.parameters,
            output_schema={
                "type": "object",
                "properties": {spec.result_key: {"type": "number"}},
                "required": [spec.result_key],
                "additionalProperties": False,
            },
        )
        for spec in TOOLS.values()
    ]
    if fault_tools:
        empty = {"type": "object", "properties": {}, "additionalProperties": False}
        tools += [types.Tool(name=n, description=d, input_schema=empty) for n, d in FAULT_TOOLS.items()]
    return tools


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def run_tool(name: str, arguments: dict[str, Any] | None, fault_tools: bool = False) -> types.CallToolResult:
    """Execute one call: a result with structured content, or an is_error result; never raises."""
    try:
        if fault_tools and name == "fault_raise":
            raise RuntimeError("fault_raise was asked to raise")
        if fault_tools and name == "fault_exit":
            # A crash mid-call: no response is ever written, the client sees the connection close.
            sys.stderr.flush()
            os._exit(3)
        out = call_tool(name, arguments if arguments is not None else {})
    except Exception as e:  # noqa: BLE001 - a tool that raises is reported to the caller, never fatal
        return _error(f"tool {name!r} raised {type(e).__name__}: {e}")
    if "error" in out:
        return _error(str(out["error"]))
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(out, sort_keys=True))], structured_content=out
    )


def build_server(fault_tools: bool = False) -> Server:
    """The low-level MCP server answering tools/list and tools/call."""

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(fault_tools))

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return run_tool(params.name, params.arguments, fault_tools)

    return Server(SERVER_NAME, version="1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(fault_tools: bool = False) -> None:
    """Serve one client over stdin/stdout until it closes the connection."""
    server = build_server(fault_tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Command line: serve the tools over stdio."""
    ap = argparse.ArgumentParser(prog="python -m arms.tools.server", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--fault-tools", action="store_true", help="also serve fault_raise and fault_exit (tests)"
    )
    args = ap.parse_args(argv)
    anyio.run(serve_stdio, args.fault_tools)
    return 0


if __name__ == "__main__":
    sys.exit(main())
