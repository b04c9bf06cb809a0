"""POST /v1/plan/compare with `from_version` / `to_version` (the upgrade diff; the older
`baseline_sglang_version` / `sglang_version` spelling is the same contract): whether the new
release still starts, the capacity and the per-stage slack at both releases, and the flags that
hold the old behaviour (--mem-fraction-static, --mamba-radix-cache-strategy, the pool sizes)."""

from __future__ import annotations

from api_helpers import assert_problem
from mambasizer.service.api.examples import COMPARE_EXAMPLES
from mambasizer.service.planner import plan

GIB = 1 << 30
NEMOTRON = {k: v for k, v in COMPARE_EXAMPLES["release_upgrade"]["value"].items() if k not in ("from_version", "to_version")}
QWEN_GPU = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}}


def test_from_to_is_the_baseline_sglang_version_contract(client):
    assert COMPARE_EXAMPLES["release_upgrade"]["value"] == {**NEMOTRON, "from_version": "0.5.16", "to_version": "0.5.23"}
    new = client.post("/v1/plan/compare", json={**NEMOTRON, "from_version": "0.5.16", "to_version": "0.5.23"}).json()
    old = client.post("/v1/plan/compare", json={**NEMOTRON, "baseline_sglang_version": "0.5.16", "sglang_version": "0.5.23"}).json()
    assert new == old
    assert (new["baseline_accounting"], new["accounting"]) == ("sglang-0.5.16", "sglang-0.5.23")


def test_nemotron_pp4_upgrade_keeps_capacity_and_loses_slack(client):
    body = client.post("/v1/plan/compare", json={**NEMOTRON, "from_version": "0.5.16", "to_version": "0.5.23"}).json()
    up = body["upgrade"]
    assert (up["from_version"], up["to_version"], up["started"], up["starts"], up["start_error"]) == ("0.5.16", "0.5.23", True, True, None)
    assert up["capacity"]["max_running_requests"] == {"from": 25, "to": 99, "loss": 0.0}
    tokens = up["capacity"]["max_total_num_tokens"]
    assert (tokens["from"], tokens["to"]) == (8646665, 8594402)
    assert abs(tokens["loss"] - (8646665 - 8594402) / 8646665) < 1e-12
    # Slack: free after load (110 GiB) minus the mamba pool, the KV pool and the req-to-token table.
    slack = [(s["pp_rank"], s["from_bytes"], s["to_bytes"]) for s in up["slack"]]
    assert slack == [(0, 70390734432, 35585378752), (1, 53561167456, 21364060608),
                     (2, 53561167456, 21364060608), (3, 70390734432, 35585378752)]
    for s, stage in zip(body["stages"], body["plan"]["stages"], strict=True):
        pools = (stage["conv_state_bytes"] + stage["ssm_state_bytes"] + stage["intermediate_state_bytes"]
                 + stage["replayssm_ring_bytes"] + stage["kv_pool_bytes"] + stage["req_to_token_bytes"])
        assert s["fields"]["slack_bytes"]["candidate"] == 110 * GIB - pools
    assert abs(up["slack"][1]["loss"] - (53561167456 - 21364060608) / 53561167456) < 1e-12  # 60.1% on pp_rank 1


def test_qwen3_next_0_5_13_to_0_5_15_pins_the_resolved_fraction_and_strategy(client):
    # 0.5.14 resolves `auto` to extra_buffer (5 slots per request, not 3); 0.5.15 turns on the
    # breakable prefill graph for Qwen3-Next (mem_fraction_static 0.9 -> 0.897).
    body = client.post("/v1/plan/compare", json={**QWEN_GPU, "from_version": "0.5.13", "to_version": "0.5.15"}).json()
    assert (body["baseline"]["resolved"]["mem_fraction_static"], body["plan"]["resolved"]["mem_fraction_static"]) == (0.9, 0.897)
    up = body["upgrade"]
    assert up["capacity"]["max_running_requests"]["from"] == 763 and up["capacity"]["max_running_requests"]["to"] == 455
    assert abs(up["capacity"]["max_running_requests"]["loss"] - 308 / 763) < 1e-12
    assert (up["capacity"]["max_total_num_tokens"]["from"], up["capacity"]["max_total_num_tokens"]["to"]) == (4001737, 3982823)
    pin = body["pin"]
    assert pin["sglang_args"] == ["--mem-fraction-static", "0.9", "--mamba-radix-cache-strategy", "no_buffer",
                                  "--disable-overlap-schedule", "--max-mamba-cache-size", "2290", "--max-total-tokens", "4001737"]
    assert pin["reproduces_baseline"] is True
    pinned = plan({**QWEN_GPU, "sglang_version": "0.5.15", "server_args": {**QWEN_GPU["server_args"], **pin["server_args"]}})
    assert (pinned.max_mamba_cache_size, pinned.max_total_num_tokens, pinned.max_running_requests) == (2290, 4001737, 763)
    assert body["warnings"][0].endswith("pin " + " ".join(pin["sglang_args"]) + ".")


