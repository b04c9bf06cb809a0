"""JSON Schema output that says what the validators enforce.

`StrictInt` (schemas/request.py) validates with a before-validator, and pydantic then writes a
bound placed on such a type under its own keyword (`"ge": 1`) instead of JSON Schema's
(`"minimum": 1`), which no JSON Schema tool reads. Every schema this project publishes (the
OpenAPI document, the chart's values schema) goes through `standard_bounds`.
"""

from __future__ import annotations

from typing import Any

_KEYWORDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def standard_bounds(node: Any) -> Any:
    """`node` with pydantic's bound keywords renamed to JSON Schema's, in place (and returned)."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for ours, standard in _KEYWORDS.items():
                if ours in node:
                    node.setdefault(standard, node.pop(ours))
        for value in node.values():
            standard_bounds(value)
    elif isinstance(node, list):
        for value in node:
            standard_bounds(value)
    return node
