"""`GET /v1/gpus` and `POST /v1/plan` with `budget: {"gpu": ...}` over HTTP: the estimated
budget's fields, its errors as problem+json naming budget.gpu, and the same numbers as the
solver."""

from __future__ import annotations

import pytest

from api_helpers import assert_problem
from mambasizer.service.planner import model_layout, plan
from mambasizer.service.solver import gpu_budget, gpus, parse_request
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

QWEN = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}}


def test_gpus_lists_the_catalog_with_sources(client):
    resp = client.get("/v1/gpus")
    assert resp.status_code == 200
    body = resp.json()
    by_name = {g["name"]: g for g in body["gpus"]}
    assert by_name["h100"]["memory_mib"] == 81559
    assert by_name["h200"]["memory_mib"] == 143771
    assert by_name["h100-nvl"]["memory_mib"] == 95830
    assert len(body["gpus"]) == len(gpus.CATALOG) == 35 and body["default_gpu"] == "h200"
    assert all(g["source"] for g in body["gpus"])
    assert by_name["mi300x"] | {} == {**by_name["mi300x"], "memory_mib": 196592, "runtime": "hip", "architecture": "cdna3", "compute_capability": "9.4", "confirmed": True}
    assert by_name["b200"]["compute_capability"] == "10.0" and by_name["rtx-pro-6000"]["compute_capability"] == "12.0"
    assert by_name["mi325x"]["memory_mib"] is None and not by_name["mi325x"]["confirmed"]
    assert by_name["mi355x"]["memory_mib"] == 294896 and by_name["mi355x"]["confirmed"]
    assert by_name["gb10"]["integrated"] and by_name["gb10"]["compute_capability"] == "12.1"
    assert by_name["strix-halo"]["device_class"] == "gfx1151" and by_name["strix-halo"]["compute_capability"] == "11.5"
    assert by_name["strix-halo"]["integrated"] and by_name["rtx-3090"]["device_class"] == "sm86"
    assert by_name["h200"]["residents"] == "calibrated on Hopper logs" and by_name["b200"]["residents"].startswith("estimated")
    assert "v100" in body["not_modelled"] and "gb10" not in body["not_modelled"]
    assert body["resident_before_load_gib"] == {
        "one_rank": gpu_budget.SINGLE_RANK_RESIDENT_GIB,
        "several_ranks": round(gpu_budget.SINGLE_RANK_RESIDENT_GIB + gpu_budget.MULTI_RANK_EXTRA_GIB, 6),
    }


