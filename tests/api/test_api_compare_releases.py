"""POST /v1/plan/compare in release mode (`baseline_sglang_version`): the same request planned
under two SGLang releases, each side equal to POST /v1/plan under its release; the numbers are
the solver's, checked here so a change in either release's rules shows."""

from __future__ import annotations

import json

from api_helpers import assert_problem
from mambasizer.service.api.examples import COMPARE_EXAMPLES
from mambasizer.service.planner import plan

# Nemotron-H-56B PP 4 at a fixed --mem-fraction-static: 0.5.17 charges each stage only its own
# share of the mamba state (0.5.16 charged the whole model's), so the freed memory moves.
# The older spelling of the example's from_version / to_version (the same contract).
NEMOTRON = {**{k: v for k, v in COMPARE_EXAMPLES["release_upgrade"]["value"].items() if k not in ("from_version", "to_version")},
            "sglang_version": "0.5.23", "baseline_sglang_version": "0.5.16"}
QWEN = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 30.0}}


def _plan_json(req: dict, version: str) -> dict:
    body = {k: v for k, v in req.items() if k != "baseline_sglang_version"}
    return json.loads(plan({**body, "sglang_version": version}).model_dump_json())


def test_release_diff_nemotron_pp4_0_5_16_to_0_5_23(client):
    resp = client.post("/v1/plan/compare", json=NEMOTRON)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["baseline_accounting"] == "sglang-0.5.16" and body["accounting"] == "sglang-0.5.23"
    # Each side is exactly the plan under its own release.
    assert body["baseline"] == _plan_json(NEMOTRON, "0.5.16")
    assert body["plan"] == _plan_json(NEMOTRON, "0.5.23")
    assert body["baseline"]["reference"] == "sglang==0.5.16" and body["plan"]["reference"] == "sglang==0.5.23"

    d = body["deltas"]
    assert (d["max_mamba_cache_size"]["baseline"], d["max_mamba_cache_size"]["candidate"]) == (103, 399)
    assert (d["max_running_requests"]["baseline"], d["max_running_requests"]["candidate"]) == (25, 99)
    assert (d["max_total_num_tokens"]["baseline"], d["max_total_num_tokens"]["candidate"]) == (8646665, 8594402)
    assert d["max_total_num_tokens"]["delta"] == 8594402 - 8646665
    # Release mode carries only the generic keys.
    for field in d.values():
        assert set(field) == {"baseline", "candidate", "delta", "relative"}

    # Per stage: the old over-charge left memory budgeted but unallocated (idle), now in the pools.
    idle = [(s["fields"]["idle_bytes"]["baseline"], s["fields"]["idle_bytes"]["candidate"]) for s in body["stages"]]
    assert idle == [(52404267876, 17601338212), (35574702948, 3380022116), (35574702948, 3380022116), (52404267876, 17601338212)]
    kv = [(s["fields"]["kv_tokens"]["baseline"], s["fields"]["kv_tokens"]["candidate"]) for s in body["stages"]]
    assert kv == [(12969997, 12891603), (8646665, 8594402), (8646665, 8594402), (12969997, 12891603)]

    assert body["changed"] and body["material"]
    (warning,) = body["warnings"]
    assert warning.startswith("upgrading from SGLang 0.5.16 to SGLang 0.5.23 at an unchanged --mem-fraction-static")
    assert "mamba slots (max_mamba_cache_size) 103 -> 399" in warning
    assert "KV tokens (max_total_num_tokens) 8646665 -> 8594402" in warning
    assert "max_running_requests 25 -> 99" in warning
    assert "budgeted but unallocated -" in warning and "SGLang 0.5.16 left unallocated is now allocated" in warning

    # The pins, re-planned under 0.5.23, give 0.5.16's figures.
    pin = body["pin"]
    assert pin["sglang_args"] == ["--max-mamba-cache-size", "103", "--max-total-tokens", "8646665"]
    assert "reproduces_whole_model" not in pin
    pinned = plan({**{k: v for k, v in NEMOTRON.items() if k != "baseline_sglang_version"},
                   "server_args": {**NEMOTRON["server_args"], **pin["server_args"]}})
    assert (pinned.max_mamba_cache_size, pinned.max_total_num_tokens, pinned.max_running_requests) == (103, 8646665, 25)
    assert pin["reproduces_baseline"] is pin_reproduces(pinned, body["baseline"])


