"""A report's markdown as a standalone HTML page: one style for every report, a way back to the index."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt

TEMPLATES = Path(__file__).parents[1] / "templates"


def markdown_page(text: str, title: str) -> str:
    """A report's markdown as a standalone HTML page (CommonMark with tables; raw HTML shown as text)."""
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, autoescape=True)
    return env.get_template("markdown.html.j2").render(title=title, body=body)
