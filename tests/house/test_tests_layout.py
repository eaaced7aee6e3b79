"""The tests mirror the packages and share code only through tests/helpers: a test file lies in a folder of
tests/ (never at its top), and no test module imports another test module or the conftest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def imported_modules(path: Path) -> set[str]:
    """Every module an import of path names (absolute imports; `from x import y` names x and x.y)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_every_test_file_lies_in_the_folder_of_its_package() -> None:
    flat = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert flat == [], f"move these into the tests/ folder of the package they test (git mv): {flat}"


def test_no_test_module_imports_another_or_the_conftest() -> None:
    bad = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "conftest.py":
            continue
        names = {n for n in imported_modules(path) if n.startswith("tests.")}
        shared = {n for n in names if n.split(".")[-1].startswith("test_") or n.endswith(".conftest")}
        if path.is_relative_to(TESTS / "helpers"):
            shared |= {n for n in names if not n.startswith("tests.helpers")}
        if shared:
            bad[str(path.relative_to(ROOT))] = sorted(shared)
    assert bad == {}, f"move what these import into tests/helpers/ (fixtures into tests/conftest.py): {bad}"
