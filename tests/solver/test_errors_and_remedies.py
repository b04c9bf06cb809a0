"""Invalid input raises PlanInputError naming the field; a layout SGLang would refuse
comes back feasible=false with SGLang's wording and remedies that are proven to start."""

import math

import pytest

from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError

QWEN = {"preset": "qwen3-next-80b-a3b-instruct"}
KIMI = {"preset": "kimi-linear-48b-a3b-instruct"}


def req(model=QWEN, budget=None, **server_args):
    return {"model": model, "server_args": server_args, "budget": budget or {"rest_gib": 60.0}}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"model": QWEN, "budget": {"rest_gib": 1}, "server_args": {"tp": 2}}, "server_args.tp"),
        ({"model": {"preset": "nope"}, "budget": {"rest_gib": 1}}, "model.preset"),
        ({"model": {"preset": "jamba-v0.1"}, "budget": {"rest_gib": 1}}, "model.preset"),
        ({"model": {"preset": "falcon-h1-1.5b-deep"}, "budget": {"rest_gib": 1}}, "model.preset"),
        ({"model": {"hf_config": {"model_type": "llama"}}, "budget": {"rest_gib": 1}}, "model.hf_config.model_type"),
        ({"model": QWEN, "budget": {"rest_gib": 1}, "server_args": {"pp_size": 2}}, "server_args.pp_size"),
        ({"model": QWEN, "budget": {"rest_gib": 1}, "server_args": {"tp_size": 3}}, "server_args.tp_size"),
        ({"model": QWEN, "budget": {"rest_gib": 1}, "server_args": {"tp_size": 4, "attn_dp_size": 3}}, "server_args.attn_dp_size"),
        ({"model": KIMI, "budget": {"rest_gib": 1}, "server_args": {"pp_size": 2}, "env": {"SGLANG_PP_LAYER_PARTITION": "10,10"}}, "env.SGLANG_PP_LAYER_PARTITION"),
        ({"model": KIMI, "budget": {"rest_gib": 1}, "server_args": {"pp_size": 2}, "env": {"SGLANG_PP_LAYER_PARTITION": "a,b"}}, "env.SGLANG_PP_LAYER_PARTITION"),
        ({"model": QWEN, "budget": {"rest_gib": math.inf}}, "budget.rest_gib"),
        ({"model": QWEN, "budget": {"free_gib_before_load": -1, "free_gib_after_load": 1, "gpu_memory_mib": 1000}}, "budget.free_gib_before_load"),
        ({"model": QWEN, "budget": {"free_gib_before_load": 80, "free_gib_after_load": 40}}, "budget.gpu_memory_mib"),
        ({"model": QWEN, "budget": {"rest_gib": 1, "free_gib_after_load": 3}}, "budget"),
        ({"model": {"preset": "kimi-k3", "hf_config": {}}, "budget": {"rest_gib": 1}}, "model"),
        # fp4_mx_block16 with triton on Hopper: SGLang starts it, its FP4 cell is not modelled.
        ({"model": QWEN, "budget": {"rest_gib": 1}, "server_args": {"kv_cache_dtype": "fp4_mx_block16", "attention_backend": "triton"}},
         "server_args.kv_cache_dtype"),
    ],
)
def test_invalid_input_names_the_field(body, field):
    with pytest.raises(PlanInputError) as exc:
        plan(body)
    assert exc.value.field == field


def test_unknown_preset_lists_the_sizable_ones():
    with pytest.raises(PlanInputError) as exc:
        plan(req(model={"preset": "qwen9"}))
    assert "kimi-k3" in exc.value.allowed and "jamba-v0.1" not in exc.value.allowed


def test_unsupported_architecture_lists_supported_families():
    with pytest.raises(PlanInputError) as exc:
        plan(req(model={"hf_config": {"architectures": ["JambaForCausalLM"], "model_type": "jamba"}}))
    assert "Qwen3-Next" in exc.value.message and "Kimi-Linear" in exc.value.message and "LFM2" in exc.value.message


