"""The tool session of one run: one MCP tool server under a restart budget, and the tools it serves.

One server serves the whole run, under its restart budget, and the tools it serves in the order the prompts
show them.

    with open_tools(tool_timeout_s=10, max_restarts=3, restart_window=100) as client:
        specs = tool_specs(client)         # what the server lists, sorted by name

A server that does not start, or dies more often than the budget allows (augment.tools.client.ToolServerError
out of the body), ends the session with ToolSessionError, which says which of the two and how many times the
server died; the caller words it for its own command line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from augment.tools.client import DEFAULT_COMMAND, ToolClient, ToolServerError

# The client waits this much longer than the server's own tool timeout before it counts the server as hung.
HUNG_AFTER_TIMEOUT_S = 20.0


class ToolSessionError(RuntimeError):
    """The session's server did not start (deaths None), or died `deaths` times, beyond the restart budget."""

    def __init__(self, message: str, deaths: int | None = None) -> None:
        super().__init__(message)
        self.deaths = deaths


@contextmanager
def open_tools(tool_timeout_s: float, max_restarts: int, restart_window: int) -> Iterator[ToolClient]:
    """One MCP tool-server session (ToolClient) for the whole run, under the restart budget."""
    try:
        client = ToolClient(
            (*DEFAULT_COMMAND, "--tool-timeout-s", str(tool_timeout_s)),
            call_timeout_s=tool_timeout_s + HUNG_AFTER_TIMEOUT_S,
            max_restarts=max_restarts,
            restart_window=restart_window,
        )
        client.start()
    except ToolServerError as e:
        raise ToolSessionError(f"tool server (python -m augment.tools.server) did not start: {e}") from None
    try:
        yield client
    except ToolServerError as e:
        raise ToolSessionError(str(e), client.deaths) from None
    finally:
        client.close()


def tool_specs(client: Any) -> list[dict[str, Any]]:
    """The server's tools, sorted by name (the order the demo models were trained on)."""
    return sorted(client.list_tools(), key=lambda t: t["name"])
