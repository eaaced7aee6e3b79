"""Headless Chromium for the page tests (a fixture, registered in tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BROWSER_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's /usr/bin/chromium) through playwright; in CI both must be there."""
    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    why = None
    if chromium is None:
        why = "no chromium on this machine (apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = why or "playwright is not installed (pip install -e '.[dev]')"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI: {why}; .ci/run installs chromium")
        pytest.skip(f"{why}; the browser test runs in CI")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS)
        yield b
        b.close()