def test_unverified_preset_sizes_only_when_asked():
    p = plan(req(model={"preset": "granite-4.0-h-small", "allow_unverified": True}))
    assert p.feasible and p.family == "granitemoehybrid"


def test_tiny_rest_is_the_mamba_runtime_error_with_a_proven_remedy():
    p = plan(req(budget={"rest_gib": 0.01}))
    assert not p.feasible
    assert p.error.kind == "mamba_cache_too_small" and p.error.exception == "RuntimeError"
    assert p.error.message.startswith("Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=-1")
    remedy = p.error.remedies[0]
    assert "rest_gib=" in remedy
    fix = float(remedy.rsplit("rest_gib=", 1)[1].rstrip(")"))
    assert plan(req(budget={"rest_gib": fix})).feasible
    assert not plan(req(budget={"rest_gib": fix - 0.01})).feasible


def test_heavy_weights_raise_the_value_error_with_sglang_wording_and_mfs_remedy():
    # 2000 explicit slots x 19.3 MB = 38.6 GB, more than the 32 GiB rest at mfs 0.8.
    body = req(budget={"free_gib_before_load": 139.6, "free_gib_after_load": 60.0}, tp_size=4, mem_fraction_static=0.8, max_mamba_cache_size=2000)
    p = plan(body)
    assert p.error.kind == "no_memory_for_kv" and p.error.exception == "ValueError"
    assert p.error.message.startswith("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. Raise --mem-fraction-static above 0.571")
    mfs = next(r for r in p.error.remedies if r.startswith("--mem-fraction-static")).split()[1]
    assert plan({**body, "server_args": {**body["server_args"], "mem_fraction_static": float(mfs)}}).feasible
    largest = next(r for r in p.error.remedies if r.startswith("--max-mamba-cache-size")).split()[1]
    assert plan({**body, "server_args": {**body["server_args"], "max_mamba_cache_size": int(largest)}}).feasible
    assert not plan({**body, "server_args": {**body["server_args"], "max_mamba_cache_size": int(largest) + 1}}).feasible


def test_token_cap_below_page_size_is_not_enough_memory():
    p = plan(req(tp_size=4, page_size=64, max_total_tokens=32))
    assert p.error.kind == "not_enough_memory" and p.error.message == "Not enough memory. Please try to increase --mem-fraction-static."


def test_explicit_mamba_size_below_ratio_serves_no_request():
    p = plan(req(tp_size=4, max_mamba_cache_size=4))  # ratio 5 -> 0 requests
    assert p.error.kind == "state_cache_serves_no_request"
    assert "max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0" in p.error.message


def test_no_buffer_with_large_page_is_never_startable():
    p = plan(req(tp_size=4, page_size=64, mamba_radix_cache_strategy="no_buffer"))
    assert not p.feasible and p.error.kind == "launch_rejected"
    assert p.max_mamba_cache_size is not None  # the sizing is still shown
    assert any("--page-size 1" in r for r in p.error.remedies)


def test_lazy_extra_buffer_with_pp_fails_the_start_up_assertion():
    p = plan(req(model=KIMI, pp_size=2, mamba_radix_cache_strategy="extra_buffer_lazy"))
    assert p.error.exception == "AssertionError" and "Lazy extra buffer requires overlap schedule" in p.error.message


def test_context_length_above_derived_is_rejected():
    p = plan(req(tp_size=4, context_length=10_000_000))
    assert p.error.kind == "launch_rejected" and p.error.exception == "ValueError"


def test_weights_that_leave_nothing_at_any_fraction_say_so():
    p = plan(req(budget={"free_gib_before_load": 139.6, "free_gib_after_load": 20.0}, tp_size=4, mem_fraction_static=0.8, max_mamba_cache_size=2000))
    assert p.error.kind == "no_memory_for_kv"
    assert p.error.remedies == ["no --mem-fraction-static below 1.0 starts with these weights: use more GPUs (TP/PP) or GPUs with more memory"]


