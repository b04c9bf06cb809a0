"""The disaggregated recommender on real presets: each side's setting and replicas, every
recommended side equal to the plan of its own launch line, the least replicas that reach the
targets, SGLang's role rules, and bounded work."""

from __future__ import annotations

import pytest

from mambasizer.schemas.recommend_disaggregated import RecommendDisaggregatedResponse
from mambasizer.service import disaggregated
from mambasizer.service import requests as wire
from mambasizer.service.planner import plan
from mambasizer.service.recommend.disaggregated import PLANS_PER_SIDE, recommend_disaggregated
from mambasizer.service.solver import PlanInputError

Q3N = {"preset": "qwen3-next-80b-a3b-instruct"}
KIMI = {"preset": "kimi-k3"}


def _direct(model: dict, c) -> dict:
    """POST /v1/plan's plan of the side's launch line alone (wire.prepare, as the route parses it)."""
    body = {"model": model, "budget": {"gpu": "h200"}, "sglang_args": c.sglang_args}
    if c.env:
        body["env"] = c.env
    return plan(wire.prepare(body).request).model_dump(mode="json")


def _assert_replanned(model: dict, r: RecommendDisaggregatedResponse) -> None:
    for role in ("prefill", "decode"):
        c = getattr(r, role)
        assert c.plan is not None and c.plan.feasible
        assert c.plan.model_dump(mode="json") == _direct(model, c)
        assert c.plan.resolved.disaggregation_mode == role
        # The replicas are the least that reach the targets: one fewer misses one.
        assert all(t.met for t in c.targets.values())
        if c.replicas > 1:
            assert any(
                t.achieved // c.replicas * (c.replicas - 1) < t.required for n, t in c.targets.items() if n != "context_length"
            )
    assert r.plan_request is not None and r.pair is not None
    pair = disaggregated.plan_pair(r.plan_request)
    assert pair["pair"] == r.pair.model_dump(mode="json")


def test_kimi_k3_from_the_gpu_alone_dcp_refused_on_hopper():
    body = {"model": KIMI, "gpu": "h200", "context_length": 131072,
            "prefill": {"in_flight_requests": 128}, "decode": {"concurrent_requests": 512, "tokens_per_request": 16384}}
    r = recommend_disaggregated(body)
    pre, dec = r.prefill, r.decode
    # 192 GiB of weights per rank at TP 8: neither side starts without PP on an H200.
    assert (pre.tp_size, pre.pp_size, pre.replicas, pre.gpus) == (2, 8, 1, 16)
    assert pre.requests_per_replica == 128 and pre.kv_tokens_per_replica == 1_879_586
    assert (dec.tp_size, dec.pp_size, dec.dcp_size, dec.replicas, dec.gpus) == (4, 8, 1, 1, 32)
    assert dec.requests_per_replica == 1189 and dec.kv_tokens_per_replica == 19_496_719
    assert r.gpus == 48
    # Kimi-K3's DCP override keeps CuteDSL MLA for decode, which SGLang refuses off Blackwell:
    # every DCP setting is refused at launch, before any partition or cache size is tried.
    assert r.searched["decode"].refused["launch_rejected"] == 24
    assert r.searched["decode"].searched <= PLANS_PER_SIDE and r.searched["prefill"].searched <= PLANS_PER_SIDE
    assert r.pair.decode_concurrency == 1189 and r.pair.prefill_in_flight_requests == 128
    _assert_replanned(KIMI, r)


def test_replicas_tokens_only_prefill_and_deepep():
    body = {"model": Q3N, "gpu": "h200", "context_length": 131072,
            "prefill": {"in_flight_tokens": 20_000_000},
            "decode": {"concurrent_requests": 5000, "tokens_per_request": 16384, "search": {"moe_a2a_backend": ["deepep"], "dcp_size": [1]}}}
    r = recommend_disaggregated(body)
    pre, dec = r.prefill, r.decode
    # Prefill by tokens alone: SGLang's own split, 2,334,960 tokens per TP 2 server, 9 of them.
    assert (pre.tp_size, pre.replicas, pre.gpus, pre.kv_tokens_per_replica) == (2, 9, 18, 2_334_960)
    assert "--max-mamba-cache-size" not in pre.sglang_args
    # DeepEP spans the TP group (ep_size = tp_size) and reserves its 2 GiB on the decode graph.
    assert (dec.tp_size, dec.ep_size, dec.moe_a2a_backend, dec.replicas, dec.gpus) == (2, 2, "deepep", 22, 44)
    assert dec.requests_per_replica == 232 and dec.targets["concurrent_requests"].achieved == 5104
    assert dec.plan.resolved.mem_fraction_static == 0.915
    assert r.pair.decode_replicas == 22 and r.pair.prefill_replicas == 9
    _assert_replanned(Q3N, r)


