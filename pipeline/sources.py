"""The code a stage runs: the project modules an entry module imports, followed to the end.

The generate stages depend on exactly the code that builds their prompts and drives their engine, and the
score stages on the code that judges answers. Reading the imports (every `import` statement, including
those inside functions) keeps those lists true as the code changes, where a hand-written list would drift.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from pathlib import Path

from contract.digest import file_sha256

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contract", "pipeline", "augment", "scoring", "analysis", "interop", "demo")

# What an arm's generation runs: the runner's own code, plus the augmentations the arm uses. The tool server
# is started as a subprocess (python -m augment.tools.server), so no import reaches it: it is named here.
GENERATION_ENTRY = "pipeline.run_arm"
RETRIEVAL_ENTRIES = ("augment.retrieval",)
TOOL_ENTRIES = ("augment.loop", "augment.tools.client", "augment.tools.server", "augment.tools.session")
SCORING_ENTRY = "pipeline.score"


def module_file(module: str, root: Path = ROOT) -> Path | None:
    """The file of a project module (a.b -> a/b.py or a/b/__init__.py), or None if it is not one."""
    if module.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parents(module: str) -> list[str]:
    """The packages a module's import runs first (a.b.c -> a, a.b)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(module: str, root: Path = ROOT) -> set[str]:
    """Project modules that module imports anywhere in its file (parent packages included)."""
    path = module_file(module, root)
    if path is None:
        return set()
    stat = path.stat()
    return set(_imports_in(module, path, stat.st_mtime_ns, stat.st_size, root))


# The pin stage follows the imports of seven arms, each closure over the same few dozen modules: parsed once
# per file version (its mtime and size in the key, so an edited file is read again), not once per arm.
@functools.lru_cache(maxsize=4096)
def _imports_in(module: str, path: Path, mtime_ns: int, size: int, root: Path) -> frozenset[str]:
    """imports_of for one version of module's file."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from a import b` imports a, and a.b too when b is a module.
            names = [base] + [f"{base}.{a.name}" for a in node.names if module_file(f"{base}.{a.name}", root)]
        else:
            continue
        for name in names:
            if module_file(name, root) is not None:
                found.add(name)
                found.update(p for p in _parents(name) if module_file(p, root) is not None)
    return frozenset(found)


def closure(entries: Iterable[str], stop: Callable[[str], bool] | None = None, root: Path = ROOT) -> set[str]:
    """Every project module the entries import, directly or not; modules where stop() is true are left out."""
    todo = [m for e in entries for m in (*_parents(e), e) if module_file(m, root) is not None]
    seen: set[str] = set()
    while todo:
        mod = todo.pop()
        if mod in seen or (stop is not None and stop(mod)):
            continue
        seen.add(mod)
        todo.extend(imports_of(mod, root) - seen)
    return seen


def source_files(modules: Iterable[str], root: Path = ROOT) -> list[str]:
    """The files of modules, relative to root, sorted."""
    files = {module_file(m, root) for m in modules}
    return sorted(p.relative_to(root).as_posix() for p in files if p is not None)


def generation_sources(retrieval: bool, tools: bool, root: Path = ROOT) -> list[str]:
    """The source files an arm's generation runs: the runner, plus retrieval and tool code if it uses them."""
    mods = closure([GENERATION_ENTRY], stop=lambda m: m.split(".")[0] == "augment", root=root)
    if retrieval:
        mods |= closure(RETRIEVAL_ENTRIES, root=root)
    if tools:
        mods |= closure(TOOL_ENTRIES, root=root)
    return source_files(mods, root)


def scoring_sources(root: Path = ROOT) -> list[str]:
    """The source files a score stage runs."""
    return source_files(closure([SCORING_ENTRY], root=root), root)


def file_hashes(files: Iterable[str], root: Path = ROOT) -> dict[str, str]:
    """Relative path -> sha256 of each file."""
    return {f: file_sha256(root / f) for f in sorted(files)}
