"""POST /v1/recommend/disaggregated over HTTP: each recommended side equals a direct POST /v1/plan
of the same launch line, the pair equals POST /v1/plan of `plan_request`, bad input is a 422
naming the field (with SGLang's reason for an impossible role combination), and the OpenAPI
example is a request the route answers."""

from __future__ import annotations

import json

import pytest

from api_helpers import assert_problem
from mambasizer.service.api.recommend_disaggregated import EXAMPLE
from mambasizer.service.recommend.disaggregated import PP_SPEC_PREFILL_ONLY

ROUTE = "/v1/recommend/disaggregated"
Q3N = {"preset": "qwen3-next-80b-a3b-instruct"}


def _plan_only(side: dict) -> dict:
    return {k: v for k, v in side.items() if k not in ("ignored_sglang_args", "sglang_args_warnings")}


def test_example_recommends_a_pair_that_v1_plan_plans_the_same(client):
    resp = client.post(ROUTE, json=EXAMPLE)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    pre, dec = body["prefill"], body["decode"]
    # Qwen3-Next on H200 at 128k: one TP 2 prefill server holds the 256 prefills, one TP 8
    # decode server with DCP 4 runs 1,960 requests of 16k tokens (32.1M logical KV tokens).
    assert (pre["replicas"], pre["tp_size"], pre["pp_size"], pre["gpus"]) == (1, 2, 1, 2)
    assert pre["requests_per_replica"] == 256 and pre["targets"]["in_flight_requests"]["met"]
    assert (dec["replicas"], dec["tp_size"], dec["dcp_size"], dec["gpus"]) == (1, 8, 4, 8)
    assert dec["requests_per_replica"] == 1960 and dec["kv_tokens_per_replica"] == 32_118_764
    assert dec["targets"]["tokens_per_request"] == {"required": 1024 * 16384, "achieved": 32_118_764, "margin": 32_118_764 - 1024 * 16384, "met": True}
    assert body["gpus"] == 10
    assert "--disaggregation-mode" in pre["sglang_args"] and "--dcp-size" in dec["sglang_args"]
    # Each side is what POST /v1/plan answers for its launch line alone, role and all.
    for role, side in (("prefill", pre), ("decode", dec)):
        alone = client.post("/v1/plan", json={"model": Q3N, "budget": {"gpu": "h200"}, "sglang_args": side["sglang_args"]})
        assert alone.status_code == 200
        assert _plan_only(json.loads(alone.content)) == side["plan"]
        assert side["plan"]["resolved"]["disaggregation_mode"] == role
    assert pre["plan"]["resolved"]["mem_fraction_static"] == 0.906  # TP 2 prefill (0.904 at TP 4)
    assert dec["plan"]["resolved"]["mem_fraction_static"] == 0.929
    # The pair is POST /v1/plan's answer for plan_request.
    pair = client.post("/v1/plan", json=body["plan_request"])
    assert pair.status_code == 200
    answered = pair.json()
    assert answered["pair"] == body["pair"]
    assert _plan_only(answered["prefill"]) == pre["plan"] and _plan_only(answered["decode"]) == dec["plan"]
    assert body["pair"]["decode_concurrency"] == 1960 and body["pair"]["prefill_in_flight_requests"] == 256
    assert body["pair"]["binding_side"] == "prefill"
    # Alternatives: fewest GPUs first, the chosen one first, no plans.
    for role in ("prefill", "decode"):
        alts = body["alternatives"][role]
        assert alts[0] | {"plan": None} == body[role] | {"plan": None}
        assert [a["gpus"] for a in alts] == sorted(a["gpus"] for a in alts)
        assert all(a["plan"] is None for a in alts)
    assert body["searched"]["decode"]["settings"] == 10 and body["searched"]["prefill"]["settings"] == 4


def test_openapi_documents_the_route_with_its_example(client):
    doc = client.get("/openapi.json").json()
    op = doc["paths"][ROUTE]["post"]
    assert op["requestBody"]["content"]["application/json"]["examples"]["qwen3_next_h200"]["value"] == EXAMPLE
    schema = doc["components"]["schemas"]["RecommendDisaggregatedRequest"]
    assert "prefill" in schema["x-semantic-fields"] and "decode" in schema["x-semantic-fields"]
    assert len(schema["oneOf"]) == 2


BASE = {"model": Q3N, "gpu": "h200", "prefill": {"in_flight_requests": 64}, "decode": {"concurrent_requests": 128}}


@pytest.mark.parametrize("patch,field,fragment", [
    ({"decode": {"concurrent_requests": 128, "server_args": {"tp_size": 4, "pp_size": 2, "speculative_algorithm": "EAGLE"}}},
     "decode.server_args.speculative_algorithm", PP_SPEC_PREFILL_ONLY),
    ({"decode": {"concurrent_requests": 128, "server_args": {"tp_size": 8, "attn_dp_size": 4, "dcp_size": 4}}}, "decode.server_args.dcp_size", "ZeroDivisionError"),
    ({"decode": {"concurrent_requests": 128, "server_args": {"tp_size": 8, "dcp_size": 3}}}, "decode.server_args.dcp_size", "must be divisible"),
    ({"decode": {"concurrent_requests": 128, "server_args": {"disaggregation_mode": "prefill"}}}, "decode.server_args.disaggregation_mode", "leave it out"),
    ({"decode": {"concurrent_requests": 128, "server_args": {"tp_size": 4}, "search": {"tp_size": [2, 4]}}}, "decode.search.tp_size", "not both"),
    ({"model": {"preset": "nemotron-h-8b-base-8k"}, "decode": {"concurrent_requests": 8, "search": {"moe_a2a_backend": ["deepep"]}}},
     "decode.search.moe_a2a_backend", "no MoE experts"),
    ({"prefill": {}}, "prefill", "in_flight_requests or in_flight_tokens"),
    ({"decode": {}}, "decode.concurrent_requests", ""),
    ({"decode": {"concurrent_requests": 0}}, "decode.concurrent_requests", ""),
    ({"budget": {"rest_gib": 10}}, "gpu", "exactly one"),
    ({"gpu": "h201"}, "gpu", ""),
    ({"extra": 1}, "extra", "unknown field"),
    ({"decode": {"concurrent_requests": 8, "search": {"tp_size": [1, 2, 4, 8, 16, 32, 64, 128], "pp_size": [1, 2, 4, 8, 16, 32, 64, 128]}}},
     "decode.search", "narrow a knob"),
])
def test_bad_input_is_a_422_naming_the_field(client, patch, field, fragment):
    problem = assert_problem(client.post(ROUTE, json={**BASE, **patch}), 422, field=field)
    assert fragment in problem["detail"]


def test_not_an_object_is_a_422(client):
    assert_problem(client.post(ROUTE, content=b"[1]", headers={"content-type": "application/json"}), 422, field="request")
    assert_problem(client.post(ROUTE, content=b"{", headers={"content-type": "application/json"}), 422, field="request")
