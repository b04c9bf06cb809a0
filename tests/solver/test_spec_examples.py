"""SIZING_SPEC §7 worked examples E1-E10: every figure there was produced by SGLang
0.5.23's own functions. F_pre is 139.60 GiB throughout (an H200 after NCCL warm-up)."""

import pytest

from mambasizer.service.planner import plan

F_PRE = 139.60


def profiled(model, f_post, mfs, **server_args):
    return {
        "model": model,
        "server_args": {"mem_fraction_static": mfs, **server_args},
        "budget": {"free_gib_before_load": F_PRE, "free_gib_after_load": f_post},
    }


QWEN3_NEXT = {"preset": "qwen3-next-80b-a3b-instruct"}
KIMI_LINEAR = {"preset": "kimi-linear-48b-a3b-instruct"}
NANO_9B = {"preset": "nvidia-nemotron-nano-9b-v2", "allow_unverified": True}
FALCON_H1_1_5B = {
    "hf_config": {
        "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "num_hidden_layers": 24,
        "hidden_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
        "mamba_d_ssm": 3072, "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_n_groups": 1,
        "mamba_d_state": 256, "mamba_d_conv": 4, "max_position_embeddings": 131072,
    }
}
GRANITE_SMALL = {
    "hf_config": {
        "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
        "num_hidden_layers": 40, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4,
        "mamba_expand": 2,
        "layer_types": ["attention" if i in (5, 15, 25, 35) else "mamba" for i in range(40)],
    }
}
LFM2_1_2B = {
    "hf_config": {
        "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "num_hidden_layers": 16, "hidden_size": 2048,
        "num_attention_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3, "max_position_embeddings": 128000,
        "layer_types": ["full_attention" if i in (2, 5, 8, 10, 12, 14) else "conv" for i in range(16)],
    }
}


def test_e1_qwen3_next_tp4():
    p = plan(profiled(QWEN3_NEXT, 101.30, 0.897, tp_size=4))
    assert p.feasible and p.mamba_ratio == 5
    assert p.rest_gib == pytest.approx(86.9212, abs=1e-9)
    assert p.stages[0].stage_per_req_bytes == 19_316_736
    assert p.max_mamba_cache_size == 2287
    assert p.kv_budget_bytes == 49_134_235_864
    assert p.stages[0].kv_cell_bytes == 12_288
    assert p.max_total_num_tokens == 3_998_554
    assert p.max_running_requests == 457 and p.pp_max_micro_batch_size == 457
    assert p.binding_limit == "mamba_slots"
    assert any("capped to 457 by the mamba state cache" in w for w in p.warnings)


def test_e1_skip_decode_lock_lowers_ratio_only():
    p = plan({**profiled(QWEN3_NEXT, 101.30, 0.897, tp_size=4), "env": {"SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": True}})
    assert (p.mamba_ratio, p.max_mamba_cache_size, p.max_total_num_tokens, p.max_running_requests) == (4, 2287, 3_998_554, 571)


def test_e2_qwen3_next_mtp():
    req = profiled(QWEN3_NEXT, 101.30, 0.897, tp_size=4, speculative_algorithm="NEXTN", speculative_num_draft_tokens=4)
    p = plan({**req, "draft_model": {"num_layers": 1}})
    assert p.max_mamba_cache_size == 1268
    assert p.stages[0].charged_mamba_bytes == 1269 * 19_316_736 + 19_316_736 * 49 * 4
    assert p.kv_budget_bytes == 65_031_909_592
    assert p.stages[0].kv_cell_bytes == 13_312
    assert p.max_total_num_tokens == 4_885_209
    assert p.max_running_requests == 48 and p.binding_limit == "speculative_default"


def test_e3_kimi_linear_tp1():
    p = plan(profiled(KIMI_LINEAR, 49.20, 0.896))
    assert p.rest_gib == pytest.approx(34.6816, abs=1e-9)
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens, p.max_running_requests) == (405, 19_611_538_843, 2_431_986, 81)
    assert p.stages[0].kv_cell_bytes == 8_064