def test_plan_from_the_gpu_alone(client):
    resp = client.post("/v1/plan", json={**QWEN, "budget": {"gpu": "h200"}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["feasible"] and body["budget_source"] == "estimated"
    assert body["gpu_memory_mib"] == 143771 and body["min_free_stage"] == 0
    stage = body["stages"][0]
    # Qwen3-Next-80B bf16 at TP 4: ~37.2 GiB of parameters on the largest rank, weights.py's figure.
    layout = model_layout(parse_request({**QWEN, "budget": {"rest_gib": 1.0}}))
    assert stage["weights_bytes"] == stage_weight_bytes(
        layout, tp_size=4, pp_size=1, ep_size=1, stages=pp_stages(layout.num_hidden_layers, 1), load_nextn=False)[0]
    assert 37 < stage["weights_bytes"] / 2**30 < 37.5
    assert round(body["free_gib_before_load"], 2) == 138.11  # 140.40 GiB - 2.29 GiB residents
    assert stage["free_gib_after_load"] == pytest.approx(body["free_gib_before_load"] - stage["weights_bytes"] / 2**30 - gpu_budget.LOAD_RESIDENT_GIB, abs=1e-4)
    # The wire answer is the solver's, to the token.
    p = plan({**QWEN, "budget": {"gpu": "h200"}})
    assert (body["max_total_num_tokens"], body["max_running_requests"], body["max_mamba_cache_size"]) == (
        p.max_total_num_tokens, p.max_running_requests, p.max_mamba_cache_size)


def test_measured_plans_say_so(client):
    body = client.post("/v1/plan", json={**QWEN, "budget": {"rest_gib": 40.0}}).json()
    assert body["budget_source"] == "measured"
    assert body["stages"][0]["weights_bytes"] is None and body["min_free_stage"] is None


@pytest.mark.parametrize("gpu, part", [("v100", "Volta"), ("mi250x", "CDNA2"), ("tpu-v5", "unknown GPU")])
def test_unmodelled_gpu_is_a_422_naming_budget_gpu(client, gpu, part):
    body = assert_problem(client.post("/v1/plan", json={**QWEN, "budget": {"gpu": gpu}}), 422, field="budget.gpu")
    assert part in body["detail"]
    assert body["allowed"] == sorted(gpus.CATALOG)


def test_unconfirmed_gpu_alone_is_a_422_naming_gpu_memory_mib(client):
    body = assert_problem(client.post("/v1/plan", json={**QWEN, "budget": {"gpu": "mi325x"}}), 422, field="budget.gpu_memory_mib")
    assert "give the figure you read (rocminfo Pool 1 Size KB / 1024) as gpu_memory_mib" in body["detail"]
    ok = client.post("/v1/plan", json={**QWEN, "budget": {"gpu": "mi355x", "gpu_memory_mib": 294896}}).json()
    assert ok["feasible"] and ok["gpu_memory_mib"] == 294896 and ok["resolved"]["attention_backend"] == "aiter"
    assert ok["resolved"]["mem_fraction_static"] == pytest.approx(0.91 * 0.85)  # 0.7735, SGLang's (research note §2 row 2)


def test_named_gpu_beside_measured_figures_picks_its_resolution(client):
    measured = {"free_gib_before_load": 189.0, "free_gib_after_load": 150.0}
    amd = client.post("/v1/plan", json={**QWEN, "budget": {**measured, "gpu": "mi300x"}}).json()
    hop = client.post("/v1/plan", json={**QWEN, "budget": {**measured, "gpu_memory_mib": 196592}}).json()
    assert amd["budget_source"] == hop["budget_source"] == "measured"
    assert (amd["resolved"]["mem_fraction_static"], amd["resolved"]["gpu"]) == (0.73525, "mi300x")
    assert (hop["resolved"]["mem_fraction_static"], hop["resolved"]["gpu"]) == (0.862, "h200")
    assert amd["max_total_num_tokens"] < hop["max_total_num_tokens"]
    rest = client.post("/v1/plan", json={**QWEN, "budget": {"rest_gib": 40.0, "gpu": "b200"}}).json()
    assert rest["resolved"]["gpu"] == "b200" and rest["resolved"]["attention_backend"] == "triton"


@pytest.mark.parametrize("env, field", [
    ({"SGLANG_AITER_KV_CACHE_LAYOUT": "x" * 33}, "env.SGLANG_AITER_KV_CACHE_LAYOUT"),
    ({"SGLANG_AITER_KV_CACHE_LAYOUT": "vectorized 5d"}, "env.SGLANG_AITER_KV_CACHE_LAYOUT"),
    ({"SGLANG_AITER_KV_CACHE_LAYOUT": 5}, "env.SGLANG_AITER_KV_CACHE_LAYOUT"),
    ({"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "maybe"}, "env.SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"),
])
def test_bad_aiter_env_is_a_422_naming_it(client, env, field):
    assert_problem(client.post("/v1/plan", json={**QWEN, "env": env, "budget": {"gpu": "mi300x"}}), 422, field=field)


def test_aiter_env_strings_parse_as_sglangs(client):
    plans = {v: client.post("/v1/plan", json={**QWEN, "server_args": {"tp_size": 4, "mem_fraction_static": 0.85},
                                               "env": {"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": v}, "budget": {"gpu": "mi300x"}}).json()
             for v in ("1", "true", "YES", "0", "no")}
    assert {v: p["resolved"]["mem_fraction_static"] for v, p in plans.items()} == {
        "1": 0.85, "true": 0.85, "YES": 0.85, "0": pytest.approx(0.7225), "no": pytest.approx(0.7225)}
    page = client.post("/v1/plan", json={**QWEN, "env": {"SGLANG_AITER_KV_CACHE_LAYOUT": "Vectorized_5D"}, "budget": {"gpu": "mi300x"}}).json()
    assert page["resolved"]["page_size"] == 64 and page["max_total_num_tokens"] % 64 == 0
    cuda = client.post("/v1/plan", json={**QWEN, "env": {"SGLANG_AITER_KV_CACHE_LAYOUT": "vectorized_5d"}, "budget": {"gpu": "h200"}}).json()
    assert cuda["resolved"]["page_size"] == 1  # the layout is read on HIP only


def test_unnamed_capacity_plans_with_hopper_rules_and_a_warning(client):
    body = client.post("/v1/plan", json={**QWEN, "budget": {"gpu_memory_mib": 183359}}).json()
    assert body["feasible"] and body["budget_source"] == "estimated"
    assert any("but no budget.gpu names the device" in w for w in body["warnings"])


def test_weights_that_do_not_fit_answer_with_a_verified_remedy(client):
    body = client.post("/v1/plan", json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"gpu": "h200"}}).json()
    assert not body["feasible"]
    assert body["error"]["kind"] == "weights_do_not_fit"
    assert body["error"]["remedies"] == ["--tp-size 2 starts (the weights then fit; the smallest doubling that does)"]
    assert client.post("/v1/plan", json={**QWEN, "server_args": {"tp_size": 2}, "budget": {"gpu": "h200"}}).json()["feasible"]


def test_ep_size_flag_reaches_the_weights(client):
    base = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"gpu": "h100"}}
    tp = client.post("/v1/plan", json={**base, "sglang_args": ["--tp-size", "4"]}).json()
    ep = client.post("/v1/plan", json={**base, "sglang_args": ["--tp-size", "4", "--ep-size", "4"]}).json()
    assert tp["feasible"] and ep["feasible"]
    assert ep["resolved"]["tp_size"] == 4
    # Qwen3-Next-80B-A3B on 4 ranks: experts sliced over TP or placed whole over EP (which
    # SGLang's EP layer holds differently: 39,993,256,640 vs 40,219,749,056 bytes); the wire
    # carries weights.py's figure for each (tests/conformance checks those bytes).
    layout = model_layout(parse_request({**base, "server_args": {"tp_size": 4}}))
    stages = pp_stages(layout.num_hidden_layers, 1)
    for body, ep_size in ((tp, 1), (ep, 4)):
        expected = stage_weight_bytes(layout, tp_size=4, pp_size=1, ep_size=ep_size, stages=stages, load_nextn=False)
        assert body["stages"][0]["weights_bytes"] == expected[0]
    assert tp["stages"][0]["weights_bytes"] != ep["stages"][0]["weights_bytes"]
    assert tp["max_total_num_tokens"] != ep["max_total_num_tokens"]