def test_a_one_token_pool_serves_no_request():
    p = plan(req(tp_size=4, max_total_tokens=1))  # T // 2 == 0 requests, reported before allocation
    assert p.error.kind == "state_cache_serves_no_request"


def test_a_one_token_context_fails_the_worker_validation():
    p = plan(req(tp_size=4, context_length=1))
    assert p.error.exception == "AssertionError" and p.error.message == "Memory pool size is too small"


LAYOUT = {
    "num_hidden_layers": 2, "mamba_layer_ids": [0], "full_attention_layer_ids": [1],
    "state": {"conv_shapes": [[8, 3]], "temporal_shape": [1, 2, 3]},
    "kv": {"type": "mha", "num_kv_heads": 1, "head_dim": 4}, "context_length": 10,
}


@pytest.mark.parametrize(
    "model, field",
    [
        ({"preset": "kimi-k3", "foo": 1}, "model.foo"),
        ({"layout": {**LAYOUT, "kv": {"type": "mha", "num_kv_heads": 1, "head_dim": 0}}}, "model.layout.kv.head_dim"),
        ({"layout": {**LAYOUT, "kv": {"type": "mla", "kv_lora_rank": 0, "qk_rope_head_dim": 1}}}, "model.layout.kv.kv_lora_rank"),
        ({"layout": {**LAYOUT, "bogus": 1}}, "model.layout.bogus"),
        ({"hf_config": "x"}, "model.hf_config"),
    ],
)
def test_field_paths_are_the_json_paths_without_union_tags(model, field):
    with pytest.raises(PlanInputError) as exc:
        plan({"model": model, "budget": {"rest_gib": 1}})
    assert exc.value.field == field


QWEN_H200 = {"model": QWEN, "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": 143771}}


def test_advice_names_the_mamba_cache_size_that_reaches_the_requested_concurrency():
    p = plan({**QWEN_H200, "server_args": {"tp_size": 4, "max_running_requests": 600}})
    assert p.feasible and p.max_running_requests == 457 and p.binding_limit == "mamba_slots"
    assert p.advice == ["--max-mamba-cache-size 3000 reaches the requested max_running_requests 600 (got 600); max_total_num_tokens then 2,877,718 instead of 3,998,554"]
    fixed = plan({**QWEN_H200, "server_args": {"tp_size": 4, "max_running_requests": 600, "max_mamba_cache_size": 3000}})
    assert fixed.max_running_requests == 600 and fixed.max_total_num_tokens == 2_877_718 and fixed.advice == []


def test_advice_when_the_target_cannot_fit_keeps_a_full_context_in_the_kv_cache():
    p = plan({**QWEN_H200, "server_args": {"tp_size": 4, "max_running_requests": 1024}})
    (advice,) = p.advice
    size = int(advice.split()[1])
    best = plan({**QWEN_H200, "server_args": {"tp_size": 4, "max_running_requests": 1024, "max_mamba_cache_size": size}})
    assert best.max_total_num_tokens >= 262_144 and best.max_running_requests == size // 5
    over = plan({**QWEN_H200, "server_args": {"tp_size": 4, "max_running_requests": 1024, "max_mamba_cache_size": size + 5}})
    assert over.max_total_num_tokens < 262_144


def test_no_advice_without_a_requested_concurrency():
    assert plan({**QWEN_H200, "server_args": {"tp_size": 4}}).advice == []