def test_e4_kimi_linear_tp2_pp2():
    p = plan(profiled(KIMI_LINEAR, 94.0, 0.895, tp_size=2, pp_size=2))
    assert p.mamba_ratio == 4  # PP turned overlap off after the strategy resolved to extra_buffer
    assert [(s.start_layer, s.end_layer, s.mamba_layers, s.full_attention_layers) for s in p.stages] == [(0, 13, 10, 3), (13, 27, 10, 4)]
    assert p.stages[0].stage_per_req_bytes == 10_854_400
    assert p.max_mamba_cache_size == 3716 and p.kv_budget_bytes == 44_847_018_999
    assert [s.kv_cell_bytes for s in p.stages] == [3_456, 4_608]
    assert [s.kv_tokens for s in p.stages] == [12_976_567, 9_732_425]
    assert p.max_total_num_tokens == 9_732_425
    assert (p.max_running_requests, p.pp_max_micro_batch_size) == (929, 464)


def test_e5_nemotron_nano_9b_tp1():
    p = plan(profiled(NANO_9B, 121.80, 0.903))
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens, p.max_running_requests) == (382, 61_262_958_048, 3_739_194, 76)
    assert p.stages[0].kv_cell_bytes == 16_384


def test_e6_nemotron_nano_9b_pp2_largest_stage_share():
    p = plan(profiled(NANO_9B, 130.50, 0.902, pp_size=2))
    assert [s.mamba_layers for s in p.stages] == [14, 13]
    assert p.stages[0].stage_per_req_bytes == 74_432_512
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens) == (797, 66_036_516_310, 8_061_098)
    assert (p.max_running_requests, p.pp_max_micro_batch_size) == (199, 99)
    # Stage 1 allocates 798 * 13 layers, 4,242,653,184 B less than it is charged.
    s0, s1 = p.stages
    assert (s0.conv_state_bytes + s0.ssm_state_bytes) - (s1.conv_state_bytes + s1.ssm_state_bytes) == 4_242_653_184


def test_e6_whole_model_accounting_charges_all_layers():
    p = plan({**profiled(NANO_9B, 130.50, 0.902, pp_size=2), "accounting": "whole-model"})
    assert p.stages[0].stage_per_req_bytes == 143_548_416  # all 27 mamba layers
    assert p.max_mamba_cache_size < 797


def test_e7_nemotron_nano_9b_pp4_stages_without_attention():
    p = plan(profiled(NANO_9B, 135.0, 0.900, pp_size=4))
    assert p.stages[0].stage_per_req_bytes == 42_532_864 and p.max_mamba_cache_size == 1446
    assert [s.full_attention_layers for s in p.stages] == [0, 2, 2, 0]
    assert [s.kv_tokens for s in p.stages] == [None, 8_352_130, 8_352_130, None]  # int64 sentinel
    assert p.max_total_num_tokens == 8_352_130
    assert (p.max_running_requests, p.pp_max_micro_batch_size) == (361, 90)


def test_e8_falcon_h1_1_5b_class():
    p = plan(profiled(FALCON_H1_1_5B, 136.30, 0.903))
    assert p.mamba_cache_per_req_bytes == 76_013_568
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens, p.max_running_requests) == (820, 69_404_118_496, 2_824_060, 164)


def test_e9_granite_small_class_tp2():
    p = plan(profiled(GRANITE_SMALL, 108.80, 0.902, tp_size=2))
    assert p.mamba_cache_per_req_bytes == 76_437_504  # groups replicated to tp=2
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens, p.max_running_requests) == (631, 53_824_960_777, 6_570_429, 126)


def test_e10_lfm2_no_buffer():
    p = plan(profiled(LFM2_1_2B, 137.40, 0.903))
    assert p.resolved.mamba_radix_cache_strategy == "no_buffer" and p.mamba_ratio == 3
    assert p.mamba_cache_per_req_bytes == 81_920
    assert (p.max_mamba_cache_size, p.kv_budget_bytes, p.max_total_num_tokens, p.max_running_requests) == (768_997, 69_996_057_670, 5_696_293, 4096)
    assert p.binding_limit == "estimate"
