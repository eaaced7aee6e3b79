"""The MCP server of the +tools arms: every orbital tool with its JSON Schema, over stdio.

    python -m augment.tools.server                    # serve augment.tools.orbital.TOOLS on stdin/stdout
    python -m augment.tools.server --tool-timeout-s 5 # a call running longer is answered with a tool error
    python -m augment.tools.server --fault-tools      # also serve three fault-injection tools (tests only)

Built on the low-level `mcp.server.Server` rather than `MCPServer` (the FastMCP successor) because the tools
already carry hand-written JSON Schemas with units and bounds; MCPServer would derive weaker ones from
Python signatures. A call returns `structured_content = {result_key: value}` (also as JSON text) or, for
any fault, `is_error=True` with the reason as text: bad arguments and unknown tools come from
augment.tools.orbital.call_tool, and an exception raised inside a tool is caught here and reported, so the
server never dies of a tool. Arguments arrive as JSON objects from the MCP protocol; nothing is evaluated.

Each call runs in a worker thread under the server's own timeout (--tool-timeout-s, default 10 s): a tool
that runs longer is answered with a tool error while the event loop goes on serving (the thread cannot be
killed; it is abandoned and ends with the process). A line on stdin that is not a JSON-RPC message is
answered as JSON-RPC asks: not JSON with a -32700 parse error, JSON that is not a valid message with a
-32600 invalid request carrying the message's id when it has a readable one (null otherwise), so a client
never waits for an answer that cannot come. The mcp SDK reads and validates the frames (stdio_server); the
server sees each line as it is read, so that it can answer the ones the SDK could not parse.

Fault hooks, so the tests can exercise the client's fault paths through a real server. With --fault-tools:
`fault_raise` raises RuntimeError inside the handler, `fault_exit` ends the server process at once
(os._exit), as a crash in the middle of a call would, and `fault_hang` sleeps past any timeout. With the
environment variable REASONING_DELTA_TEST_TOOL_SERVER_EXIT_EVERY=N (tests only), the server process exits
on its N-th, 2N-th, ... tools/call, whatever the tool: a server that keeps dying under a real tool arm.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import sys
import time
from collections import deque
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError

from augment.tools import strict_json
from augment.tools.orbital import TOOLS, call_tool

SERVER_NAME = "orbital-tools"
DEFAULT_TOOL_TIMEOUT_S = 10.0
EXIT_EVERY_ENV = "REASONING_DELTA_TEST_TOOL_SERVER_EXIT_EVERY"
FAULT_TOOLS: dict[str, str] = {
    "fault_raise": "Test hook: raises RuntimeError inside the tool.",
    "fault_exit": "Test hook: the server process exits immediately, as in a crash.",
    "fault_hang": "Test hook: sleeps for an hour, past the server's tool timeout.",
}
_calls = itertools.count(1)


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


def _exit_mid_call() -> None:
    # A crash mid-call: no response is ever written, the client sees the connection close.
    sys.stderr.flush()
    os._exit(3)


def run_tool(
    name: str, arguments: dict[str, Any] | None, fault_tools: bool = False, exit_every: int = 0
) -> types.CallToolResult:
    """Execute one call: a result with structured content, or an is_error result; never raises."""
    if exit_every and next(_calls) % exit_every == 0:
        _exit_mid_call()
    try:
        if fault_tools and name == "fault_raise":
            raise RuntimeError("fault_raise was asked to raise")
        if fault_tools and name == "fault_exit":
            _exit_mid_call()
        if fault_tools and name == "fault_hang":
            time.sleep(3600)
        out = call_tool(name, arguments if arguments is not None else {})
    except Exception as e:  # noqa: BLE001 - a tool that raises is reported to the caller, never fatal
        return _error(f"tool {name!r} raised {type(e).__name__}: {e}")
    if "error" in out:
        return _error(str(out["error"]))
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(out, sort_keys=True))], structured_content=out
    )


def build_server(
    fault_tools: bool = False, tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S, exit_every: int = 0
) -> Server:
    """The low-level MCP server answering tools/list and tools/call (each call under tool_timeout_s)."""

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(fault_tools))

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # A worker thread, so that a slow tool never blocks the event loop that answers everything else.
        with anyio.move_on_after(tool_timeout_s):
            return await anyio.to_thread.run_sync(
                run_tool, params.name, params.arguments, fault_tools, exit_every, abandon_on_cancel=True
            )
        return _error(
            f"tool {params.name!r} did not finish within the server's timeout of {tool_timeout_s} s"
        )

    return Server(SERVER_NAME, version="1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def malformed_reply(raw: str, problem: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error for a line that is not a valid message; None for a blank line or a bad response."""
    if not raw.strip():
        return None
    try:
        msg = strict_json.loads(raw)
    except (ValueError, RecursionError) as e:
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=_request_id(_leading_id(raw)),
            error=types.ErrorData(code=PARSE_ERROR, message=f"Parse error: {e}"),
        )
    if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
        return None  # a malformed answer to a request of ours: answering it would start a ping-pong
    rid = _request_id(msg.get("id") if isinstance(msg, dict) else None)
    if isinstance(problem, ValidationError) and problem.errors():
        err = problem.errors()[0]
        why = f"{'.'.join(str(x) for x in err['loc']) or 'message'}: {err['msg']}"
    else:
        why = str(problem)
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=rid,
        error=types.ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: {why}"[:500]),
    )


