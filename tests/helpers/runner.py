"""The arms and the retrieval corpus of the runner tests' worlds."""

from __future__ import annotations

ARMS = {
    "base": ("base", False, False, "reference"),
    "trained": ("trained", False, False, "parametric"),
    "+rag": ("base", True, False, "lookup"),
    "+tools": ("base", False, True, "tool_access"),
    "trained+rag": ("trained", True, False, "mixed"),
    "trained+tools": ("trained", False, True, "mixed"),
    "trained+rag+tools": ("trained", True, True, "ceiling"),
}


CORPUS = [
    {"doc_id": "d1", "title": "Add", "text": "To add two numbers, count on from the first."},
    {"doc_id": "d2", "title": "Times", "text": "Multiplying by zero gives zero."},
    {"doc_id": "d3", "title": "Minus", "text": "Subtracting a larger number gives a negative result."},
]
