"""A pytest plugin for benchmarks/bench_tests.py: each test's CPU time (its process's and its children's).

Loaded with `-p benchmarks.pytest_cpu_clock` when BENCH_TESTS_OUT names a folder: each pytest-xdist worker
appends one JSON line per test to <folder>/<worker>.jsonl (node id, its xdist group, wall time, start, and
the CPU seconds of the worker and of the subprocesses it waited for, as getrusage counts them).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its waited-for children so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    """Time one test (setup, call and teardown together) and append its line."""
    out = os.environ.get("BENCH_TESTS_OUT")
    own0, kids0 = _cpu()
    start = time.time()
    yield
    if not out:
        return
    own1, kids1 = _cpu()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    record = {
        "id": item.nodeid.split("@")[0],
        "group": item.nodeid.rsplit("@", 1)[1] if "@" in item.nodeid else item.path.stem,
        "start": start,
        "wall": time.time() - start,
        "own_cpu": own1 - own0,
        "children_cpu": kids1 - kids0,
    }
    with open(Path(out) / f"{worker}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
