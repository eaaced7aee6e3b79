"""A time limit on judging one answer, by SIGALRM in the scoring process itself.

A verifier that hangs (a user's `python` function, math-verify on adversarial LaTeX) must not hang the
scorer. The limit is an interval timer in this process, not a subprocess per answer: arming and disarming it
costs two system calls (microseconds), while a fresh process per answer costs tens of milliseconds and a
worker process would send every answer and reference through a pipe and re-import math-verify and the user's
module there. The price: the limit interrupts Python code only (a single C call, such as one huge regular
expression match, finishes before it fires) and it needs the main thread, where the score stage runs.

AnswerTimeout derives from BaseException so that a verifier's own `except Exception` (math-verify has many)
cannot swallow it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_TIMEOUT_S = 30.0
# After the limit, how often the alarm fires again while the body still runs.
REFIRE_S = 0.05


class AnswerTimeout(BaseException):  # noqa: N818 - not an error of the scorer: the answer ran out of time
    """Judging one answer took longer than its time limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"took longer than {seconds:g} s")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise AnswerTimeout in the body once it has run `seconds`; an outer SIGALRM timer is kept."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("the verifier time limit needs the main thread (it uses SIGALRM)")

    def on_alarm(signum: int, frame: object) -> None:
        raise AnswerTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # Fires again every REFIRE_S until the body ends: code that catches everything (sympy has bare
    # `except:` clauses) can swallow one AnswerTimeout, and a one-shot timer would then never stop it.
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
    start = time.monotonic()
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        except AnswerTimeout:
            # It fired just as the body finished: the body's result stands.
            signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            # An outer timer (a test runner's, say) keeps what it had left.
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3))


@contextmanager
def time_until(deadline: float, seconds: float) -> Iterator[None]:
    """time_limit up to a deadline (time.monotonic()) that several steps share; past it, AnswerTimeout
    names the whole limit, `seconds`, the steps had together."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise AnswerTimeout(seconds)
    try:
        with time_limit(left):
            yield
    except AnswerTimeout:
        raise AnswerTimeout(seconds) from None
