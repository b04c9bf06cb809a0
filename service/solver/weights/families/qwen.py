"""Qwen3-Next and Qwen3.5 / 3.6 (models/qwen3_next.py, qwen3_5.py): GDN + gated attention,
MoE with the shared expert, the MTP draft and the Qwen3-VL vision tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.blocks import gated_mlp, rope_cache
from mambasizer.service.solver.weights.common import (
    class_config,
    get_or,
    stage_layers,
    vocab_size,
)
from mambasizer.service.solver.weights.quant import ModelOptMixed, Nvfp4, Quant
from mambasizer.service.solver.weights.rank import Rank


def _qwen_moe(r: Rank, c: Mapping[str, Any], h: int, prefix: str, fusion: bool):
    n_exp = int(c["num_experts"])
    shared = int(get_or(c, "shared_expert_intermediate_size", 0))
    moe_i = int(c["moe_intermediate_size"])
    # Qwen3-Next on CUDA fuses the shared expert into the MoE as one more expert slot on every
    # EP rank when its width equals the routed experts' (qwen2_moe.can_fuse_shared_expert);
    # Qwen3.5 does not ask for the CUDA fusion.
    fuse = fusion and shared > 0 and shared == moe_i and not (isinstance(r.q, Nvfp4) and any("shared_expert" in s and "shared_expert_gate" not in s for s in r.q.skip))
    r.replicated("moe_gate", h, n_exp, f"{prefix}.gate", quant=False)
    r.experts("experts", n_exp, h, moe_i, f"{prefix}.experts", n_fused_shared=1 if fuse else 0)
    if shared > 0 and not fuse:
        gated_mlp(r, h, shared, f"{prefix}.shared_expert", "shared_expert")
    r.params("moe_gate", h)  # shared_expert_gate: torch.nn.Linear(hidden, 1), always built


def _qwen_gdn_layer(r: Rank, c: Mapping[str, Any], h: int, prefix: str, norm_dtype_bytes: int, packed: bool):
    kh, vh = int(c["linear_num_key_heads"]), int(c["linear_num_value_heads"])
    kd, vd, ck = int(c["linear_key_head_dim"]), int(c["linear_value_head_dim"]), int(c["linear_conv_kernel_dim"])
    key, value = kh * kd, vh * vd
    r.column("linear_attn", ck, [2 * key + value], f"{prefix}.conv1d", quant=False)
    # Qwen3.5's packed_modules_mapping splits the fused projections into checkpoint shards
    # for ignore lists; Qwen3-Next's does not.
    qkvz, ba = f"{prefix}.in_proj_qkvz", f"{prefix}.in_proj_ba"
    r.column("linear_attn", h, [key, key, value, value], qkvz, [f"{prefix}.in_proj_qkv", f"{prefix}.in_proj_z"] if packed else [qkvz])
    r.column("linear_attn", h, [vh, vh], ba, [f"{prefix}.in_proj_b", f"{prefix}.in_proj_a"] if packed else [ba])
    r.params("linear_attn", r._shard(vh, "linear_num_value_heads"))  # dt_bias
    r.params("linear_attn", vh // r.tp, 4)  # A_log float32
    r.params("linear_attn", vd, norm_dtype_bytes)  # gated RMSNorm over head_v_dim
    r.row("linear_attn", value, h, f"{prefix}.out_proj")


def _qwen_attn_layer(r: Rank, c: Mapping[str, Any], h: int, prefix: str, quant_qkv: bool, kv_scales: bool = False):
    hd = int(get_or(c, "head_dim", h // int(c["num_attention_heads"])))
    heads, kv = int(c["num_attention_heads"]), int(c["num_key_value_heads"])
    gate = 2 if get_or(c, "attn_output_gate", True) else 1
    r.qkv("attention", h, hd, heads * gate, kv, f"{prefix}.qkv_proj",
          [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"], quant=quant_qkv)
    # qkv heads: q carries the output gate (heads * 2) sharded like the heads themselves.
    r.row("attention", heads * hd, h, f"{prefix}.o_proj")
    r.params("norms", 2 * 2 * hd)  # q_norm, k_norm (GemmaRMSNorm: weight + gemma_weight)
    if kv_scales:  # RadixAttention built with the quant config
        r.kv_scales()


def walk_qwen(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = class_config(lay)
    h = int(c["hidden_size"])
    vocab = vocab_size(lay)
    is_moe = "num_experts" in c and int(get_or(c, "num_experts", 0)) > 0
    modelopt_fp4 = isinstance(r.q, Nvfp4)
    lm = "model.language_model" if lay.hf_config is not lay.hf_text_config else "model"
    tied = bool(get_or(lay.hf_config, "tie_word_embeddings", get_or(c, "tie_word_embeddings", False)))
    # Qwen3-Next's RMSNormGated uses config.torch_dtype, Qwen3.5's the default dtype: both the model dtype.
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    full = set(lay.full_attention_layer_ids)

    def layer(i: int, prefix: str):
        if i in full:
            _qwen_attn_layer(r, c, h, f"{prefix}.self_attn", quant_qkv=not (modelopt_fp4 and lay.family == "qwen3_next"),
                             kv_scales=True)
        else:
            _qwen_gdn_layer(r, c, h, f"{prefix}.linear_attn", r.act, packed=lay.family == "qwen3_5")
        if is_moe:
            _qwen_moe(r, c, h, f"{prefix}.mlp", lay.family == "qwen3_next")
        else:
            gated_mlp(r, h, int(c["intermediate_size"]), f"{prefix}.mlp")
        r.params("norms", 2 * 2 * h)  # input / post-attention GemmaRMSNorm: weight + gemma_weight

    for i in stage_layers(stage):
        layer(i, f"{lm}.layers.{i}")
    if any(stage.start <= i < stage.end for i in full):
        rope_cache(r, c, int(get_or(c, "head_dim", h // int(c["num_attention_heads"]))))
    if last:
        r.params("norms", 2 * h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)
        if nextn:  # the MTP draft model (Qwen3_5ForCausalLMMTP / Qwen3NextForCausalLMMTP)
            _qwen_mtp(r, lay, c, h, vocab, is_moe, nextn)
    vc = lay.hf_config.get("vision_config") if lay.hf_config is not lay.hf_text_config else None
    if isinstance(vc, dict) and not lay.hf_config.get("language_model_only"):
        # every PP stage builds the vision tower; pos_embed only the first
        _qwen_vision(r, vc, first)


def _qwen_mtp(r: Rank, lay: ModelLayout, c: Mapping[str, Any], h: int, vocab: int, is_moe: bool, nextn: int):
    """The MTP draft speculative decoding builds from the same checkpoint, on the last stage:
    its own embedding and lm_head (allocated with it, before EAGLE shares the target's), then
    per MTP layer the replicated fc (2h -> h), two pre-fc Gemma norms and one full-attention
    decoder layer, and a final Gemma norm. Its rotary cache is the target's (`get_rope` caches
    per process)."""
    target_q = r.q
    if _mtp_unquantized(target_q):
        r.q = Quant(r.act)
    try:
        _qwen_mtp_modules(r, lay, c, h, vocab, is_moe, nextn)
    finally:
        r.q = target_q


def _mtp_unquantized(q: Quant) -> bool:
    """qwen3_5_mtp's `_mtp_quant_config`: serialized ModelOpt NVFP4 checkpoints keep their MTP
    in BF16, and MIXED_PRECISION ones do unless `quantized_layers` lists an `mtp.` module;
    the draft is then built without a quant config (no scales, no KV-cache method)."""
    if isinstance(q, ModelOptMixed):
        return not any(str(k).startswith("mtp.") for k in q.layers)
    return isinstance(q, Nvfp4)


def _qwen_mtp_modules(r: Rank, lay: ModelLayout, c: Mapping[str, Any], h: int, vocab: int, is_moe: bool, nextn: int):
    r.vocab("mtp", vocab, h, "mtp.embed_tokens")
    r.vocab("mtp", vocab, h, "mtp.lm_head")
    for k in range(nextn):
        r.replicated("mtp", 2 * h, h, "mtp.fc", quant=False)
        r.params("mtp", 2 * 2 * h)  # pre_fc_norm_embedding / pre_fc_norm_hidden
        save = r.groups.copy()
        _qwen_attn_layer(r, c, h, f"mtp.layers.{k}.self_attn", True, kv_scales=True)
        if is_moe:
            _qwen_moe(r, c, h, f"mtp.layers.{k}.mlp", lay.family == "qwen3_next")
        else:
            gated_mlp(r, h, int(c["intermediate_size"]), f"mtp.layers.{k}.mlp")
        r.params("mtp", 2 * 2 * h)  # input / post-attention norms
        moved = sum(r.groups.values()) - sum(save.values())
        r.groups = save
        r.add("mtp", moved)
    r.params("mtp", 2 * h)  # final norm


def _qwen_vision(r: Rank, vc: Mapping[str, Any], first: bool):
    """Qwen3-VL vision tower (`Qwen3VLMoeVisionModel`, never quantized): blocks with
    TP-sharded attention and MLP (row-parallel biases whole), LayerNorms with bias, the
    patch Conv3d, a TP-sharded position embedding, the merger (+ deepstack mergers) and
    its rotary cache (float32, 8192 positions, head_dim // 2 wide)."""
    d = int(get_or(vc, "hidden_size", 1152))
    depth = int(get_or(vc, "depth", 27))
    inter = int(get_or(vc, "intermediate_size", 4304))
    out = int(get_or(vc, "out_hidden_size", 3584))
    patch, tps, ch = int(get_or(vc, "patch_size", 16)), int(get_or(vc, "temporal_patch_size", 2)), int(get_or(vc, "in_channels", 3))
    merge = int(get_or(vc, "spatial_merge_size", 2))
    npos = int(get_or(vc, "num_position_embeddings", 2304))
    heads = int(get_or(vc, "num_heads", 16))
    deep = len(get_or(vc, "deepstack_visual_indexes", [8, 16, 24]))  # Qwen3VLVisionConfig default
    save, r.q = r.q, Quant(r.act)
    try:
        r.params("vision", ch * tps * patch * patch * d + d)
        if first:
            r.vocab("vision", npos, d, "visual.pos_embed")
        for _ in range(depth):
            r.column("vision", d, [d, d, d], "visual.attn.qkv_proj", bias=True)
            r.row("vision", d, d, "visual.attn.proj", bias=True)
            r.column("vision", d, [inter], "visual.mlp.linear_fc1", bias=True)
            r.row("vision", inter, d, "visual.mlp.linear_fc2", bias=True)
            r.params("vision", 4 * d)  # norm1, norm2 (LayerNorm weight + bias)
        m = d * merge * merge
        for k in range(1 + deep):
            r.params("vision", 2 * (d if k == 0 else m))  # merger norm (post-shuffle for deepstack)
            r.column("vision", m, [m], "visual.merger.linear_fc1", bias=True)
            r.row("vision", m, out, "visual.merger.linear_fc2", bias=True)
        r.add("vision", 8192 * ((d // heads) // 2) * 4)  # rotary_pos_emb.cos_sin_cache
    finally:
        r.q = save


