"""Print the shape of the code: lines per folder, the longest functions, the modules over the size limits.

    python scripts/code_shape.py [--max-function 80] [--max-module 450]

Tests, vendored code and the virtual environment are not counted; a function's length is its lines from the
`def` (decorators included) to its last line, as Python's ast gives them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("tests", "vendor", ".venv", "generations.work", "examples", "build", "site")


def project_files(root: Path = ROOT) -> list[Path]:
    """The project's Python files outside the tests and vendored code."""
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in SKIPPED or any(p.startswith(".") for p in parts):
            continue
        out.append(path)
    return out


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """Every function and method of a file with its length in lines, qualified by its class."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((prefix + child.name, child.end_lineno - first + 1))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when a function or a module is over its limit."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--max-module", type=int, default=450)
    args = ap.parse_args(argv)
    files = project_files()
    per_folder: Counter[str] = Counter()
    long_functions: list[tuple[int, str]] = []
    long_modules: list[tuple[int, str]] = []
    for path in files:
        rel = path.relative_to(ROOT)
        n = len(path.read_text().splitlines())
        per_folder[str(rel.parent)] += n
        if n > args.max_module:
            long_modules.append((n, str(rel)))
        for name, length in function_lengths(path):
            if length > args.max_function:
                long_functions.append((length, f"{rel}:{name}"))
    print(f"{len(files)} files, {sum(per_folder.values())} lines")
    for folder, n in sorted(per_folder.items()):
        print(f"  {folder:32} {n:6}")
    every = sorted((length, f"{p.relative_to(ROOT)}:{n}") for p in files for n, length in function_lengths(p))
    print(f"longest function: {every[-1][1]} ({every[-1][0]} lines)")
    print(f"functions over {args.max_function} lines: {len(long_functions)}")
    for length, name in sorted(long_functions, reverse=True):
        print(f"  {length:4}  {name}")
    print(f"modules over {args.max_module} lines: {len(long_modules)}")
    for n, name in sorted(long_modules, reverse=True):
        print(f"  {n:4}  {name}")
    return 1 if long_functions or long_modules else 0


if __name__ == "__main__":
    sys.exit(main())
