"""md(): any text, put in a table cell or a sentence of a markdown report, reads back as itself."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.rendering.markdown_text import md
from tests.helpers.markdown import markdown_view

# Printable text with every ASCII punctuation mark, spaces, tabs and line breaks.
texts = st.text(
    st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]) | st.sampled_from("\n\r\t"),
    max_size=40,
)


def _one_line(text: str) -> str:
    """What a reader sees of text on one line: runs of whitespace as one space."""
    return " ".join(" ".join(text.splitlines()).split())


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_a_table_row_of_any_two_texts_has_two_cells_showing_them(a: str, b: str) -> None:
    tables, html = markdown_view(f"| x | y |\n| --- | --- |\n| {md(a)} | {md(b)} |\n")
    assert html == []
    assert [[_one_line(c) for c in row] for row in tables[0]] == [["x", "y"], [_one_line(a), _one_line(b)]]


@settings(max_examples=300, deadline=None)
@given(texts)
def test_a_sentence_shows_the_text_and_no_markup(text: str) -> None:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(f"Model: {md(text)} end.\n")
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    children = tokens[1].children or []
    assert {c.type for c in children} <= {"text"}
    assert _one_line("".join(c.content for c in children)) == _one_line(f"Model: {text} end.")


def test_names_stay_readable_in_the_raw_file() -> None:
    assert md("trained+rag") == "trained+rag"
    assert md("answer_without_tool") == "answer_without_tool"
    assert md("_x_ a|b <i> $y$") == r"\_x\_ a\|b \<i\> \$y\$"
