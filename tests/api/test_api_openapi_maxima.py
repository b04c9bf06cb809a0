"""The OpenAPI's own maxima fit inside the body limit (issue 17): for every request body of
openapi.json, the largest body its schema calls valid (every array at maxItems of its largest
item, every string at maxLength, a number at 24 characters, an integer at the digits of its
bounds) is at most MAX_BODY_BYTES, so no body the document calls valid is refused with 413.
Every array, string and map has a maximum; the free-form objects are named here (a config.json,
the trial options), bounded by the body limit alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambasizer.service.api.wire import MAX_BODY_BYTES

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "openapi.json").read_text())
FREE_FORM = {"hf_config", "trial"}
NUMBER_CHARS = 24  # -1.2345678901234567e-308


class Unbounded(Exception):
    pass


def _integer_chars(node: dict) -> int:
    lo, hi = node.get("minimum"), node.get("maximum")
    if lo is None or hi is None:
        return NUMBER_CHARS
    return max(len(str(int(lo))), len(str(int(hi))))


def largest(node: dict, path: str = "", seen: frozenset = frozenset()) -> int:
    """The largest JSON text (in characters) `node` validates."""
    comps = DOC["components"]["schemas"]
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return 0 if name in seen else largest(comps[name], path, seen | {name})
    if "const" in node:
        return len(json.dumps(node["const"]))
    if "enum" in node:
        return max(len(json.dumps(e)) for e in node["enum"])
    kind = node.get("type")
    if "properties" in node or kind == "object":
        # anyOf / not beside properties are extra constraints (a budget form), not alternatives.
        total = 2
        for key, sub in node.get("properties", {}).items():
            total += len(json.dumps(key)) + 2 + largest(sub, f"{path}.{key}", seen)
        extra = node.get("additionalProperties")
        if extra not in (None, False) and path.rsplit(".", 1)[-1] not in FREE_FORM:
            # A bounded map (RecommendRequest.gpu_prices): maxProperties keys of propertyNames'
            # maxLength, each with its largest value.
            names = node.get("propertyNames", {})
            if "maxProperties" not in node or "maxLength" not in names or not isinstance(extra, dict):
                raise Unbounded(f"{path}: an object with additionalProperties")
            total += node["maxProperties"] * (names["maxLength"] + 2 + 2 + largest(extra, f"{path}{{}}", seen))
        return total
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max(largest(b, path, seen) for b in node[key])
    if kind == "string":
        if "maxLength" not in node:
            raise Unbounded(f"{path}: a string without maxLength")
        return node["maxLength"] + 2
    if kind == "integer":
        return _integer_chars(node)
    if kind == "number":
        return NUMBER_CHARS
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "array":
        if "prefixItems" in node:
            return 2 + sum(largest(i, f"{path}[]", seen) + 1 for i in node["prefixItems"])
        if "maxItems" not in node:
            raise Unbounded(f"{path}: an array without maxItems")
        return 2 + node["maxItems"] * (largest(node.get("items", {}), f"{path}[]", seen) + 1)
    raise Unbounded(f"{path}: any value")


BODIES = [
    (f"{method.upper()} {route} [{ctype}]", content["schema"])
    for route, ops in DOC["paths"].items()
    for method, op in ops.items()
    for ctype, content in op.get("requestBody", {}).get("content", {}).items()
]


def test_every_request_body_is_walked():
    names = {b[0] for b in BODIES}
    for op in ("POST /v1/plan [application/json]", "POST /v1/plan/compare [application/json]", "POST /v1/sweep [application/json]",
               "POST /v1/recommend [application/json]", "POST /v1/check-log [application/json]", "POST /v1/check-log [text/plain]"):
        assert op in names


@pytest.mark.parametrize("name, schema", BODIES, ids=[b[0] for b in BODIES])
def test_the_largest_valid_body_fits_the_body_limit(name, schema):
    from mambasizer.schemas.checklog import MAX_LOG_BODY_BYTES

    size = largest(schema)
    if "[application/json]" not in name and schema.get("type") == "string":
        size -= 2  # a text/plain body is the string itself, without JSON's quotes
    # check-log's text/plain log is read as a stream under its own, larger limit (the middleware's
    # large_bodies): a multi-rank log is mostly per-request lines the reader drops.
    limit = MAX_LOG_BODY_BYTES if name == "POST /v1/check-log [text/plain]" else MAX_BODY_BYTES
    assert 0 < size <= limit, f"{name}: the schema allows {size:,} characters, above the {limit:,}-byte limit"


def test_the_walk_sees_an_oversized_list():
    with pytest.raises(Unbounded):
        largest({"type": "array", "items": {"type": "string", "maxLength": 1}})
    with pytest.raises(Unbounded):
        largest({"type": "object", "additionalProperties": {"type": "number"}, "propertyNames": {"maxLength": 8}})
    # {"12345678": <24 characters>} at most twice
    assert largest({"type": "object", "additionalProperties": {"type": "number"}, "maxProperties": 2,
                    "propertyNames": {"maxLength": 8}}) == 2 + 2 * (8 + 2 + 2 + NUMBER_CHARS)
    assert largest({"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 2048}}) > MAX_BODY_BYTES


def test_the_ignore_list_bounds_are_documented_and_fit_the_body_limit():
    """hf_config is free-form, but its quantization ignore lists are bounded (issue 25): the
    OpenAPI states the bound the code enforces, and one list at its bound fits the body limit."""
    from mambasizer.service.solver.weights.quant.ignore_list import MAX_ENTRIES, MAX_ENTRY_CHARS

    bound = DOC["components"]["schemas"]["HFConfigModel"]["properties"]["hf_config"]["x-ignore-lists"]
    assert (bound["maxItems"], bound["maxLength"]) == (MAX_ENTRIES, MAX_ENTRY_CHARS)
    assert set(bound["keys"]) == {"ignored_layers", "modules_to_not_convert", "ignore", "exclude_modules"}
    assert largest({"type": "array", "maxItems": bound["maxItems"], "items": {"type": "string", "maxLength": bound["maxLength"]}}) < MAX_BODY_BYTES
