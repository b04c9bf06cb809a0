"""No number a client sends drives work or memory in proportion to its size (issue 10 §1).

Every numeric field of the PlanRequest schema is found by walking its JSON schema (so a
new field is covered without touching this file), set to its schema maximum (and, for
fields with a lower bound below 1, to that minimum too), and sent through the real app to
`POST /v1/plan` and `POST /v1/plan/compare`; then the same values as SGLang launch
arguments (`sglang_args`). Each answer must come back in under 100 ms and grow the
process's RSS by under 20 MiB. The limits are generous on purpose (a realistic plan takes
about a millisecond); what they catch is work proportional to the value: a 2^40-token
prefill graph table takes minutes and gigabytes.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from mambasizer.schemas.json_schema import standard_bounds
from mambasizer.schemas.request import MAX_LAYERS, PlanRequest
from mambasizer.service.sglang_args import MODELLED

TIME_LIMIT_S = 0.100
RSS_LIMIT = 20 << 20
PRESET = "qwen3-next-80b-a3b-instruct"  # prefill CUDA graph on; no PP (the model asserts pp_size 1)
PP_PRESET = "nemotron-h-56b-base-8k"  # takes PP, so pp_size / partitions reach the stage split
H200 = {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0, "gpu_memory_mib": 143771}

# The largest explicit layout the schema admits: every id list at its maximum length.
BIG_LAYOUT: dict[str, Any] = {
    "num_hidden_layers": MAX_LAYERS,
    "mamba_layer_ids": [i for i in range(MAX_LAYERS) if i % 4 != 3],
    "full_attention_layer_ids": [i for i in range(MAX_LAYERS) if i % 4 == 3],
    "state": {"conv_shapes": [[4, 8192]], "temporal_shape": [32, 128, 128]},  # copied per request
    "kv": {"type": "mha", "num_kv_heads": 8, "head_dim": 128},
    "context_length": 262144,
}


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def numeric_leaves(schema: dict, node: dict, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """(path, numeric schema) for every integer / number reachable from `node`. Array
    items get the path element "[]", tuple positions their index."""
    node = _resolve(schema, node)
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key, ()):
            yield from numeric_leaves(schema, branch, path)
    kind = node.get("type")
    if kind in ("integer", "number"):
        yield path, node
    elif kind == "object":
        for name, sub in node.get("properties", {}).items():
            yield from numeric_leaves(schema, sub, path + (name,))
    elif kind == "array":
        for i, sub in enumerate(node.get("prefixItems", ())):
            yield from numeric_leaves(schema, sub, path + (i,))
        if "items" in node:
            yield from numeric_leaves(schema, node["items"], path + ("[]",))


def extremes(leaf: dict) -> list:
    """The schema maximum, and the minimum where it lies below 1 (a negative rest, -1
    for chunked prefill, 0 slots): both ends a client may legally send."""
    out = []
    if "maximum" in leaf:
        out.append(leaf["maximum"])
    elif "exclusiveMaximum" in leaf:
        top = leaf["exclusiveMaximum"]
        out.append(top - 1 if leaf["type"] == "integer" else top * (1 - 1e-9))
    if "minimum" in leaf and leaf["minimum"] < 1:
        out.append(leaf["minimum"])
    return out


SCHEMA = standard_bounds(PlanRequest.model_json_schema())
LEAVES = list(numeric_leaves(SCHEMA, SCHEMA))


def _base(path: tuple, preset: str = PRESET) -> dict:
    if path[:2] == ("model", "layout"):
        model = {"layout": copy.deepcopy(BIG_LAYOUT)}
        if path[2:4] == ("kv", "kv_lora_rank") or path[2:4] == ("kv", "qk_rope_head_dim"):
            model["layout"]["kv"] = {"type": "mla", "kv_lora_rank": 512, "qk_rope_head_dim": 64}
        return {"model": model, "budget": {"rest_gib": 40.0}}
    budget = dict(H200) if path[:1] == ("budget",) and path[1] != "rest_gib" else {"rest_gib": 40.0}
    return {"model": {"preset": preset}, "server_args": {"tp_size": 4}, "budget": budget}


def request_at(path: tuple, value: Any, preset: str = PRESET) -> dict:
    req = _base(path, preset)
    if path[-1] == "[]":
        # A layer id: BIG_LAYOUT already holds every id list at its maximum length, with
        # the largest and the smallest id; one more would be a duplicate (a 422).
        return req
    if path[:1] == ("budget",) and path[1] == "free_gib_after_load":
        req["budget"]["free_gib_before_load"] = value  # after <= before, or it is a 422
    if path == ("draft_model", "num_layers"):
        req["server_args"]["speculative_algorithm"] = "EAGLE"
    node: Any = req
    for part in path[:-1]:
        node = node[0] if part == "[]" else node.setdefault(part, {})
    node[path[-1]] = value
    return req


CASES = [
    (path, value, preset)
    for path, leaf in LEAVES
    for value in extremes(leaf)
    for preset in ((None,) if path[:2] == ("model", "layout") else (PRESET, PP_PRESET))
]
CASE_IDS = [".".join(map(str, p)) + f"={v}" + (f"@{m}" if m else "") for p, v, m in CASES]


def test_the_walk_finds_the_fields_that_matter():
    paths = {p for p, _ in LEAVES}
    for must in (
        ("server_args", "cuda_graph_max_bs_prefill"), ("server_args", "chunked_prefill_size"),
        ("server_args", "max_mamba_cache_size"), ("server_args", "pp_size"), ("budget", "rest_gib"),
        ("draft_model", "num_layers"), ("model", "layout", "num_hidden_layers"),
    ):
        assert must in paths
    assert len(CASES) > 40


def _measure(client, url: str, body: dict) -> tuple[int, float, int]:
    proc = psutil.Process()
    gc.collect()
    before = proc.memory_info().rss
    t0 = time.perf_counter()
    resp = client.post(url, json=body)
    elapsed = time.perf_counter() - t0
    gc.collect()
    grown = proc.memory_info().rss - before
    assert resp.status_code < 500, resp.text[:500]
    return resp.status_code, elapsed, grown


@pytest.fixture(scope="module")
def warm_client():
    from fastapi.testclient import TestClient

    from mambasizer.service.api.app import create_app

    with TestClient(create_app(), raise_server_exceptions=False) as c:
        # One of each kind first: imports, the preset's layout, the first-call caches.
        for url in ("/v1/plan", "/v1/plan/compare"):
            c.post(url, json=_base(("server_args", "tp_size")))
            c.post(url, json=_base(("model", "layout", "context_length")))
            c.post(url, json={**_base(("server_args", "tp_size")), "server_args": None, "sglang_args": ["--tp", "4"]})
        # What the process holds now is not the requests' doing: frozen out of the collector,
        # so the collections around each request (cycles a request left) take microseconds.
        gc.collect()
        gc.freeze()
        try:
            yield c
        finally:
            gc.unfreeze()


def _bounded(client, url: str, body: dict, what: str) -> int:
    status, elapsed, grown = _measure(client, url, body)
    if elapsed >= TIME_LIMIT_S:
        # Once more before failing: a scheduler hiccup on a shared machine is not the
        # request's work (work proportional to the value is slow every time).
        elapsed = min(elapsed, _measure(client, url, body)[1])
    assert elapsed < TIME_LIMIT_S, f"{what} took {elapsed * 1000:.0f} ms on {url}"
    assert grown < RSS_LIMIT, f"{what} grew RSS by {grown / 2**20:.1f} MiB on {url}"
    return status


@pytest.mark.parametrize("url", ["/v1/plan", "/v1/plan/compare"])
@pytest.mark.parametrize(("path", "value", "preset"), CASES, ids=CASE_IDS)
def test_each_field_at_its_extreme_is_answered_in_bounded_time_and_memory(warm_client, url, path, value, preset):
    status = _bounded(warm_client, url, request_at(path, value, preset or PRESET), ".".join(map(str, path)) + f"={value}")
    assert status in (200, 422)


# The same values as SGLang launch arguments: every modelled flag that takes a number.
def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


NUMERIC_FLAGS = sorted(
    dest for dest, parse in MODELLED.items()
    if parse is not None and getattr(parse, "__name__", "") in ("_int", "_float", "human_readable_int")
)
SERVER_ARGS_LEAVES = {p[1]: leaf for p, leaf in LEAVES if p[:1] == ("server_args",) and len(p) == 2}
ARG_CASES = [
    (dest, value)
    for dest in NUMERIC_FLAGS
    for value in extremes(SERVER_ARGS_LEAVES[dest])
] + [("max_total_tokens", "1Ti"), ("context_length", "256Mi"), ("max_prefill_tokens", "1T")]


def test_every_numeric_flag_has_a_schema_field():
    assert NUMERIC_FLAGS and set(NUMERIC_FLAGS) <= set(SERVER_ARGS_LEAVES)


@pytest.mark.parametrize("url", ["/v1/plan", "/v1/plan/compare"])
@pytest.mark.parametrize("preset", [PRESET, PP_PRESET])
@pytest.mark.parametrize(("dest", "value"), ARG_CASES, ids=[f"{d}={v}" for d, v in ARG_CASES])
def test_each_launch_flag_at_its_extreme_is_answered_in_bounded_time_and_memory(warm_client, url, dest, value, preset):
    argv = [_flag(dest), str(value)]
    if dest != "tp_size":
        argv += ["--tp", "4"]
    body = {"model": {"preset": preset}, "budget": {"rest_gib": 40.0}, "sglang_args": argv}
    status = _bounded(warm_client, url, body, " ".join(argv))
    assert status in (200, 422)


# The widest request the schema admits: the largest layout split over the most stages
# (1,024 stages in every answer, twice in a compare), with each launch value at its
# maximum on top. Its work is bounded by those schema limits, not by the values: about a
# tenth of a second; the limit is ten times that.
WIDE_TIME_LIMIT_S = 1.0
WIDE_CASES = [(p[1], v) for p, leaf in LEAVES if p[:1] == ("server_args",) and p[1] != "pp_size" for v in extremes(leaf)[:1]]


@pytest.mark.parametrize(("field", "value"), WIDE_CASES, ids=[f"{f}={v}" for f, v in WIDE_CASES])
def test_the_widest_layout_at_the_most_stages_is_bounded_too(warm_client, field, value):
    body = {"model": {"layout": copy.deepcopy(BIG_LAYOUT)}, "budget": {"rest_gib": 40.0}, "server_args": {"pp_size": 1024, field: value}}
    status, elapsed, grown = _measure(warm_client, "/v1/plan/compare", body)
    if elapsed >= WIDE_TIME_LIMIT_S:
        elapsed = min(elapsed, _measure(warm_client, "/v1/plan/compare", body)[1])
    assert status in (200, 422)
    assert elapsed < WIDE_TIME_LIMIT_S, f"{field}={value} at pp_size 1024 took {elapsed:.2f} s"
    assert grown < RSS_LIMIT, f"{field}={value} at pp_size 1024 grew RSS by {grown / 2**20:.1f} MiB"
