"""The configuration reference of the documentation site, generated from the code's own lists of keys.

Keys come from what validates them (pipeline.config.Params and its models, the params models of
contract.params and contract.sweep among them) and from the commented YAML files of conf/;
meanings of params.yaml keys come from docs/configuration_keys.yaml. A key the code accepts and the
meanings file does not explain (or the reverse), or a page whose tables differ from what the code gives,
fails the site build (`mkdocs build --strict`: this file is its hook) and `scripts/config_reference.py`,
so the page cannot drift from the code; `--write` refreshes the tables.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
MEANINGS = ROOT / "docs" / "configuration_keys.yaml"
# The commented YAML files whose keys the runner, the scorer and the engines read; their comments are the
# meanings (Hydra composes them; pipeline.config.engine_config refuses a key an engine file does not hold).
CONF_FILES = (
    "conf/config.yaml",
    "conf/score.yaml",
    "conf/engine/vllm.yaml",
    "conf/engine/hf.yaml",
    "conf/engine/openai.yaml",
)


def _model(annotation: Any) -> Any:
    """The annotation without None (X | None is X)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if value is PydanticUndefined:
        return "(computed)"
    return "unset" if value is None else f"`{value!r}`".replace("'", "")


def _walk(model: type[BaseModel], prefix: str) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for name, field in model.model_fields.items():
        node = _model(field.annotation)
        key = f"{prefix}{name}"
        if _is_model(node):
            rows.extend(_walk(node, key + "."))
        elif typing.get_origin(node) is dict and _is_model(typing.get_args(node)[-1]):
            rows.extend(_walk(typing.get_args(node)[-1], key + ".<name>."))
        else:
            rows.append((key, _default(field)))
    return rows


def params_keys() -> list[tuple[str, str]]:
    """Every params.yaml key the code accepts, as (dotted key, default), in the order the code lists them."""
    from pipeline.config import Params

    # The defaults these sections' meanings explain: the trajectory's come from the sweep when it names
    # none, and a sweep is off unless all three of its keys are given.
    said = {"trajectory": "see meaning", "sweep": "unset (no sweep)"}
    return [(key, said.get(key.split(".")[0], default)) for key, default in _walk(Params, "")]


def conf_keys(path: Path) -> list[tuple[str, str, str]]:
    """A commented YAML file's keys as (dotted key, value, comment); a comment's continuation lines joined."""
    rows: list[tuple[str, str, str]] = []
    parents: list[tuple[int, str]] = []
    last: int | None = None  # index in rows of the key an indented comment line continues
    for line in path.read_text().splitlines():
        cont = re.match(r"^\s+#\s?(.*)$", line)
        if cont:
            if last is not None:
                key, value, comment = rows[last]
                rows[last] = (key, value, f"{comment} {cont.group(1).strip()}".strip())
            continue
        m = re.match(r"^(\s*)([A-Za-z_]\w*):\s*([^#]*?)\s*(?:#\s?(.*))?$", line)
        if m is None:
            continue  # a file comment, a blank line or a block scalar's text
        indent, key, value, comment = len(m.group(1)), m.group(2), m.group(3), (m.group(4) or "").strip()
        while parents and parents[-1][0] >= indent:
            parents.pop()
        dotted = ".".join([p for _, p in parents] + [key])
        if value == "":
            parents.append((indent, key))
        last = None
        # Hydra's own sections are not the project's settings; a bare section heading is said by its keys.
        if dotted.split(".")[0] in ("defaults", "hydra") or (value == "" and not comment):
            continue
        rows.append((dotted, value, comment))
        last = len(rows) - 1
    return rows


def meanings() -> dict[str, str]:
    """docs/configuration_keys.yaml: the meaning of each params.yaml key."""
    data = yaml.safe_load(MEANINGS.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{MEANINGS}: must map each key to its meaning")
    return {str(k): str(v).strip() for k, v in data.items()}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """The markdown table of every params.yaml key."""
    told = meanings()
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for key, default in params_keys():
        lines.append(f"| `{key}` | {default} | {_cell(told.get(key, ''))} |")
    return "\n".join(lines) + "\n"


def render_conf() -> str:
    """The markdown tables of the keys of each commented file of conf/, from its comments."""
    lines: list[str] = []
    for rel in CONF_FILES:
        lines += ["", f"### `{rel}`", "", "| key | default | meaning |", "| --- | --- | --- |"]
        for key, value, comment in conf_keys(ROOT / rel):
            shown = f"`{value}`" if value else ""
            lines.append(f"| `{key}` | {_cell(shown)} | {_cell(comment)} |")
    return "\n".join(lines) + "\n"


PAGE = ROOT / "docs" / "configuration.md"
BLOCKS = {
    "params": ("<!-- params.yaml keys: generated by scripts/config_reference.py --write -->", render),
    "conf": ("<!-- conf/ keys: generated by scripts/config_reference.py --write -->", render_conf),
}
END = "<!-- end of generated keys -->"


def filled(text: str) -> str:
    """The page text with each generated block replaced by what the code says now."""
    for start, make in BLOCKS.values():
        head, sep, tail = text.partition(start)
        if not sep:
            raise ValueError(f"{PAGE}: no {start!r} line; put it where the table goes, followed by {END!r}")
        body, sep, after = tail.partition(END)
        if not sep:
            raise ValueError(f"{PAGE}: no {END!r} after {start!r}")
        text = f"{head}{start}\n\n{make().strip()}\n\n{END}{after}"
    return text


def problems() -> list[str]:
    """Keys the code accepts without a meaning, meanings of keys it does not accept, and a stale page."""
    known = {key for key, _ in params_keys()}
    said = set(meanings())
    out = [
        f"{MEANINGS}: no meaning for {key!r} (the code accepts it); add one" for key in sorted(known - said)
    ]
    out += [f"{MEANINGS}: {key!r} is not a key the code accepts; remove it" for key in sorted(said - known)]
    if not out and filled(PAGE.read_text()) != PAGE.read_text():
        out.append(
            f"{PAGE}: its key tables are not the code's keys; run python scripts/config_reference.py --write"
        )
    return out


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: the configuration page must hold the tables the code gives, or the build fails."""
    if page.file.src_uri != PAGE.name:
        return markdown
    wrong = problems()
    if wrong:
        from mkdocs.exceptions import PluginError

        raise PluginError("; ".join(wrong))
    return markdown


def main(argv: list[str] | None = None) -> int:
    """--write: refresh the tables of docs/configuration.md; else exit 1 naming every undocumented key."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the key tables into docs/configuration.md")
    args = ap.parse_args(argv)
    if args.write:
        PAGE.write_text(filled(PAGE.read_text()))
    wrong = problems()
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
