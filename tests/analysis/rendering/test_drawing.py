"""Figures drawn in a forked process (analysis.rendering.drawing): the same bytes as drawn here, errors that
say so."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.rendering.drawing import Drawing, draw_here
from analysis.reports.report_models import PassAtKFigure

REPORT = PassAtKFigure.model_validate({
    "pre_model": "base $x$",
    "post_model": "trained",
    "claim": "SHARPENING",
    "settings": {"n_boot": 100, "n_perm": 100, "alpha": 0.05, "fdr": 0.05, "min_effect": 0.02, "seed": 1},
    "pass_at_k": [
        {"k": k, "pre": 0.2 + 0.1 * i, "post": 0.3 + 0.1 * i, "delta": 0.1,
         "pre_ci95": [0.1 + 0.1 * i, 0.3 + 0.1 * i], "post_ci95": [0.2 + 0.1 * i, 0.4 + 0.1 * i],
         "delta_ci95": [0.05, 0.15]}
        for i, k in enumerate((1, 2, 4))
    ],
})  # fmt: skip
EXPANSION = REPORT.with_fields(claim="EXPANSION")


def test_figures_drawn_aside_equal_figures_drawn_here_one_after_another():
    with Drawing() as drawing:
        assert drawing._proc is not None and drawing._proc.is_alive()
        first = drawing.submit("passk_figure", REPORT)
        second = drawing.submit("passk_figure", EXPANSION)
        a, b = first(), second()
        proc = drawing._proc
    assert not proc.is_alive() and proc.exitcode == 0
    assert a.startswith(b"\x89PNG") and a != b
    assert a == draw_here("passk_figure", REPORT)
    assert b == draw_here("passk_figure", EXPANSION)


def test_a_failing_figure_raises_here_with_the_childs_traceback_and_the_child_draws_on():
    with Drawing() as drawing:
        # The part of a delta report the pass@k figure gets holds no calibration for a reliability diagram.
        broken = drawing.submit("reliability_figure", REPORT)
        with pytest.raises(
            RuntimeError,
            match=r"drawing reliability_figure failed in the drawing process:(.|\n)*AttributeError",
        ):
            broken()
        assert drawing.submit("passk_figure", REPORT)() == draw_here("passk_figure", REPORT)


def test_a_drawing_process_that_died_is_named_not_waited_for():
    with Drawing() as drawing:
        drawing._proc.kill()
        drawing._proc.join()
        with pytest.raises(RuntimeError, match=r"the drawing process ended \(exit code -9\) before drawing"):
            drawing.submit("passk_figure", REPORT)()


def test_without_fork_the_figure_is_drawn_here():
    with Drawing(aside=False) as drawing:
        assert drawing._proc is None
        assert drawing.submit("passk_figure", REPORT)() == draw_here("passk_figure", REPORT)


def _running(pid: int) -> bool:
    """True while pid is a live process (a zombie left for its reaper counts as ended)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_drawing_process_ends_when_its_parent_is_killed():
    """A killed report (no close, no atexit) must not leave its drawing process waiting for ever."""
    script = (
        "import os, signal, sys\n"
        "from analysis.rendering.drawing import Drawing\n"
        "d = Drawing()\n"
        "print(d._proc.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == -9, proc.stderr
    child = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 30
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(child)