def test_the_searches_feasibility_check_is_replans_verdict():
    """`starts` / `sized` (the remedy and advice searches' check: the pipeline without the
    Plan assembly) say feasible exactly where replan() plans feasible, with replan's
    figures, over generated cases of every family, feasible and not, with and without the
    caller's stage split."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
    import cases
    from mambasizer.service.planner import model_layout, parse_request
    from mambasizer.service.solver.plan import replan, sized, stage_split, starts

    seen: dict = {True: 0, False: 0, "input error": 0}
    for case in cases.generate_cases(400, 11):
        request = parse_request(cases.wire(case))
        try:
            layout = model_layout(request)
        except PlanInputError:
            continue
        try:
            expected = replan(request, layout).feasible
        except PlanInputError:
            assert starts(request, layout) is False, case["_id"]
            seen["input error"] += 1
            continue
        assert starts(request, layout) is expected, case["_id"]
        split = stage_split(request, layout, request.server_args.pp_size)
        assert starts(request, layout, split) is expected, case["_id"]
        if expected:
            full = replan(request, layout)
            figures = (full.max_running_requests, full.max_total_num_tokens, full.binding_limit)
            assert tuple(sized(request, layout, split)) == figures, case["_id"]
        else:
            assert sized(request, layout, split) is None
        seen[expected] += 1
    assert seen[True] > 100 and seen[False] > 50 and seen["input error"] > 5, seen


# An RTX 5090's capacity (32,607 MiB: torch.cuda.mem_get_info on the card) with Nemotron-H 8B
# loaded: 31.36 GiB free before the weights, 2.0 GiB after.
RTX_5090 = {"gpu_memory_mib": 32607, "free_gib_before_load": 31.36, "free_gib_after_load": 2.0}


def test_a_fraction_that_starts_but_leaves_less_than_sglangs_activation_reserve_says_so():
    body = req(model={"preset": "nemotron-h-8b-base-8k"}, budget=RTX_5090, tp_size=1, mem_fraction_static=0.85)
    p = plan(body)
    assert p.error.kind == "mamba_cache_too_small"
    remedy = next(r for r in p.error.remedies if r.startswith("--mem-fraction-static"))
    assert remedy.startswith("--mem-fraction-static 0.975 starts (the smallest value that does, all else equal), but it is NOT proven to serve")
    # It starts (the sizing proves that much) ...
    assert plan({**body, "server_args": {**body["server_args"], "mem_fraction_static": 0.975}}).feasible
    # ... but leaves 32,607 x 0.025 = 815 MiB, under SGLang 0.5.23's own reserve for this launch:
    # 512 + 1.5 x 4,096 chunked-prefill tokens (its 20-35 GB default) + 1 x 1 / 8 GiB + the
    # decode graph (48 x 2) + the prefill graph (50 sizes up to 4,096 x 8) = 7,280 MiB.
    assert "it leaves 0.80 GiB of the 31.8 GiB GPU for activations and CUDA graphs, less than the 7.11 GiB SGLang 0.5.23 reserves" in remedy
    # The reserve is the one SGLang's automatic rule keeps (conformance-tested in
    # tests/conformance/test_launch_resolution.py): (32,607 - 7,280) / 32,607 = 0.777.
    auto = plan(req(model={"preset": "nemotron-h-8b-base-8k"}, budget=RTX_5090, tp_size=1))
    assert auto.resolved.mem_fraction_static == 0.777 and "its automatic value here is 0.777" in remedy


def test_a_fraction_with_room_for_the_activations_has_no_caveat():
    # The heavy-weights case on a 143,771 MiB H200: the fraction that starts leaves ~20 GiB.
    body = req(budget={"gpu_memory_mib": 143771, "free_gib_before_load": 139.6, "free_gib_after_load": 60.0},
               tp_size=4, mem_fraction_static=0.8, max_mamba_cache_size=2000)
    remedy = next(r for r in plan(body).error.remedies if r.startswith("--mem-fraction-static"))
    assert remedy.endswith("starts (the smallest value that does, all else equal)")
    assert (1 - float(remedy.split()[1])) * 143771 > 10 * 1024


def test_a_fraction_on_a_budget_without_capacity_says_the_reserve_is_unchecked():
    body = req(budget={"free_gib_before_load": 139.6, "free_gib_after_load": 60.0}, tp_size=4, mem_fraction_static=0.8, max_mamba_cache_size=2000)
    remedy = next(r for r in plan(body).error.remedies if r.startswith("--mem-fraction-static"))
    assert remedy.endswith("SGLang's own activation reserve is not checked against it (the budget gives no GPU capacity: "
                           "give budget.gpu or budget.gpu_memory_mib)")
