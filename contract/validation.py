"""Validation errors worded for a person: the item and the field, never a list index alone."""

from __future__ import annotations

from typing import Any


def describe_error(err: Any, raw: Any) -> str:
    """One pydantic error as 'item X: field: message', with the item id read from the raw JSON."""
    loc = list(err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if len(loc) >= 2 and loc[0] == "items" and isinstance(loc[1], int):
        item_id: Any = loc[1]
        try:
            item_id = raw["items"][loc[1]]["item_id"]
        except (KeyError, IndexError, TypeError):
            item_id = f"#{loc[1]}"
        field = ".".join(str(p) for p in loc[2:])
        return f"item {item_id!r}: {field}: {msg}" if field else f"item {item_id!r}: {msg}"
    if loc:
        return f"{'.'.join(str(p) for p in loc)}: {msg}"
    return msg
