"""A synchronous MCP client for the runner: one tool-server subprocess and one ClientSession per run.

    with ToolClient() as tools:                       # starts `python -m augment.tools.server` over stdio
        tools.list_tools()                  # [{"name", "description", "input_schema", "output_schema"}]
        tools.call("orbital_period", {"altitude_km": 400})   # {"period_min": 92.56}
        tools.call("orbital_period", {"altitude_km": "x"})   # {"error": "argument 'altitude_km' must be ..."}

`call` never raises for a tool fault: a bad argument, an unknown tool, a tool that raised or ran past the
server's timeout all come back as {"error": "..."}. The async mcp client runs on a private event loop in a
background thread; one long-lived task owns the stdio transport and the session (anyio cancel scopes must be
entered and left by the same task) and serves the calls handed to it through a queue.

Restart policy: when the server dies (connection closed) or does not answer within call_timeout_s, a new
server is started and the call is sent once more (the tools are pure functions, so a retried call answers
what the first would have, and a run that lost a server gives the samples an undisturbed run gives). If the
retry dies too, the call may be what kills the server: `call` raises augment.loop.ToolCallFailed, which the
tool loop records as a failed call, and the next call starts a new server. Restarts are budgeted: at most
`max_restarts` within any `restart_window` consecutive calls. A restart beyond the budget (a server that
keeps dying) raises ToolServerError, and so does every later call: the run must stop, not carry on with
tools that no longer answer. `restarts`, `deaths` and `calls` count what happened.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from augment.loop import ToolCallFailed
from augment.tools.server import EXIT_EVERY_ENV

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_COMMAND = (sys.executable, "-m", "augment.tools.server")
_FATAL_CODES = (CONNECTION_CLOSED, REQUEST_TIMEOUT)

_Op = Callable[[ClientSession], Awaitable[Any]]


class ToolServerError(RuntimeError):
    """The tool server could not be started, or died more often than the restart budget allows."""


class _ServerGone(Exception):
    """Internal: the session can no longer be used (closed connection or a timeout)."""


def _is_fatal(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code in _FATAL_CODES or isinstance(exc, OSError | EOFError)


def _result_payload(result: Any) -> dict[str, Any]:
    """Turn a CallToolResult into the tool's result dict, or {"error": text} for an is_error result."""
    text = " ".join(getattr(c, "text", "") for c in result.content).strip()
    if result.is_error:
        return {"error": text or "tool reported an error without a message"}
    if isinstance(result.structured_content, dict):
        return dict(result.structured_content)
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return {"error": f"tool returned no structured result: {text[:200]!r}"}
    return (
        payload if isinstance(payload, dict) else {"error": f"tool returned a non-object result: {payload!r}"}
    )


