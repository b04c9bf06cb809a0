"""POST /v1/recommend across GPU kinds over HTTP: the OpenAPI example of three priced kinds
answers, every candidate re-plans through POST /v1/plan on its own GPU to the same plan, the
body equals `mambasizer recommend --json` (file or --gpu / --gpu-price flags) byte for byte,
and bad kinds or prices are 422s naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from api_helpers import assert_problem
from mambasizer.service.api.recommend import THREE_GPUS
from mambasizer.service.solver import gpus

ROOT = Path(__file__).resolve().parents[2]


def test_three_kinds_each_candidate_is_v1_plan_on_its_gpu(client):
    resp = client.post("/v1/recommend", json=THREE_GPUS)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    best = body["candidates"][0]
    assert (best["gpu"], best["gpus"], best["cost_per_hour"], best["meets_target"]) == ("mi300x", 4, 11.2, True)
    assert {c["gpu"] for c in body["candidates"]} == {"h200", "b200", "mi300x"}
    for c in body["candidates"] + body["pareto"]:
        req = {"model": THREE_GPUS["model"], "budget": {"gpu": c["gpu"]}, "sglang_args": c["sglang_args"]}
        if c["env"]:
            req["env"] = c["env"]
        plan = client.post("/v1/plan", json=req)
        assert plan.status_code == 200, plan.text
        assert json.loads(plan.content) | {"ignored_sglang_args": None} == c["plan"] | {"ignored_sglang_args": None}
        assert c["cost_per_hour"] == round(c["gpus"] * THREE_GPUS["gpu_prices"][c["gpu"]], 6)


def test_the_example_is_documented_and_equals_the_shipped_file(client):
    doc = client.get("/openapi.json").json()
    op = doc["paths"]["/v1/recommend"]["post"]
    assert op["requestBody"]["content"]["application/json"]["examples"]["qwen3_next_three_gpus"]["value"] == THREE_GPUS
    assert json.loads((ROOT / "examples" / "recommend-qwen3-next-three-gpus.json").read_text()) == THREE_GPUS
    schema = doc["components"]["schemas"]["RecommendRequest"]
    assert {"type": "array"} in schema["oneOf"][0]["properties"]["gpu"]["anyOf"]
    assert "cheapest" in schema["properties"]["objective"]["enum"]
    assert {"gpu_prices", "objective"} <= set(schema["x-semantic-fields"])


def test_api_equals_cli_json_with_gpu_flags(client, tmp_path):
    api = client.post("/v1/recommend", json=THREE_GPUS)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({k: v for k, v in THREE_GPUS.items() if k not in ("gpu", "gpu_prices")} | {"gpu": "h100"}))
    flags = ["--gpu", "h200", "--gpu", "b200", "--gpu", "mi300x",
             *(a for name, price in THREE_GPUS["gpu_prices"].items() for a in ("--gpu-price", f"{name}={price}"))]
    cli = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "recommend", "--json", str(path), *flags],
                         capture_output=True, timeout=120, check=False)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.rstrip(b"\n") == api.content


def test_bad_kinds_and_prices_are_problems_naming_the_field(client):
    base = {k: v for k, v in THREE_GPUS.items() if k != "gpu_prices"} | {"objective": "fewest_gpus"}
    p = assert_problem(client.post("/v1/recommend", json={**base, "gpu": ["h200", "b300x"]}), 422, field="gpu")
    assert "unknown GPU 'b300x'" in p["detail"] and p.get("allowed") == sorted(gpus.CATALOG)
    p = assert_problem(client.post("/v1/recommend", json={**base, "gpu": ["h200", "mi325x"]}), 422, field="gpu")
    assert "no confirmed capacity" in p["detail"] and "gpu_memory_mib" in p["detail"]
    assert_problem(client.post("/v1/recommend", json={**base, "gpu": []}), 422, field="gpu")
    p = assert_problem(client.post("/v1/recommend", json={**base, "gpu_prices": {"l40s": 1.0}}), 422, field="gpu_prices.l40s")
    assert "not one of the requested GPUs (h200, b200, mi300x)" in p["detail"]
    assert_problem(client.post("/v1/recommend", json={**base, "gpu_prices": {"h200": -1}}), 422, field="gpu_prices.h200")
    assert_problem(client.post("/v1/recommend", json={**base, "objective": "cheapest"}), 422, field="objective")
    p = assert_problem(client.post("/v1/recommend", json={**THREE_GPUS, "gpu_prices": {"h200": 3.5, "b200": 5.9}}), 422, field="gpu_prices")
    assert "missing: mi300x" in p["detail"]
