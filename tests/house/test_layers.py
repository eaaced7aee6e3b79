"""The layers: which folder may import which, and stage dependencies that cover the code each stage runs.

Data flows one way: contract <- arms <- pipeline (generation) and contract <- scoring, and the analyses read
only the contract. Inside analysis/ the packages are floors: commands -> rendering -> reports -> estimators,
each importing only the floors below it. A stage that ran more code than its dvc.yaml entry declares would
not rerun when that code changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.code_files import (
    PACKAGES,
    ROOT,
    closure,
    generation_code,
    imports_of,
    module_file,
    module_files,
    scoring_code,
)

# What each folder may import besides itself.
ALLOWED = {
    "contract": set(),
    "augment": {"contract"},
    "scoring": {"contract"},
    "analysis": {"contract"},
    "pipeline": {"contract", "augment", "scoring"},
    # Other tools' logs, both directions: nothing imports it.
    "interop": {"contract", "scoring", "pipeline"},
    "demo": {"contract", "augment", "scoring", "pipeline"},
}


# The floors of analysis/, lowest first: a module imports only its own floor and the ones below it, and the
# estimators import nothing of the project but each other.
ANALYSIS_FLOORS = ("estimators", "reports", "rendering", "commands")


def modules_of(package: str, root: Path = ROOT) -> list[str]:
    """Every module of a top-level package."""
    mods = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods.append(".".join(parts))
    return mods


def folder_imports() -> dict[tuple[str, str], list[str]]:
    """(importing folder, imported folder) -> the modules that make that import, for different folders."""
    edges: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for mod in modules_of(package):
            for target in imports_of(mod):
                top = target.split(".")[0]
                if top != package:
                    edges.setdefault((package, top), []).append(f"{mod} -> {target}")
    return edges


def test_the_import_reader_sees_imports_inside_functions(tmp_path: Path) -> None:
    pkg = tmp_path / "pipeline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from augment.retrieval import Index\n    import scoring.paths\n")
    (tmp_path / "augment").mkdir()
    (tmp_path / "augment" / "__init__.py").write_text("")
    (tmp_path / "augment" / "retrieval.py").write_text("from .extra import x\n")
    (tmp_path / "augment" / "extra.py").write_text("x = 1\n")
    (tmp_path / "scoring").mkdir()
    (tmp_path / "scoring" / "__init__.py").write_text("")
    (tmp_path / "scoring" / "paths.py").write_text("")
    assert imports_of("pipeline.a", tmp_path) == {"augment", "augment.retrieval", "scoring", "scoring.paths"}
    assert closure(["pipeline.a"], root=tmp_path) == {
        "pipeline",
        "pipeline.a",
        "augment",
        "augment.retrieval",
        "augment.extra",
        "scoring",
        "scoring.paths",
    }


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_folder_imports_only_the_layers_below_it(package: str) -> None:
    bad = {
        edge: mods
        for edge, mods in folder_imports().items()
        if edge[0] == package and edge[1] not in ALLOWED[package]
    }
    assert bad == {}, f"{package} imports what it may not: {bad}"


def analysis_floor_breaches(root: Path = ROOT) -> list[str]:
    """Each import of an analysis module that reaches a floor above its own (an estimator: any project
    code)."""
    bad = []
    for mod in modules_of("analysis", root):
        parts = mod.split(".")
        if len(parts) < 3 or parts[1] not in ANALYSIS_FLOORS:
            continue
        floor = ANALYSIS_FLOORS.index(parts[1])
        for target in imports_of(mod, root):
            top, *rest = target.split(".")
            if top not in PACKAGES or target == "analysis":
                continue
            if top != "analysis":
                upward = floor == 0
            else:
                upward = bool(rest) and (
                    rest[0] not in ANALYSIS_FLOORS or ANALYSIS_FLOORS.index(rest[0]) > floor
                )
            if upward:
                bad.append(f"{mod} -> {target}")
    return bad


def test_each_analysis_floor_imports_only_the_floors_below_it() -> None:
    assert {m.split(".")[1] for m in modules_of("analysis") if m.count(".") >= 2} >= set(ANALYSIS_FLOORS)
    assert analysis_floor_breaches() == []


def test_the_floor_check_sees_an_upward_import_and_an_estimator_reading_the_contract(tmp_path: Path) -> None:
    for floor in ("reports", "rendering", "estimators"):
        (tmp_path / "analysis" / floor).mkdir(parents=True)
        (tmp_path / "analysis" / floor / "__init__.py").write_text("")
        (tmp_path / "analysis" / floor / "b.py").write_text("")
    (tmp_path / "analysis" / "__init__.py").write_text("")
    (tmp_path / "contract").mkdir()
    (tmp_path / "contract" / "__init__.py").write_text("")
    (tmp_path / "contract" / "evallog.py").write_text("")
    (tmp_path / "analysis" / "reports" / "a.py").write_text(
        "def f():\n    from analysis.rendering import b\n"
    )
    (tmp_path / "analysis" / "rendering" / "a.py").write_text("from analysis.reports import b\n")
    (tmp_path / "analysis" / "estimators" / "a.py").write_text("import contract.evallog\n")
    assert sorted(analysis_floor_breaches(tmp_path)) == [
        "analysis.estimators.a -> contract",
        "analysis.estimators.a -> contract.evallog",
        "analysis.reports.a -> analysis.rendering",
        "analysis.reports.a -> analysis.rendering.b",
    ]


def _top_level_imports(path: Path) -> set[str]:
    """The top-level names a file imports anywhere in it (relative imports left out)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("folder", ["benchmarks", "scripts", *PACKAGES])
