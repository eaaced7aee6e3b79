"""What a markdown reader shows of a report: its tables' cells and any raw HTML."""

from __future__ import annotations


def markdown_view(text: str) -> tuple[list[list[list[str]]], list[str]]:
    """What a markdown reader shows: each table as rows of cell texts, and any raw HTML that would render."""
    from markdown_it import MarkdownIt

    tables: list[list[list[str]]] = []
    html: list[str] = []
    row: list[str] | None = None
    for tok in MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text):
        if tok.type == "html_block":
            html.append(tok.content)
        elif tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            tables[-1].append(row)
            row = None
        elif tok.type == "inline":
            html += [c.content for c in tok.children or [] if c.type == "html_inline"]
            if row is not None:
                row.append(
                    "".join(c.content for c in tok.children or [] if c.type in ("text", "code_inline"))
                )
    return tables, html
