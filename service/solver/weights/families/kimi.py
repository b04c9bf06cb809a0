"""Kimi-Linear and Kimi-K3 (models/kimi_linear.py, kimi_k3.py)."""

from __future__ import annotations

from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.blocks import gated_mlp
from mambasizer.service.solver.weights.common import (
    class_config,
    get_or,
    stage_layers,
    vocab_size,
)
from mambasizer.service.solver.weights.rank import Rank


def walk_kimi(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    if lay.hf_config.get("model_type") == "kimi_k3" or lay.architecture.startswith("KimiK3"):
        return _walk_kimi_k3(r, lay, stage, first, last, pp, nextn)
    c = class_config(lay)
    h = int(get_or(c, "hidden_size", 4096))
    vocab = vocab_size(lay)
    lac = c["linear_attn_config"]
    kh, kd, ck = int(lac["num_heads"]), int(lac["head_dim"]), int(lac["short_conv_kernel_size"])
    proj = kh * kd
    heads = int(get_or(c, "num_attention_heads", 32))
    nope, rope, vdim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
    rank_kv = int(c["kv_lora_rank"])
    q_rank = c.get("q_lora_rank")
    n_exp = int(get_or(c, "num_experts", 0))
    first_dense = int(get_or(c, "first_k_dense_replace", 0))
    freq = int(get_or(c, "moe_layer_freq", 1))
    shared = c.get("num_shared_experts")
    full = set(lay.full_attention_layer_ids)
    tied = bool(get_or(c, "tie_word_embeddings", False))
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in stage_layers(stage):
        p = f"model.layers.{i}.self_attn"
        if i in full:  # MLA (estimated: q_proj / kv_a / kv_b / o_proj, kv_a_layernorm)
            if q_rank:
                r.replicated("attention", h, int(q_rank), f"{p}.q_a_proj")
                r.params("attention", int(q_rank))
                r.column("attention", int(q_rank), [heads * (nope + rope)], f"{p}.q_b_proj")
            else:
                r.column("attention", h, [heads * (nope + rope)], f"{p}.q_proj")
            r.replicated("attention", h, rank_kv + rope, f"{p}.kv_a_proj_with_mqa")
            r.params("attention", rank_kv)
            r.column("attention", rank_kv, [heads * (nope + vdim)], f"{p}.kv_b_proj")
            r.row("attention", heads * vdim, h, f"{p}.o_proj")
        else:  # KDA
            r.column("linear_attn", h, [proj, proj, proj, kh], f"{p}.qkvb_proj", [f"{p}.q_proj", f"{p}.k_proj", f"{p}.v_proj", f"{p}.b_proj"])
            r.replicated("linear_attn", h, 2 * kd, f"{p}.fg_a_proj", quant=False)
            r.column("linear_attn", kd, [proj, proj], f"{p}.fg_b_proj", quant=False)
            r.params("linear_attn", proj // r.tp, 4)  # dt_bias float32
            r.add("linear_attn", 3 * (proj // r.tp) * ck * 4)  # qkv_conv1d float32
            r.params("linear_attn", kh // r.tp, 4)  # A_log float32
            r.params("linear_attn", kd)  # o_norm
            r.row("linear_attn", proj, h, f"{p}.o_proj")
        m = f"model.layers.{i}.mlp"
        if n_exp and i >= first_dense and i % freq == 0:
            r.replicated("moe_gate", h, n_exp, f"{m}.gate", quant=False)
            r.params("moe_gate", n_exp)  # e_score_correction_bias: torch.empty, the default dtype
            r.experts("experts", n_exp, h, int(c["moe_intermediate_size"]), f"{m}.experts")
            if shared:
                gated_mlp(r, h, int(c["moe_intermediate_size"]) * int(shared), f"{m}.shared_experts", "shared_expert")
        else:
            gated_mlp(r, h, int(c["intermediate_size"]), m)
        r.params("norms", 2 * h)
    if last:
        r.params("norms", h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)


def _walk_kimi_k3(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    """KimiK3ForConditionalGeneration (models/kimi_k3.py): KDA with a full-rank gate fused into
    q/k/v (`fused_qkvg_proj`), MLA with a q LoRA (`fused_qkv_a_proj_with_mqa`), latent routed
    experts (replicated routed_expert_down/up_proj around experts of routed_expert_hidden_size)
    and the MoonViT tower with its projector, replicated.
    Under PP (make_pp_layers): the embedding on the first stage, the final norm (and its
    attention-residual read) and lm_head on the last, each stage its own layers; the wrapper
    builds the vision tower and projector on every stage. K3 has no MTP layers."""
    c = class_config(lay)
    attn_res = bool(c.get("attn_res_block_size"))
    latent_norm = bool(c.get("latent_moe_use_norm"))
    mla_gate = bool(c.get("mla_use_output_gate"))
    h = int(c["hidden_size"])
    vocab = vocab_size(lay)
    lac = c["linear_attn_config"]
    kh, kd, ck = int(lac["num_heads"]), int(lac["head_dim"]), int(lac["short_conv_kernel_size"])
    proj = kh * kd
    heads = int(c["num_attention_heads"])
    nope, rope, vdim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
    q_rank, kv_rank = int(c["q_lora_rank"]), int(c["kv_lora_rank"])
    n_exp, latent = int(c["num_experts"]), int(c["routed_expert_hidden_size"])
    moe_i, shared = int(c["moe_intermediate_size"]), int(get_or(c, "num_shared_experts", 0))
    first_dense, freq = int(get_or(c, "first_k_dense_replace", 0)), int(get_or(c, "moe_layer_freq", 1))
    full = set(lay.full_attention_layer_ids)
    if first:
        r.vocab("embed", vocab, h, "language_model.model.embed_tokens")
    for i in stage_layers(stage):
        p = f"language_model.model.layers.{i}.self_attn"
        if i in full:
            r.replicated("attention", h, q_rank + kv_rank + rope, f"{p}.fused_qkv_a_proj_with_mqa")
            r.params("norms", q_rank + kv_rank)  # q_a_layernorm, kv_a_layernorm
            r.column("attention", q_rank, [heads * (nope + rope)], f"{p}.q_b_proj")
            r.column("attention", kv_rank, [heads * (nope + vdim)], f"{p}.kv_b_proj")
            r.row("attention", heads * vdim, h, f"{p}.o_proj")
            if mla_gate:
                r.column("attention", h, [heads * vdim], f"{p}.g_proj")
        else:
            r.column("linear_attn", h, [proj, proj, proj, proj], f"{p}.fused_qkvg_proj")
            r.column("linear_attn", h, [kh], f"{p}.b_proj")
            r.replicated("linear_attn", h, kd, f"{p}.f_a_proj")
            r.column("linear_attn", kd, [proj], f"{p}.f_b_proj")
            r.params("linear_attn", r._shard(proj, "KDA num_heads*head_dim"), 4)  # dt_bias float32
            r.add("linear_attn", 3 * (proj // r.tp) * ck * 4)  # qkv_conv1d float32
            r.params("linear_attn", kh // r.tp, 4)  # A_log float32
            r.params("linear_attn", kd)  # o_norm
            r.row("linear_attn", proj, h, f"{p}.o_proj")
        m = f"language_model.model.layers.{i}.mlp"
        if i >= first_dense and i % freq == 0:
            r.replicated("moe_gate", h, n_exp, f"{m}.gate", quant=False)
            r.params("moe_gate", n_exp, 4)  # e_score_correction_bias float32
            # The latent projections take the quant config only if it says it supports them
            # (supports_kimi_k3_quantized_latent_projections); none modelled here does.
            r.replicated("experts", h, latent, f"{m}.routed_expert_down_proj", quant=False)
            r.experts("experts", n_exp, latent, moe_i, f"{m}.experts")
            r.replicated("experts", latent, h, f"{m}.routed_expert_up_proj", quant=False)
            if latent_norm:
                r.params("norms", latent)  # routed_expert_norm
            if shared:
                gated_mlp(r, h, moe_i * shared, f"{m}.shared_experts", "shared_expert")
        else:
            gated_mlp(r, h, int(c["intermediate_size"]), m)
        r.params("norms", (2 + (4 if attn_res else 0)) * h)  # + attention-residual norms / projections
    if last:  # norm, + output_attn_res_norm / output_attn_res_proj; K3 never ties lm_head
        r.params("norms", (1 + (2 if attn_res else 0)) * h)
        r.vocab("lm_head", vocab, h, "language_model.lm_head", quant=True)
    vc = lay.hf_config.get("vision_config") or {}
    d = int(get_or(vc, "vt_hidden_size", 1024))
    qkv = int(get_or(vc, "qkv_hidden_size", 1536))
    vi = int(get_or(vc, "vt_intermediate_size", 4096))
    patch = int(get_or(vc, "patch_size", 14))
    mk = get_or(vc, "merge_kernel_size", [2, 2])
    mm = d * int(mk[0]) * int(mk[1])
    for _ in range(int(get_or(vc, "vt_num_hidden_layers", 27))):  # MoonViT blocks (replicated)
        r.params("vision", d * 3 * qkv + qkv * d + 2 * d * vi + 2 * d)
    r.params("vision", d + 3 * patch * patch * d + int(get_or(vc, "init_pos_emb_height", 64)) * int(get_or(vc, "init_pos_emb_width", 64)) * d)
    r.params("vision", int(get_or(vc, "init_pos_emb_time", 4)) * d, 4)  # temporal position embedding, float32
    r.params("vision", mm * mm + mm * h + h)  # mm_projector: proj.0, proj.2, post_norm


