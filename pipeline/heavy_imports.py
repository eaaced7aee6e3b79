"""Heavy libraries (vLLM, transformers) imported with the cyclic garbage collector paused.

Importing them creates hundreds of thousands of objects, and the collector passes over all of them again
and again while they load: about a sixth of the import's CPU on this project's 2-core machine
(`from vllm import LLM` 12.3 s -> 10.4 s, transformers' generation utilities 7.1 s -> 6.0 s). What an import
creates is module state, not garbage, so the collector is paused for the import and resumed after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off; it is back on after (unless it was off before)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