def test_kimi_k3_tp8_pp8_plans_from_the_gpu_alone(client):
    # The flagship layout (examples/kimi-k3-h200-tp8-pp8.json's flags, no measured budget): each
    # stage charged its own weights as SGLang builds that PP rank (conformance-checked in
    # tests/conformance/test_weights_conformance.py), the MoonViT tower on all eight.
    req = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8, "mem_fraction_static": 0.88}}
    body = client.post("/v1/plan", json={**req, "budget": {"gpu": "h200"}}).json()
    assert body["feasible"] and body["budget_source"] == "estimated", body
    layout = model_layout(parse_request({**req, "budget": {"rest_gib": 1.0}}))
    stages = pp_stages(layout.num_hidden_layers, 8, None, layout.mamba_layer_ids, layout.full_attention_layer_ids)
    want = stage_weight_bytes(layout, tp_size=8, pp_size=8, ep_size=1, stages=stages, load_nextn=False)
    assert tuple(s["weights_bytes"] for s in body["stages"]) == want
    # 11 layers on the first stage (with the embedding), 12 on the last (with lm_head): the last is largest
    assert want[0] == 23_770_654_384 and want[-1] == 27_889_105_280 == max(want)
    p = plan({**req, "budget": {"gpu": "h200"}})
    assert (body["max_total_num_tokens"], body["max_running_requests"], body["max_mamba_cache_size"]) == (
        p.max_total_num_tokens, p.max_running_requests, p.max_mamba_cache_size) == (11_700_777, 1655, 6622)


def test_gpus_list_each_parts_identifying_labels(client):
    by_name = {g["name"]: g for g in client.get("/v1/gpus").json()["gpus"]}
    assert by_name["h100"]["gpu_labels"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.compute.major": "9",
                                            "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.memory": "81559"}
    assert by_name["gb10"]["gpu_labels"] == {"nvidia.com/gpu.product": "NVIDIA-GB10", "nvidia.com/gpu.compute.major": "12",
                                            "nvidia.com/gpu.compute.minor": "1"}  # no memory label: nvidia-smi prints [N/A]
    assert by_name["mi300x"]["gpu_labels"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X"}


@pytest.mark.parametrize("gpu", ["rtx-3090", "a10", "rtx-4090", "rtx-5090", "l20", "l40", "a100-40gb", "a800", "mi355x", "gb10", "b300"])
def test_each_listed_part_plans_by_name(client, gpu):
    resp = client.post("/v1/plan", json={"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 4}, "budget": {"gpu": gpu}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["resolved"]["gpu"] == gpu and body["device"]["name"] == gpu and body["gpu_memory_mib"] == gpus.CATALOG[gpu].memory_mib


def test_a_described_device_missing_fields_is_a_422_listing_them(client):
    body = assert_problem(client.post("/v1/plan", json={**QWEN, "budget": {"gpu": {"product": "NVIDIA GB10", "memory_mib": 124610}}}),
                          422, field="budget.gpu")
    assert "without compute_capability, runtime, integrated" in body["detail"]