def test_unreachable_targets_answer_without_a_side_and_bounded_work():
    # The largest numbers the schema takes: no setting reaches them within 4096 replicas, and
    # the work is the same fixed grid as for small ones.
    body = {"model": Q3N, "gpu": "h200", "prefill": {"in_flight_requests": 1 << 40},
            "decode": {"concurrent_requests": 1 << 40, "tokens_per_request": 1 << 28}}
    r = recommend_disaggregated(body)
    assert r.prefill is None and r.decode is None and r.pair is None and r.plan_request is None
    assert "more than 4096 replicas needed" in r.why
    assert r.searched["decode"].settings == 10 and r.searched["prefill"].settings == 4
    assert r.searched["decode"].searched <= PLANS_PER_SIDE


@pytest.mark.parametrize("patch,field", [
    ({"decode": {"concurrent_requests": 8, "server_args": {"tp_size": 2, "pp_size": 2, "speculative_algorithm": "NEXTN"}}}, "decode.server_args.speculative_algorithm"),
    ({"decode": {"concurrent_requests": 8, "server_args": {"tp_size": 8, "dcp_size": 16}}}, "decode.server_args.dcp_size"),
    ({"prefill": {"in_flight_requests": 8, "server_args": {"ep_size": 2}}}, "prefill.server_args.ep_size"),
])
def test_fixed_knobs_no_setting_satisfies_are_input_errors(patch, field):
    body = {"model": {"preset": "nemotron-h-8b-base-8k"}, "gpu": "h200", "prefill": {"in_flight_requests": 8},
            "decode": {"concurrent_requests": 8}, **patch}
    with pytest.raises(PlanInputError) as exc:
        recommend_disaggregated(body)
    assert exc.value.field == field


def test_pp_with_mtp_is_searched_on_prefill_only():
    # Qwen3.5-27B carries its MTP layer: PP x NEXTN is a prefill setting, never a decode one.
    body = {"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "context_length": 32768,
            "prefill": {"in_flight_requests": 64, "search": {"tp_size": [1, 2], "pp_size": [1, 2], "speculative": ["NEXTN"]}},
            "decode": {"concurrent_requests": 64, "search": {"tp_size": [1, 2], "pp_size": [1, 2], "speculative": ["NEXTN"], "dcp_size": [1]}}}
    r = recommend_disaggregated(body)
    assert r.searched["prefill"].settings == 4 and r.searched["decode"].settings == 2  # decode: pp 1 only
    assert all(a.pp_size == 1 for a in r.alternatives["decode"])
    assert r.prefill.speculative_algorithm == "NEXTN" and r.decode.speculative_algorithm == "NEXTN"
    _assert_replanned({"preset": "qwen3.5-27b"}, r)


def test_the_time_bound_stops_each_side_and_says_so():
    # POST /v1/recommend/disaggregated passes SECONDS_PER_SIDE; at zero seconds nothing is searched.
    body = {"model": Q3N, "gpu": "h200", "prefill": {"in_flight_requests": 64}, "decode": {"concurrent_requests": 64}}
    r = recommend_disaggregated(body, seconds_per_side=0.0)
    assert r.prefill is None and r.decode is None
    assert "mambasizer: the decode search stopped at its time bound of 0 s after 0 of 10 settings (the rest were not searched): narrow decode.search" in r.warnings
    assert any(w.startswith("mambasizer: the prefill search stopped at its time bound of 0 s after 0 of 4 settings") for w in r.warnings)
    # Unbounded (the library's default), the same request is answered in full.
    full = recommend_disaggregated(body)
    assert full.prefill is not None and full.decode is not None and not full.warnings
