"""POST /v1/plan/compare and GET /v1/presets[/{name}]."""

from __future__ import annotations

import json

import pytest

from api_helpers import H200, assert_problem, preset_request
from mambasizer.service.api.examples import COMPARE_EXAMPLES
from mambasizer.service.api.presets import json_safe
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS


def _plan_json(req: dict, accounting: str) -> dict:
    return json.loads(plan({**req, "accounting": accounting}).model_dump_json())


def test_compare_pipeline_parallel_upgrade_warns_and_pins(client):
    req = preset_request("kimi-linear-48b-a3b-instruct", H200, tp_size=2, pp_size=2)
    resp = client.post("/v1/plan/compare", json=req)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["baseline_accounting"] == "whole-model" and body["accounting"] == "sglang-0.5.23"
    assert body["baseline"] == _plan_json(req, "whole-model")
    assert body["plan"] == _plan_json(req, "sglang-0.5.23")

    k = body["deltas"]["max_mamba_cache_size"]
    assert k["delta"] == body["plan"]["max_mamba_cache_size"] - body["baseline"]["max_mamba_cache_size"] > 0
    assert k["relative"] == pytest.approx(k["delta"] / k["whole-model"])
    for field in ("max_total_num_tokens", "max_running_requests", "kv_budget_bytes", "rest_gib", "feasible"):
        assert set(body["deltas"][field]) == {"whole-model", "sglang-0.5.23", "baseline", "candidate", "delta", "relative"}
    assert [s["pp_rank"] for s in body["stages"]] == [0, 1]
    for stage, base, cand in zip(body["stages"], body["baseline"]["stages"], body["plan"]["stages"], strict=True):
        f = stage["fields"]
        assert f["kv_pool_bytes"]["delta"] == cand["kv_pool_bytes"] - base["kv_pool_bytes"]
        assert f["mamba_pool_bytes"]["sglang-0.5.23"] == (
            cand["conv_state_bytes"] + cand["ssm_state_bytes"] + cand["intermediate_state_bytes"] + cand["replayssm_ring_bytes"]
        )

    assert body["changed"] and body["material"]
    (warning,) = body["warnings"]
    assert "--mem-fraction-static" in warning
    assert "--max-mamba-cache-size" in warning and "--max-total-tokens" in warning
    pin = body["pin"]
    old_k = body["baseline"]["max_mamba_cache_size"]
    assert pin["sglang_args"][:2] == ["--max-mamba-cache-size", str(old_k)]
    assert pin["server_args"]["max_mamba_cache_size"] == old_k
    assert pin["reproduces_whole_model"] is True

    # The pins really do give the old sizing under 0.5.23's accounting.
    pinned = plan({**req, "server_args": {**req["server_args"], **pin["server_args"]}})
    for field in ("max_mamba_cache_size", "max_total_num_tokens", "max_running_requests"):
        assert getattr(pinned, field) == body["baseline"][field]


def test_compare_without_pipeline_parallel_is_unchanged(client):
    body = client.post("/v1/plan/compare", json=preset_request(tp_size=4)).json()
    assert body["changed"] is False and body["material"] is False
    assert body["warnings"] == [] and body["pin"] is None
    assert all(d["delta"] in (0, 0.0) for d in body["deltas"].values())
    assert body["baseline"] == {**body["plan"], "accounting": "whole-model"}


def test_compare_with_sglang_args_lists_ignored(client):
    resp = client.post("/v1/plan/compare", json=COMPARE_EXAMPLES["sglang_args"]["value"])
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["plan"]["resolved"]["pp_size"] == 4
    assert body["ignored_sglang_args"] == []
    assert body["material"] is True


@pytest.mark.parametrize("name", sorted(COMPARE_EXAMPLES))
def test_compare_examples(client, name):
    assert client.post("/v1/plan/compare", json=COMPARE_EXAMPLES[name]["value"]).status_code == 200


def test_compare_when_the_old_accounting_would_not_start(client):
    # The whole-model charge is twice the per-stage one at PP 2: find a rest budget that
    # starts under 0.5.23 but not before.
    for rest in (0.15, 0.2, 0.25, 0.5, 1.0):
        req = preset_request("kimi-linear-48b-a3b-instruct", {"rest_gib": rest}, tp_size=2, pp_size=2)
        old, new = plan({**req, "accounting": "whole-model"}), plan(req)
        if new.feasible and not old.feasible:
            break
    else:
        pytest.skip("no budget in the grid separates the two accountings")
    body = client.post("/v1/plan/compare", json=req).json()
    assert body["material"] is True
    assert body["deltas"]["feasible"] == {"whole-model": 0, "sglang-0.5.23": 1, "baseline": 0, "candidate": 1, "delta": 1, "relative": None}
    assert "refused" in body["warnings"][0]
    assert body["pin"] is None