def test_an_older_release_spells_the_strategy_flag_its_own_way(client):
    # A downgrade to 0.5.13: its parser names the strategy --mamba-scheduler-strategy.
    body = client.post("/v1/plan/compare", json={**QWEN_GPU, "from_version": "0.5.14", "to_version": "0.5.13"}).json()
    assert body["pin"]["sglang_args"][:2] == ["--mamba-scheduler-strategy", "extra_buffer"]


def test_an_upgrade_that_would_not_start_says_so_and_pins_the_old_start(client):
    # Nemotron-H PP 4 on 3 GiB: 0.5.13's no_buffer gives 3 slots to 1 request; 0.5.14's
    # extra_buffer needs 4 per request, so the same slots serve none and SGLang refuses.
    req = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "pp_size": 4, "mem_fraction_static": 0.88},
           "budget": {"rest_gib": 3}, "from_version": "0.5.13", "to_version": "0.5.14"}
    body = client.post("/v1/plan/compare", json=req).json()
    up = body["upgrade"]
    assert (up["started"], up["starts"]) == (True, False)
    assert up["start_error"].startswith("Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                                        "max_mamba_cache_size=3, mamba_ratio=4, resulting max_num_reqs=0.")
    assert up["capacity"]["max_running_requests"] == {"from": 1, "to": None, "loss": None}
    assert body["deltas"]["feasible"]["baseline"] == 1 and body["deltas"]["feasible"]["candidate"] == 0
    assert body["warnings"][0].startswith("SGLang 0.5.14 would refuse to start what SGLang 0.5.13 started: ")
    pin = body["pin"]
    assert pin["sglang_args"] == ["--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule",
                                  "--max-mamba-cache-size", "3", "--max-total-tokens", "301484"]
    assert pin["reproduces_baseline"] is True
    pinned = plan({**{k: v for k, v in req.items() if k not in ("from_version", "to_version")}, "sglang_version": "0.5.14",
                   "server_args": {**req["server_args"], **pin["server_args"]}})
    assert pinned.feasible and pinned.max_running_requests == 1


def test_a_release_that_cannot_load_the_model_is_named_by_the_field_given(client):
    # Kimi-K3 loads from 0.5.17 on.
    req = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8}, "budget": {"rest_gib": 30.0}}
    problem = assert_problem(client.post("/v1/plan/compare", json={**req, "from_version": "0.5.16", "to_version": "0.5.23"}),
                             422, field="from_version")
    assert "SGLang 0.5.16 cannot load" in problem["detail"] and "choose a later from_version" in problem["detail"]
    problem = assert_problem(client.post("/v1/plan/compare", json={**req, "from_version": "0.5.23", "to_version": "0.5.16"}),
                             422, field="to_version")
    assert "SGLang 0.5.16 cannot load" in problem["detail"]


def test_contradictory_or_bad_releases_are_422s(client):
    cases = [
        ({"from_version": "0.5.16", "baseline_sglang_version": "0.5.17"}, "from_version", "older name"),
        ({"from_version": "0.5.16", "to_version": "0.5.23", "sglang_version": "0.5.22"}, "to_version", "differs from sglang_version"),
        ({"to_version": "0.5.23"}, "to_version", "needs from_version"),
        ({"from_version": "0.5.7"}, "from_version", "0.5.8"),
        ({"from_version": "0.5.16", "to_version": 23}, "to_version", "0.5.23"),
    ]
    for extra, field, fragment in cases:
        problem = assert_problem(client.post("/v1/plan/compare", json={**NEMOTRON, **extra}), 422, field=field)
        assert fragment in problem["detail"], (extra, problem)
