"""Every command a page shows runs, so a page cannot go stale: each `python -m MODULE` of the README, the
docs, the examples' READMEs, params.yaml and conf/ names a module that runs as a command (this repository's,
with a `__main__` block or a `__main__.py`, or an installed package), each `python SCRIPT.py` names a file
that is there, and every benchmark script is listed on the benchmarks page. The slow test runs each of this
repository's modules with `--help`."""

from __future__ import annotations

import importlib.util
import re

import pytest

from demo.worlds import ROOT
from tests.helpers.forked_commands import run_modules

PAGES = sorted(
    [ROOT / "README.md", ROOT / "params.yaml", *ROOT.glob("docs/*.md"), *ROOT.glob("examples/*/README.md"),
     ROOT / "demo" / "README.md", *ROOT.glob("conf/**/*.yaml")]
)  # fmt: skip
MODULE = re.compile(r"python3? -m ([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\.?)")
SCRIPT = re.compile(r"python3? ((?:[\w.-]+/)*[\w.-]+\.py)\b")


def shown_modules() -> dict[str, list[str]]:
    """Each module a page runs with `python -m`, with the pages that show it (placeholders left out)."""
    out: dict[str, list[str]] = {}
    for page in PAGES:
        for m in MODULE.finditer(page.read_text(encoding="utf-8")):
            name = m.group(1)
            placeholder = m.group(2) or name.rsplit(".", 1)[-1].isupper()
            if not placeholder:  # `python -m benchmarks.<name>`, `analysis.commands.NAME`
                out.setdefault(name, []).append(str(page.relative_to(ROOT)))
    return out


def ours(module: str) -> bool:
    """Whether module is of this repository (a top-level package of its own)."""
    return (ROOT / module.split(".")[0] / "__init__.py").is_file()


def runnable(module: str) -> str | None:
    """Why `python -m module` would not run a command of this repository, or None when it does."""
    path = ROOT.joinpath(*module.split("."))
    if (path / "__main__.py").is_file():
        return None
    source = path.with_suffix(".py")
    if not source.is_file():
        return "no such module"
    if '__name__ == "__main__"' not in source.read_text(encoding="utf-8"):
        return "a module, not a command: it would exit 0 doing nothing"
    return None


def test_every_python_m_command_a_page_shows_is_a_command() -> None:
    modules = shown_modules()
    assert "pipeline.run_arm" in modules and len(modules) > 20, sorted(modules)
    wrong = []
    for module, pages in sorted(modules.items()):
        if ours(module):
            why = runnable(module)
        else:
            why = None if importlib.util.find_spec(module.split(".")[0]) else "not installed"
        if why:
            wrong.append(f"{module} ({', '.join(sorted(set(pages)))}): {why}")
    assert not wrong, wrong


def test_every_script_a_page_runs_is_there() -> None:
    missing = []
    for page in PAGES:
        for m in SCRIPT.finditer(page.read_text(encoding="utf-8")):
            # A script run from the repository root, the page's own folder or an example's (`cd examples/X`).
            folders = [ROOT, page.parent, *ROOT.glob("examples/*")]
            if not any((folder / m.group(1)).is_file() for folder in folders):
                missing.append(f"{page.relative_to(ROOT)}: {m.group(0)}")
    assert not missing, missing


def test_the_benchmarks_page_lists_every_benchmark_and_runs_each_as_a_module() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)\.py` \|", page, flags=re.M))
    scripts = {
        p.stem for p in (ROOT / "benchmarks").glob("*.py") if '__name__ == "__main__"' in p.read_text()
    }
    assert scripts - listed == set(), f"not on docs/benchmarks.md: {sorted(scripts - listed)}"
    assert not re.search(r"python3? benchmarks/", page), "run as python -m benchmarks.<name>"


@pytest.mark.slow
def test_every_module_a_page_shows_answers_help() -> None:
    modules = sorted(m for m in shown_modules() if ours(m))
    results = run_modules([(m, ["--help"]) for m in modules], ROOT)
    failed = [f"{m}: exit {rc}: {out[-300:]}" for m, rc, out in results if rc != 0 or not out.strip()]
    assert not failed, failed


def test_no_page_states_a_test_count_and_the_item_browser_size_is_the_committed_pages() -> None:
    # A count of tests is stale the day a test is added; the pages point to `pytest --collect-only`.
    counts = [
        f"{p.name}: {m.group(0)}" for p in PAGES for m in re.finditer(r"\b\d[\d,]{2,} tests\b", p.read_text())
    ]
    assert not counts, counts
    said = re.search(r"(\d+) KB for 7 arms x 300 items", (ROOT / "docs" / "getting-started.md").read_text())
    assert said is not None
    size = (ROOT / "reports" / "items.html").stat().st_size / 1000
    assert abs(int(said.group(1)) - size) <= 0.1 * size, (
        f"getting-started says {said.group(1)} KB; it is {size:.0f}"
    )
