"""Figures drawn beside a report's statistics, in a forked process that loads matplotlib at once.

Importing matplotlib and drawing a report's first figure take about a second of one CPU: after the
statistics, that is a third of a large delta report's time. A Drawing forks before the logs are read; the
child imports analysis.rendering.figures and draws a warm-up figure (fonts loaded, text laid out once)
while the parent reads and computes, then draws each figure it is sent. Where fork is not available
(Windows; a spawned process would import everything again) the figures are drawn here, the same bytes
either way.
The child draws with the Agg canvas only, never a GUI backend, so forking is safe where it exists.
"""

from __future__ import annotations

import gc
import multiprocessing
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from analysis.reports.report_parts import ReportSection

# A report model (or the part of one a figure draws), sent to the child by pickling.
Report = ReportSection


def draw_here(name: str, report: Report) -> bytes:
    """The PNG of analysis.rendering.figures.<name>(report), drawn in this process."""
    from analysis.rendering import figures  # matplotlib loads only when there is something to draw

    return getattr(figures, name)(report)


def _serve(conn: Connection, parents_end: Connection) -> None:
    """The child: load matplotlib, warm it up, then draw each (name, report) received until None.

    A parent that dies without sending None (killed) closes the pipe: recv then raises EOFError and the
    child ends with it, as it must once nobody waits for a figure.
    """
    # Fork copied the parent's end too: while the child held it, the pipe could never close.
    parents_end.close()
    # The parent pauses the collector while it holds the logs; drawing makes cyclic garbage.
    gc.enable()
    try:
        from analysis.rendering import figures

        figures.warm_up()
        loaded = None
    except Exception:
        loaded = traceback.format_exc()
    for name, report in _requests(conn):
        if loaded is not None:
            conn.send((False, loaded))
            continue
        try:
            conn.send((True, getattr(figures, name)(report)))
        except Exception:
            conn.send((False, traceback.format_exc()))


def _requests(conn: Connection) -> Iterator[tuple[str, Report]]:
    """The (name, report) pairs the parent sends, until None or until its end of the pipe closes."""
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        yield request


class Drawing:
    """Draws analysis.rendering.figures' figures in a forked child (or here where fork is unavailable).

    Use as a context manager, started before the work it should overlap: `submit` sends a report and
    returns a function that waits for its PNG bytes.
    """

    def __init__(self, aside: bool = True) -> None:
        self._conn: Connection | None = None
        self._proc: Any = None
        if aside and "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe()
            self._proc = ctx.Process(target=_serve, args=(child, self._conn), name="drawing", daemon=True)
            self._proc.start()
            child.close()

    def __enter__(self) -> Drawing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, name: str, report: Report) -> Callable[[], bytes]:
        """Start drawing analysis.rendering.figures.<name>(report); call the result for the PNG bytes."""
        if self._conn is None:
            return lambda: draw_here(name, report)
        conn = self._conn
        try:
            conn.send((name, report))
        except (BrokenPipeError, ConnectionResetError) as e:
            raise self._ended(name) from e

        def result() -> bytes:
            try:
                ok, value = conn.recv()
            except EOFError as e:
                raise self._ended(name) from e
            if not ok:
                raise RuntimeError(f"drawing {name} failed in the drawing process:\n{value}")
            return value

        return result

    def _ended(self, name: str) -> RuntimeError:
        self._proc.join(timeout=5)
        code = self._proc.exitcode
        return RuntimeError(f"the drawing process ended (exit code {code}) before drawing {name}")

    def close(self) -> None:
        """Let the child finish and wait for it."""
        if self._conn is None:
            return
        if self._proc.is_alive():
            self._conn.send(None)
        self._conn.close()
        self._proc.join()
        self._conn = None
