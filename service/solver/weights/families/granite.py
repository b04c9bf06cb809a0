"""Granite-4.0-H (models/granitemoehybrid.py)."""

from __future__ import annotations

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


def walk_granite(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = class_config(lay)
    h = int(get_or(c, "hidden_size", 2048))
    vocab = vocab_size(lay)
    heads = int(get_or(c, "num_attention_heads", 32))
    kv = int(get_or(c, "num_key_value_heads", 8))
    hd = h // heads
    full = set(lay.full_attention_layer_ids)
    n_exp = int(get_or(c, "num_local_experts", 0))
    shared = int(get_or(c, "shared_intermediate_size", 0))
    tied = bool(get_or(c, "tie_word_embeddings", True))
    if tied and pp > 1:
        # GraniteMoeHybridForCausalLM ties lm_head.weight to embed_tokens.weight on every rank,
        # and a stage past the first has no embedding: SGLang 0.5.23 fails to build the model.
        raise PlanInputError("server_args.pp_size", "SGLang 0.5.23 cannot build a Granite-4.0-H model with tied embeddings at pp_size > 1 (the last stage ties lm_head to an embedding it does not hold); use pp_size 1")
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in stage_layers(stage):
        p = f"model.layers.{i}"
        if i in full:
            r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"], bias=bool(get_or(c, "attention_bias", False)))
            r.row("attention", heads * hd, h, f"{p}.self_attn.o_proj", bias=bool(get_or(c, "attention_bias", False)))
            r.kv_scales()
        else:
            mamba2_mixer(r, h=h, heads=int(get_or(c, "mamba_n_heads", 64)), head_dim=int(get_or(c, "mamba_d_head", 64)),
                          groups=int(get_or(c, "mamba_n_groups", 1)), state=int(get_or(c, "mamba_d_state", 128)),
                          conv_k=int(get_or(c, "mamba_d_conv", 4)), conv_bias=bool(get_or(c, "mamba_conv_bias", True)),
                          proj_bias=bool(get_or(c, "mamba_proj_bias", False)), prefix=f"{p}.mamba")
        if n_exp > 0:
            r.replicated("moe_gate", h, n_exp, f"{p}.block_sparse_moe.router.layer", quant=False)
            r.experts("experts", n_exp, h, int(c["intermediate_size"]), f"{p}.block_sparse_moe.experts")
        if shared:
            r.column("shared_expert", h, [shared, shared], f"{p}.shared_mlp.input_linear")
            r.row("shared_expert", shared, h, f"{p}.shared_mlp.output_linear")
        r.params("norms", 2 * h)
    if last:
        r.params("norms", h)
        if not tied:
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)


