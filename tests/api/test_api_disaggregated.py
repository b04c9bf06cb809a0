"""POST /v1/plan with a prefill/decode pair (issue 19), and bad input for every field the
issue made acceptable: a 422 naming the field and the fix."""

from __future__ import annotations

import pytest

from mambasizer.service.planner import plan
from tests.api.api_helpers import assert_problem

Q3N = {"preset": "qwen3-next-80b-a3b-instruct"}
GPU = {"gpu": "h200"}


def side(**sa):
    return {"model": Q3N, "server_args": {"tp_size": 4, **sa}, "budget": GPU}


def test_pair_answers_both_plans_and_what_the_pair_sustains(client):
    resp = client.post("/v1/plan", json={"prefill": side(), "decode": side(), "decode_replicas": 2})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    # Each side is what POST /v1/plan answers for it alone, with its role filled in.
    for role in ("prefill", "decode"):
        alone = plan(side(disaggregation_mode=role)).model_dump(mode="json")
        assert body[role] == alone
        assert body[role]["resolved"]["disaggregation_mode"] == role
    assert body["prefill"]["resolved"]["mem_fraction_static"] == 0.904
    assert body["decode"]["resolved"]["mem_fraction_static"] == 0.929
    pair = body["pair"]
    dec, pre = body["decode"], body["prefill"]
    assert pair["decode_concurrency"] == dec["max_running_requests"] * 2
    assert pair["prefill_in_flight_requests"] == pre["max_running_requests"]
    assert pair["decode_kv_tokens"] == dec["logical_max_total_num_tokens"] * 2
    assert pair["prefill_kv_tokens"] == pre["logical_max_total_num_tokens"]
    assert pair["binding_side"] == ("decode" if pair["decode_concurrency"] <= pair["prefill_in_flight_requests"] else "prefill")
    assert pair["feasible"] is True


def test_pair_with_launch_lines(client):
    resp = client.post("/v1/plan", json={
        "prefill": {"model": Q3N, "sglang_args": ["--tp", "4", "--disaggregation-mode", "prefill"], "budget": GPU},
        "decode": {"model": Q3N, "sglang_args": ["--tp", "4", "--max-running-requests", "32"], "budget": GPU},
    })
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["decode"]["decode_pool"]["mamba_rows_allocated"] == 97
    assert body["decode"]["decode_pool"]["mamba_rows_charged"] == 33
    assert any("--disaggregation-decode-extra-slots 0" in w for w in body["decode"]["warnings"])
    assert body["pair"]["decode_concurrency"] == 32


@pytest.mark.parametrize("body,field,fragment", [
    ({"prefill": side()}, "decode", "needs both sides"),
    ({"prefill": side(), "decode": side(), "extra": 1}, "extra", "unknown field"),
    ({"prefill": side(), "decode": side(), "decode_replicas": 0}, "decode_replicas", "from 1 to"),
    ({"prefill": side(disaggregation_mode="decode"), "decode": side()}, "prefill.server_args.disaggregation_mode", "--disaggregation-mode prefill"),
    ({"prefill": side(), "decode": {**side(), "model": {"preset": "qwen3.5-27b"}}}, "decode.model", "one checkpoint"),
    ({"prefill": side(tp_size=0), "decode": side()}, "prefill.server_args.tp_size", ""),
    ({"prefill": side(), "decode": {**side(), "trial": {}}}, "decode.trial", "only accepted"),
])
def test_bad_pairs_are_422_naming_the_field(client, body, field, fragment):
    problem = assert_problem(client.post("/v1/plan", json=body), 422, field=field)
    assert fragment in problem["detail"]


@pytest.mark.parametrize("server_args,field", [
    ({"disaggregation_mode": "encode"}, "server_args.disaggregation_mode"),
    ({"disaggregation_decode_extra_slots": -1}, "server_args.disaggregation_decode_extra_slots"),
    ({"dcp_size": 0}, "server_args.dcp_size"),
    ({"moe_a2a_backend": "mooncake"}, "server_args.moe_a2a_backend"),
    ({"enable_two_batch_overlap": "yes"}, "server_args.enable_two_batch_overlap"),
    ({"enable_hierarchical_cache": 1}, "server_args.enable_hierarchical_cache"),
    ({"enable_symm_mem": "true"}, "server_args.enable_symm_mem"),
    ({"num_reserved_decode_tokens": -5}, "server_args.num_reserved_decode_tokens"),
    ({"disaggregation_decode_enable_radix_cache": "on"}, "server_args.disaggregation_decode_enable_radix_cache"),
    ({"tp_size": 8, "dcp_size": 3}, "server_args.dcp_size"),
])
def test_bad_new_fields_are_422(client, server_args, field):
    body = {"model": Q3N, "server_args": server_args, "budget": GPU}
    assert_problem(client.post("/v1/plan", json=body), 422, field=field)


@pytest.mark.parametrize("argv,fragment", [
    (["--disaggregation-mode", "encode"], "--disaggregation-mode"),
    (["--dcp-size", "two"], "--dcp-size"),
    (["--moe-a2a-backend", "mooncake"], "--moe-a2a-backend"),
    (["--disaggregation-decode-extra-slots", "x"], "--disaggregation-decode-extra-slots"),
    (["--num-reserved-decode-tokens", "many"], "--num-reserved-decode-tokens"),
    (["--enable-symm-mem=1"], "--enable-symm-mem"),
])
def test_bad_new_flags_are_422_on_sglang_args(client, argv, fragment):
    body = {"model": Q3N, "sglang_args": argv, "budget": GPU}
    problem = assert_problem(client.post("/v1/plan", json=body), 422, field="sglang_args")
    assert fragment in problem["detail"]


def test_accepted_flags_and_slack_consumers(client):
    body = {"model": Q3N, "budget": GPU, "sglang_args": [
        "--tp", "4", "--moe-a2a-backend", "deepep", "--enable-symm-mem", "--enable-hierarchical-cache", "--num-reserved-decode-tokens", "1024"]}
    resp = client.post("/v1/plan", json=body)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["resolved"]["mem_fraction_static"] == 0.877 and out["resolved"]["ep_size"] == 4
    consumers = {c["name"]: c for c in out["slack_consumers"]}
    assert consumers["symm_mem_pool"]["bytes"] == 4 << 30
    assert consumers["deepep_buffers"]["bytes"] is None and "first dispatch" in consumers["deepep_buffers"]["note"]
    assert consumers["hicache_host_pools"]["bytes"] == 0