def _request_id(value: Any) -> int | str | None:
    """A JSON-RPC request id (an integer or a string), or None for anything else."""
    return None if isinstance(value, bool) or not isinstance(value, int | str) else value


def _has_id(raw: str) -> bool:
    """Whether a line that parsed as a message is a JSON object with an "id" member."""
    try:
        msg = strict_json.loads(raw)
    except (ValueError, RecursionError):
        return _leading_id(raw) is not None or '"id"' in raw
    return isinstance(msg, dict) and "id" in msg


_DECODER = json.JSONDecoder()


def _leading_id(raw: str) -> Any:
    """The "id" of a JSON object cut short or broken after its id: its members are read in order, with
    the json module's own scanner, until the id or the first one that does not parse."""
    s, i = raw.strip(), 1
    if not s.startswith("{"):
        return None
    ws = json.decoder.WHITESPACE
    try:
        while True:
            i = ws.match(s, i).end()
            if s[i : i + 1] != '"':
                return None
            key, i = json.decoder.scanstring(s, i + 1)
            i = ws.match(s, i).end()
            if s[i : i + 1] != ":":
                return None
            value, i = _DECODER.scan_once(s, ws.match(s, i + 1).end())
            if key == "id":
                return value
            i = ws.match(s, i).end()
            if s[i : i + 1] != ",":
                return None
            i += 1
    except (ValueError, StopIteration, RecursionError):  # JSONDecodeError, the int-string limit
        return None


class _Lines:
    """stdin line by line as stdio_server reads it, each raw line kept until its message is dispatched.

    stdio_server turns every line into exactly one item (a message, or the exception of a line it could not
    parse), in order, so the oldest kept line is always the one of the item being dispatched.
    """

    def __init__(self, stdin: Any) -> None:
        self._stdin = stdin.__aiter__()
        self.pending: deque[str] = deque()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._stdin.__anext__()
        self.pending.append(line)
        return line


async def serve_stdio(
    fault_tools: bool = False, tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S, exit_every: int = 0
) -> None:
    """Serve one client over stdin/stdout until it closes the connection."""
    server = build_server(fault_tools, tool_timeout_s, exit_every)
    lines = _Lines(anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with send:
                async for item in read_stream:
                    raw = lines.pending.popleft() if lines.pending else ""
                    if isinstance(item, Exception):
                        reply = malformed_reply(raw, item)
                    elif isinstance(item.message, types.JSONRPCNotification) and _has_id(raw):
                        # The SDK reads a request whose id is not a string or an integer as a notification,
                        # which gets no answer; JSON-RPC calls it an invalid request.
                        reply = malformed_reply(raw, ValueError("id: must be a string or an integer"))
                    else:
                        await send.send(item)
                        continue
                    if reply is not None:
                        await write_stream.send(SessionMessage(reply))

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await server.run(receive, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Command line: serve the tools over stdio."""
    ap = argparse.ArgumentParser(prog="python -m augment.tools.server", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--fault-tools", action="store_true", help="also serve fault_raise, fault_exit and fault_hang (tests)"
    )
    ap.add_argument(
        "--tool-timeout-s",
        type=float,
        default=DEFAULT_TOOL_TIMEOUT_S,
        help=f"a call running longer than this gets a tool error (default {DEFAULT_TOOL_TIMEOUT_S} s)",
    )
    args = ap.parse_args(argv)
    if args.tool_timeout_s <= 0:
        ap.error(f"--tool-timeout-s must be > 0, got {args.tool_timeout_s}")
    exit_every = int(os.environ.get(EXIT_EVERY_ENV) or 0)
    anyio.run(serve_stdio, args.fault_tools, args.tool_timeout_s, exit_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
