"""POST /v1/recommend over HTTP: the answer equals `mambasizer recommend --json` byte for byte,
every candidate re-plans through POST /v1/plan to the same plan, bad input is a 422 naming the
field, and the OpenAPI example is a request the route answers."""

from __future__ import annotations

import json
import subprocess
import sys

from api_helpers import assert_problem
from mambasizer.service.api.recommend import EXAMPLE

BODY = {
    "model": {"preset": "kimi-linear-48b-a3b-instruct"}, "gpu": "h100", "gpus": [1, 2, 4],
    "target": {"running_requests": 256, "context_length": 32768, "tokens_per_request": 8000},
    "search": {"tp_size": [1, 2, 4], "pp_size": [1, 2], "kv_cache_dtype": ["auto", "fp8_e4m3"]}, "limit": 3,
}


def test_recommend_answers_and_every_candidate_replans_through_v1_plan(client):
    resp = client.post("/v1/recommend", json=BODY)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {"objective", "candidates", "pareto", "searched", "refused", "why", "warnings"}
    assert body["objective"] == "fewest_gpus" and body["searched"] > 0
    assert 1 <= len(body["candidates"]) <= 3 and body["pareto"]
    best = body["candidates"][0]
    assert best["meets_target"] and best["gpus"] == 4
    assert body["why"].startswith("4 GPUs per replica")
    for c in body["candidates"]:
        req = {"model": BODY["model"], "budget": {"gpu": "h100"}, "sglang_args": c["sglang_args"]}
        if c["env"]:
            req["env"] = c["env"]
        plan = client.post("/v1/plan", json=req)
        assert plan.status_code == 200
        assert json.loads(plan.content) | {"ignored_sglang_args": None} == c["plan"] | {"ignored_sglang_args": None}
        assert plan.json()["feasible"]


def test_api_equals_cli_json_byte_for_byte(client, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(BODY))
    api = client.post("/v1/recommend", json=BODY)
    cli = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "recommend", "--json", str(path)], capture_output=True, timeout=120, check=False)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.rstrip(b"\n") == api.content


def test_bad_input_is_a_problem_naming_the_field(client):
    assert_problem(client.post("/v1/recommend", json={**BODY, "search": {"tp_size": []}}), 422, field="search.tp_size")
    assert_problem(client.post("/v1/recommend", json={**BODY, "budget": {"rest_gib": 10}}), 422, field="gpu")
    assert_problem(client.post("/v1/recommend", json={**BODY, "gpus": [3]}), 422, field="gpus")
    assert_problem(client.post("/v1/recommend", json={**BODY, "extra": 1}), 422, field="extra")
    assert_problem(client.post("/v1/recommend", content=b"[1]", headers={"content-type": "application/json"}), 422, field="request")
    assert_problem(client.post("/v1/recommend", content=b"{", headers={"content-type": "application/json"}), 422, field="request")


def test_openapi_documents_the_route_with_a_working_example(client):
    doc = client.get("/openapi.json").json()
    op = doc["paths"]["/v1/recommend"]["post"]
    example = op["requestBody"]["content"]["application/json"]["examples"]["kimi_k3_h200"]["value"]
    # (the schema renderer drops the example's null members: `"speculative": null` is the default)
    assert example == {**EXAMPLE, "search": {k: v for k, v in EXAMPLE["search"].items() if v is not None}}
    assert "RecommendRequest" in doc["components"]["schemas"]
    resp = client.post("/v1/recommend", json=example)
    assert resp.status_code == 200
    best = resp.json()["candidates"][0]
    # Kimi-K3's weights per PP stage are exact at pp > 1 (MoonViT on every stage): TP 4 x PP 8
    # fits 512 requests at 128k, as README's worked example shows.
    assert best["meets_target"] and best["gpus"] == 32
    assert (best["tp_size"], best["pp_size"], best["max_running_requests"]) == (4, 8, 512)
