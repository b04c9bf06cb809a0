"""LFM2 (models/lfm2.py)."""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.blocks import rope_cache
from mambasizer.service.solver.weights.common import (
    class_config,
    get_or,
    stage_layers,
    vocab_size,
)
from mambasizer.service.solver.weights.rank import Rank


def walk_lfm2(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = class_config(lay)
    if c.get("model_type") == "lfm2_moe" or c.get("num_experts"):
        raise PlanInputError("model.hf_config.model_type", "LFM2-MoE weights are not modelled yet; give a budget with measured memory instead")
    h = int(get_or(c, "hidden_size", 2560))
    vocab = vocab_size(lay)
    heads = int(get_or(c, "num_attention_heads", 32))
    kv = int(get_or(c, "num_key_value_heads", 8))
    hd = h // heads
    inter = int(get_or(c, "intermediate_size", 12288))
    if get_or(c, "block_auto_adjust_ff_dim", True):
        inter = int(2 * inter / 3)
        mult = c.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            inter = int(mult * inter)
        m = int(get_or(c, "block_multiple_of", 256))
        inter = m * ((inter + m - 1) // m)
    k = int(get_or(c, "conv_L_cache", 3))
    full = set(lay.full_attention_layer_ids)
    r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in stage_layers(stage):
        p = f"model.layers.{i}"
        if i in full:
            r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"])
            r.row("attention", heads * hd, h, f"{p}.self_attn.out_proj")
            r.params("norms", 2 * hd)
        else:
            bias = bool(get_or(c, "conv_bias", False))
            r.column("conv", h, [h, h, h], f"{p}.conv.in_proj", bias=bias)
            r.row("conv", h, h, f"{p}.conv.out_proj", bias=bias)
            r.params("conv", (h // r.tp) * k + (h // r.tp if bias else 0))
            r.add("conv", 256 * 4)  # _intermediate_state_indices: int32[256] verify buffer
        if i in full and not any(j in full for j in range(stage.start, i)):
            rope_cache(r, c, hd)
        r.column("mlp", h, [inter], f"{p}.feed_forward.w1")
        r.column("mlp", h, [inter], f"{p}.feed_forward.w3")
        r.row("mlp", inter, h, f"{p}.feed_forward.w2")
        r.params("norms", 2 * h)
    r.params("norms", h)
    r.vocab("lm_head", vocab, h, "lm_head", quant=True)


