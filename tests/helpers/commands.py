"""Running a project command as a user does: `python -m MODULE` in this checkout, in a subprocess."""

from __future__ import annotations

import subprocess
import sys

from demo.worlds import ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m <args>` from the checkout's root, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
