"""service/solver/weights.py without SGLang: the rules a caller relies on (stage split, TP and
EP scaling, vocabulary padding, MTP layers) and the refusals (a quant method or a model form
whose weights cannot be derived is a PlanInputError naming the field, never a bf16 guess, and
a malformed config is an error, never a crash). Byte exactness against SGLang's own model
classes is tests/conformance/test_weights_conformance.py."""

from __future__ import annotations

import copy

import pytest

from mambasizer.schemas.request import Layout
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_explicit, layout_from_hf_config
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import pad_vocab, stage_weight_breakdown, stage_weight_bytes


def _layout(name: str, **over):
    hf = copy.deepcopy(dict(PRESETS[name].hf_config))
    hf.update(over)
    return layout_from_hf_config(hf)


def _bytes(lay, tp=1, pp=1, ep=1, nextn=False, draft=None):
    stages = pp_stages(lay.num_hidden_layers, pp, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    return stage_weight_bytes(lay, tp_size=tp, pp_size=pp, ep_size=ep, stages=stages, load_nextn=nextn, draft_num_layers=draft)


def test_pad_vocab_matches_vocab_parallel_embedding_rule():
    assert pad_vocab(131072, 1) == 131072
    assert pad_vocab(151936, 8) == 151936  # 64-padded size splits over 8
    assert pad_vocab(100, 1) == 128
    assert pad_vocab(65, 3) == 192  # 64-padded 128 does not split over 3: pad to 64 * 3


def test_pp_stages_split_the_model_and_embeddings_sit_at_the_ends():
    lay = _layout("nvidia-nemotron-3-nano-30b-a3b")
    whole = _bytes(lay)[0]
    stages = pp_stages(lay.num_hidden_layers, 2, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    parts = stage_weight_breakdown(lay, tp_size=1, pp_size=2, ep_size=1, stages=stages, load_nextn=False)
    assert [p.pp_rank for p in parts] == [0, 1]
    assert sum(p.total_bytes for p in parts) == whole  # untied: nothing duplicated, nothing lost
    first, last = dict(parts[0].groups), dict(parts[1].groups)
    assert "embed" in first and "lm_head" not in first
    assert "lm_head" in last and "embed" not in last
    for p in parts:
        assert p.total_bytes == sum(b for _, b in p.groups)


def test_kimi_k3_pp_stages_each_hold_the_vision_tower():
    # KimiK3ForConditionalGeneration builds MoonViT and its projector on every PP rank; the
    # language model's embedding sits on the first stage, its final read and lm_head on the last.
    lay = _layout("kimi-k3")
    whole = _bytes(lay, tp=8)[0]
    stages = pp_stages(lay.num_hidden_layers, 8, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    parts = stage_weight_breakdown(lay, tp_size=8, pp_size=8, ep_size=1, stages=stages, load_nextn=False)
    groups = [dict(p.groups) for p in parts]
    vision = groups[0]["vision"]
    assert vision > 0 and all(g["vision"] == vision for g in groups)
    assert "embed" in groups[0] and all("embed" not in g for g in groups[1:])
    assert "lm_head" in groups[-1] and all("lm_head" not in g for g in groups[:-1])
    assert sum(p.total_bytes for p in parts) == whole + 7 * vision  # only the tower is repeated
    # 93 layers over 8 stages: 11 on the first three, 12 on the last five (get_pp_indices)
    assert [s.end - s.start for s in stages] == [11, 11, 11, 12, 12, 12, 12, 12]


def test_tp_shards_and_ep_spreads_experts():
    lay = _layout("nvidia-nemotron-3-nano-30b-a3b")
    tp1, tp4 = _bytes(lay, tp=1)[0], _bytes(lay, tp=4)[0]
    assert tp1 / 4 < tp4 < tp1 / 3.5  # replicated routers, norms and KV heads keep it above a quarter
    experts = lambda ep: dict(stage_weight_breakdown(  # noqa: E731
        lay, tp_size=4, pp_size=1, ep_size=ep,
        stages=pp_stages(lay.num_hidden_layers, 1), load_nextn=False)[0].groups)["experts"]
    assert experts(4) == experts(1)  # the same bytes: whole experts on a quarter of ranks vs quarter-experts on all


def test_mtp_layers_count_only_when_loaded():
    lay = _layout("nvidia-nemotron-3-super-120b-a12b")
    assert lay.num_nextn_predict_layers == 1
    plain, with_mtp = _bytes(lay, tp=4)[0], _bytes(lay, tp=4, nextn=True)[0]
    assert with_mtp > plain
    assert _bytes(lay, tp=4, nextn=True, draft=2)[0] > with_mtp


def test_tied_embeddings_share_one_tensor_at_pp1():
    untied = _bytes(_layout("lfm2-350m"))[0]
    lay = _layout("granite-4.0-h-tiny")
    groups = dict(stage_weight_breakdown(lay, tp_size=1, pp_size=1, ep_size=1, stages=pp_stages(lay.num_hidden_layers, 1), load_nextn=False)[0].groups)
    assert "lm_head" not in groups and groups["embed"] > 0
    assert untied > 0


def test_granite_tied_embeddings_refuse_pp():
    lay = _layout("granite-4.0-h-tiny")
    with pytest.raises(PlanInputError) as e:
        _bytes(lay, pp=2)
    assert e.value.field == "server_args.pp_size"


@pytest.mark.parametrize("qc,field", [
    ({"quant_method": "bitsandbytes"}, "model.hf_config.quantization_config.quant_method"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "model.hf_config.quantization_config.quant_algo"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "model.hf_config.quantization_config.weight_block_size"),
    ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "model.hf_config.quantization_config.bits"),
    ("fp8", "model.hf_config.quantization_config"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "group"}}}},
     "model.hf_config.quantization_config.config_groups.weights.strategy"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block"}}}},
     "model.hf_config.quantization_config.config_groups.weights.block_structure"),
    # SGLang's compressed-tensors fp8 MoE asserts tensor/tensor or channel/token (or block).
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
                                                                    "input_activations": {"strategy": "token", "dynamic": True}}}},
     "model.hf_config.quantization_config.config_groups"),
    ({"quant_algo": "MIXED_PRECISION", "quantized_layers": {}}, "model.hf_config.quantization_config.quantized_layers"),
])
def test_unmodelled_quantization_is_an_error_naming_the_field(qc, field):
    lay = _layout("qwen3.5-35b-a3b", quantization_config=qc)
    with pytest.raises(PlanInputError) as e:
        _bytes(lay, tp=2)
    assert e.value.field == field
    assert e.value.message