def test_compare_errors(client):
    assert_problem(client.post("/v1/plan/compare", content=b"{"), 422, field="request")
    assert_problem(client.post("/v1/plan/compare", json=preset_request(pp_size=2)), 422, field="server_args.pp_size")
    req = preset_request()
    req["trial"] = {}
    assert_problem(client.post("/v1/plan/compare", json=req), 422, field="trial")


# --------------------------------------------------------------------------- presets


def test_presets_list(client):
    resp = client.get("/v1/presets")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    listed = resp.json()["presets"]
    assert [p["name"] for p in listed] == list(PRESETS)
    for entry in listed:
        preset = PRESETS[entry["name"]]
        assert entry == preset.summary()
        assert entry["sizable"] == (entry["reason"] is None)
        assert entry["source"]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_detail(client, name):
    resp = client.get(f"/v1/presets/{name}")
    assert resp.status_code == 200
    body = resp.json()
    preset = PRESETS[name]
    assert body["name"] == name and body["source"] == preset.source
    # strict JSON (no Infinity token); a non-finite value is spelled as a string
    json.loads(resp.text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in the body"))
    assert body["hf_config"] == json_safe(dict(preset.hf_config))
    assert body["sglang_support"] == preset.sglang_support
    if body["example_request"] is not None:
        # The ready-to-post request plans.
        assert body["sizing_error"] is None
        assert client.post("/v1/plan", json=body["example_request"]).status_code == 200
    else:
        assert not preset.sizable
        assert body["sizing_error"]["field"] and body["sizing_error"]["message"]
    if preset.sizable:
        assert body["example_request"] == {"model": {"preset": name}, "budget": {"rest_gib": 40.0}}


def test_preset_hf_config_plans_like_the_preset(client):
    name = "qwen3-next-80b-a3b-instruct"
    detail = client.get(f"/v1/presets/{name}").json()
    by_config = client.post("/v1/plan", json={"model": {"hf_config": detail["hf_config"]}, "budget": {"rest_gib": 30.0}}).json()
    by_preset = client.post("/v1/plan", json=preset_request(name)).json()
    for field in ("max_total_num_tokens", "max_running_requests", "max_mamba_cache_size", "stages"):
        assert by_config[field] == by_preset[field]


def test_unknown_preset_is_404_with_the_names(client):
    problem = assert_problem(client.get("/v1/presets/nope"), 404, field="name")
    assert problem["allowed"] == sorted(PRESETS)


def test_infinity_in_a_verbatim_config_reads_as_a_string_and_plans_when_posted_back(client):
    name = "nemotron-h-56b-base-8k"  # time_step_limit: [0.0, Infinity] in the published file
    assert PRESETS[name].hf_config["time_step_limit"][1] == float("inf")
    detail = client.get(f"/v1/presets/{name}").json()
    assert detail["hf_config"]["time_step_limit"] == [0.0, "Infinity"]
    by_config = client.post("/v1/plan", json={"model": {"hf_config": detail["hf_config"]}, "budget": {"rest_gib": 30.0}})
    by_preset = client.post("/v1/plan", json={"model": {"preset": name}, "budget": {"rest_gib": 30.0}})
    assert by_config.status_code == 200 == by_preset.status_code
    assert by_config.json()["max_total_num_tokens"] == by_preset.json()["max_total_num_tokens"]


def test_a_preset_answers_to_its_checkpoint_repo_id_in_any_case(client):
    by_name = client.get("/v1/presets/nvidia-qwen3.6-27b-nvfp4")
    for key in ("nvidia/Qwen3.6-27B-NVFP4", "NVIDIA/qwen3.6-27b-nvfp4"):
        resp = client.get(f"/v1/presets/{key}")
        assert resp.status_code == 200
        assert resp.content == by_name.content
    assert client.get("/v1/presets/nvidia/Qwen3.6-27B-NVFP4-nope").status_code == 404


def test_lightning_ships_its_quant_config_and_plans_as_sglang_fails(client):
    """Nemotron-3.5-Lightning NVFP4: the verbatim hf_quant_config.json travels with the preset
    (5,981 per-module entries) and SGLang 0.5.23's launch failure is the plan's error."""
    detail = client.get("/v1/presets/nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4").json()
    layers = detail["hf_config"]["hf_quant_config"]["quantization"]["quantized_layers"]
    assert len(layers) == 5981
    body = client.post("/v1/plan", json={"model": {"preset": detail["name"]}, "budget": {"gpu": "h200"}}).json()
    assert body["feasible"] is False
    assert body["error"]["exception"] == "AttributeError"
    assert "quantization_config" in body["error"]["message"] and "Fix:" in body["error"]["message"]
    assert body["resolved"]["kv_cache_dtype"] == "fp8_e4m3"  # kv_cache_quant_algo FP8
    assert body["stages"][0]["weights_bytes"] == 20740717304  # SGLang's model class, on the fixed config