class _Connection:
    """One server process and session: the queue its task serves and whether it still accepts work."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[_Op | None, concurrent.futures.Future[Any]]] = None  # type: ignore[assignment]
        self.open = threading.Event()
        self.task: concurrent.futures.Future[None] = None  # type: ignore[assignment]


class ToolClient:
    """Synchronous handle on an MCP tool server subprocess; use as a context manager."""

    def __init__(
        self,
        command: Sequence[str] = DEFAULT_COMMAND,
        *,
        cwd: str | Path = REPO_ROOT,
        env: dict[str, str] | None = None,
        call_timeout_s: float = 30.0,
        start_timeout_s: float = 60.0,
        max_restarts: int = 3,
        restart_window: int = 100,
    ):
        if max_restarts < 0 or restart_window < 1:
            raise ValueError(
                f"max_restarts must be >= 0 and restart_window >= 1, got {max_restarts} and {restart_window}"
            )
        self.command = list(command)
        self.cwd = Path(cwd)
        # The server must import this repository's packages whatever the caller's working directory.
        self.env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        }
        # The mcp SDK passes only a safe list of variables to the server; the fault hook of the tests is
        # passed on explicitly.
        if EXIT_EVERY_ENV in os.environ:
            self.env[EXIT_EVERY_ENV] = os.environ[EXIT_EVERY_ENV]
        self.env.update(env or {})
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.restarts = 0
        self.deaths = 0
        self.calls = 0
        # The call numbers of the last max_restarts restarts: enough to tell whether one more fits the window.
        self._restart_calls: deque[int] = deque(maxlen=max_restarts)
        self.dead_reason: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: _Connection | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> ToolClient:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Start the event-loop thread and the server; raise ToolServerError if the server does not start."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="mcp-tool-client", daemon=True
            )
            self._thread.start()
        self._connect()

    def _connect(self) -> None:
        assert self._loop is not None
        conn = _Connection()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        conn.task = asyncio.run_coroutine_threadsafe(self._serve(conn, ready), self._loop)
        try:
            ready.result(timeout=self.start_timeout_s)
        except concurrent.futures.TimeoutError as e:
            conn.task.cancel()
            raise ToolServerError(
                f"tool server {' '.join(self.command)!r} did not start within {self.start_timeout_s} s"
            ) from e
        except Exception as e:
            raise ToolServerError(f"tool server {' '.join(self.command)!r} failed to start: {e!r}") from e
        self._conn = conn

    async def _serve(self, conn: _Connection, ready: concurrent.futures.Future[None]) -> None:
        """The task that owns one server connection: open, initialise, serve queued operations, close."""
        conn.queue = asyncio.Queue()
        params = StdioServerParameters(
            command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd
        )
        pending: concurrent.futures.Future[Any] | None = None
        gone: str | None = None
        closed_cleanly = False
        try:
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write, read_timeout_seconds=self.call_timeout_s) as session,
            ):
                await session.initialize()
                conn.open.set()
                ready.set_result(None)
                while True:
                    op, pending = await conn.queue.get()
                    if op is None:
                        closed_cleanly = True
                        break
                    try:
                        value = await op(session)
                    except Exception as e:
                        if _is_fatal(e):
                            gone = str(getattr(e, "message", "")) or repr(e)
                            break
                        pending.set_exception(e)
                    else:
                        pending.set_result(value)
                    pending = None
        except Exception as e:
            # Closing a transport whose process already died can raise; the failure is reported below.
            gone = gone or repr(e)
            if not ready.done():
                ready.set_exception(e)
            elif pending is None:
                log.warning("tool server connection closed with %r", e)
        finally:
            # Closed before the caller hears back, so its next call never queues on a finished task.
            conn.open.clear()
            if pending is not None and not pending.done():
                if closed_cleanly:
                    pending.set_result(None)
                else:
                    pending.set_exception(_ServerGone(gone or "the connection task was cancelled"))

    def close(self) -> None:
        """Stop the server (closing its stdin, as the MCP spec asks) and the event-loop thread."""
        if self._loop is None:
            return
        conn = self._conn
        if conn is not None and conn.open.is_set():
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._loop.call_soon_threadsafe(conn.queue.put_nowait, (None, done))
            try:
                conn.task.result(timeout=15)
            except concurrent.futures.TimeoutError:
                log.warning("tool server did not shut down within 15 s; cancelling its task")
                conn.task.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(timeout=15)
        self._loop.close()
        self._loop = None
        self._thread = None

    # -- operations --------------------------------------------------------------------------------

    def _run(self, op: _Op) -> Any:
        """Hand one operation to the connection task and wait; raise _ServerGone if the server died."""
        conn = self._conn
        assert self._loop is not None and conn is not None
        if not conn.open.is_set():
            raise _ServerGone("tool server connection is closed")
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(conn.queue.put_nowait, (op, fut))
        try:
            return fut.result(timeout=self.call_timeout_s + 30)
        except concurrent.futures.TimeoutError as e:
            conn.open.clear()
            conn.task.cancel()
            raise _ServerGone(f"no answer within {self.call_timeout_s + 30} s") from e

    def _ensure_connected(self) -> None:
        """Make sure a live connection is there, restarting a dead server within the budget; else raise."""
        if self._loop is None:
            raise ToolServerError("tool client is not started (use `with ToolClient() as tools:`)")
        if self.dead_reason is not None:
            raise ToolServerError(self.dead_reason)
        if self._conn is not None and self._conn.open.is_set():
            return
        recent = sum(1 for c in self._restart_calls if c > self.calls - self.restart_window)
        if recent < self.max_restarts:
            self.restarts += 1
            self._restart_calls.append(self.calls)
            try:
                self._connect()
            except ToolServerError as e:
                self.dead_reason = f"tool server restart failed: {e}"
                raise ToolServerError(self.dead_reason) from e
            return
        self.dead_reason = (
            f"tool server died {self.deaths} times in {self.calls} calls, more than the restart budget of "
            f"{self.max_restarts} restarts per {self.restart_window} calls"
        )
        raise ToolServerError(self.dead_reason)

    def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools as dicts (name, description, input_schema, output_schema); raises if gone."""
        with self._lock:
            self._ensure_connected()

            async def op(session: ClientSession) -> Any:
                return await session.list_tools()

            try:
                listed = self._run(op)
            except _ServerGone as e:
                self.deaths += 1
                raise ToolServerError(f"tool server died while listing tools: {e}") from e
        return [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
            }
            for t in listed.tools
        ]

    def call(self, name: Any, arguments: Any) -> dict[str, Any]:
        """Call a tool: its result dict, or {"error": why} for a tool fault.

        Raises ToolCallFailed when the server died on the call and again on its retry (or the client itself
        failed), and ToolServerError when the server is gone beyond the restart budget.
        """
        if not isinstance(name, str) or not name:
            return {"error": f"tool name must be a non-empty string, got {name!r}"}
        if not isinstance(arguments, dict):
            return {"error": f"arguments of {name!r} must be a JSON object, got {type(arguments).__name__}"}

        async def op(session: ClientSession) -> Any:
            return await session.call_tool(name, arguments)

        with self._lock:
            self.calls += 1
            why = ""
            for _attempt in range(2):
                self._ensure_connected()
                try:
                    result = self._run(op)
                except _ServerGone as e:
                    self.deaths += 1
                    why = str(e)
                    continue
                except MCPError as e:
                    return {"error": f"tool server refused the call: {e.message}"}
                except Exception as e:  # noqa: BLE001 - a client-side failure is a failed call, not a crash
                    raise ToolCallFailed(f"tool call failed in the client: {type(e).__name__}: {e}") from e
                return _result_payload(result)
        raise ToolCallFailed(f"tool server died during the call, and again when it was retried: {why}")
