"""No function over 80 lines and no module over 450 lines outside the tests (scripts/code_shape.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import code_shape  # noqa: E402


def test_no_function_over_80_lines_and_no_module_over_450() -> None:
    long_functions = [
        f"{path.relative_to(ROOT)}:{name} ({length} lines)"
        for path in code_shape.project_files()
        for name, length in code_shape.function_lengths(path)
        if length > 80
    ]
    long_modules = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for path in code_shape.project_files()
        if (n := len(path.read_text().splitlines())) > 450
    ]
    assert long_functions == [], "split these functions (python scripts/code_shape.py)"
    assert long_modules == [], "split these modules (python scripts/code_shape.py)"


def test_the_measure_counts_decorators_and_nested_functions(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("@decorated\ndef outer():\n    def inner():\n        return 1\n\n    return inner\n")
    assert code_shape.function_lengths(src) == [("outer", 6), ("outer.inner", 2)]
