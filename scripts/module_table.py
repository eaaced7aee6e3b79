"""The documentation site's module table, generated from the modules' own docstrings so it cannot drift.

    python scripts/module_table.py            # print the page; exit 1 naming every module without a summary
    python scripts/module_table.py --check    # only the problems

Every Python file of the folders in GROUPS is one row: its path and the first line of its docstring, which
must be a one-line summary (a sentence of its own, ending in `.`, `?` or `!`, with a blank line or nothing
after it). A package's `__init__.py` heads its folder's section instead of being a row. Each section also
says which other folders its modules import, read from their import statements. The site build
(`mkdocs build --strict`: this file is one of its hooks) adds the page as `modules.md` and fails on a
module without such a summary, naming it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = "modules.md"
# The folders in layer order, data flowing from generation to reports, then the tools around them. A folder
# without an `__init__.py` docstring says here what it holds.
GROUPS: tuple[tuple[str, str], ...] = (
    ("contract", ""),
    ("scoring", ""),
    ("augment", ""),
    ("pipeline", ""),
    ("interop", ""),
    ("analysis", ""),
    ("analysis/estimators", ""),
    ("analysis/reports", ""),
    ("analysis/rendering", ""),
    ("analysis/commands", ""),
    ("benchmarks", ""),
    ("scripts", "Scripts run by hand or by the docs build: set-up, test data, code shape, the site's pages."),
    ("demo", ""),
    (
        "examples",
        "The real-model worlds' scripts: each folder a world with its own params.yaml and dvc.yaml.",
    ),
)
TOPS = {g.split("/")[0] for g, _ in GROUPS}
# Top-level folders that hold no project module: a Python file anywhere else must be in a group.
NOT_MODULES = {"tests", "vendor", "site", "build", "generations.work"}


def group_of(rel: str) -> str | None:
    """The group (a folder of GROUPS) a file or a dotted module name belongs to; None when none."""
    path = rel.replace(".", "/")
    best = [g for g, _ in GROUPS if path == g or path.startswith(g + "/")]
    return max(best, key=len) if best else None


def files_of(group: str, root: Path) -> list[Path]:
    """The Python files of a group, its package's `__init__.py` first; a deeper group's files left out."""
    found = [
        p
        for p in sorted((root / group).rglob("*.py"))
        if "__pycache__" not in p.parts and group_of(p.relative_to(root).as_posix()) == group
    ]
    return sorted(found, key=lambda p: (p != root / group / "__init__.py", p.as_posix()))


def summary(tree: ast.Module) -> str | None:
    """The docstring's first line when it is a one-line summary (a sentence, then a blank line); else None."""
    doc = ast.get_docstring(tree)
    if not doc:
        return None
    lines = doc.splitlines()
    first = lines[0].strip()
    if not first.endswith((".", "?", "!")) or (len(lines) > 1 and lines[1].strip()):
        return None
    return first


def imported_groups(tree: ast.Module, rel: str) -> set[str]:
    """The groups of the project a module's import statements name (inside functions too)."""
    here = rel.removesuffix(".py").split("/")
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level] if node.level else []
            names = [".".join([*base, node.module or ""]).strip(".")]
            names += [f"{names[0]}.{a.name}" for a in node.names]
        else:
            continue
        found |= {g for n in names if n.split(".")[0] in TOPS and (g := group_of(n)) is not None}
    return found


def _text(line: str) -> str:
    """A docstring line as markdown text: its code spans kept, markdown's other marks outside them escaped."""
    parts = line.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*").replace("_", "\\_")
    return "`".join(parts)


def section(group: str, said: str, root: Path, problems: list[str]) -> list[str]:
    """One folder's section of the page; each module without a one-line summary added to problems."""
    rows: list[str] = []
    lede = said
    uses: set[str] = set()
    for path in files_of(group, root):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        line = summary(tree)
        if line is None:
            problems.append(
                f"{rel}: no one-line summary (its docstring's first line, a sentence followed by a blank "
                "line); write one"
            )
            continue
        uses |= imported_groups(tree, rel) - {group}
        if path == root / group / "__init__.py":
            lede = _text(line)
        else:
            inside = path.relative_to(root / group).as_posix()  # the section's heading names the folder
            shown = inside.removesuffix("__init__.py") if inside.endswith("__init__.py") else inside
            cell = _text(line).replace("|", "\\|")
            rows.append(f"| `{shown}` | {cell} |")
    out = ["", f"## `{group}/`", "", lede]
    if not rows:  # a package whose modules are all in deeper groups (analysis/)
        return out
    imports = ", ".join(f"`{g}/`" for g in sorted(uses, key=[g for g, _ in GROUPS].index)) or "nothing"
    return [
        *out,
        "",
        f"Imports of the project: {imports}.",
        "",
        "| module | what it holds |",
        "| --- | --- |",
        *rows,
    ]


def ungrouped(root: Path) -> list[str]:
    """The project's Python files that no group holds, each named with the fix."""
    tops = [d for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    return [
        f"{rel}: in no folder of the module table; add its folder to GROUPS in scripts/module_table.py"
        for top in tops
        if top.name not in NOT_MODULES
        for path in sorted(top.rglob("*.py"))
        if "__pycache__" not in path.parts and group_of(rel := path.relative_to(root).as_posix()) is None
    ]


def build(root: Path | None = None) -> tuple[str, list[str]]:
    """The page's markdown and the problems: every module without a one-line summary or a group, named."""
    root = ROOT if root is None else root
    problems: list[str] = []
    out = [
        "# Modules",
        "",
        "Every module of the project with the first line of its docstring, folder by folder in layer order",
        "([Architecture](architecture.md) draws the layers). This page is generated when the site is built",
        "(`scripts/module_table.py`), so it is as current as the code; a module without a one-line summary",
        "fails the build.",
    ]
    for group, said in GROUPS:
        out += section(group, said, root, problems)
    return "\n".join(out) + "\n", problems + ungrouped(root)


def on_files(files: Any, config: Any, **_: Any) -> Any:
    """MkDocs hook: add the generated page, or fail the build naming every module without a summary."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    text, problems = build()
    if problems:
        raise PluginError("module table: " + "; ".join(problems))
    files.append(File.generated(config, PAGE, content=text))
    return files


def main(argv: list[str] | None = None) -> int:
    """Print the page (or with --check nothing); exit 1 naming every module without a summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print only the modules without a summary")
    args = ap.parse_args(argv)
    text, problems = build()
    if not args.check:
        print(text, end="")
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