def test_shipped_code_never_imports_the_tests(folder: str) -> None:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, folder
    bad = [str(f.relative_to(ROOT)) for f in files if "tests" in _top_level_imports(f)]
    assert bad == [], f"these import the test suite; move what they need out of tests/: {bad}"


def test_no_two_folders_import_each_other() -> None:
    edges = folder_imports()
    cycles = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert cycles == [], {c: (edges[c], edges[(c[1], c[0])]) for c in cycles}


def module_level_imports(module: str) -> set[str]:
    """The project modules a module imports at its top level (a registry's deferred imports left out)."""
    import ast

    path = module_file(module)
    assert path is not None, module
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
    return {m for m in found if m != module and module_file(m) is not None}


def test_no_two_modules_import_each_other() -> None:
    from graphlib import CycleError, TopologicalSorter

    graph = {m: module_level_imports(m) for package in PACKAGES for m in modules_of(package)}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        circle = " -> ".join(e.args[1])
        pytest.fail(f"modules importing each other in a circle: {circle}; move what both need into a module")


def test_generation_code_of_an_arm_follows_its_augmentations() -> None:
    plain = set(generation_code(False, False))
    assert {"pipeline/run_arm.py", "pipeline/generate.py", "pipeline/plan.py", "pipeline/prompts.py"} <= plain
    assert "pipeline/engines/vllm_engine.py" in plain
    assert not {f for f in plain if f.startswith(("augment/", "scoring/", "analysis/", "demo/"))}
    assert "pipeline/score.py" not in plain
    rag = set(generation_code(True, False)) - plain
    assert rag == {"augment/__init__.py", "augment/retrieval.py"}
    tools = set(generation_code(False, True)) - plain
    assert {
        "augment/loop.py",
        "augment/tools/client.py",
        "augment/tools/server.py",
        "augment/tools/orbital.py",
    } <= tools
    assert not {f for f in tools if not f.startswith("augment/")} and "augment/retrieval.py" not in tools


def test_scoring_code_has_no_engine_and_no_generation() -> None:
    files = scoring_code()
    assert {"pipeline/score.py", "scoring/scorer.py", "scoring/verifiers.py", "scoring/paths.py"} <= set(
        files
    )
    assert not [f for f in files if f.startswith(("pipeline/engines", "augment/"))], files
    assert not {"pipeline/generate.py", "pipeline/plan.py", "pipeline/run_arm.py"} & set(files)


def test_scoring_imports_no_engine_library() -> None:
    code = (
        "import sys, pipeline.score, scoring.scorer; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'vllm', 'torch', 'transformers'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


@pytest.mark.parametrize(
    "stage",
    [
        "score",
        "score-sweep",
        "judge",
        "delta",
        "arms",
        "trajectory",
        "table",
        "drift",
        "report",
        "index",
        "judge-report",
    ],
)
def test_dvc_stages_depend_on_all_the_code_they_run(stage: str) -> None:
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][stage]
    body = spec.get("do", spec)
    module = body["cmd"].split("python -m ", 1)[1].split()[0]
    assert module_file(module) is not None, module
    deps = [str(d) for d in body["deps"]]
    missing = [f for f in module_files(closure([module])) if not _covered(f, deps)]
    assert missing == [], f"dvc.yaml stage {stage}: runs {missing} but does not depend on them"


def test_the_generate_stage_depends_on_the_arm_pins_not_on_code_folders() -> None:
    body = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["generate"]
    deps = [str(d) for d in body["deps"]]
    assert "pins/arms" in deps
    assert not [d for d in deps if d.rstrip("/") in PACKAGES or d.endswith(".py")]
    assert body["params"] == ["protocol", "arms"]
    # persist: the arms that are up to date stay in place while the stage runs (DVC would delete them).
    assert body["outs"] == [{"generations": {"persist": True}}]
    score = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["score"]["do"]
    assert "generations/${item}.json" in score["deps"]


ANALYSIS_STAGES = ["delta", "arms", "trajectory", "table", "drift", "report", "judge-report"]


@pytest.mark.parametrize("stage", ANALYSIS_STAGES)
def test_an_analysis_stage_depends_on_floors_and_its_command_file(stage: str) -> None:
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    body = dvc["stages"][stage]
    module = body["cmd"].split("python -m ", 1)[1].split()[0]
    command = str(module_file(module).relative_to(ROOT))
    code = [
        str(d)
        for d in body["deps"]
        if str(d).startswith("analysis/") and not d.startswith("analysis/templates")
    ]
    floors = {f"analysis/{f}" for f in ANALYSIS_FLOORS}
    assert command.startswith("analysis/commands/"), command
    # Folders, not files: the code a stage runs is its command and the floors below it.
    assert set(code) - floors == {"analysis/__init__.py", "analysis/commands/__init__.py", command}, code
    # Each floor it names is one its command reaches (a folder it never runs would rerun it for nothing).
    ran = {"/".join(f.split("/")[:2]) for f in module_files(closure([module]))}
    assert set(code) & floors <= ran, (code, ran)
    # A dependency named like a params key shares its `dvc exp show` column, and --keep/--drop then fail.
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert not {str(d).rstrip("/") for d in body["deps"]} & set(params), body["deps"]
