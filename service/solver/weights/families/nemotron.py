"""Nemotron-H / Nemotron-3 (models/nemotron_h.py): Mamba2, attention, MLP and (latent) MoE blocks,
and the MTP draft."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.blocks import mamba2_mixer
from mambasizer.service.solver.weights.common import (
    class_config,
    get_or,
    stage_layers,
    vocab_size,
)
from mambasizer.service.solver.weights.rank import Rank

_NEMOTRON_CHARS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _nemotron_blocks(c: Mapping[str, Any]) -> str:
    """The block letters, from layers_block_type (newer configs) or hybrid_override_pattern."""
    types = c.get("layers_block_type")
    if isinstance(types, list):
        return "".join(_NEMOTRON_CHARS.get(t, "?") for t in types)
    pattern = c.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise KeyError("hybrid_override_pattern")
    return pattern


def walk_nemotron(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = class_config(lay)
    h = int(c.get("hidden_size", 4096))
    vocab = vocab_size(lay)
    blocks = _nemotron_blocks(c)
    tied = bool(get_or(c, "tie_word_embeddings", False))
    if first:
        r.vocab("embed", vocab, h, "backbone.embeddings")
    for i in stage_layers(stage):
        _nemotron_block(r, c, h, blocks[i], f"backbone.layers.{i}.mixer")
        r.params("norms", h)
    if last:
        r.params("norms", h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)
        if nextn:
            _nemotron_mtp(r, c, h, vocab, nextn)


def _nemotron_mtp(r: Rank, c: Mapping[str, Any], h: int, vocab: int, nextn: int):
    """NemotronHForCausalLMMTP, built on the last stage when speculative decoding loads the
    checkpoint's MTP: its own embedding and lm_head, then per MTP block eh_proj (2h -> h,
    TP-sharded), enorm / hnorm / final_layernorm and the `mtp_hybrid_override_pattern` layers."""
    pattern = str(get_or(c, "mtp_hybrid_override_pattern", "*E"))
    r.vocab("mtp", vocab, h, "mtp.embed_tokens")
    # The draft's lm_head and eh_proj take the checkpoint's quant method like any linear
    # layer (ModelOpt FP8 on Nemotron-3 Super / Ultra FP8: fp8 weights with scales); names
    # are the draft model's own module prefixes, which exclude lists are matched against.
    r.vocab("mtp", vocab, h, "lm_head", quant=True)
    save = r.groups.copy()
    for k in range(nextn):
        r.column("mtp", 2 * h, [h], f"model.layers.{k}.eh_proj")
        r.params("mtp", 3 * h)
        for j, b in enumerate(pattern):
            _nemotron_block(r, c, h, b, f"mtp.layers.{k}.{j}.mixer")
            r.params("mtp", h)
    moved = sum(r.groups.values()) - sum(save.values())
    r.groups = save
    r.add("mtp", moved)


def _nemotron_block(r: Rank, c: Mapping[str, Any], h: int, kind: str, prefix: str):
    if kind == "M":
        mamba2_mixer(
            r, h=h, heads=int(get_or(c, "mamba_num_heads", 128)), head_dim=int(get_or(c, "mamba_head_dim", 64)),
            groups=int(get_or(c, "n_groups", get_or(c, "mamba_n_groups", 8))), state=int(get_or(c, "ssm_state_size", 128)),
            conv_k=int(get_or(c, "conv_kernel", 4)), conv_bias=bool(get_or(c, "use_conv_bias", True)),
            proj_bias=bool(get_or(c, "use_bias", False)), prefix=prefix,
        )
    elif kind == "*":
        hd = int(get_or(c, "head_dim", h // int(c["num_attention_heads"])))
        heads, kv = int(c["num_attention_heads"]), int(get_or(c, "num_key_value_heads", 8))
        r.qkv("attention", h, hd, heads, kv, f"{prefix}.qkv_proj", [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"])
        r.row("attention", heads * hd, h, f"{prefix}.o_proj")
        r.kv_scales()
    elif kind == "-":
        inter = c["intermediate_size"]
        inter = int(inter[0] if isinstance(inter, list) else inter)
        bias = bool(get_or(c, "mlp_bias", False))
        r.column("mlp", h, [inter], f"{prefix}.up_proj", bias=bias)
        r.row("mlp", inter, h, f"{prefix}.down_proj", bias=bias)
    elif kind == "E":
        n = int(c["n_routed_experts"])
        latent = c.get("moe_latent_size")
        moe_h = int(latent) if latent else h
        r.replicated("moe_gate", h, n, f"{prefix}.gate", quant=False)
        r.params("moe_gate", n, 4)  # e_score_correction_bias float32
        r.experts("experts", n, moe_h, int(c["moe_intermediate_size"]), f"{prefix}.experts", gated=False)
        shared = int(get_or(c, "n_shared_experts", 0) or 0)
        if shared:
            si = int(c["moe_shared_expert_intermediate_size"]) * shared
            r.column("shared_expert", h, [si], f"{prefix}.shared_experts.up_proj")
            r.row("shared_expert", si, h, f"{prefix}.shared_experts.down_proj")
        if latent:
            bias = bool(get_or(c, "mlp_bias", False))
            r.replicated("experts", h, moe_h, f"{prefix}.fc1_latent_proj", bias=bias)
            r.replicated("experts", moe_h, h, f"{prefix}.fc2_latent_proj", bias=bias)
    else:
        raise PlanInputError("model.hf_config.hybrid_override_pattern", f"block {kind!r} has no weights model")