def test_quantized_is_smaller_than_bf16_and_block_shapes_are_checked():
    bf16 = _bytes(_layout("qwen3.5-27b"), tp=2)[0]
    fp8 = _bytes(_layout("qwen3.5-27b", quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["in_proj_b", "in_proj_a", "visual"]}), tp=2)[0]
    assert bf16 * 0.5 < fp8 < bf16 * 0.7
    with pytest.raises(PlanInputError) as e:  # in_proj_ba's 24-row shards do not fill 128-row blocks
        _bytes(_layout("qwen3.5-27b", quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]}), tp=2)
    assert e.value.field.endswith("weight_block_size")


def _block_refusal(name: str, tp: int) -> str:
    with pytest.raises(PlanInputError) as e:
        _bytes(_layout(name, quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]}), tp=tp)
    assert e.value.field == "model.hf_config.quantization_config.weight_block_size"
    return e.value.message


def test_a_block_fp8_refusal_names_every_shard_the_fix_and_no_tp_size_when_none_fits():
    # Qwen3.5-27B's fused in_proj_ba: 48 value heads give [48, 48] rows at TP 1, [24, 24] at TP 2;
    # a fused layer's shards are checked at every TP size, so no TP size fills 128-row blocks.
    msg = _block_refusal("qwen3.5-27b", 2)
    assert msg.startswith("model.language_model.layers.0.linear_attn.in_proj_b, model.language_model.layers.0.linear_attn.in_proj_a: "
                          "an output partition of [24, 24] is not divisible by block_n=128 (and 47 more layer(s))")
    assert 'quantization_config.modules_to_not_convert: ["linear_attn.in_proj_b", "linear_attn.in_proj_a"]' in msg
    assert "no tp_size in 1, 2, 4, 8, 16, 32, 64 fills them" in msg and "or use tp_size" not in msg
    assert "[48, 48]" in _block_refusal("qwen3.5-27b", 1)
    # The named fix loads, at this TP size and at any other.
    fixed = {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["linear_attn.in_proj_b", "linear_attn.in_proj_a"]}
    for tp in (1, 2, 4, 8):
        assert _bytes(_layout("qwen3.5-27b", quantization_config=fixed), tp=tp)[0] > 0
    # A config that already carries `ignored_layers` is told that key (Fp8Config reads the first present).
    with pytest.raises(PlanInputError) as e:
        _bytes(_layout("qwen3.5-27b", quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": ["visual"]}), tp=2)
    assert 'quantization_config.ignored_layers: ["linear_attn.in_proj_b", "linear_attn.in_proj_a"]' in e.value.message


def test_a_block_fp8_refusal_offers_the_tp_sizes_that_fit():
    # Nemotron-H 56B's mixer.in_proj at TP 4: [4096, 4096, 512, 512, 64] rows; 64 does not fill 128.
    msg = _block_refusal("nemotron-h-56b-base-8k", 4)
    assert msg.startswith("backbone.layers.0.mixer.in_proj: an output partition of [4096, 4096, 512, 512, 64] is not divisible by block_n=128")
    assert 'modules_to_not_convert: ["mixer.in_proj"]' in msg and msg.endswith("or use tp_size 1 or 2, where every shard fills whole blocks")
    qc = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    assert _bytes(_layout("nemotron-h-56b-base-8k", quantization_config=qc), tp=2) == (29247233616,)
    assert _bytes(_layout("nemotron-h-56b-base-8k", quantization_config={**qc, "modules_to_not_convert": ["mixer.in_proj"]}), tp=4) == (18728764496,)


def test_explicit_layout_and_unmodelled_families_are_refused():
    lay = layout_from_explicit(Layout.model_validate({
        "num_hidden_layers": 4, "mamba_layer_ids": [0, 1, 2], "full_attention_layer_ids": [3], "linear_kind": "mamba2",
        "kv": {"type": "mha", "num_kv_heads": 8, "head_dim": 128}, "context_length": 4096,
        "state": {"conv_shapes": [[8192, 3]], "temporal_shape": [64, 64, 128]},
    }))
    with pytest.raises(PlanInputError) as e:
        _bytes(lay)
    assert e.value.field == "model.hf_config"
    lfm2_moe = dict(PRESETS["lfm2-350m"].hf_config, model_type="lfm2_moe", num_experts=8)
    with pytest.raises(PlanInputError) as e:
        _bytes(layout_from_hf_config(lfm2_moe))
    assert e.value.field == "model.hf_config.model_type"


@pytest.mark.parametrize("over", [
    {"vocab_size": "many"},
    {"hidden_size": None, "n_routed_experts": [1, 2]},
    {"moe_intermediate_size": 1855},  # not divisible by tp 4
])
def test_malformed_configs_are_errors_not_crashes(over):
    hf = copy.deepcopy(dict(PRESETS["nvidia-nemotron-3-nano-30b-a3b"].hf_config))
    hf.update(over)
    with pytest.raises(PlanInputError):  # the layout refuses a non-integer sizing key, the weights the rest
        _bytes(layout_from_hf_config(hf), tp=4)


def test_ep_must_divide_tp():
    with pytest.raises(PlanInputError) as e:
        _bytes(_layout("qwen3.5-35b-a3b"), tp=4, ep=3)
    assert e.value.field == "server_args.ep_size"


def test_generated_configs_give_bytes_or_a_field_error_never_a_crash():
    """Randomised variants of every family (the conformance generator) at random layouts:
    every answer is positive bytes per stage, or a PlanInputError naming a field."""
    import os
    import random
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
    import cases

    rng = random.Random(11)
    answered = refused = 0
    for family in cases.FAMILIES:
        for _ in range(15):
            try:
                lay = layout_from_hf_config(cases.random_hf_config(rng, family))
            except PlanInputError:
                continue
            tp, pp = rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4)) if lay.pp_supported else 1
            try:
                got = _bytes(lay, tp=tp, pp=pp, nextn=rng.random() < 0.3)
            except PlanInputError as e:
                assert e.field and e.message
                refused += 1
                continue
            assert len(got) == pp and all(b > 0 for b in got)
            answered += 1
    assert answered > 50 and refused < answered


def test_families_without_pp_refuse_pp():
    for name in ("qwen3-next-80b-a3b-instruct", "falcon-h1-0.5b", "lfm2-350m"):
        with pytest.raises(PlanInputError) as e:
            _bytes(_layout(name), tp=1, pp=2)
        assert e.value.field == "server_args.pp_size"
