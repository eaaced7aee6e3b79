"""The documentation site builds with warnings as errors, its configuration reference holds every key the code
accepts, and the README stays one screen whose test command is the one CI runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts import config_reference, module_table

ROOT = Path(__file__).resolve().parents[2]


def _build(out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_site_builds_strict_with_every_configuration_key(tmp_path: Path) -> None:
    start = time.monotonic()
    done = _build(tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - start < 120, "the site build is meant to be a fast test"
    page = (tmp_path / "site" / "configuration" / "index.html").read_text()
    for key, _ in config_reference.params_keys():
        assert f"<code>{key.replace('<', '&lt;').replace('>', '&gt;')}</code>" in page, key
    for key, _, _ in config_reference.conf_keys(ROOT / "conf" / "engine" / "vllm.yaml"):
        assert f"<code>{key}</code>" in page, key
    # The module table lists every module of every folder, each with its docstring's first line.
    modules = (tmp_path / "site" / "modules" / "index.html").read_text()
    for group, _ in module_table.GROUPS:
        for path in module_table.files_of(group, ROOT):
            if path.name != "__init__.py" or path.parent != ROOT / group:
                shown = path.relative_to(ROOT / group).as_posix().removesuffix("__init__.py")
                assert f"<code>{shown}</code>" in modules, path
    assert "The one JSONL reader of the project" in modules
    # Every page of docs/ is in the navigation (mkdocs warns, so --strict fails, on one that is not).
    for md in (ROOT / "docs").glob("*.md"):
        assert (tmp_path / "site" / ("" if md.stem == "index" else md.stem) / "index.html").is_file(), md


def test_undocumented_key_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = config_reference.MEANINGS.read_text().splitlines()
    fewer = tmp_path / "keys.yaml"
    fewer.write_text("\n".join(line for line in lines if not line.startswith("protocol.top_p:")) + "\n")
    monkeypatch.setattr(config_reference, "MEANINGS", fewer)
    assert config_reference.problems() == [
        f"{fewer}: no meaning for 'protocol.top_p' (the code accepts it); add one"
    ]
    fewer.write_text(fewer.read_text() + "protocol.topp: a typo\n" + "protocol.top_p: back\n")
    assert config_reference.problems() == [
        f"{fewer}: 'protocol.topp' is not a key the code accepts; remove it"
    ]


def test_stale_key_table_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(config_reference.PAGE.read_text().replace("| `protocol.top_p` |", "| `protocol.topp` |"))
    monkeypatch.setattr(config_reference, "PAGE", page)
    [problem] = config_reference.problems()
    assert "run python scripts/config_reference.py --write" in problem
    assert config_reference.main(["--write"]) == 0
    assert page.read_text() == config_reference.PAGE.read_text()
    assert "| `protocol.top_p` |" in page.read_text()


def test_readme_is_one_screen_and_runs_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text()
    [ci_tests] = [line for line in ci.splitlines() if line.startswith("bash scripts/setup.sh && ")]
    shown = re.findall(r"^    (bash scripts/setup\.sh && \.venv/bin/python -m pytest .*)$", readme, re.M)
    assert shown == [ci_tests], "README's test command must be exactly the one .ci/run runs"
    assert shlex.split(ci_tests)[-1] == "--durations=15"
    for target in re.findall(r"\]\(([^)#]+)", readme):
        assert (ROOT / target).exists(), f"README links {target}, which does not exist"
    assert "Python 3.11" in readme and "reports/index.html" in readme


def test_module_without_a_summary_fails_the_site_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "pipeline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Generation."""\n')
    (pkg / "good.py").write_text('"""One line.\n\nMore.\n"""\nfrom contract import jsonl\n')
    (pkg / "bare.py").write_text("x = 1\n")
    (pkg / "runs_on.py").write_text('"""A first sentence that\nruns on to the next line."""\n')
    (tmp_path / "contract").mkdir()
    (tmp_path / "contract" / "jsonl.py").write_text('"""The reader."""\n')
    for folder in ("newpkg", "tests"):  # a folder of no group is named; the tests are not modules
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text('"""A module."""\n')
    page, problems = module_table.build(tmp_path)
    assert [p.split(":")[0] for p in problems] == ["pipeline/bare.py", "pipeline/runs_on.py", "newpkg/m.py"]
    assert problems[-1].endswith("add its folder to GROUPS in scripts/module_table.py")
    assert "## `pipeline/`" in page and "| `good.py` | One line. |" in page
    assert "Imports of the project: `contract/`." in page
    monkeypatch.setattr(module_table, "ROOT", tmp_path)
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="pipeline/bare.py: no one-line summary"):
        module_table.on_files([], config=None)