def pin_reproduces(pinned, baseline: dict) -> bool:
    def pools(stages):
        return [(s["conv_state_bytes"] + s["ssm_state_bytes"] + s["intermediate_state_bytes"] + s["replayssm_ring_bytes"], s["kv_pool_bytes"]) for s in stages]
    return pools(json.loads(pinned.model_dump_json())["stages"]) == pools(baseline["stages"])


def test_release_diff_qwen3_next_extra_buffer_0_5_13_to_0_5_14(client):
    # 0.5.14 resolves `auto` to extra_buffer: 3 mamba slots per request become 5.
    req = {**QWEN, "sglang_version": "0.5.14", "baseline_sglang_version": "0.5.13"}
    body = client.post("/v1/plan/compare", json=req).json()
    assert (body["baseline_accounting"], body["accounting"]) == ("sglang-0.5.13", "sglang-0.5.14")
    assert body["baseline"] == _plan_json(req, "0.5.13") and body["plan"] == _plan_json(req, "0.5.14")
    d = body["deltas"]
    assert (d["max_mamba_cache_size"]["baseline"], d["max_mamba_cache_size"]["candidate"]) == (789, 789)
    assert (d["max_running_requests"]["baseline"], d["max_running_requests"]["candidate"]) == (263, 157)
    assert 789 // 263 == 3 and 789 // 157 == 5
    (warning,) = body["warnings"]
    assert "SGLang 0.5.13 to SGLang 0.5.14" in warning and "max_running_requests 263 -> 157" in warning
    # What 0.5.13 resolved `auto` to is pinned first (0.5.14's spelling of the flags; an explicit
    # no_buffer needs the overlap schedule off, which 0.5.13 turned off itself): with no_buffer
    # 0.5.14 gives each request 3 slots again, so the 789 slots hold 263 requests.
    pin = body["pin"]
    assert pin["sglang_args"] == ["--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule",
                                  "--max-mamba-cache-size", "789", "--max-total-tokens", "1381132"]
    pinned = plan({**QWEN, "sglang_version": "0.5.14", "server_args": {**QWEN["server_args"], **pin["server_args"]}})
    assert (pinned.max_mamba_cache_size, pinned.max_total_num_tokens, pinned.max_running_requests) == (789, 1381132, 263)
    assert pin["reproduces_baseline"] is True and pin_reproduces(pinned, body["baseline"])
    assert warning.endswith("pin --mamba-radix-cache-strategy no_buffer --disable-overlap-schedule --max-mamba-cache-size 789 "
                            "--max-total-tokens 1381132.")


def test_accounting_mode_keeps_the_old_keys_and_adds_the_generic_ones(client):
    body = client.post("/v1/plan/compare", json={k: v for k, v in NEMOTRON.items() if k != "baseline_sglang_version"}).json()
    assert (body["baseline_accounting"], body["accounting"]) == ("whole-model", "sglang-0.5.23")
    for field in body["deltas"].values():
        assert set(field) == {"whole-model", "sglang-0.5.23", "baseline", "candidate", "delta", "relative"}
        assert field["whole-model"] == field["baseline"] and field["sglang-0.5.23"] == field["candidate"]
    assert body["pin"]["reproduces_whole_model"] == body["pin"]["reproduces_baseline"]


def test_a_baseline_release_that_cannot_load_the_model_is_refused(client):
    # Kimi-K3 loads from 0.5.17 on, the release that brought the per-stage charge.
    req = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8}, "budget": {"rest_gib": 30.0},
           "baseline_sglang_version": "0.5.16"}
    problem = assert_problem(client.post("/v1/plan/compare", json=req), 422, field="baseline_sglang_version")
    assert "SGLang 0.5.16 cannot load" in problem["detail"] and "0.5.17" in problem["detail"]


def test_a_bad_baseline_release_is_a_422(client):
    for bad in ("0.5.7", "0.6.0", 16, ["0.5.16"]):
        problem = assert_problem(client.post("/v1/plan/compare", json={**QWEN, "baseline_sglang_version": bad}), 422,
                                 field="baseline_sglang_version")
        assert "0.5.8" in problem["detail"] and "0.5.23" in problem["detail"]
